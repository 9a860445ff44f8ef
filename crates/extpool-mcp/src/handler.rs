//! What the client does with messages the server sends on its own:
//! `list_changed` notifications become change signals; progress goes to
//! the caller waiting for it.
//!
//! rmcp runs every incoming notification in its own task, so handlers here
//! only bump counters and broadcast; they never call back into the server.
//! The counters let caches (tool list, resource list, skills) notice a change
//! without a background task per cache: a cache remembers the counter it was
//! filled at and refills when the counter moved.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use extpool_core::ChangeKind;
use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::broadcast;

use crate::callers::Callers;
use crate::name::ServerName;
use crate::progress::ProgressRoutes;

/// The method of a sampling request.
pub const SAMPLING: &str = "sampling/createMessage";
/// The method of an elicitation request.
pub const ELICITATION: &str = "elicitation/create";
/// What a client accepts when it takes URL-mode elicitation requests (it
/// declared `elicitation.url`): asked of [`extpool_core::CallClient::accepts`]
/// like a method, and never sent (the request is [`ELICITATION`]).
pub const ELICITATION_URL: &str = "elicitation/create#url";

/// The method of a 2025-11-25 task status notification.
pub const TASK_STATUS: &str = "notifications/tasks/status";

/// How many resource updates may wait for a slow subscriber before it
/// misses some.
const UPDATES_QUEUE: usize = 256;

/// Change counters and the broadcast of one client; shared by its connections.
#[derive(Debug)]
pub struct ChangeSignals {
    tools: AtomicU64,
    resources: AtomicU64,
    prompts: AtomicU64,
    tx: broadcast::Sender<ChangeKind>,
    /// URIs of `notifications/resources/updated`.
    updated: broadcast::Sender<String>,
    /// The params of 2025-11-25 `notifications/tasks/status`, as sent.
    task_status: broadcast::Sender<serde_json::Value>,
}

impl Default for ChangeSignals {
    fn default() -> Self {
        Self {
            tools: AtomicU64::new(0),
            resources: AtomicU64::new(0),
            prompts: AtomicU64::new(0),
            tx: broadcast::channel(64).0,
            updated: broadcast::channel(UPDATES_QUEUE).0,
            task_status: broadcast::channel(UPDATES_QUEUE).0,
        }
    }
}

impl ChangeSignals {
    /// Tells subscribers that the server updated resource `uri`.
    pub fn resource_updated(&self, uri: String) {
        let _ = self.updated.send(uri);
    }

    /// A new subscription to resource updates.
    pub fn subscribe_updates(&self) -> broadcast::Receiver<String> {
        self.updated.subscribe()
    }

    /// Tells subscribers the server's `notifications/tasks/status` params.
    pub fn task_status(&self, params: serde_json::Value) {
        let _ = self.task_status.send(params);
    }

    /// A new subscription to task status notifications.
    pub fn subscribe_task_status(&self) -> broadcast::Receiver<serde_json::Value> {
        self.task_status.subscribe()
    }

    /// Records a change of `kind` and tells subscribers.
    pub fn bump(&self, kind: ChangeKind) {
        if let Some(counter) = self.counter(kind) {
            counter.fetch_add(1, Ordering::AcqRel);
        }
        // No subscriber is fine: counters still move.
        let _ = self.tx.send(kind);
    }

    /// Records that everything may have changed (a new connection).
    pub fn bump_all(&self) {
        for kind in [
            ChangeKind::ToolsChanged,
            ChangeKind::ResourcesChanged,
            ChangeKind::PromptsChanged,
        ] {
            self.bump(kind);
        }
    }

    /// The current counter of `kind` (0 for kinds MCP servers do not signal).
    pub fn epoch(&self, kind: ChangeKind) -> u64 {
        self.counter(kind)
            .map(|c| c.load(Ordering::Acquire))
            .unwrap_or(0)
    }

    /// A new subscription to change kinds.
    pub fn subscribe(&self) -> broadcast::Receiver<ChangeKind> {
        self.tx.subscribe()
    }

    fn counter(&self, kind: ChangeKind) -> Option<&AtomicU64> {
        match kind {
            ChangeKind::ToolsChanged => Some(&self.tools),
            ChangeKind::ResourcesChanged | ChangeKind::SkillsChanged => Some(&self.resources),
            ChangeKind::PromptsChanged | ChangeKind::CommandsChanged => Some(&self.prompts),
        }
    }
}

/// The rmcp client handler of one connection.
pub struct Handler {
    server: ServerName,
    signals: Arc<ChangeSignals>,
    progress: Arc<ProgressRoutes>,
    info: ClientConfig,
    elicitation: Option<crate::elicitation::Elicitation>,
    /// Callers of the calls in flight, asked when relaying.
    callers: Option<Arc<Callers>>,
}

impl Handler {
    /// A handler reporting changes into `signals` and progress into `progress`.
    pub fn new(
        server: ServerName,
        signals: Arc<ChangeSignals>,
        progress: Arc<ProgressRoutes>,
    ) -> Self {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("extpool", env!("CARGO_PKG_VERSION")),
        );
        // The `initialize` handshake belongs to the session era: offer its
        // latest version (rmcp's default, 2026-07-28, has no initialize).
        info.protocol_version = rmcp::model::ProtocolVersion::V_2025_11_25;
        Self {
            server,
            signals,
            progress,
            info,
            elicitation: None,
            callers: None,
        }
    }

    /// Forwards elicitation requests to `elicitation` (and declares form
    /// elicitation) when one is given.
    pub fn with_elicitation(
        mut self,
        elicitation: Option<crate::elicitation::Elicitation>,
    ) -> Self {
        if elicitation.is_some() {
            self.info.capabilities.elicitation = Some(
                rmcp::model::ElicitationCapability::new()
                    .with_form(rmcp::model::FormElicitationCapability::new()),
            );
        }
        self.elicitation = elicitation;
        self
    }

    /// With `relay`, declares sampling and elicitation (form and URL
    /// mode) and passes the server's requests and log messages to the
    /// latest of `callers`. The connection is shared by every caller, so it
    /// declares all a caller may take; a URL-mode request for a caller that
    /// did not declare URL mode is refused ([`Handler::relay_url`]).
    pub(crate) fn with_relay(mut self, relay: bool, callers: Arc<Callers>) -> Self {
        if relay {
            self.info.capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
            let elicitation = self
                .info
                .capabilities
                .elicitation
                .take()
                .unwrap_or_else(|| {
                    rmcp::model::ElicitationCapability::new()
                        .with_form(rmcp::model::FormElicitationCapability::new())
                });
            self.info.capabilities.elicitation =
                Some(elicitation.with_url(rmcp::model::UrlElicitationCapability::new()));
            self.callers = Some(callers);
        }
        self
    }

    /// Relays request `method` to the latest caller that accepts it; when
    /// none does, the latest caller is told it was asked
    /// ([`extpool_core::CallClient::declined`]).
    async fn relay<P: serde::Serialize, R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Option<Result<R, rmcp::ErrorData>> {
        let callers = self.callers.as_ref()?;
        let Some(client) = callers.latest(method) else {
            if let Some(latest) = callers.latest_any() {
                latest.declined(method);
            }
            return None;
        };
        Some(self.relay_to(&client, method, params).await)
    }

    /// Relays a URL-mode elicitation `request` (named `id`) to the latest
    /// caller that takes elicitation, remembering that it went there for
    /// the server's `notifications/elicitation/complete`. A caller that did
    /// not declare URL mode gets nothing, and the server an error saying
    /// so; `None` when there is no caller to ask.
    async fn relay_url(
        &self,
        request: &rmcp::model::ElicitRequestParams,
        id: &str,
    ) -> Option<Result<rmcp::model::ElicitResult, rmcp::ErrorData>> {
        let callers = self.callers.as_ref()?;
        let client = callers.latest(ELICITATION)?;
        if !client.accepts(ELICITATION_URL) {
            tracing::debug!(server = %self.server, "a URL-mode elicitation for a client without URL mode was refused");
            return Some(Err(rmcp::ErrorData::invalid_params(
                "the client of this call does not support URL-mode elicitation requests",
                None,
            )));
        }
        // Remembered before it is sent: the server may complete it as soon
        // as the user accepts.
        if let Some(session) = client.session() {
            callers.elicitations.remember(id, session);
        }
        let answer: Result<rmcp::model::ElicitResult, _> =
            self.relay_to(&client, ELICITATION, request).await;
        if !matches!(&answer, Ok(r) if r.action == rmcp::model::ElicitationAction::Accept) {
            // Declined, cancelled or failed: nothing will complete.
            callers.elicitations.take(id);
        }
        Some(answer)
    }

    /// Tells the client a URL-mode elicitation of this connection went to
    /// that it is complete; a completion of anything else is dropped.
    async fn completed(&self, params: Option<serde_json::Value>) {
        let Some(callers) = &self.callers else { return };
        let id = crate::url_elicitation::completed_id(params.as_ref());
        let Some(session) = id.and_then(|id| callers.elicitations.take(id)) else {
            tracing::debug!(server = %self.server, "an elicitation completion for no elicitation relayed here was dropped");
            return;
        };
        let params = params.unwrap_or_default();
        let method = crate::url_elicitation::ELICITATION_COMPLETE;
        if let Err(e) = session.notify(method, params).await {
            tracing::debug!(server = %self.server, "an elicitation completion could not be relayed: {e}");
        }
    }

    /// Sends request `method` to `client` and reads its answer.
    async fn relay_to<P: serde::Serialize, R: serde::de::DeserializeOwned>(
        &self,
        client: &Arc<dyn extpool_core::CallClient>,
        method: &str,
        params: &P,
    ) -> Result<R, rmcp::ErrorData> {
        let params = match serde_json::to_value(params) {
            Ok(p) => p,
            Err(e) => return Err(rmcp::ErrorData::internal_error(e.to_string(), None)),
        };
        tracing::debug!(server = %self.server, method, "relaying a server request to its caller");
        match client.request(method, params).await {
            Ok(value) => serde_json::from_value(value).map_err(|e| {
                rmcp::ErrorData::internal_error(
                    format!("the client's answer to {method} is not valid: {e}"),
                    None,
                )
            }),
            Err(message) => Err(rmcp::ErrorData::internal_error(message, None)),
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.progress.route(params);
    }

    #[allow(deprecated)] // sampling (SEP-2577) is deprecated but servers still ask
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        match self.relay(SAMPLING, &params).await {
            Some(answer) => answer,
            None => Err(rmcp::ErrorData::method_not_found::<
                rmcp::model::CreateMessageRequestMethod,
            >()),
        }
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let url_id = match &request {
            rmcp::model::ElicitRequestParams::UrlElicitationParams { elicitation_id, .. } => {
                Some(elicitation_id.clone())
            }
            _ => None,
        };
        let relayed = match &url_id {
            Some(id) => self.relay_url(&request, id).await,
            None => self.relay(ELICITATION, &request).await,
        };
        if let Some(answer) = relayed {
            return answer;
        }
        match &self.elicitation {
            Some(handler) => handler.0.elicit(&self.server, request).await,
            None => Ok(rmcp::model::ElicitResult::new(
                rmcp::model::ElicitationAction::Decline,
            )),
        }
    }

    #[allow(deprecated)] // logging (SEP-2577) is deprecated but servers still send it
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let Some(client) = self.callers.as_ref().and_then(|c| c.latest_any()) else {
            return;
        };
        if let Ok(params) = serde_json::to_value(&params) {
            client.log(params);
        }
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.server, uri = %params.uri, "resources/updated");
        self.signals.resource_updated(params.uri);
    }

    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        _: NotificationContext<RoleClient>,
    ) {
        if notification.method == crate::url_elicitation::ELICITATION_COMPLETE {
            self.completed(notification.params).await;
        } else if notification.method == TASK_STATUS
            && let Some(params) = notification.params
        {
            tracing::debug!(server = %self.server, "notifications/tasks/status");
            self.signals.task_status(params);
        }
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "tools/list_changed");
        self.signals.bump(ChangeKind::ToolsChanged);
    }

    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "resources/list_changed");
        self.signals.bump(ChangeKind::ResourcesChanged);
    }

    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "prompts/list_changed");
        self.signals.bump(ChangeKind::PromptsChanged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_moves_the_counter_and_broadcasts() {
        let s = ChangeSignals::default();
        let mut rx = s.subscribe();
        let before = s.epoch(ChangeKind::ToolsChanged);
        s.bump(ChangeKind::ToolsChanged);
        assert_eq!(s.epoch(ChangeKind::ToolsChanged), before + 1);
        assert_eq!(rx.try_recv().unwrap(), ChangeKind::ToolsChanged);
        assert_eq!(s.epoch(ChangeKind::PromptsChanged), 0);
    }
}
