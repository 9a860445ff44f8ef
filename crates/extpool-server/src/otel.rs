//! Traces over OTLP (HTTP/protobuf): the exporter, its bounded queue and
//! the layer that turns extpool's request and upstream-call spans
//! (`extpool_host::mcp::trace`) into OpenTelemetry spans. The binary
//! installs it beside its log layer; the gateway benchmark installs it to
//! measure what it costs.
//!
//! On when `--otlp-endpoint` or one of the standard variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is
//! set, off when `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
//! The other standard variables (headers, timeout, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, the batch processor's) are read by the
//! exporter as usual. Spans wait in a queue of at most [`MAX_QUEUE`]
//! (the batch processor's thread exports them; when it falls behind, new
//! spans are dropped), and while the collector refuses them requests build
//! none but one a second, which finds it back: a collector never slows a
//! call.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The most spans waiting for export.
pub const MAX_QUEUE: usize = 4096;
/// How long the exit waits for the last spans to leave.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);
/// The prefix of the targets of the spans exported.
const TARGETS: &str = "extpool::otel";

/// Why traces cannot be exported as asked.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// `--otlp-endpoint` is not an HTTP URL without credentials.
    #[error("--otlp-endpoint {0}")]
    Endpoint(String),
    /// The exporter refused its configuration (an `OTEL_*` variable).
    #[error("starting the OTLP trace exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// The running exporter; [`Traces::shutdown`] sends what is queued.
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Sends the spans still queued (waiting at most a moment) and stops.
    pub fn shutdown(self) {
        let _ = self.provider.shutdown_with_timeout(SHUTDOWN_WAIT);
    }
}

/// The exporter, telling each batch's fate to the gate that stops
/// requests from building spans while the collector refuses them
/// ([`extpool_host::mcp::trace::collector_answered`]).
#[derive(Debug)]
struct Watched<E>(E);

impl<E: SpanExporter> SpanExporter for Watched<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.0.export(batch).await;
        extpool_host::mcp::trace::collector_answered(result.is_ok());
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.0.set_resource(resource);
    }
}

/// Whether a standard variable is set to something.
fn set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// `--otlp-endpoint`: the collector's base URL (as in
/// `OTEL_EXPORTER_OTLP_ENDPOINT`), checked: HTTP or HTTPS, no credentials
/// in it (they would show in errors; headers carry them).
fn traces_url(base: &str) -> Result<String, OtelError> {
    let url =
        url::Url::parse(base).map_err(|e| OtelError::Endpoint(format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(OtelError::Endpoint(format!(
            "must be an http:// or https:// URL (OTLP over HTTP), not {}://",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(OtelError::Endpoint(
            "must not carry credentials; set them as headers in OTEL_EXPORTER_OTLP_HEADERS".into(),
        ));
    }
    Ok(format!("{}/v1/traces", base.trim_end_matches('/')))
}

/// Starts the exporter when asked for (`endpoint`, the `--otlp-endpoint`
/// flag, or the standard variables), and the layer that feeds it.
pub fn start<S>(
    endpoint: Option<&str>,
) -> Result<Option<(impl Layer<S> + use<S>, Traces)>, OtelError>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v == "none");
    let asked = endpoint.is_some()
        || set("OTEL_EXPORTER_OTLP_ENDPOINT")
        || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    if disabled || !asked {
        return Ok(None);
    }
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(base) = endpoint {
        builder = builder.with_endpoint(traces_url(base)?);
    }
    let exporter = builder.build()?;
    let processor = BatchSpanProcessor::builder(Watched(exporter))
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(MAX_QUEUE)
                .build(),
        )
        .build();
    let mut resource = opentelemetry_sdk::Resource::builder();
    if !set("OTEL_SERVICE_NAME") {
        resource = resource.with_service_name("extpool");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("extpool");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(
            tracing_subscriber::filter::Targets::new().with_target(TARGETS, tracing::Level::INFO),
        );
    Ok(Some((layer, Traces { provider })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_a_plain_http_url() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318/").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        let e = traces_url("grpc://collector:4317").unwrap_err().to_string();
        assert!(e.contains("http:// or https://"), "{e}");
        let e = traces_url("https://user:hunter2@collector")
            .unwrap_err()
            .to_string();
        assert!(e.contains("credentials") && !e.contains("hunter2"), "{e}");
        assert!(traces_url("not a url").is_err());
    }
}
