//! Session-era MCP sessions any replica resumes.
//!
//! A 2025-era client keeps the `Mcp-Session-Id` one replica gave it and a
//! load balancer may send its next request to another. rmcp's streamable
//! HTTP server resumes an unknown session id from an external
//! [`SessionStore`]: it loads the client's `initialize` parameters, makes
//! a fresh handler and replays the handshake, so the client never notices.
//! Here that store is the gateway's state store, one record per endpoint
//! (`/mcp`, or a durable session's `/sessions/{id}/mcp`), resumable on that
//! endpoint only; the upstream connections the resumed session uses are
//! this replica's own.
//!
//! [`Resumable`] keeps every endpoint's session manager, so this replica
//! can say which MCP sessions it holds (to keep their records from
//! expiring, and to see whether a resume came to anything) and close one
//! its client ended on another replica. Which session ids are resumed at
//! all, and one request at a time, is [`crate::inbound`]'s to decide
//! before rmcp sees the request: only those the store keeps a record of.

use std::collections::HashMap;
use std::sync::Arc;

use extpool_state::StateStore;
use parking_lot::Mutex;
use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    SessionManager, SessionState, SessionStore, SessionStoreError,
};

/// The [`SessionStore`] of one endpoint, on the state store.
struct EndpointStore {
    store: StateStore,
    /// `""` for `/mcp`, else the durable session's id.
    endpoint: String,
}

#[async_trait::async_trait]
impl SessionStore for EndpointStore {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(json) = self.store.mcp_session(&self.endpoint, id).await? else {
            return Ok(None);
        };
        match serde_json::from_str(&json) {
            Ok(state) => Ok(Some(state)),
            Err(e) => {
                // Unreadable (another version wrote it): the client starts
                // a new session, as for any unknown id.
                tracing::warn!(endpoint = %self.endpoint, "a stored MCP session is unreadable ({e}); its client must start a new one");
                Ok(None)
            }
        }
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let json = serde_json::to_string(state)?;
        self.store
            .put_mcp_session(&self.endpoint, id, &json)
            .await?;
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        self.store.delete_mcp_session(&self.endpoint, id).await?;
        Ok(())
    }
}

/// Every endpoint's MCP session manager, and the store that lets other
/// replicas resume their sessions.
pub(crate) struct Resumable {
    store: Option<StateStore>,
    managers: Mutex<HashMap<String, Arc<LocalSessionManager>>>,
}

impl Resumable {
    /// Sessions resumable across replicas when `store` is given. Idle
    /// sessions are ended by the gateway's reaper ([`crate::live`]), not by
    /// rmcp: its idle timer restarts on every message the server sends,
    /// and ends a session whose client is listening on a quiet stream.
    pub(crate) fn new(store: Option<StateStore>) -> Self {
        Self {
            store,
            managers: Mutex::new(HashMap::new()),
        }
    }

    /// The records of `endpoint`'s sessions in the state store, if there is
    /// one.
    fn endpoint_store(&self, endpoint: &str) -> Option<EndpointStore> {
        Some(EndpointStore {
            store: self.store.clone()?,
            endpoint: endpoint.to_owned(),
        })
    }

    /// The session manager of `endpoint` (made on first use).
    pub(crate) fn manager(&self, endpoint: &str) -> Arc<LocalSessionManager> {
        self.managers
            .lock()
            .entry(endpoint.to_owned())
            .or_insert_with(|| {
                let mut manager = LocalSessionManager::default();
                manager.session_config.keep_alive = None;
                Arc::new(manager)
            })
            .clone()
    }

    /// `config` for `endpoint`: its sessions kept in the state store, if
    /// there is one, so any replica resumes them.
    pub(crate) fn config(
        &self,
        mut config: StreamableHttpServerConfig,
        endpoint: &str,
    ) -> StreamableHttpServerConfig {
        if let Some(record) = self.endpoint_store(endpoint) {
            config.session_store = Some(Arc::new(record));
        }
        config
    }

    /// The ids of every MCP session this replica holds.
    pub(crate) async fn held(&self) -> Vec<String> {
        let managers: Vec<Arc<LocalSessionManager>> =
            self.managers.lock().values().cloned().collect();
        let mut ids = Vec::new();
        for manager in managers {
            ids.extend(
                manager
                    .sessions
                    .read()
                    .await
                    .keys()
                    .map(|id| id.to_string()),
            );
        }
        ids
    }

    /// Closes MCP session `id` of `endpoint` here, if held (its client
    /// ended it through another replica).
    pub(crate) async fn close(&self, endpoint: &str, id: &str) {
        let manager = self.managers.lock().get(endpoint).cloned();
        if let Some(manager) = manager
            && let Err(e) = manager.close_session(&id.to_owned().into()).await
        {
            tracing::debug!(endpoint, "closing an MCP session ended elsewhere: {e}");
        }
    }

    /// Keeps the record of own MCP session `id` of `endpoint` (its client's
    /// `initialize` parameters, as rmcp's store keeps its sessions'), so
    /// any replica resumes it; without a store, nothing.
    pub(crate) async fn keep(&self, endpoint: &str, id: &str, params: &InitializeRequestParams) {
        let Some(record) = self.endpoint_store(endpoint) else {
            return;
        };
        if let Err(e) = record.store(id, &SessionState::new(params.clone())).await {
            // Other replicas then cannot resume it; this one serves it.
            tracing::warn!(endpoint, "cannot record an MCP session: {e}");
        }
    }

    /// The `initialize` parameters MCP session `id` of `endpoint` was made
    /// with, from the store's record; `None` without one (or a store).
    pub(crate) async fn load(&self, endpoint: &str, id: &str) -> Option<InitializeRequestParams> {
        match self.endpoint_store(endpoint)?.load(id).await {
            Ok(state) => Some(state?.initialize_params),
            Err(e) => {
                tracing::warn!(endpoint, "cannot read an MCP session's record: {e}");
                None
            }
        }
    }

    /// Ends MCP session `id` of `endpoint` for good: closed here and its
    /// record removed, so no replica resumes it (its `initialize` failed).
    pub(crate) async fn discard(&self, endpoint: &str, id: &str) {
        self.close(endpoint, id).await;
        if let Some(store) = &self.store
            && let Err(e) = store.delete_mcp_session(endpoint, id).await
        {
            tracing::debug!(endpoint, "removing a failed MCP session's record: {e}");
        }
    }

    /// Closes every MCP session of `endpoint` here and forgets its manager
    /// (its durable session was deleted).
    pub(crate) async fn forget(&self, endpoint: &str) {
        let manager = self.managers.lock().remove(endpoint);
        let Some(manager) = manager else {
            return;
        };
        let ids: Vec<_> = manager.sessions.read().await.keys().cloned().collect();
        for id in ids {
            let _ = manager.close_session(&id).await;
        }
    }
}
