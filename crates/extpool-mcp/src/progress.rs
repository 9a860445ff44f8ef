//! Progress of long tool calls, routed back to the caller that asked.
//!
//! rmcp overwrites a request's `_meta.progressToken` with its own
//! per-connection counter, so a caller cannot pick the token; instead the
//! token rmcp assigned (`RequestHandle::progress_token`) is registered here
//! for the duration of the call and the client handler forwards matching
//! `notifications/progress` to the caller's channel. A gateway maps them
//! back to its own upstream token. A call made in a
//! [`CallContext`](extpool_core::CallContext) gets its progress handed to
//! the context as the notification is handled, the way the server's log
//! messages reach the context's client, so the two keep the order the
//! server sent them in. Progress the server sent before its
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

/// Most progress notifications kept for tokens no call has claimed yet.
const UNCLAIMED: usize = 64;

/// Progress tokens of calls in flight → their callers' channels.
///
/// rmcp picks a call's token when it sends the call, so a fast server's
/// first progress can be handled before the caller has registered the
/// token: such notifications wait here (the last [`UNCLAIMED`]) and are
/// handed over when the token is registered. Tokens are never reused on a
/// connection, so a waiting notification can only be its own call's.
#[derive(Debug, Default)]
pub struct ProgressRoutes {
    state: Mutex<Routes>,
}

#[derive(Debug, Default)]
struct Routes {
    routes: HashMap<ProgressToken, ProgressTo>,
    unclaimed: std::collections::VecDeque<ProgressNotificationParam>,
}

/// Where a call's progress goes.
#[derive(Clone)]
pub(crate) enum ProgressTo {
    /// A caller's channel ([`crate::McpClient::call_tool_with_progress`]).
    Channel(Sender<Progress>),
    /// The call context the call runs in, handed each update as its
    /// notification is handled: the server's log messages reach the
    /// context's client the same way, so both keep the server's order.
    Context(extpool_core::CallContext),
}

impl std::fmt::Debug for ProgressTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProgressTo::Channel(_) => f.write_str("ProgressTo::Channel"),
            ProgressTo::Context(_) => f.write_str("ProgressTo::Context"),
        }
    }
}

/// Hands an update to its caller: to a channel if it has room, to a call
/// context's sink (which drops what it has no room for); never waits (a
/// caller that reads slowly sees fewer updates).
fn deliver(to: &ProgressTo, param: ProgressNotificationParam) {
    match to {
        ProgressTo::Channel(tx) => {
            let update = Progress {
                progress: param.progress,
                total: param.total,
                message: param.message,
            };
            if let Err(TrySendError::Full(_)) = tx.try_send(update) {
                tracing::trace!("a progress update did not fit its caller's channel; dropped");
            }
        }
        ProgressTo::Context(ctx) => ctx.progress(extpool_core::ProgressUpdate {
            progress: param.progress,
            total: param.total,
            message: param.message,
        }),
    }
}

impl ProgressRoutes {
    /// Forwards a notification to the caller that owns its token, or keeps
    /// it until one registers the token.
    pub fn route(&self, param: ProgressNotificationParam) {
        let mut state = self.state.lock();
        if let Some(tx) = state.routes.get(&param.progress_token) {
            deliver(tx, param);
            return;
        }
        if state.unclaimed.len() >= UNCLAIMED {
            state.unclaimed.pop_front();
        }
        state.unclaimed.push_back(param);
    }

    /// Routes `token` to `tx` until the returned guard is dropped (with
    /// what arrived for it before).
    pub(crate) fn register(self: &Arc<Self>, token: ProgressToken, tx: ProgressTo) -> RouteGuard {
        let mut state = self.state.lock();
        let mut kept = std::collections::VecDeque::with_capacity(state.unclaimed.len());
        for param in state.unclaimed.drain(..) {
            if param.progress_token == token {
                deliver(&tx, param);
            } else {
                kept.push_back(param);
            }
        }
        state.unclaimed = kept;
        state.routes.insert(token.clone(), tx);
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
        self.routes.state.lock().routes.remove(&self.token);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn param(token: &str, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(
            ProgressToken(rmcp::model::NumberOrString::String(token.into())),
            progress,
        )
    }

    #[test]
    fn progress_before_its_token_is_registered_is_handed_over() {
        let routes = Arc::new(ProgressRoutes::default());
        routes.route(param("other", 9.0));
        routes.route(param("t", 0.0));
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let token = param("t", 0.0).progress_token;
        let guard = routes.register(token, ProgressTo::Channel(tx));
        routes.route(param("t", 50.0));
        assert_eq!(rx.try_recv().map(|p| p.progress), Ok(0.0));
        assert_eq!(rx.try_recv().map(|p| p.progress), Ok(50.0));
        assert!(rx.try_recv().is_err());
        drop(guard);
        // After the call, its token's progress waits unclaimed (bounded).
        for i in 0..2 * UNCLAIMED {
            routes.route(param("late", i as f64));
        }
        assert_eq!(routes.state.lock().unclaimed.len(), UNCLAIMED);
    }
}
