//! W3C trace context across MCP, and the spans extpool exports as traces.
//!
//! A request's trace context travels in its HTTP headers (`traceparent`,
//! `tracestate`) or, as the OpenTelemetry MCP semantic conventions put it,
//! in its `params._meta`; the gateway takes it from either ([`extract`]),
//! and passes its own to an upstream in the call's `_meta` ([`inject_meta`])
//! and, over HTTP, in the headers too ([`headers_of`]). One propagator (the
//! W3C one) reads and writes every carrier, so the format has one owner.
//!
//! Only spans of [`SERVER_TARGET`] and [`CLIENT_TARGET`] are exported (the
//! binary's OTLP layer selects them); their attributes name the method,
//! the session, the tool, never an argument value. Without an OTLP layer
//! the current span carries no OpenTelemetry context and nothing is added.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonObject, RequestMetaObject};
use serde_json::Value;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The target of the span each MCP request gets at the gateway.
pub const SERVER_TARGET: &str = "extpool::otel::server";
/// The target of the span each call to an upstream server gets.
pub const CLIENT_TARGET: &str = "extpool::otel::client";

/// The W3C trace-context fields, as header names and `_meta` keys.
const FIELDS: [&str; 2] = ["traceparent", "tracestate"];
/// The longest value of a trace-context field taken from a client (W3C
/// caps `tracestate` at 512 bytes; `traceparent` is 55).
pub const MAX_FIELD: usize = 512;

/// While the collector refuses spans, how often one request is traced
/// anyway, to learn that it is back (milliseconds).
pub const PROBE_EVERY_MS: u64 = 1000;

/// Whether the collector took the last batch sent to it: while it does
/// not, requests build no spans (a collector that is down costs no call
/// anything), but one every [`PROBE_EVERY_MS`], whose batch tells when it
/// is back.
static COLLECTOR_DOWN: AtomicBool = AtomicBool::new(false);
/// When the next probe may be taken, in milliseconds of [`clock_ms`].
static NEXT_PROBE_MS: AtomicU64 = AtomicU64::new(0);

/// Milliseconds since the first time this process asked.
fn clock_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let start = START.get_or_init(Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Tells how the collector answered a batch (the exporter calls it).
pub fn collector_answered(took: bool) {
    let was_down = COLLECTOR_DOWN.swap(!took, Ordering::Relaxed);
    // A change: down and took now, or up and refused now.
    if was_down == took {
        if took {
            tracing::info!("the trace collector takes spans again");
        } else {
            tracing::warn!(
                "the trace collector refused a batch of spans; requests are traced once a second until it takes one"
            );
        }
    }
}

/// Whether a request starting now gets a span: always while the collector
/// takes spans, else one a [`PROBE_EVERY_MS`].
pub fn tracing_request() -> bool {
    if !COLLECTOR_DOWN.load(Ordering::Relaxed) {
        return true;
    }
    let now = clock_ms();
    let next = NEXT_PROBE_MS.load(Ordering::Relaxed);
    now >= next
        && NEXT_PROBE_MS
            .compare_exchange(
                next,
                now + PROBE_EVERY_MS,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
}

/// Whether `target` is one of the spans exported as traces.
pub fn is_exported(target: &str) -> bool {
    target == SERVER_TARGET || target == CLIENT_TARGET
}

struct MetaCarrier<'a>(&'a JsonObject);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .and_then(Value::as_str)
            .filter(|v| v.len() <= MAX_FIELD)
    }
    fn keys(&self) -> Vec<&str> {
        FIELDS.to_vec()
    }
}

struct HeaderCarrier<'a>(&'a http::HeaderMap);

impl Extractor for HeaderCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.len() <= MAX_FIELD)
    }
    fn keys(&self) -> Vec<&str> {
        FIELDS.to_vec()
    }
}

#[derive(Default)]
struct Fields(Vec<(&'static str, String)>);

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        if let Some(field) = FIELDS.iter().find(|f| **f == key) {
            self.0.push((field, value));
        }
    }
}

/// The trace context a client sent with a request: its `traceparent`
/// header, else its `params._meta.traceparent`; `None` when neither holds
/// a valid one.
pub fn extract(
    headers: &http::HeaderMap,
    meta: Option<&JsonObject>,
) -> Option<opentelemetry::Context> {
    let propagator = TraceContextPropagator::new();
    let valid = |cx: opentelemetry::Context| cx.span().span_context().is_valid().then_some(cx);
    valid(propagator.extract(&HeaderCarrier(headers)))
        .or_else(|| meta.and_then(|meta| valid(propagator.extract(&MetaCarrier(meta)))))
}

/// Makes `span` (not yet entered) a child of the client's trace context.
pub fn adopt(span: &tracing::Span, parent: opentelemetry::Context) {
    let _ = span.set_parent(parent);
}

/// The current span's trace context as W3C fields; empty when no trace is
/// being recorded.
fn current_fields() -> Fields {
    let cx = tracing::Span::current().context();
    let mut fields = Fields::default();
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&cx, &mut fields);
    }
    fields
}

/// Adds the current span's trace context to a request's `_meta`, so the
/// upstream's spans join the trace; a request is unchanged when no trace
/// is being recorded.
pub fn inject_meta(meta: &mut Option<RequestMetaObject>) {
    let fields = current_fields();
    if fields.0.is_empty() {
        return;
    }
    let object = &mut meta.get_or_insert_with(Default::default).0.0;
    for (key, value) in fields.0 {
        object.insert(key.to_owned(), Value::String(value));
    }
}

/// The trace-context headers of a request to an HTTP upstream: those its
/// `_meta` carries (put there by [`inject_meta`]).
pub fn headers_of(message: &ClientJsonRpcMessage) -> Vec<(http::HeaderName, http::HeaderValue)> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return Vec::new();
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return Vec::new();
    };
    let Some(meta) = &call.params.meta else {
        return Vec::new();
    };
    FIELDS
        .iter()
        .filter_map(|field| {
            let value = meta.0.0.get(*field)?.as_str()?;
            let value = http::HeaderValue::from_str(value).ok()?;
            Some((http::HeaderName::from_static(field), value))
        })
        .collect()
}

/// The span of one call to upstream `server` (`operation` is the MCP
/// method; `tool` the server's own name of the tool called, if any), named
/// and attributed as the OpenTelemetry MCP semantic conventions say.
///
/// While the collector refuses spans, a call gets one only inside a
/// request that is traced (a probe, [`tracing_request`]).
pub fn client_span(operation: &'static str, server: &str, tool: Option<&str>) -> tracing::Span {
    if !tracing::enabled!(target: CLIENT_TARGET, tracing::Level::INFO) {
        return tracing::Span::none();
    }
    if COLLECTOR_DOWN.load(Ordering::Relaxed) && tracing::Span::current().is_disabled() {
        return tracing::Span::none();
    }
    let name = match tool {
        Some(tool) => format!("{operation} {tool}"),
        None => operation.to_owned(),
    };
    tracing::info_span!(
        target: CLIENT_TARGET,
        "mcp.client",
        otel.name = name,
        otel.kind = "client",
        mcp.method.name = operation,
        mcp.server.name = server,
        gen_ai.tool.name = tool,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_is_taken_from_the_headers_before_the_meta() {
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", PARENT.parse().unwrap());
        let cx = extract(&headers, None).unwrap();
        assert_eq!(
            cx.span().span_context().trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        let mut meta = JsonObject::new();
        meta.insert(
            "traceparent".into(),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
        );
        let cx = extract(&headers, Some(&meta)).unwrap();
        assert_eq!(
            cx.span().span_context().span_id().to_string(),
            "00f067aa0ba902b7",
            "the header wins"
        );
        let cx = extract(&http::HeaderMap::new(), Some(&meta)).unwrap();
        assert_eq!(
            cx.span().span_context().span_id().to_string(),
            "b7ad6b7169203331"
        );
    }

    #[test]
    fn a_malformed_or_oversized_traceparent_is_no_context() {
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", "00-zz-yy-01".parse().unwrap());
        assert!(extract(&headers, None).is_none());
        let mut meta = JsonObject::new();
        meta.insert("traceparent".into(), Value::String("0".repeat(4096)));
        assert!(extract(&http::HeaderMap::new(), Some(&meta)).is_none());
        meta.insert("traceparent".into(), Value::from(5));
        assert!(extract(&http::HeaderMap::new(), Some(&meta)).is_none());
    }

    #[test]
    fn while_the_collector_refuses_spans_one_request_a_second_is_traced() {
        assert!(tracing_request(), "a collector not yet tried");
        collector_answered(false);
        let traced = (0..1000).filter(|_| tracing_request()).count();
        assert!(traced <= 1, "{traced} of 1000 requests traced in a moment");
        NEXT_PROBE_MS.store(0, Ordering::Relaxed);
        assert!(tracing_request(), "the probe once its time came");
        assert!(!tracing_request(), "one probe");
        collector_answered(true);
        assert!((0..10).all(|_| tracing_request()), "the collector is back");
    }

    #[test]
    fn without_a_trace_nothing_is_injected() {
        let mut meta = None;
        inject_meta(&mut meta);
        assert!(meta.is_none());
    }
}
