//! An `initialize` without a session on its way to a new one: a slot
//! first (at the limit: HTTP 503, or 429 for a caller holding its most,
//! saying when one frees), the session made and held, and its owner
//! recorded in the store so any replica resumes it for that owner only.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::initialize::{self, MakeHandler};
use super::read::rpc_error;
use crate::check::Message;
use crate::metrics::Refusal;
use crate::shared::Shared;

/// An `initialize` on its way: where, what the check said of it, and who
/// sends it.
pub(super) struct Opening<'a> {
    pub(super) endpoint: &'a str,
    pub(super) message: &'a Message,
    /// Its principal's owner key ([`extpool_host::core::Principal::owner`]).
    pub(super) owner: Option<String>,
    pub(super) principal: &'a Arc<extpool_host::core::Principal>,
}

/// An `initialize` without a session (`request`, its id and params): a
/// slot first; a failed one leaves no session behind.
pub(super) async fn initialize(
    shared: &Arc<Shared>,
    opening: Opening<'_>,
    make: MakeHandler,
    request: (rmcp::model::RequestId, rmcp::model::InitializeRequestParams),
) -> Response {
    let Opening {
        endpoint,
        message,
        owner,
        principal,
    } = opening;
    let slot = match shared.front.live.reserve(owner.clone()) {
        Ok(slot) => slot,
        Err(full) => return refuse_full(shared, message, &full),
    };
    let made = match initialize::initialize(shared, endpoint, make, principal, request).await {
        Ok(made) => made,
        // No session: the slot is given back.
        Err(answer) => return answer,
    };
    record_owner(shared, endpoint, &made.id, owner.as_deref()).await;
    let key = (endpoint.to_owned(), made.id);
    slot.fill(key.clone());
    shared.front.live.set_session(&key, made.session);
    made.response
}

/// Records `owner` as the owner of MCP session `id` of `endpoint` in the
/// store, so any replica resumes it for that owner only.
pub(super) async fn record_owner(shared: &Shared, endpoint: &str, id: &str, owner: Option<&str>) {
    if let (Some(owner), Some(sessions)) = (owner, &shared.sessions)
        && let Err(e) = sessions
            .store()
            .set_mcp_session_owner(endpoint, id, owner)
            .await
    {
        // Other replicas then cannot resume it for its owner; this one
        // still serves it.
        tracing::warn!("cannot record an MCP session's owner: {e}");
    }
}

/// The answer at a session limit: HTTP 503 (the gateway's) or 429 (the
/// caller's own), `Retry-After`, and the JSON-RPC error saying when a
/// slot frees.
pub(super) fn refuse_full(
    shared: &Shared,
    message: &Message,
    full: &crate::held::live::Full,
) -> Response {
    shared.ops.metrics.refused(Refusal::Sessions);
    let mut answer = rpc_error(
        StatusCode::from_u16(full.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
        message.id.as_ref(),
        -32000,
        &full.message(),
    );
    if let Ok(value) = HeaderValue::from_str(&full.retry_after().to_string()) {
        answer.headers_mut().insert(header::RETRY_AFTER, value);
    }
    answer
}
