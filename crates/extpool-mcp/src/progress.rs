//! Progress of long tool calls, routed back to the caller that asked.
//!
//! rmcp overwrites a request's `_meta.progressToken` with its own
//! per-connection counter, so a caller cannot pick the token; instead the
//! token rmcp assigned (`RequestHandle::progress_token`) is registered here
//! for the duration of the call and the client handler forwards matching
//! `notifications/progress` to the caller's channel. A gateway maps them
//! back to its own upstream token. Progress the server sent before its
//! result is routed before the result is delivered ([`crate::ordered`]);
//! progress that arrives after the result is dropped, and so is progress
//! that does not fit in the caller's channel (bounded: a caller that reads
//! slowly sees fewer updates, never a growing queue).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rmcp::Peer;
use rmcp::model::{
    CancelledNotificationParam, ProgressNotificationParam, ProgressToken, RequestId,
};
use rmcp::service::RoleClient;
use tokio::sync::mpsc::Sender;
use tokio::sync::mpsc::error::TrySendError;

/// Updates queued for a caller that forwards progress elsewhere (the
/// gateway); more are dropped until it catches up.
pub const PROGRESS_BUFFER: usize = 64;

/// One progress update of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far (increases with every update).
    pub progress: f64,
    /// Total, when the server knows it.
    pub total: Option<f64>,
    /// A human-readable message, if any.
    pub message: Option<String>,
}

/// Progress tokens of calls in flight → their callers' channels.
#[derive(Debug, Default)]
pub struct ProgressRoutes {
    routes: Mutex<HashMap<ProgressToken, Sender<Progress>>>,
}

impl ProgressRoutes {
    /// Forwards a notification to the caller that owns its token, if any
    /// and if its channel has room; never waits.
    pub fn route(&self, param: ProgressNotificationParam) {
        let routes = self.routes.lock();
        if let Some(tx) = routes.get(&param.progress_token) {
            let update = Progress {
                progress: param.progress,
                total: param.total,
                message: param.message,
            };
            if let Err(TrySendError::Full(_)) = tx.try_send(update) {
                tracing::trace!("a progress update did not fit its caller's channel; dropped");
            }
        }
    }

    /// Routes `token` to `tx` until the returned guard is dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        tx: Sender<Progress>,
    ) -> RouteGuard {
        self.routes.lock().insert(token.clone(), tx);
        RouteGuard {
            routes: self.clone(),
            token,
        }
    }
}

/// Removes a route when the call ends (or is dropped).
pub(crate) struct RouteGuard {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.routes.lock().remove(&self.token);
    }
}

/// Sends `notifications/cancelled` for a request whose caller went away
/// before the response (the same courtesy rmcp's own request helpers give).
pub(crate) struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl CancelOnDrop {
    pub(crate) fn new(peer: Peer<RoleClient>, id: RequestId) -> Self {
        Self { peer, id: Some(id) }
    }

    pub(crate) fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let param = CancelledNotificationParam::new(
                Some(id),
                Some("request abandoned by the caller".into()),
            );
            let _ = peer.notify_cancelled(param).await;
        });
    }
}
