//! Retiring a server that was replaced or removed: its calls in flight
//! finish on the old connection, then the capability lets go of it and the
//! pool closes it — unless another capability still holds the same
//! connection (a replacement that reaches the server the same way, a
//! session's own server with the same configuration).

use std::sync::Arc;
use std::time::Duration;

use extpool_core::Capability;
use extpool_mcp::{McpServerCap, SessionConnectionPool};

/// Waited beyond a connection's request timeout for its calls to end.
const DRAIN_MARGIN: Duration = Duration::from_secs(1);

/// Shuts `cap` down, lets its calls in flight finish, then closes its
/// connection when nobody else holds it. A call still running after the connection's request
/// timeout (plus a margin) no longer holds the connection open.
pub(crate) async fn retire(cap: Arc<McpServerCap>, pool: SessionConnectionPool) {
    let name = cap.name().clone();
    let client = cap.client();
    // No new call starts on it (a revision pinned before the swap gets a
    // clear error); the calls already running keep their client.
    if let Err(e) = cap.shutdown().await {
        tracing::debug!(server = %name, "retired MCP server: shutdown: {e}");
    }
    if let Some(client) = client {
        let bound = client.request_timeout() + DRAIN_MARGIN;
        if tokio::time::timeout(bound, client.drained()).await.is_err() {
            tracing::warn!(server = %name, in_flight = client.in_flight(), "retired MCP server: calls still running after the request timeout; closing");
        }
    }
    if pool.close_if_idle(&name, cap.config()).await {
        tracing::info!(server = %name, "retired MCP server closed");
    } else {
        tracing::debug!(server = %name, "retired MCP server: its connection stays (still used)");
    }
}
