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
//!
//! A session belongs to the principal that created it
//! ([`crate::identity`]): only it, or an operator, may see, call, refresh
//! or delete it; to anyone else it does not exist (HTTP 404, the answer
//! for an id nobody made), and its per-session servers never start for
//! them.

use std::collections::BTreeMap;
use std::sync::Arc;

use extpool_host::McpServerConfig;
use extpool_host::core::Principal;
use extpool_state::{NameAuthority, NewSession, Session, SessionId, StateError, StoreEvent};
use parking_lot::{Mutex, RwLock};
use tokio::sync::broadcast::error::RecvError;

use crate::notify::{ListKind, Notifier};
use crate::shared::Shared;

mod admission;
mod follow;
pub mod replica;

pub use crate::held::sessions::{OpenSession, RefreshResponse, SessionError, Sessions};
pub(crate) use crate::held::sessions::{ids, visible};
use follow::follow;

/// How many of its next made ids a create without an id tries.
const MADE_ID_TRIES: usize = 64;

pub use crate::options::DEFAULT_MAX_SESSION_SERVERS;

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

/// A session just made.
pub(crate) struct Created {
    /// As stored.
    pub session: Session,
    /// Open here.
    pub open: Arc<OpenSession>,
    /// Names active at its creation that it was not granted: past the most
    /// one session holds, or refused by the store's rule of names.
    pub not_granted: usize,
}

impl Sessions {
    /// Creates a session: its per-session servers started in its view, and
    /// every name active in it now granted (as many as a session holds:
    /// [`OpenSession::grantable`]).
    pub(crate) async fn create(
        &self,
        shared: &Shared,
        request: CreateRequest,
        principal: &Principal,
    ) -> Result<Created, SessionError> {
        if !request.mcp_servers.is_empty() && !self.accept_servers {
            return Err(SessionError::ServersNotAccepted);
        }
        if request.mcp_servers.len() > self.max_servers {
            return Err(SessionError::TooManyAsked {
                asked: request.mcp_servers.len(),
                max: self.max_servers,
            });
        }
        for (name, config) in &request.mcp_servers {
            admission::check_server(shared, name, config).await?;
        }
        let owner = crate::identity::owner_of(principal);
        let chosen = match &request.id {
            Some(id) => Some(ids::chosen(id, owner.as_deref())?),
            None => None,
        };
        // Under the lock, an id found free stays free until the session is
        // made (another replica aside: the store refuses its create).
        let _guard = self.opening.lock().await;
        let id = match chosen {
            Some(id) if self.exists(&id).await? => {
                return Err(SessionError::Exists {
                    id: request.id.unwrap_or_default(),
                });
            }
            Some(id) => id,
            None => self.made_id(shared, owner.as_deref()).await?,
        };
        // Before any server starts; the store checks again as it creates.
        let held = self.store.count_owned(owner.as_deref()).await?;
        if held >= self.per_principal as u64 {
            return Err(SessionError::TooManySessions {
                held,
                max: self.per_principal,
            });
        }
        // The view is a new one: no session of this id is open here.
        let open = self
            .open_view(shared, &id, owner.clone(), &request.mcp_servers)
            .await?;
        let (names, not_granted) = open.grantable(self.store.limits(), &NameAuthority::default());
        let mut new = NewSession::new(id.clone())
            .at_most_owned(self.per_principal)
            .auto_grant(request.auto_grant)
            .granting(names, open.view.revision().number());
        for (name, config) in request.mcp_servers {
            new = new.server(name, config);
        }
        new.owner = owner;
        let session = match self.store.create(&new).await {
            Ok(session) => session,
            Err(e) => {
                open.view.close().await;
                return Err(match e {
                    StateError::AlreadyExists { .. } => SessionError::Exists {
                        id: ids::shown(&id, Some(principal)),
                    },
                    StateError::TooManySessions { held, limit, .. } => {
                        SessionError::TooManySessions { held, max: limit }
                    }
                    e => e.into(),
                });
            }
        };
        open.set_authority(session.authority.clone());
        let open = self.keep_open(shared, open).await;
        Ok(Created {
            session,
            open,
            not_granted,
        })
    }

    /// A new id the gateway makes for a session of the caller whose owner
    /// key is `owner`: the first of its next made ids that no session has
    /// (a caller may have chosen one of them; a replica restarted with the
    /// same `--replica-id` makes them again).
    async fn made_id(
        &self,
        shared: &Shared,
        owner: Option<&str>,
    ) -> Result<SessionId, SessionError> {
        let mut tried = String::new();
        for _ in 0..MADE_ID_TRIES {
            tried = shared.session_id();
            let id = ids::chosen(&tried, owner)?;
            if !self.exists(&id).await? {
                return Ok(id);
            }
        }
        Err(SessionError::Exists { id: tried })
    }

    /// Keeps `open` among the sessions open here: its clients told of
    /// changes, the store told this replica holds it.
    async fn keep_open(&self, shared: &Shared, open: OpenSession) -> Arc<OpenSession> {
        let open = Arc::new(open);
        self.open
            .lock()
            .insert(open.id.as_str().to_owned(), open.clone());
        follow(shared, &open);
        self.hold(&open.id).await;
        open
    }

    /// The open session `id` if `principal` may act on it, opening it
    /// from the store when it is not (after a restart: its per-session
    /// servers start again — never for another principal).
    pub(crate) async fn get(
        &self,
        shared: &Shared,
        id: &str,
        principal: &Principal,
    ) -> Result<Arc<OpenSession>, SessionError> {
        if let Some(open) = self.held_for(id, principal)? {
            return Ok(open);
        }
        let _guard = self.opening.lock().await;
        if let Some(open) = self.held_for(id, principal)? {
            return Ok(open);
        }
        let stored = self.stored_for(id, principal).await?;
        let id = stored.summary.id.clone();
        let open = self
            .open_view(shared, &id, stored.summary.owner.clone(), &stored.servers)
            .await?;
        open.set_authority(stored.authority);
        let open = self.keep_open(shared, open).await;
        tracing::debug!(session = %id, replica = %self.replica, "session opened from the store");
        Ok(open)
    }

    /// Reads the session's authority from the store again (another replica
    /// may have granted more) and tells its clients when what they see
    /// changed. A session deleted meanwhile is closed here.
    pub(crate) async fn reload(&self, shared: &Shared, open: &Arc<OpenSession>) {
        match self.store.authority(&open.id).await {
            Ok(authority) => {
                let before = visible(open);
                open.set_authority(authority);
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
        let open = self.open.lock().remove(id);
        // Before its MCP sessions end: their calls are told why.
        if let Some(open) = &open {
            open.closed.cancel();
        }
        shared.front.live.forget_endpoint(id);
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
                () = shared.front.stop.cancelled() => return,
            };
            match event {
                Ok(StoreEvent::Granted(id)) => {
                    if let Some(open) = self.open_here(id.as_str()) {
                        self.reload(shared, &open).await;
                    }
                }
                Ok(StoreEvent::Deleted(id)) => self.close_here(shared, id.as_str()).await,
                Ok(StoreEvent::McpSessionClosed { endpoint, id }) => {
                    shared.front.live.forget(&(endpoint, id));
                }
                Ok(StoreEvent::ApiKeysChanged) => shared.access.identity.api_keys_changed(),
                Ok(_) | Err(RecvError::Lagged(_)) => {
                    shared.access.identity.api_keys_changed();
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
        owner: Option<String>,
        servers: &BTreeMap<String, McpServerConfig>,
    ) -> Result<OpenSession, SessionError> {
        let open_now = self.open_servers();
        if open_now + servers.len() > self.max_servers {
            return Err(SessionError::TooManyServers {
                open: open_now,
                asked: servers.len(),
                max: self.max_servers,
            });
        }
        let view = shared.host.session(id.as_str())?;
        crate::handler::caller_views::register(shared, &view, owner.clone()).await;
        for (name, config) in servers {
            let config = admission::under_rule(shared, config);
            let registered = match shared.host.owned_mcp_server(name, config) {
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
        let open = OpenSession {
            id: id.clone(),
            owner,
            view,
            authority: RwLock::new(Arc::default()),
            servers: servers.keys().cloned().collect(),
            notifier: Notifier::default(),
            base: shared.access.session_policy.clone(),
            last_used: Mutex::new(tokio::time::Instant::now()),
            closed: tokio_util::sync::CancellationToken::new(),
        };
        // Nothing granted until the store says what is.
        open.set_authority(NameAuthority::default());
        Ok(open)
    }

    /// Refreshes session `id`: one reconciliation cycle, then the names
    /// active now added to its authority. Idempotent; never removes a name.
    pub(crate) async fn refresh(
        &self,
        shared: &Shared,
        id: &str,
        principal: &Principal,
    ) -> Result<RefreshResponse, SessionError> {
        let open = self.get(shared, id, principal).await?;
        self.refresh_open(&open).await
    }

    /// Deletes session `id`: closes its view (its per-session servers
    /// stop) and removes it from the store. Returns the servers' names.
    /// `DELETE /v1/sessions/{id}` and the session's own `CloseSession`
    /// both close a session here.
    pub(crate) async fn delete(
        &self,
        shared: &Shared,
        id: &str,
        principal: &Principal,
    ) -> Result<Vec<String>, SessionError> {
        let session_id = self.stored_for(id, principal).await?.summary.id;
        let servers = self.store.delete(&session_id).await?;
        self.close_here(shared, session_id.as_str()).await;
        Ok(servers.into_keys().collect())
    }

    /// Closes, on this replica, every open session unused for the idle
    /// timeout at `now` whose endpoint holds no MCP session and has no
    /// request on its way in: its view and per-session servers close, the
    /// store keeps it (and that this replica no longer holds it), and its
    /// next request opens it again.
    /// Returns how many it closed.
    pub(crate) async fn close_idle(&self, shared: &Shared, now: tokio::time::Instant) -> u64 {
        let idle = shared.front.live.idle();
        let candidates: Vec<String> = self
            .open
            .lock()
            .iter()
            .filter(|(_, o)| now.saturating_duration_since(*o.last_used.lock()) >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        let mut count = 0;
        for id in candidates {
            let mut closed = None;
            shared.front.live.if_endpoint_idle(&id, || {
                closed = self.open.lock().remove(&id);
            });
            let Some(open) = closed else { continue };
            shared.front.live.forget_endpoint(&id);
            open.view.close().await;
            if let Err(e) = self.store.release(&open.id, &self.replica).await {
                tracing::debug!(session = %id, "cannot record that this replica let the session go: {e}");
            }
            tracing::debug!(session = %id, "session idle for {idle:?}: closed here, kept in the store");
            count += 1;
        }
        count
    }
}
