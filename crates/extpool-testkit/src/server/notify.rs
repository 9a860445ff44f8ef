//! Pushing `list_changed` notifications to every connected client, and
//! floods of log messages, progress and elicitation requests to the caller
//! of `notify`.
//!
//! Legacy-session clients (those that sent `initialize`) are reached through
//! the peers kept from `initialize`; 2026-07-28 clients only through
//! their `subscriptions/listen` sinks. A peer or sink whose send fails is
//! dropped, so closed sessions do not pile up.

use std::sync::PoisonError;

use rmcp::RoleServer;
#[allow(deprecated)] // logging (SEP-2577) is deprecated, but servers still send it
use rmcp::model::{
    CallToolResult, ClientResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, ErrorData, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ServerRequest,
};
use rmcp::service::{RequestContext, SubscriptionSendError};

use super::TestServer;

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    Prompts,
}

impl TestServer {
    /// Sends `notifications/<kind>/list_changed` to every live client.
    pub(crate) async fn broadcast(&self, kind: ListKind) {
        let peers = std::mem::take(
            &mut *self
                .shared
                .peers
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut alive = Vec::with_capacity(peers.len());
        for peer in peers {
            if peer.is_transport_closed() {
                continue;
            }
            let sent = match kind {
                ListKind::Tools => peer.notify_tool_list_changed().await,
                ListKind::Resources => peer.notify_resource_list_changed().await,
                ListKind::Prompts => peer.notify_prompt_list_changed().await,
            };
            match sent {
                Ok(()) => alive.push(peer),
                Err(e) => tracing::debug!("dropping a closed peer: {e}"),
            }
        }
        let sent_to = alive.len();
        self.shared
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(alive);

        let sinks = std::mem::take(
            &mut *self
                .shared
                .sinks
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut live_sinks = Vec::with_capacity(sinks.len());
        for sink in sinks {
            let sent = match kind {
                ListKind::Tools => sink.notify_tool_list_changed().await,
                ListKind::Resources => sink.notify_resource_list_changed().await,
                ListKind::Prompts => sink.notify_prompt_list_changed().await,
            };
            match sent {
                Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {
                    live_sinks.push(sink);
                }
                Err(e) => tracing::debug!("dropping a closed subscription: {e}"),
            }
        }
        let subscribers = live_sinks.len();
        self.shared
            .sinks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(live_sinks);
        tracing::info!(?kind, peers = sent_to, subscribers, "sent list_changed");
    }
}

impl TestServer {
    /// Sends `count` `notifications/message` (level info) to the caller.
    #[allow(deprecated)] // logging notifications are deprecated (SEP-2577) but still sent by servers
    pub(crate) async fn flood_log(
        &self,
        count: u64,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        for i in 0..count {
            let param = LoggingMessageNotificationParam::new(
                LoggingLevel::Info,
                serde_json::Value::String(format!("log line {i}")),
            );
            if context.peer.notify_logging_message(param).await.is_err() {
                break;
            }
        }
        Ok(sent(count))
    }

    /// Sends `count` progress notifications for this call (its progress
    /// token), progress 1..=count of total count.
    pub(crate) async fn flood_progress(
        &self,
        count: u64,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let token = progress_token(context, "progress")?;
        for i in 1..=count {
            let mut param = ProgressNotificationParam::new(token.clone(), i as f64);
            param.total = Some(count as f64);
            if context.peer.notify_progress(param).await.is_err() {
                break;
            }
        }
        Ok(sent(count))
    }
}

impl TestServer {
    /// Sends `count` pairs of a `notifications/message` `step i` (level
    /// info) and progress i of total count for this call (its progress
    /// token), i from 1: a client sees whether what is relayed keeps its
    /// order.
    #[allow(deprecated)] // logging notifications are deprecated (SEP-2577) but still sent by servers
    pub(crate) async fn flood_mixed(
        &self,
        count: u64,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let token = progress_token(context, "mixed")?;
        for i in 1..=count {
            let line = serde_json::Value::String(format!("step {i}"));
            let log = LoggingMessageNotificationParam::new(LoggingLevel::Info, line);
            let mut progress = ProgressNotificationParam::new(token.clone(), i as f64);
            progress.total = Some(count as f64);
            if context.peer.notify_logging_message(log).await.is_err()
                || context.peer.notify_progress(progress).await.is_err()
            {
                break;
            }
        }
        Ok(sent(count))
    }
}

impl TestServer {
    /// Sends `count` `elicitation/create` requests to the caller at once,
    /// waits for every answer and says how they ended:
    /// `accepted A, declined D, cancelled C, failed F`. Each failed answer
    /// is counted (`elicit_failed`) as it arrives.
    pub(crate) async fn flood_elicitation(
        &self,
        count: u64,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let counters = &self.shared.counters;
        let asks = (0..count).map(|i| {
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: format!("question {i}"),
                requested_schema: ElicitationSchema::builder().build_unchecked(),
            };
            let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            async move {
                match context.peer.send_request(request).await {
                    Ok(ClientResult::ElicitResult(result)) => Some(result.action),
                    _ => {
                        // Counted as it comes: a test waits for the refusals
                        // while the other requests are still held.
                        let _ = counters.increment("elicit_failed");
                        None
                    }
                }
            }
        });
        let (mut accepted, mut declined, mut cancelled, mut failed) = (0, 0, 0, 0);
        for answer in futures::future::join_all(asks).await {
            match answer {
                Some(ElicitationAction::Accept) => accepted += 1,
                Some(ElicitationAction::Decline) => declined += 1,
                Some(ElicitationAction::Cancel) => cancelled += 1,
                Some(_) | None => failed += 1,
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "accepted {accepted}, declined {declined}, cancelled {cancelled}, failed {failed}"
        ))]))
    }
}

/// The progress token of the call of `notify` kind `kind`, which needs one.
fn progress_token(
    context: &RequestContext<RoleServer>,
    kind: &str,
) -> Result<rmcp::model::ProgressToken, ErrorData> {
    context.meta.get_progress_token().ok_or_else(|| {
        ErrorData::invalid_params(
            format!("notify {{kind: {kind}}} needs a progress token in the request's _meta"),
            None,
        )
    })
}

/// The result of a `notify` call that sent `count` notifications.
fn sent(count: u64) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(format!("sent {count}"))])
}

/// What a long call says after its question was answered: a log message
/// `answered: <said>` (info), and progress 1 of 1 (`answered`) when the
/// call has a progress token.
#[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still show it
pub(crate) async fn answered(said: &str, context: &RequestContext<RoleServer>) {
    let line = serde_json::Value::String(format!("answered: {said}"));
    let log = LoggingMessageNotificationParam::new(LoggingLevel::Info, line);
    let _ = context.peer.notify_logging_message(log).await;
    if let Some(token) = context.meta.get_progress_token() {
        let mut done = rmcp::model::ProgressNotificationParam::new(token, 1.0);
        done.total = Some(1.0);
        done.message = Some("answered".into());
        let _ = context.peer.notify_progress(done).await;
    }
}
