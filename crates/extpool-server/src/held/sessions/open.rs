//! One open session: its view, its authority and the policy they make,
//! its own servers' state, and the notices its clients get when what they
//! may see changes.

use std::sync::Arc;

use extpool_host::{Grants, Pin, View, ViewPolicy};
use extpool_state::{NameAuthority, SessionId};
use parking_lot::{Mutex, RwLock};

use crate::notify::Notifier;

/// One open session.
pub struct OpenSession {
    /// Its id.
    pub id: SessionId,
    /// Whose it is (`None`: made without identities, which only an
    /// operator reaches).
    pub owner: Option<String>,
    /// Its host view (per-session servers registered in it).
    pub view: View,
    /// Its authority, as last read from or written to the store.
    pub authority: RwLock<Arc<NameAuthority>>,
    /// Names of its per-session servers.
    pub servers: Vec<String>,
    /// Its MCP clients, for `list_changed`.
    pub notifier: Notifier,
    /// The gateway's policy for durable sessions (its own tools with
    /// `CloseSession`), which its own adds its grants to.
    pub(crate) base: Arc<ViewPolicy>,
    /// When it was last used (opened, refreshed, or asked for by its
    /// endpoint).
    pub(crate) last_used: Mutex<tokio::time::Instant>,
    /// Cancelled when the session is closed for good (`CloseSession`,
    /// `DELETE /v1/sessions/{id}`, or either through another replica):
    /// its calls in flight end saying so ([`OpenSession::closed_message`]).
    pub(crate) closed: tokio_util::sync::CancellationToken,
}

impl OpenSession {
    /// Resolves once the session is closed for good.
    pub(crate) async fn until_closed(&self) {
        self.closed.cancelled().await;
    }

    /// What a call in flight when the session was closed for good is told
    /// (`None` while it is not), naming the session as `principal` knows it.
    pub(crate) fn closed_message(
        &self,
        principal: &extpool_host::core::Principal,
    ) -> Option<String> {
        if !self.closed.is_cancelled() {
            return None;
        }
        let id = super::ids::shown(&self.id, Some(principal));
        Some(format!(
            "session {id} was closed (CloseSession or DELETE /v1/sessions/{id}) while this call was in flight; its calls ended with it"
        ))
    }

    /// Marks the session used now.
    pub(crate) fn touch(&self) {
        *self.last_used.lock() = tokio::time::Instant::now();
    }

    /// Takes `authority` as the session's (read from or written to the
    /// store) and gives its view the policy it makes: the gateway's, with
    /// these grants and this session's own servers' names. The view's next
    /// table is compiled under it; a call never asks the store.
    pub fn set_authority(&self, authority: NameAuthority) {
        let authority = Arc::new(authority);
        let grants = {
            let authority = authority.clone();
            Grants::new(move |name| authority.allows(name))
        };
        *self.authority.write() = authority;
        // The gateway's policy refined: its rows stay shared, only what
        // these grants and names take out is this session's.
        self.view
            .set_policy(self.base.refine(Some(grants), self.servers.iter().cloned()));
    }

    /// Each of its own servers as this replica last listed it: `ready`
    /// (listed), `failed` with the error, or `starting` (not yet listed).
    pub fn server_status(&self) -> Vec<serde_json::Value> {
        let sources = self.view.own_sources();
        self.servers
            .iter()
            .map(|name| {
                let source = sources.iter().find(|s| s.id == *name);
                let error = source
                    .and_then(|s| s.last_error.as_ref())
                    .map(|e| e.to_string());
                let state = match (source, &error) {
                    (_, Some(_)) => "failed",
                    (Some(s), None) if s.revision.is_some() => "ready",
                    _ => "starting",
                };
                serde_json::json!({"name": name, "state": state, "error": error})
            })
            .collect()
    }

    /// The catalog names active in this session's view now that a grant
    /// would add to `granted` (built-ins excluded: they are not granted,
    /// they are always there), as many as the store lets one session hold
    /// ([`fair_share`]); and how many are left out. A name the store would
    /// refuse is left out too, so no one upstream's names stop a create or
    /// a refresh.
    pub(crate) fn grantable(
        &self,
        limits: &extpool_state::Limits,
        granted: &NameAuthority,
    ) -> (Vec<String>, usize) {
        let revision = self.view.revision();
        let mut left_out = 0;
        let mut candidates = Vec::new();
        for tool in revision.all_tools() {
            if granted.granted.contains(&tool.name) {
                continue;
            }
            if limits.check_names(&self.id, [&tool.name]).is_ok() {
                candidates.push((tool.name.clone(), tool.server.clone()));
            } else {
                left_out += 1;
            }
        }
        let room = limits
            .max_names_per_session
            .saturating_sub(granted.granted.len());
        let (names, over) = fair_share(candidates, room);
        (names, left_out + over)
    }
}

/// The names of `candidates` (a name and its server, in catalog order)
/// that fit in `room`: all of them when they fit, else an equal share of
/// the room per server — a server with fewer names gets all of its own and
/// the others share what it leaves — each server's first in catalog
/// order. Returns them and how many are left out.
pub(crate) fn fair_share(candidates: Vec<(String, Arc<str>)>, room: usize) -> (Vec<String>, usize) {
    let total = candidates.len();
    if total <= room {
        return (candidates.into_iter().map(|(name, _)| name).collect(), 0);
    }
    let mut servers: Vec<(Arc<str>, usize)> = Vec::new();
    let mut of_name = Vec::with_capacity(total);
    for (_, server) in &candidates {
        let i = match servers.iter().position(|(s, _)| s == server) {
            Some(i) => i,
            None => {
                servers.push((server.clone(), 0));
                servers.len() - 1
            }
        };
        servers[i].1 += 1;
        of_name.push(i);
    }
    // Water-filling: the smallest first, each taking at most an equal
    // share of what is left; what integer division leaves goes one by
    // one to the largest.
    let mut order: Vec<usize> = (0..servers.len()).collect();
    order.sort_by_key(|&i| servers[i].1);
    let mut share = vec![0usize; servers.len()];
    let mut left = room;
    for (k, &i) in order.iter().enumerate() {
        let take = servers[i].1.min(left / (order.len() - k));
        share[i] = take;
        left -= take;
    }
    for &i in order.iter().rev() {
        if left == 0 {
            break;
        }
        if share[i] < servers[i].1 {
            share[i] += 1;
            left -= 1;
        }
    }
    let mut names = Vec::with_capacity(room);
    for ((name, _), i) in candidates.into_iter().zip(of_name) {
        if share[i] > 0 {
            share[i] -= 1;
            names.push(name);
        }
    }
    let left_out = total - names.len();
    (names, left_out)
}

/// The tool names a session's clients see now (its table's).
pub(crate) fn visible(open: &OpenSession) -> Vec<String> {
    open.view
        .table(Pin::now())
        .visible()
        .map(|(_, r)| r.tool.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(counts: &[(&str, usize)]) -> Vec<(String, Arc<str>)> {
        counts
            .iter()
            .flat_map(|(server, n)| {
                let server: Arc<str> = Arc::from(*server);
                (0..*n).map(move |i| (format!("mcp__{server}__t{i}"), server.clone()))
            })
            .collect()
    }

    fn per_server(names: &[String]) -> std::collections::BTreeMap<String, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for name in names {
            let server = name.split("__").nth(1).unwrap().to_owned();
            *counts.entry(server).or_default() += 1;
        }
        counts
    }

    #[test]
    fn one_huge_server_never_crowds_out_the_others() {
        let (all, left) = fair_share(named(&[("a", 3), ("b", 2)]), 10);
        assert_eq!((all.len(), left), (5, 0));
        let (names, left) = fair_share(named(&[("big", 60_000), ("gh", 40), ("fs", 12)]), 10_000);
        assert_eq!(names.len(), 10_000);
        assert_eq!(left, 60_052 - 10_000);
        let counts = per_server(&names);
        assert_eq!(counts["gh"], 40);
        assert_eq!(counts["fs"], 12);
        assert_eq!(counts["big"], 10_000 - 52);
        // Each server's first names, in catalog order.
        assert!(names.contains(&"mcp__big__t0".to_owned()));
        assert!(!names.contains(&"mcp__big__t59999".to_owned()));
        // Two big ones share evenly; the remainder goes to the larger.
        let (names, _) = fair_share(named(&[("x", 7), ("y", 9), ("z", 1)]), 10);
        let counts = per_server(&names);
        assert_eq!((counts["x"], counts["y"], counts["z"]), (4, 5, 1));
        let (none, left) = fair_share(named(&[("x", 3)]), 0);
        assert_eq!((none.len(), left), (0, 3));
    }
}
