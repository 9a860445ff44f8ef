//! [`Runtime`]: the servers running now — configured and discovered — as
//! the host lists them, replaced whole when a change is published.

use std::sync::Arc;

use parking_lot::RwLock;

use super::DiscoveredServer;
use crate::servers::{ServerEntry, transport};
use crate::status::{ServerInfo, ServerState};

/// The running servers, configured and discovered, in listing order.
#[derive(Default)]
pub(crate) struct Runtime {
    entries: RwLock<Vec<ServerEntry>>,
}

impl Runtime {
    /// A runtime holding `entries` (the servers started with the host).
    pub(crate) fn new(entries: Vec<ServerEntry>) -> Self {
        Self {
            entries: RwLock::new(entries),
        }
    }

    /// Every server now.
    pub(crate) fn entries(&self) -> Vec<ServerEntry> {
        self.entries.read().clone()
    }

    /// Replaces every server.
    pub(crate) fn replace(&self, entries: Vec<ServerEntry>) {
        *self.entries.write() = entries;
    }

    /// Whether a server of this name (ignoring case) is running or known.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.entries
            .read()
            .iter()
            .any(|e| e.info.name.eq_ignore_ascii_case(name))
    }
}

/// The entry of a server a source names with `enabled: false`.
pub(crate) fn disabled_entry(server: &DiscoveredServer, source: &str) -> ServerEntry {
    ServerEntry {
        info: ServerInfo {
            name: server.name.clone(),
            origin: server.origin.clone(),
            transport: transport(&server.written),
            state: ServerState::Disabled,
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
