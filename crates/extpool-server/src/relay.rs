//! The client behind a call, as upstream servers see it through the host:
//! progress of the call goes back to the client's progress token, and what
//! a server asks while the call runs (sampling, elicitation) and its log
//! messages go to the client whose call caused them
//! ([`extpool_host::CallContext`]; the host picks the latest caller of the
//! connection the request came on).

use std::sync::Arc;

use extpool_host::{CallClient, CallContext, ProgressUpdate};
use rmcp::model::{ProgressNotificationParam, ProgressToken, ServerRequest};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How many progress updates may wait for a slow client before new ones
/// are dropped (the last one always reflects the latest state it saw).
const PROGRESS_QUEUE: usize = 64;

/// A client session, answering requests for the calls it makes.
pub struct PeerClient {
    peer: Peer<RoleServer>,
}

impl PeerClient {
    /// The client behind `peer`.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }
}

#[async_trait::async_trait]
impl CallClient for PeerClient {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let request: ServerRequest =
            serde_json::from_value(json!({"method": method, "params": params}))
                .map_err(|e| format!("cannot relay {method}: {e}"))?;
        let result = self
            .peer
            .send_request(request)
            .await
            .map_err(|e| format!("the client did not answer {method}: {e}"))?;
        serde_json::to_value(result)
            .map_err(|e| format!("cannot relay the answer to {method}: {e}"))
    }

    fn accepts(&self, method: &str) -> bool {
        let Some(info) = self.peer.peer_info() else {
            return false;
        };
        match method {
            extpool_host::mcp::handler::SAMPLING => info.capabilities.sampling.is_some(),
            extpool_host::mcp::handler::ELICITATION => info.capabilities.elicitation.is_some(),
            _ => false,
        }
    }

    #[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still show it
    fn log(&self, params: Value) {
        let Ok(params) = serde_json::from_value(params) else {
            return;
        };
        let peer = self.peer.clone();
        tokio::spawn(async move {
            let _ = peer.notify_logging_message(params).await;
        });
    }
}

/// The call context of a request: progress to the client's token (when it
/// sent one), requests and logs to the client. The returned task forwards
/// progress until every copy of the context is dropped; await it before
/// answering, so that no progress notification follows the result.
pub fn call_context(
    ctx: &RequestContext<RoleServer>,
) -> (CallContext, Option<tokio::task::JoinHandle<()>>) {
    let mut call = CallContext::new().with_client(Arc::new(PeerClient::new(ctx.peer.clone())));
    let mut forwarder = None;
    if let Some(token) = ctx.meta.get_progress_token() {
        let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
        forwarder = Some(tokio::spawn(forward_progress(ctx.peer.clone(), token, rx)));
        call = call.with_progress(tx);
    }
    (call, forwarder)
}

async fn forward_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut rx: mpsc::Receiver<ProgressUpdate>,
) {
    while let Some(update) = rx.recv().await {
        let mut param = ProgressNotificationParam::new(token.clone(), update.progress);
        param.total = update.total;
        param.message = update.message;
        if peer.notify_progress(param).await.is_err() {
            break;
        }
    }
}
