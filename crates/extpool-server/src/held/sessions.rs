//! The durable sessions this replica has open, as the gateway keeps them
//! (`/v1/sessions`; the sessions module says what they are): the store,
//! each open session ([`OpenSession`]: its view, its name authority, its
//! per-session servers), whose it is, and the bounds. What needs the whole
//! gateway (making, opening, reloading, closing a session) is the
//! sessions module's; this answers from the store and the open ones.

use std::collections::HashMap;
use std::sync::Arc;

use extpool_host::core::Principal;
use extpool_state::{RefreshOutcome, ReplicaId, Session, SessionId, StateError, StateStore};
use parking_lot::Mutex;
use serde::Serialize;

use crate::notify::ListKind;

mod error;
pub(crate) mod ids;
mod open;

pub use error::SessionError;
pub use open::OpenSession;
pub(crate) use open::visible;

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
    /// Names active now that it was not granted: past the most one session
    /// holds, or refused by the store's rule of names.
    pub not_granted: u64,
}

/// Every session of the gateway: what the store keeps and what this
/// replica has open. Making, opening, reloading and closing one (which
/// need the whole gateway) are methods of the sessions module.
pub struct Sessions {
    /// The store, as this replica's (it records what the replica holds).
    pub(crate) store: StateStore,
    /// This replica's id among those sharing the store.
    pub(crate) replica: ReplicaId,
    /// The sessions open here, by their whole id.
    pub(crate) open: Mutex<HashMap<String, Arc<OpenSession>>>,
    /// Serializes opening, so one session is never opened twice.
    pub(crate) opening: tokio::sync::Mutex<()>,
    /// Whether clients may bring per-session servers.
    pub(crate) accept_servers: bool,
    /// Most per-session servers open at once on this replica.
    pub(crate) max_servers: usize,
    /// Most sessions one principal holds in the store.
    pub(crate) per_principal: usize,
}

impl Sessions {
    /// Sessions kept in `store`, served by replica `replica`;
    /// `accept_servers`: whether clients may bring per-session servers, at
    /// most `max_servers` open at once on this replica; at most
    /// `per_principal` sessions of one principal in the store.
    pub fn new(
        store: StateStore,
        replica: ReplicaId,
        accept_servers: bool,
        max_servers: usize,
        per_principal: usize,
    ) -> Self {
        Self {
            store: store.for_replica(replica.clone()),
            replica,
            open: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
            accept_servers,
            max_servers,
            per_principal,
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

    /// The stored session `principal` means by `id` ([`ids::candidates`])
    /// if it may act on it; to anyone else it does not exist.
    pub(crate) async fn stored_for(
        &self,
        id: &str,
        principal: &Principal,
    ) -> Result<Session, SessionError> {
        for key in ids::candidates(id, principal)? {
            match self.store.get(&key).await {
                Ok(stored) if principal.may_act_on(stored.summary.owner.as_deref()) => {
                    return Ok(stored);
                }
                Ok(_) | Err(StateError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(Self::not_found(id))
    }

    /// The answer for an id `principal` has no session of: another
    /// principal's session answers exactly so.
    pub(crate) fn not_found(id: &str) -> SessionError {
        match SessionId::new(id) {
            Ok(session) => StateError::NotFound { session }.into(),
            Err(e) => e.into(),
        }
    }

    /// The stored id of the session `principal` means by `id`, if it may
    /// act on it: the key of every map of sessions (open sessions, their
    /// endpoints' MCP sessions).
    pub(crate) async fn resolve(
        &self,
        id: &str,
        principal: &Principal,
    ) -> Result<SessionId, SessionError> {
        if let Some(open) = self.held_for(id, principal)? {
            return Ok(open.id.clone());
        }
        Ok(self.stored_for(id, principal).await?.summary.id)
    }

    /// Whether session `id` (a whole id) exists, open here or stored.
    pub(crate) async fn exists(&self, id: &SessionId) -> Result<bool, SessionError> {
        if self.open.lock().contains_key(id.as_str()) {
            return Ok(true);
        }
        match self.store.get(id).await {
            Ok(_) => Ok(true),
            Err(StateError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn open_servers(&self) -> usize {
        self.open.lock().values().map(|s| s.servers.len()).sum()
    }

    /// The session `principal` means by `id` ([`ids::candidates`]) if it
    /// is open here and `principal` may act on it (`Ok(None)`: not open
    /// here, or not its).
    pub(crate) fn held_for(
        &self,
        id: &str,
        principal: &Principal,
    ) -> Result<Option<Arc<OpenSession>>, SessionError> {
        for key in ids::candidates(id, principal)? {
            let held = self.open.lock().get(key.as_str()).cloned();
            if let Some(open) = held
                && principal.may_act_on(open.owner.as_deref())
            {
                open.touch();
                return Ok(Some(open));
            }
        }
        Ok(None)
    }

    /// Records in the store that this replica holds session `id` open; a
    /// failure only leaves the record out (the session works).
    pub(crate) async fn hold(&self, id: &SessionId) {
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
    pub(crate) fn open_here(&self, id: &str) -> Option<Arc<OpenSession>> {
        self.open.lock().get(id).cloned()
    }

    /// Refreshes open session `open` (its own client asked, through
    /// RefreshMcpSources).
    pub(crate) async fn refresh_open(
        &self,
        open: &Arc<OpenSession>,
    ) -> Result<RefreshResponse, SessionError> {
        let cycle = open.view.reconcile_now().await;
        let revision = open.view.revision().number();
        let held = self.store.authority(&open.id).await?;
        let (names, not_granted) = open.grantable(self.store.limits(), &held);
        let outcome: RefreshOutcome = self.store.refresh(&open.id, names, revision).await?;
        let authority = self.store.authority(&open.id).await?;
        open.set_authority(authority);
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
            not_granted: not_granted as u64,
        })
    }

    /// Closes every open session's view (the store keeps them) and
    /// unregisters this replica: it holds nothing any more.
    pub async fn close_all(&self) {
        let open: Vec<Arc<OpenSession>> = self.open.lock().drain().map(|(_, s)| s).collect();
        for session in open {
            session.view.close().await;
        }
        if let Err(e) = self.store.unregister_replica(&self.replica).await {
            tracing::warn!(replica = %self.replica, "cannot unregister this replica: {e}");
        }
    }
}
