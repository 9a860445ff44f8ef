//! Small facts of the wire that several layers ask, with no layer of
//! their own: whether a response is an SSE stream, how many requests one
//! session may have in flight (over HTTP and stdio alike), which server
//! requests a client's capabilities take, and the task that ends with
//! what holds it.

use axum::http::header;
use axum::response::Response;

/// Most requests one session has in flight at once (of any method; tool
/// calls are bounded lower, by `--max-calls-per-session`).
pub const MAX_REQUESTS_IN_FLIGHT: usize = 1024;

/// Why a request past [`MAX_REQUESTS_IN_FLIGHT`] is refused (over HTTP
/// and stdio alike).
pub(crate) fn too_many_requests() -> String {
    format!(
        "this session has {MAX_REQUESTS_IN_FLIGHT} requests in flight, the most one session may; wait for some to end"
    )
}

/// Whether `response` is an SSE stream (`text/event-stream`): the one
/// test of every layer that follows a stream's events.
pub(crate) fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// A task aborted when dropped.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether a client with `capabilities` takes server request `method`.
pub(crate) fn declares(capabilities: &rmcp::model::ClientCapabilities, method: &str) -> bool {
    match method {
        extpool_host::mcp::handler::SAMPLING => capabilities.sampling.is_some(),
        extpool_host::mcp::handler::ELICITATION => capabilities.elicitation.is_some(),
        extpool_host::mcp::handler::ELICITATION_URL => capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.url.is_some()),
        _ => false,
    }
}
