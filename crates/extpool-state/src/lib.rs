//! extpool-state: the gateway's durable state.
//!
//! Sessions, their per-session MCP server configs and their *name
//! authority* — the set of catalog names a session has been granted — live
//! in one [`StateStore`], chosen by URL ([`StoreUrl`]): an embedded SQLite
//! file by default (nothing to install), or PostgreSQL when several
//! gateway replicas serve one address and must share it.
//!
//! The authority follows the behaviour doc's session model: reconciliation
//! changes what is *available*; only [`StateStore::refresh`] *grants*, by
//! adding the currently active names to the session's set — a union that
//! never removes a name, is idempotent (a retry confirms or completes it)
//! and works whatever the session's status. A name that vanishes stays
//! granted and applies again when it returns ([`NameAuthority::visible`]).
//!
//! Replicas sharing a store (PostgreSQL) also share what lets any of them
//! serve any session: which replicas are alive and which sessions each
//! holds open (heartbeats under a lease; a silent replica is swept), the
//! session-era MCP sessions any replica can resume, and [`StoreEvent`]s —
//! names granted, sessions deleted, MCP sessions ended — that reach every
//! replica (`NOTIFY`), so none serves from a stale copy.
//!
//! Sessions and resumable MCP sessions may name their owner — a
//! principal, an issuer and a subject as one opaque string — and a session
//! list may be one owner's ([`StateStore::list_owned`]). Static API keys
//! are kept by the digest of their secret only ([`api_key_digest`]).
//!
//! On PostgreSQL the replicas also share each caller's rate buckets
//! ([`StateStore::take_rate`]), so a caller's limit holds across them.
//!
//! The schema is versioned and migrated forward when a store is opened,
//! under a lock, so replicas starting together migrate once.

mod api_keys;
mod authority;
pub mod error;
mod events;
pub mod limits;
pub mod location;
mod mcp_sessions;
mod migrate;
pub mod model;
mod rate;
mod replicas;
mod serving;
mod sessions;
mod sql;
pub mod store;

pub use api_keys::{API_KEY_PREFIX, ApiKeyInfo, NewApiKey, api_key_digest};
pub use error::StateError;
pub use events::StoreEvent;
pub use limits::Limits;
pub use location::{Backend, StoreUrl};
pub use migrate::SCHEMA_VERSION;
pub use model::{
    MAX_ID_BYTES, NameAuthority, NewSession, RefreshOutcome, ReplicaId, ReplicaInfo, Session,
    SessionCursor, SessionId, SessionPage, SessionStatus, SessionSummary,
};
pub use rate::{MAX_RULE_BYTES, MAX_RULES_PER_TAKE, RateRule, RateTaken};
pub use store::{OpenOptions, StateStore};
