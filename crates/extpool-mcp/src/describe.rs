//! Foreign errors (rmcp, reqwest, the OS) as text for people: each cause
//! once, outermost first, without transport type names or URL secrets.
//!
//! rmcp wraps a transport failure twice — `Transport send error: Transport
//! [rmcp::transport::worker::WorkerTransport<…>] error: …` — and several of
//! its errors print their cause *and* return it from `source()`; shown
//! naively, an HTTP 400 became a kilobyte of type names, three times over.
//! This module is the one place that turns those into a sentence.

use std::error::Error;

use extpool_core::Causes;
use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::http::redacted_url;

type HttpError = StreamableHttpError<reqwest::Error>;

/// The text of `error` and its causes, each once, for an error message.
pub(crate) fn describe(error: &(dyn Error + 'static)) -> String {
    if let Some(service) = error.downcast_ref::<ServiceError>() {
        return match service {
            ServiceError::TransportSend(send) => describe(send.error.as_ref()),
            ServiceError::TransportClosed => "the connection closed".to_owned(),
            ServiceError::McpError(data) => {
                format!("error {}: {}", data.code.0, data.message)
            }
            other => Causes(other).to_string(),
        };
    }
    if let Some(dynamic) = error.downcast_ref::<DynamicTransportError>() {
        return describe(dynamic.error.as_ref());
    }
    if let Some(init) = error.downcast_ref::<ClientInitializeError>() {
        return describe_initialize(init);
    }
    if let Some(http) = error.downcast_ref::<HttpError>() {
        return match http {
            StreamableHttpError::Client(inner) => describe_reqwest(inner),
            // "HTTP 400 Bad Request: <body>" or a parse failure; the
            // "unexpected server response" prefix says nothing more.
            StreamableHttpError::UnexpectedServerResponse(text) => text.to_string(),
            StreamableHttpError::Io(io) => Causes(io).to_string(),
            other => Causes(other).to_string(),
        };
    }
    if let Some(request) = error.downcast_ref::<reqwest::Error>() {
        return describe_reqwest(request);
    }
    Causes(error).to_string()
}

/// A failed handshake in words: `cannot connect to URL: cause` when the
/// server could not be reached at all, else `initialize failed: …`.
pub(crate) fn initialize_failure(error: &ClientInitializeError) -> String {
    match unreachable(error) {
        Some(text) => text,
        None => format!("initialize failed: {}", describe_initialize(error)),
    }
}

/// `cannot connect to URL: cause` when `error` is a connection that could
/// not be made (refused, no route, a name that does not resolve); the
/// cause is the innermost one, which is what a person can act on.
fn unreachable(error: &ClientInitializeError) -> Option<String> {
    let init = match error {
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => fallback.as_ref(),
        other => other,
    };
    let ClientInitializeError::TransportError { error, .. } = init else {
        return None;
    };
    let request = match error.error.downcast_ref::<HttpError>() {
        Some(StreamableHttpError::Client(request)) => request,
        _ => error.error.downcast_ref::<reqwest::Error>()?,
    };
    if !request.is_connect() {
        return None;
    }
    let url = request.url().map(redacted_url).unwrap_or_default();
    let mut cause: &(dyn Error + 'static) = request;
    while let Some(next) = cause.source() {
        cause = next;
    }
    Some(format!("cannot connect to {url}: {cause}"))
}

fn describe_initialize(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", describe(error.error.as_ref()))
        }
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            describe_initialize(fallback)
        }
        // These print the whole unexpected message with `{:?}`.
        ClientInitializeError::ExpectedInitResponse(_) => {
            "the server answered initialize with another message".to_owned()
        }
        ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered initialize with another result".to_owned()
        }
        // The transport's refusal of an answer it could not read: said as
        // a call's error says it (see `crate::limits`).
        ClientInitializeError::JsonRpcError(data) => {
            if let Some(exceeded) = crate::limits::Exceeded::from_error_data(data) {
                format!(
                    "the server {}",
                    crate::error::refused(exceeded, "initialize")
                )
            } else if let Some(reason) = crate::limits::unreadable_reason(data) {
                format!(
                    "the server answered initialize with a message that is not a JSON-RPC response: {reason}"
                )
            } else {
                Causes(error).to_string()
            }
        }
        other => Causes(other).to_string(),
    }
}

/// reqwest names the URL in its message; the query and user info may hold
/// credentials, so the URL is shown without them.
fn describe_reqwest(error: &reqwest::Error) -> String {
    let text = Causes(error).to_string();
    match error.url() {
        Some(url) => text.replace(url.as_str(), &redacted_url(url)),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_error(e: Box<dyn Error + Send + Sync>) -> ServiceError {
        ServiceError::TransportSend(DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<Very<Long<Type>>>",
            std::any::TypeId::of::<()>(),
            e,
        ))
    }

    #[test]
    fn transport_wrappers_and_type_names_are_dropped() {
        let e: HttpError =
            StreamableHttpError::UnexpectedServerResponse("HTTP 400 Bad Request: no".into());
        let text = describe(&send_error(Box::new(e)));
        assert_eq!(text, "HTTP 400 Bad Request: no");
    }

    #[test]
    fn closed_transport_reads_as_a_sentence() {
        assert_eq!(
            describe(&ServiceError::TransportClosed),
            "the connection closed"
        );
    }

    #[test]
    fn initialize_context_is_kept_once() {
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let e = ClientInitializeError::TransportError {
            error: DynamicTransportError::from_parts(
                "Some<Type>",
                std::any::TypeId::of::<()>(),
                Box::new(io),
            ),
            context: "send initialize request".into(),
        };
        assert_eq!(describe(&e), "send initialize request: broken pipe");
    }

    #[tokio::test]
    async fn urls_lose_their_query_and_user_info() {
        let error = reqwest::Client::new()
            .get("http://127.0.0.1:1/mcp?api_key=s3cr3t")
            .send()
            .await
            .unwrap_err();
        let text = describe(&error);
        assert!(!text.contains("s3cr3t"), "{text}");
        assert!(text.contains("http://127.0.0.1:1/mcp"), "{text}");
        assert_eq!(text.matches("127.0.0.1").count(), 1, "{text}");
    }
}
