//! Gateway sessions: the behaviour doc's session model on the durable
//! store ([`extpool_state::StateStore`]).
//!
//! A session has its own MCP endpoint (`/sessions/{id}/mcp`), optional
//! per-session servers (started with it, visible only to it, closed with
//! it) and a *name authority*: the catalog names it was granted. Automatic
//! reconciliation changes what is available; only a refresh grants new
//! names, and never takes one away. An open session is a host view with
//! its per-session servers registered in it; a session in the store but not
//! open (after a restart) is opened again on first use.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use extpool_host::{McpServerConfig, View};
use extpool_state::{
    NameAuthority, NewSession, RefreshOutcome, ReplicaId, Session, SessionId, StateError,
    StateStore, StoreEvent,
};
use parking_lot::{Mutex, RwLock};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;

use crate::gateway::Shared;
use crate::handler::GatewayHandler;
use crate::notify::{ListKind, Notifier};

/// Default most per-session servers open at once, across sessions.
pub const DEFAULT_MAX_SESSION_SERVERS: usize = 64;

/// Why a session operation failed. Messages are for the client: they name
/// what to change, never a secret or an internal detail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The store refused or failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// A per-session server that cannot be accepted.
    #[error("per-session server {name:?}: {reason}")]
    BadServer {
        /// Its name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Per-session servers are not accepted by this deployment.
    #[error(
        "this gateway does not accept per-session MCP servers (it does not advertise mcp_servers_on_create)"
    )]
    ServersNotAccepted,
    /// Too many per-session servers open.
    #[error(
        "too many per-session MCP servers open ({open} of at most {max}); close sessions you no longer need (DELETE /v1/sessions/{{id}})"
    )]
    TooManyServers {
        /// Open now.
        open: usize,
        /// The limit.
        max: usize,
    },
    /// The host refused to open the session's view.
    #[error("cannot open the session: {0}")]
    Host(#[from] extpool_host::HostError),
}

impl SessionError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> u16 {
        match self {
            SessionError::State(StateError::NotFound { .. }) => 404,
            SessionError::State(StateError::AlreadyExists { .. }) => 409,
            SessionError::State(
                StateError::InvalidId { .. }
                | StateError::InvalidName { .. }
                | StateError::TooManyNames { .. }
                | StateError::TooManyServers { .. }
                | StateError::InvalidServerName { .. }
                | StateError::ConfigTooLarge { .. }
                | StateError::ResolvedSecrets { .. },
            ) => 400,
            SessionError::BadServer { .. } | SessionError::ServersNotAccepted => 400,
            SessionError::TooManyServers { .. } => 429,
            _ => 500,
        }
    }
}

/// What a client asks for when it creates a session.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    /// The session id; generated when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// Per-session MCP servers by name (streamable HTTP: `url`, `headers`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Grant every active name as it appears (interactive clients that
    /// expect `list_changed` to just work).
    #[serde(default)]
    pub auto_grant: bool,
}

/// The answer to a refresh.
#[derive(Debug, Clone, Serialize)]
pub struct RefreshResponse {
    /// The session.
    pub session: String,
    /// The catalog revision this refresh pinned (a newer one may be
    /// published by the time the answer arrives).
    pub revision: u64,
    /// The replica that served the refresh: [`RefreshResponse::revision`]
    /// is that replica's revision (each replica numbers its own).
    pub replica: String,
    /// Whether the reconciliation cycle it ran published anything new.
    pub cycle_changed: bool,
    /// Whether the union added a name to the authority.
    pub authority_changed: bool,
    /// The names it added.
    pub added: Vec<String>,
    /// Names granted now, in all.
    pub granted: u64,
}

/// One open session.
pub struct OpenSession {
    /// Its id.
    pub id: SessionId,
    /// Its host view (per-session servers registered in it).
    pub view: View,
    /// Its authority, as last read from or written to the store.
    pub authority: RwLock<NameAuthority>,
    /// Names of its per-session servers.
    pub servers: Vec<String>,
    /// Its MCP clients, for `list_changed`.
    pub notifier: Notifier,
}

impl OpenSession {
    /// Whether the session may see and call `name` (built-ins always).
    pub fn allows(&self, name: &str, builtin: bool) -> bool {
        builtin || self.authority.read().allows(name)
    }

    /// Whether the session may see and call `tool`: [`OpenSession::allows`]
    /// its name, and it is not listed by another server under the name of
    /// one of this session's own servers (a server discovered while the
    /// session was closed takes none of its servers' names).
    pub fn allows_tool(&self, tool: &extpool_host::ToolInfo) -> bool {
        self.allows(&tool.name, tool.builtin) && !self.shadowed(tool)
    }

    fn shadowed(&self, tool: &extpool_host::ToolInfo) -> bool {
        use extpool_host::catalog::names::{MCP_PREFIX, SEPARATOR};
        let Some(namespace) = tool
            .name
            .strip_prefix(MCP_PREFIX)
            .and_then(|rest| rest.split(SEPARATOR).next())
        else {
            return false;
        };
        // Under one of its servers' names, only the session's own catalog
        // (not the pool's it overlays) may list a tool.
        !tool.builtin
            && self
                .servers
                .iter()
                .any(|own| own.eq_ignore_ascii_case(namespace))
            && !self
                .view
                .revision()
                .tools()
                .iter()
                .any(|own| own.name == tool.name)
    }

    /// The catalog names active in this session's view now (built-ins
    /// excluded: they are not granted, they are always there).
    fn active(&self) -> Vec<String> {
        self.view
            .tools()
            .into_iter()
            .filter(|t| !t.builtin)
            .map(|t| t.name)
            .collect()
    }
}

/// The MCP service of one durable session's endpoint.
pub(crate) type SessionService = StreamableHttpService<GatewayHandler, LocalSessionManager>;

/// Every session of the gateway.
pub struct Sessions {
    store: StateStore,
    replica: ReplicaId,
    open: Mutex<HashMap<String, Arc<OpenSession>>>,
    /// Serializes opening, so one session is never opened twice.
    opening: tokio::sync::Mutex<()>,
    /// The MCP services of the sessions' endpoints, made on first use.
    pub(crate) services: Mutex<HashMap<String, SessionService>>,
    accept_servers: bool,
    max_servers: usize,
}

impl Sessions {
    /// Sessions kept in `store`, served by replica `replica`;
    /// `accept_servers`: whether clients may bring per-session servers, at
    /// most `max_servers` open at once on this replica.
    pub fn new(
        store: StateStore,
        replica: ReplicaId,
        accept_servers: bool,
        max_servers: usize,
    ) -> Self {
        Self {
            store: store.for_replica(replica.clone()),
            replica,
            open: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
            services: Mutex::new(HashMap::new()),
            accept_servers,
            max_servers,
        }
    }

    /// The store.
    pub fn store(&self) -> &StateStore {
        &self.store
    }

    /// This replica's id.
    pub fn replica(&self) -> &ReplicaId {
        &self.replica
    }

    /// Whether clients may bring per-session servers.
    pub fn accepts_servers(&self) -> bool {
        self.accept_servers
    }

    fn open_servers(&self) -> usize {
        self.open.lock().values().map(|s| s.servers.len()).sum()
    }

    /// Creates a session: its per-session servers started in its view, and
    /// every name active in it now granted.
    pub(crate) async fn create(
        &self,
        shared: &Shared,
        request: CreateRequest,
    ) -> Result<(Session, Arc<OpenSession>), SessionError> {
        if !request.mcp_servers.is_empty() && !self.accept_servers {
            return Err(SessionError::ServersNotAccepted);
        }
        for (name, config) in &request.mcp_servers {
            check_server(shared, name, config)?;
        }
        let id = match request.id {
            Some(id) => SessionId::new(id)?,
            None => SessionId::new(shared.session_id())?,
        };
        let _guard = self.opening.lock().await;
        let open = self.open_view(shared, &id, &request.mcp_servers).await?;
        let mut new = NewSession::new(id.clone())
            .auto_grant(request.auto_grant)
            .granting(open.active(), open.view.revision().number());
        for (name, config) in request.mcp_servers {
            new = new.server(name, config);
        }
        let session = match self.store.create(&new).await {
            Ok(session) => session,
            Err(e) => {
                open.view.close().await;
                return Err(e.into());
            }
        };
        *open.authority.write() = session.authority.clone();
        let open = Arc::new(open);
        self.open
            .lock()
            .insert(id.as_str().to_owned(), open.clone());
        follow(shared, &open);
        self.hold(&id).await;
        Ok((session, open))
    }

    /// The open session `id`, opening it from the store when it is not
    /// (after a restart: its per-session servers start again).
    pub(crate) async fn get(
        &self,
        shared: &Shared,
        id: &str,
    ) -> Result<Arc<OpenSession>, SessionError> {
        if let Some(open) = self.open.lock().get(id).cloned() {
            return Ok(open);
        }
        let _guard = self.opening.lock().await;
        if let Some(open) = self.open.lock().get(id).cloned() {
            return Ok(open);
        }
        let id = SessionId::new(id)?;
        let stored = self.store.get(&id).await?;
        let open = self.open_view(shared, &id, &stored.servers).await?;
        *open.authority.write() = stored.authority;
        let open = Arc::new(open);
        self.open
            .lock()
            .insert(id.as_str().to_owned(), open.clone());
        follow(shared, &open);
        self.hold(&id).await;
        tracing::debug!(session = %id, replica = %self.replica, "session opened from the store");
        Ok(open)
    }

    /// Records in the store that this replica holds session `id` open; a
    /// failure only leaves the record out (the session works).
    async fn hold(&self, id: &SessionId) {
        if let Err(e) = self.store.hold(id, &self.replica).await {
            tracing::warn!(session = %id, "cannot record that this replica holds the session: {e}");
        }
    }

    /// Holds every open session again (after this replica was swept).
    pub(crate) async fn hold_all(&self) {
        let ids: Vec<SessionId> = self.open.lock().values().map(|o| o.id.clone()).collect();
        for id in ids {
            self.hold(&id).await;
        }
    }

    /// The session `id` if this replica has it open.
    fn open_here(&self, id: &str) -> Option<Arc<OpenSession>> {
        self.open.lock().get(id).cloned()
    }

    /// Reads the session's authority from the store again (another replica
    /// may have granted more) and tells its clients when what they see
    /// changed. A session deleted meanwhile is closed here.
    pub(crate) async fn reload(&self, shared: &Shared, open: &Arc<OpenSession>) {
        match self.store.authority(&open.id).await {
            Ok(authority) => {
                let before = visible(open);
                *open.authority.write() = authority;
                if visible(open) != before {
                    open.notifier.notify(ListKind::Tools).await;
                }
            }
            Err(StateError::NotFound { .. }) => self.close_here(shared, open.id.as_str()).await,
            Err(e) => {
                tracing::warn!(session = %open.id, "cannot read the session's authority: {e}")
            }
        }
    }

    /// Closes session `id` on this replica (it was deleted, maybe through
    /// another replica): its view and per-session servers, its endpoint's
    /// MCP sessions.
    async fn close_here(&self, shared: &Shared, id: &str) {
        self.services.lock().remove(id);
        let open = self.open.lock().remove(id);
        shared.resume.forget(id).await;
        if let Some(open) = open {
            tracing::info!(session = %id, "session closed on this replica");
            open.view.close().await;
        }
    }

    /// Follows the store's events until the gateway stops: names another
    /// replica granted reach this replica's open sessions (and their
    /// clients), sessions deleted elsewhere close here, MCP sessions ended
    /// elsewhere end here; after a gap, every open session is read again.
    pub(crate) async fn follow_store(&self, shared: &Shared) {
        let mut events = self.store.events();
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                () = shared.stop.cancelled() => return,
            };
            match event {
                Ok(StoreEvent::Granted(id)) => {
                    if let Some(open) = self.open_here(id.as_str()) {
                        self.reload(shared, &open).await;
                    }
                }
                Ok(StoreEvent::Deleted(id)) => self.close_here(shared, id.as_str()).await,
                Ok(StoreEvent::McpSessionClosed { endpoint, id }) => {
                    shared.resume.close(&endpoint, &id).await;
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {
                    let open: Vec<Arc<OpenSession>> = self.open.lock().values().cloned().collect();
                    for session in open {
                        self.reload(shared, &session).await;
                    }
                }
                Err(RecvError::Closed) => return,
            }
        }
    }

    async fn open_view(
        &self,
        shared: &Shared,
        id: &SessionId,
        servers: &BTreeMap<String, McpServerConfig>,
    ) -> Result<OpenSession, SessionError> {
        let open_now = self.open_servers();
        if open_now + servers.len() > self.max_servers {
            return Err(SessionError::TooManyServers {
                open: open_now,
                max: self.max_servers,
            });
        }
        let view = shared.host.session(id.as_str())?;
        for (name, config) in servers {
            let registered = match shared.host.owned_mcp_server(name, config.clone()) {
                Ok(cap) => view.register(cap).await,
                Err(e) => Err(e),
            };
            if let Err(e) = registered {
                view.close().await;
                return Err(SessionError::BadServer {
                    name: name.clone(),
                    reason: e.to_string(),
                });
            }
        }
        Ok(OpenSession {
            id: id.clone(),
            view,
            authority: RwLock::new(NameAuthority::default()),
            servers: servers.keys().cloned().collect(),
            notifier: Notifier::default(),
        })
    }

    /// Refreshes session `id`: one reconciliation cycle, then the names
    /// active now added to its authority. Idempotent; never removes a name.
    pub(crate) async fn refresh(
        &self,
        shared: &Shared,
        id: &str,
    ) -> Result<RefreshResponse, SessionError> {
        let open = self.get(shared, id).await?;
        let cycle = open.view.reconcile_now().await;
        let revision = open.view.revision().number();
        let outcome: RefreshOutcome = self
            .store
            .refresh(&open.id, open.active(), revision)
            .await?;
        let authority = self.store.authority(&open.id).await?;
        *open.authority.write() = authority;
        if outcome.changed {
            open.notifier.notify(ListKind::Tools).await;
        }
        Ok(RefreshResponse {
            session: open.id.as_str().to_owned(),
            revision: outcome.revision,
            replica: self.replica.as_str().to_owned(),
            cycle_changed: cycle.changed,
            authority_changed: outcome.changed,
            added: outcome.added,
            granted: outcome.granted_count,
        })
    }

    /// Deletes session `id`: closes its view (its per-session servers
    /// stop) and removes it from the store. Returns the servers' names.
    pub(crate) async fn delete(
        &self,
        shared: &Shared,
        id: &str,
    ) -> Result<Vec<String>, SessionError> {
        let session_id = SessionId::new(id)?;
        let servers = self.store.delete(&session_id).await?;
        self.close_here(shared, id).await;
        Ok(servers.into_keys().collect())
    }

    /// Closes every open session's view (the store keeps them) and
    /// unregisters this replica: it holds nothing any more.
    pub async fn close_all(&self) {
        self.services.lock().clear();
        let open: Vec<Arc<OpenSession>> = self.open.lock().drain().map(|(_, s)| s).collect();
        for session in open {
            session.view.close().await;
        }
        if let Err(e) = self.store.unregister_replica(&self.replica).await {
            tracing::warn!(replica = %self.replica, "cannot unregister this replica: {e}");
        }
    }
}

/// A per-session server must be a remote one unless the gateway accepts
/// session commands ([`crate::GatewayOptions::session_commands`]): a
/// client of the gateway may not otherwise make it start a local command.
fn check_server(shared: &Shared, name: &str, config: &McpServerConfig) -> Result<(), SessionError> {
    let bad = |reason: String| SessionError::BadServer {
        name: name.to_owned(),
        reason,
    };
    extpool_host::core::check_server_name(name).map_err(|e| bad(e.to_string()))?;
    let local = config.command.is_some() || config.url.is_none();
    if local && !shared.options.session_commands {
        return Err(bad(
            "a per-session server is a remote one (`url`, optional `headers`); a local `command` is accepted only in the gateway's configuration, or when the gateway runs with --session-commands".into(),
        ));
    }
    if shared.host.has_server(name) {
        return Err(bad(
            "a configured or discovered server already has this name".into(),
        ));
    }
    Ok(())
}

/// Notifies the session's clients whenever what it may see changes (a
/// granted name vanishing or returning); a name that is only available is
/// not announced until a refresh grants it.
fn follow(shared: &Shared, open: &Arc<OpenSession>) {
    let weak = Arc::downgrade(open);
    let stop = shared.stop.clone();
    let changes = open.view.changes();
    tokio::spawn(async move {
        use futures::StreamExt;
        let mut changes = Box::pin(changes);
        let mut last = weak.upgrade().map(|o| visible(&o));
        loop {
            let event = tokio::select! {
                e = changes.next() => e,
                () = stop.cancelled() => None,
            };
            if event.is_none() {
                return;
            }
            let Some(open) = weak.upgrade() else { return };
            let now = visible(&open);
            if last.as_ref() != Some(&now) {
                open.notifier.notify(ListKind::Tools).await;
                last = Some(now);
            }
        }
    });
}

/// The tool names a session's clients see now.
fn visible(open: &OpenSession) -> Vec<String> {
    open.view
        .tools()
        .into_iter()
        .filter(|t| open.allows_tool(t))
        .map(|t| t.name)
        .collect()
}
