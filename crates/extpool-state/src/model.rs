//! The records of the state store: sessions, their status, their name
//! authority, and what a refresh reports.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use extpool_mcp::config::McpServerConfig;
use serde::{Deserialize, Serialize};

use crate::error::{StateError, quote_prefix};

/// Longest session id, in bytes.
pub const MAX_ID_BYTES: usize = 128;

/// The rule of session and replica ids: 1–128 bytes of
/// `A-Z a-z 0-9 - _ . : ~`, and not `.` or `..` (a client resolves
/// `/sessions/../mcp` to `/mcp`); the reason when `id` breaks it.
fn check_id(id: &str) -> Result<(), &'static str> {
    if id.is_empty() {
        return Err("empty");
    }
    if id == "." || id == ".." {
        return Err("\".\" and \"..\" are path segments, which URL clients remove");
    }
    if id.len() > MAX_ID_BYTES {
        return Err("longer than 128 bytes");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'~'))
    {
        return Err("only A-Z, a-z, 0-9 and - _ . : ~ are allowed");
    }
    Ok(())
}

/// A replica's id: the same characters as a [`SessionId`] (1–128 of
/// `A-Z a-z 0-9 - _ . : ~`), unique among the replicas sharing a store.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ReplicaId(String);

impl ReplicaId {
    /// Checks and wraps `id`.
    pub fn new(id: impl Into<String>) -> Result<ReplicaId, StateError> {
        let id = id.into();
        match check_id(&id) {
            Ok(()) => Ok(ReplicaId(id)),
            Err(reason) => Err(StateError::InvalidReplicaId {
                id: quote_prefix(&id),
                reason,
            }),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A replica sharing the store, as its heartbeats show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplicaInfo {
    /// Its id.
    pub id: ReplicaId,
    /// When it registered (Unix milliseconds).
    pub started_at_ms: i64,
    /// Its last heartbeat (Unix milliseconds).
    pub heartbeat_ms: i64,
    /// How many sessions it holds open.
    pub sessions: u64,
}

/// A session's id: 1–128 characters of `A-Z a-z 0-9 - _ . : ~`, so it is
/// safe in a URL path (`/sessions/{id}/mcp`), a header and a log line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// Checks and wraps `id`.
    pub fn new(id: impl Into<String>) -> Result<SessionId, StateError> {
        let id = id.into();
        match check_id(&id) {
            Ok(()) => Ok(SessionId(id)),
            Err(reason) => Err(StateError::InvalidId {
                id: quote_prefix(&id),
                reason,
            }),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SessionId, D::Error> {
        let s = String::deserialize(d)?;
        SessionId::new(s).map_err(serde::de::Error::custom)
    }
}

/// Where a session is in its life, as the behaviour doc names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// A client is using it (a run or call in progress).
    Active,
    /// Open, nothing in progress.
    Idle,
    /// Finished; kept (with its authority) until deleted.
    Completed,
}

impl SessionStatus {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Active => "active",
            SessionStatus::Idle => "idle",
            SessionStatus::Completed => "completed",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<SessionStatus> {
        match s {
            "active" => Some(SessionStatus::Active),
            "idle" => Some(SessionStatus::Idle),
            "completed" => Some(SessionStatus::Completed),
            _ => None,
        }
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`crate::StateStore::create`] stores: the session, its per-session
/// servers and the names it is granted at creation.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// Its id.
    pub id: SessionId,
    /// Initial status (default idle).
    pub status: SessionStatus,
    /// See every active name without refresh (for interactive clients that
    /// expect `list_changed` to just work).
    pub auto_grant: bool,
    /// Per-session MCP servers by name, with `${VAR}` references
    /// unresolved (a resolved config is refused).
    pub servers: BTreeMap<String, McpServerConfig>,
    /// The names granted at creation: the active names of the revision the
    /// session starts on.
    pub granted: BTreeSet<String>,
    /// That revision.
    pub revision: u64,
    /// Who owns it: a principal (an issuer and a subject, as one opaque
    /// string of at most [`crate::limits::MAX_OWNER_BYTES`]), or `None`
    /// for an unowned session (what a gateway without identities makes).
    pub owner: Option<String>,
    /// Most sessions its owner may hold (the unowned ones counting as one
    /// owner's): the create is refused with
    /// [`crate::StateError::TooManySessions`] when the owner holds this
    /// many already. `None`: no bound.
    pub max_owned: Option<usize>,
}

impl NewSession {
    /// An idle session with no servers and no grants.
    pub fn new(id: SessionId) -> NewSession {
        NewSession {
            id,
            status: SessionStatus::Idle,
            auto_grant: false,
            servers: BTreeMap::new(),
            granted: BTreeSet::new(),
            revision: 0,
            owner: None,
            max_owned: None,
        }
    }

    /// Refused when its owner holds `max` sessions already.
    pub fn at_most_owned(mut self, max: usize) -> NewSession {
        self.max_owned = Some(max);
        self
    }

    /// Grants `names`, the active names at catalog `revision`.
    pub fn granting<I, S>(mut self, names: I, revision: u64) -> NewSession
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.granted = crate::limits::distinct(names);
        self.revision = revision;
        self
    }

    /// Adds per-session server `name`.
    pub fn server(mut self, name: impl Into<String>, config: McpServerConfig) -> NewSession {
        self.servers.insert(name.into(), config);
        self
    }

    /// Sets [`NewSession::auto_grant`].
    pub fn auto_grant(mut self, on: bool) -> NewSession {
        self.auto_grant = on;
        self
    }

    /// Sets the initial status.
    pub fn status(mut self, status: SessionStatus) -> NewSession {
        self.status = status;
        self
    }

    /// Sets [`NewSession::owner`]: the session belongs to principal `owner`.
    pub fn owner(mut self, owner: impl Into<String>) -> NewSession {
        self.owner = Some(owner.into());
        self
    }
}

/// The catalog names a session may see and call.
///
/// Granted names are durable: a name that leaves the catalog stays here,
/// unavailable, and applies again if the exact name returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameAuthority {
    /// Every active name is visible, granted or not.
    pub auto_grant: bool,
    /// The names granted so far (never shrinks while the session lives).
    pub granted: BTreeSet<String>,
}

impl NameAuthority {
    /// True when the session may use `name` if it is active.
    pub fn allows(&self, name: &str) -> bool {
        self.auto_grant || self.granted.contains(name)
    }

    /// The names of `active` (the current revision's) that this session may
    /// see and call: the granted ones, or all with `auto_grant`. A granted
    /// name missing from `active` is simply not returned.
    pub fn visible<'a, I>(&self, active: I) -> Vec<&'a str>
    where
        I: IntoIterator<Item = &'a str>,
    {
        active.into_iter().filter(|n| self.allows(n)).collect()
    }
}

/// One session as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    /// Id, times, status and counts.
    #[serde(flatten)]
    pub summary: SessionSummary,
    /// Per-session MCP servers by name (`${VAR}` references unresolved).
    pub servers: BTreeMap<String, McpServerConfig>,
    /// The names it may see and call.
    pub authority: NameAuthority,
}

/// A session without its servers' configs and granted names, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// Its id.
    pub id: SessionId,
    /// When it was created (Unix milliseconds).
    pub created_at_ms: i64,
    /// When a client last used it or its status last changed (Unix milliseconds).
    pub last_seen_ms: i64,
    /// Active, idle or completed.
    pub status: SessionStatus,
    /// See [`NameAuthority::auto_grant`].
    pub auto_grant: bool,
    /// How many names it is granted.
    pub granted_count: u64,
    /// How many per-session servers it has.
    pub server_count: u64,
    /// The catalog revision its last refresh (or creation) pinned.
    pub revision: u64,
    /// The replica whose catalog numbered [`SessionSummary::revision`]
    /// (each replica numbers its own revisions), when one was named.
    pub revision_by: Option<String>,
    /// When its last refresh ran (Unix milliseconds), if one did.
    pub refreshed_at_ms: Option<i64>,
    /// The principal that owns it (see [`NewSession::owner`]); `None`
    /// (and left out when serialized) for an unowned session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// Where the next page of a session list starts (opaque to callers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionCursor(pub String);

impl SessionCursor {
    /// The cursor after a session created at `created_at_ms` with `id`.
    pub(crate) fn after(created_at_ms: i64, id: &SessionId) -> SessionCursor {
        SessionCursor(format!("{created_at_ms}.{id}"))
    }

    /// The position it encodes.
    pub(crate) fn position(&self) -> Result<(i64, SessionId), StateError> {
        let bad = || StateError::InvalidCursor {
            cursor: quote_prefix(&self.0),
        };
        let (ms, id) = self.0.split_once('.').ok_or_else(bad)?;
        let ms = ms.parse::<i64>().map_err(|_| bad())?;
        let id = SessionId::new(id).map_err(|_| bad())?;
        Ok((ms, id))
    }
}

/// One page of sessions, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionPage {
    /// The sessions.
    pub sessions: Vec<SessionSummary>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<SessionCursor>,
}

/// What a refresh did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefreshOutcome {
    /// The session.
    pub session: SessionId,
    /// The catalog revision this refresh pinned (as the caller saw it; a
    /// newer one may be published by the time the answer arrives).
    pub revision: u64,
    /// The replica that saw that revision (the store handle's, if named).
    pub replica: Option<String>,
    /// True when the union granted at least one name.
    pub changed: bool,
    /// The names this refresh granted, sorted (empty on a confirming retry).
    pub added: Vec<String>,
    /// How many names the session holds now.
    pub granted_count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for ok in ["a", "0b2f-11ee.x:y~z_", &"x".repeat(128), "...", ".a"] {
            assert!(SessionId::new(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a/b", "é", &"x".repeat(129), "a\n", ".", ".."] {
            assert!(SessionId::new(bad).is_err(), "{bad:?}");
        }
        let e = SessionId::new("a/b").expect_err("slash").to_string();
        assert_eq!(
            e,
            "invalid session id \"a/b\": only A-Z, a-z, 0-9 and - _ . : ~ are allowed"
        );
        let parsed: Result<SessionId, _> = serde_json::from_str("\"a/b\"");
        assert!(parsed.is_err());
    }

    #[test]
    fn statuses_round_trip() {
        for s in [
            SessionStatus::Active,
            SessionStatus::Idle,
            SessionStatus::Completed,
        ] {
            assert_eq!(SessionStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(SessionStatus::parse("running"), None);
    }

    #[test]
    fn a_vanished_name_is_hidden_and_applies_again_when_it_returns() {
        let a = NameAuthority {
            auto_grant: false,
            granted: ["mcp__s__a", "mcp__s__b"].map(String::from).into(),
        };
        assert_eq!(a.visible(["mcp__s__a", "mcp__s__c"]), ["mcp__s__a"]);
        assert_eq!(
            a.visible(["mcp__s__a", "mcp__s__b", "mcp__s__c"]),
            ["mcp__s__a", "mcp__s__b"]
        );
        let auto = NameAuthority {
            auto_grant: true,
            ..a
        };
        assert_eq!(auto.visible(["mcp__s__c"]), ["mcp__s__c"]);
    }

    #[test]
    fn cursors_round_trip_and_bad_ones_are_named() {
        let id = SessionId::new("a.b").expect("id");
        let c = SessionCursor::after(42, &id);
        assert_eq!(c.position().expect("pos"), (42, id));
        for bad in ["", "x.y", "1", "1.a/b"] {
            let e = SessionCursor(bad.into()).position().expect_err(bad);
            assert!(e.to_string().starts_with("invalid session list cursor"));
        }
    }
}
