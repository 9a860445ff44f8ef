//! The span each MCP request gets at the gateway, exported as a trace when
//! an OTLP endpoint is set: named and attributed as the OpenTelemetry MCP
//! semantic conventions say (`mcp.method.name`, `mcp.session.id`,
//! `jsonrpc.request.id`, `gen_ai.tool.name`, …), the child of the trace
//! context the client sent (its `traceparent` header or `_meta`), and
//! never holding an argument value.
//!
//! What the span needs of a message is read while it is checked
//! (the check of a message) and only when the span is recorded ([`wanted`]), so
//! a gateway without traces pays one cached callsite check a request.

use axum::http::HeaderMap;
use extpool_host::mcp::trace::{MAX_FIELD, SERVER_TARGET, adopt, extract};
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

/// What a request's span says about it, read from its message.
#[derive(Debug, Default)]
pub(crate) struct Traced {
    /// The MCP method.
    pub method: String,
    /// What it acts on: the tool or prompt name, the resource URI.
    pub target: Option<String>,
    /// Its `params._meta`, when that carries a trace context.
    pub meta: Option<serde_json::Map<String, Value>>,
}

/// The longest method or target name kept for a span (a name a client
/// sent).
const MAX_TARGET: usize = 256;

/// Whether requests' spans are recorded (an OTLP layer takes them).
/// While the collector refuses spans, one request a second is (a probe,
/// [`extpool_host::mcp::trace::tracing_request`]).
pub(crate) fn wanted() -> bool {
    tracing::enabled!(target: SERVER_TARGET, tracing::Level::INFO)
        && extpool_host::mcp::trace::tracing_request()
}

/// What the span of request `method` with `params` says (only called when
/// [`wanted`]).
pub(crate) fn traced(method: &str, params: Option<&Value>) -> Box<Traced> {
    let field = |key: &str| {
        let value = params?.get(key)?.as_str()?;
        (value.len() <= MAX_TARGET).then(|| value.to_owned())
    };
    let target = match method {
        "tools/call" | "prompts/get" => field("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => field("uri"),
        _ => None,
    };
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .filter(|meta| meta.contains_key("traceparent"))
        .map(|meta| {
            meta.iter()
                .filter(|(k, v)| {
                    matches!(k.as_str(), "traceparent" | "tracestate")
                        && v.as_str().is_some_and(|v| v.len() <= MAX_FIELD)
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        });
    // A method a client made up may be of any length: the semantic
    // conventions name such a method `_OTHER`.
    let method = if method.len() <= MAX_TARGET {
        method
    } else {
        "_OTHER"
    };
    Box::new(Traced {
        method: method.to_owned(),
        target,
        meta,
    })
}

/// The span of one request (disabled when traces are off or the message
/// is not a request), the child of the client's trace context.
pub(crate) fn request_span(
    traced: Option<&Traced>,
    id: Option<&Value>,
    headers: &HeaderMap,
    session: Option<&str>,
) -> Span {
    let Some(traced) = traced else {
        return Span::none();
    };
    span_of(traced, id, headers, session, true)
}

/// The span of a request read over HTTP (`http`) or over stdio.
fn span_of(
    traced: &Traced,
    id: Option<&Value>,
    headers: &HeaderMap,
    session: Option<&str>,
    http: bool,
) -> Span {
    let name = match &traced.target {
        Some(target) => format!("{} {target}", traced.method),
        None => traced.method.clone(),
    };
    let target = traced.target.as_deref();
    let (tool, prompt, uri) = match traced.method.as_str() {
        "tools/call" => (target, None, None),
        "prompts/get" => (None, target, None),
        _ => (None, None, target),
    };
    let id = id.map(|id| match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let version = headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok());
    // Every attribute given as the span is made (a field recorded later
    // costs the OpenTelemetry layer a search of those it has).
    let span = tracing::info_span!(
        target: SERVER_TARGET,
        "mcp.request",
        otel.name = name,
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = traced.method.as_str(),
        mcp.session.id = session,
        mcp.protocol.version = version,
        jsonrpc.request.id = id,
        gen_ai.tool.name = tool,
        gen_ai.prompt.name = prompt,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        mcp.resource.uri = uri,
        network.transport = if http { "tcp" } else { "pipe" },
        network.protocol.name = http.then_some("http"),
        http.response.status_code = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(parent) = extract(headers, traced.meta.as_ref()) {
        adopt(&span, parent);
    }
    span
}

/// Records how the request ended on its span.
pub(crate) fn ended(span: &Span, status: axum::http::StatusCode) {
    if span.is_disabled() {
        return;
    }
    span.record("http.response.status_code", status.as_u16());
    if status.is_client_error() || status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of the request being answered, kept in its extensions so the
/// handler (which rmcp may run in another task) makes its work a child of
/// it.
#[derive(Clone, Debug)]
pub(crate) struct RequestSpan(pub Span);

/// The span a `tools/call` runs in: its request's, when the HTTP front end
/// made one; over stdio (no HTTP request), a request span made here,
/// since no front end of extpool's read it first; else the current span.
/// `kept` is the request's span, if the front end made one; `over_http`
/// whether it came over HTTP; `meta` and `id` its `_meta` and JSON-RPC id.
pub(crate) fn call_parent(
    (kept, over_http): (Option<&Span>, bool),
    (meta, id): (&rmcp::model::RequestMetaObject, &rmcp::model::RequestId),
    request: &rmcp::model::CallToolRequestParams,
    session: &str,
) -> Span {
    if let Some(span) = kept {
        return span.clone();
    }
    if over_http || !wanted() {
        return Span::current();
    }
    let meta = request.meta.as_ref().unwrap_or(meta);
    let params = serde_json::json!({"name": request.name, "_meta": meta.0.0});
    let traced = traced("tools/call", Some(&params));
    let id = serde_json::to_value(id).ok();
    span_of(
        &traced,
        id.as_ref(),
        &HeaderMap::new(),
        Some(session),
        false,
    )
}
