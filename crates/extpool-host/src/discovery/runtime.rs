//! [`Runtime`]: the servers running now — configured and discovered — as
//! the host lists them, replaced whole when a change is published.

use std::collections::BTreeSet;
use std::sync::Arc;

use extpool_core::ServerNames;
use parking_lot::RwLock;

use super::DiscoveredServer;
use crate::servers::{ServerEntry, transport};
use crate::status::{ServerInfo, ServerState};

/// The running servers, configured and discovered, in listing order, and
/// the names sessions' own servers hold.
#[derive(Default)]
pub(crate) struct Runtime {
    entries: RwLock<Vec<ServerEntry>>,
    /// Names of servers registered in a session (unique ignoring case),
    /// with the sessions holding each: a discovered server may not take them.
    held: RwLock<ServerNames<BTreeSet<String>>>,
}

impl Runtime {
    /// A runtime holding `entries` (the servers started with the host).
    pub(crate) fn new(entries: Vec<ServerEntry>) -> Self {
        Self {
            entries: RwLock::new(entries),
            held: RwLock::default(),
        }
    }

    /// Every server now.
    pub(crate) fn entries(&self) -> Vec<ServerEntry> {
        self.entries.read().clone()
    }

    /// Replaces every server, then runs `report` before any reader sees
    /// them: what is reported about the servers changes with them.
    pub(crate) fn replace(&self, entries: Vec<ServerEntry>, report: impl FnOnce()) {
        let mut held = self.entries.write();
        *held = entries;
        report();
    }

    /// `read` over the servers now, none replaced meanwhile (what it reads
    /// beside them agrees with them; see [`Runtime::replace`]).
    pub(crate) fn read<T>(&self, read: impl FnOnce(&[ServerEntry]) -> T) -> T {
        read(&self.entries.read())
    }

    /// Session `session` has its own server `name`.
    pub(crate) fn hold(&self, name: &str, session: &str) {
        self.held
            .write()
            .entry(name, BTreeSet::new)
            .insert(session.to_owned());
    }

    /// Session `session` no longer has server `name` (every server with `None`).
    pub(crate) fn release(&self, name: Option<&str>, session: &str) {
        let mut held = self.held.write();
        match name {
            Some(name) => {
                if let Some(sessions) = held.get_mut(name) {
                    sessions.remove(session);
                    if sessions.is_empty() {
                        held.remove(name);
                    }
                }
            }
            None => held.retain(|sessions| {
                sessions.remove(session);
                !sessions.is_empty()
            }),
        }
    }

    /// Whether a session's own server has the name `name` (ignoring case).
    pub(crate) fn held(&self, name: &str) -> bool {
        self.held.read().contains(name)
    }

    /// Whether a server of this name (ignoring case) is running or known.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.entries
            .read()
            .iter()
            .any(|e| extpool_core::same_server_name(&e.info.name, name))
    }
}

/// The entry of a server a source names with `enabled: false`.
pub(crate) fn disabled_entry(server: &DiscoveredServer, source: &str) -> ServerEntry {
    ServerEntry {
        info: ServerInfo {
            name: server.name.clone(),
            origin: server.origin.clone(),
            transport: transport(&server.written),
            plugin: server.plugin.clone(),
            sandbox: server.written.sandbox.clone(),
            state: ServerState::Disabled,
            implementation: None,
        },
        cap: None,
        source: source.to_owned(),
        written: server.written.clone(),
    }
}

/// The same servers, from the same sources, as written, in the same state.
pub(crate) fn same_entries(a: &[ServerEntry], b: &[ServerEntry]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.info.name == y.info.name
                && x.source == y.source
                && x.written == y.written
                && x.info.state == y.info.state
        })
}

/// True when `a` and `b` hold the same capability.
pub(crate) fn same_cap(a: &ServerEntry, b: &ServerEntry) -> bool {
    match (&a.cap, &b.cap) {
        (Some(x), Some(y)) => Arc::ptr_eq(x, y),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_held_while_any_session_has_it_ignoring_case() {
        let runtime = Runtime::default();
        runtime.hold("Mine", "s1");
        runtime.hold("mine", "s2");
        runtime.hold("other", "s1");
        assert!(runtime.held("MINE") && runtime.held("other"));
        runtime.release(Some("mine"), "s1");
        assert!(runtime.held("mine"), "s2 still has it");
        runtime.release(None, "s1");
        assert!(!runtime.held("other") && runtime.held("mine"));
        runtime.release(None, "s2");
        assert!(!runtime.held("mine"));
    }
}
