//! Each server's log as an operator reads it (`extpool logs`): the lines
//! it wrote to stderr and extpool's own lines about it — its state changes
//! (started, failed with the reason, its connection closed, reconnected,
//! restarted, removed) — kept in a bounded ring per server, with a
//! broadcast for followers that never holds a writer back.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::broadcast;

/// Lines kept per server (the oldest go first).
pub const LINES_KEPT: usize = 200;
/// Servers with a ring at most (the runtime's servers are far fewer).
const MAX_SERVERS: usize = 1024;
/// How far a slow follower may fall behind before it misses lines.
const FOLLOW_BACKLOG: usize = 256;
/// Longest line kept, in bytes (cut at a character boundary).
const MAX_LINE_BYTES: usize = 2048;

/// Who wrote a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogKind {
    /// The server, on its stderr (masked as the client masks it).
    Stderr,
    /// extpool, about the server.
    Extpool,
}

/// One line of a server's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogLine {
    /// The server.
    pub server: String,
    /// When it was kept, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Who wrote it.
    pub kind: LogKind,
    /// The line.
    pub line: String,
}

/// What is seen of a server now, to tell its changes (the host's
/// connections module makes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    /// The server.
    pub name: String,
    /// Its shown state, one word.
    pub state: String,
    /// The reason of a failed state.
    pub detail: String,
    /// Its process.
    pub pid: Option<u32>,
    /// Whether its connection is open.
    pub connected: bool,
    /// How many connections it has had.
    pub connections: u64,
}

/// The servers' logs.
#[derive(Debug)]
pub struct ServerLogs {
    rings: Mutex<HashMap<String, VecDeque<LogLine>>>,
    seen: Mutex<BTreeMap<String, Seen>>,
    follow: broadcast::Sender<LogLine>,
}

impl Default for ServerLogs {
    fn default() -> Self {
        Self {
            rings: Mutex::new(HashMap::new()),
            seen: Mutex::new(BTreeMap::new()),
            follow: broadcast::Sender::new(FOLLOW_BACKLOG),
        }
    }
}

impl ServerLogs {
    /// Keeps `line` in `server`'s log and tells followers.
    pub fn push(&self, server: &str, kind: LogKind, line: &str) {
        let line = LogLine {
            server: server.to_owned(),
            at_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            kind,
            line: extpool_core::text::cut(line, MAX_LINE_BYTES).into_owned(),
        };
        let mut rings = self.rings.lock();
        if !rings.contains_key(server) && rings.len() >= MAX_SERVERS {
            return;
        }
        let ring = rings.entry(server.to_owned()).or_default();
        if ring.len() >= LINES_KEPT {
            ring.pop_front();
        }
        ring.push_back(line.clone());
        // Sent under the lock: a follower's lines and the ring it read
        // first neither overlap nor leave a gap.
        let _ = self.follow.send(line);
    }

    /// [`ServerLogs::lines`] and a subscription to the lines after them
    /// (none missing, none twice).
    pub fn follow(&self, server: &str) -> (Option<Vec<LogLine>>, broadcast::Receiver<LogLine>) {
        let rings = self.rings.lock();
        let lines = rings
            .iter()
            .find(|(name, _)| extpool_core::name::same_server_name(name, server))
            .map(|(_, ring)| ring.iter().cloned().collect());
        (lines, self.follow.subscribe())
    }

    /// `server`'s log (its name ignoring case), oldest first; `None` when
    /// nothing was kept for it.
    pub fn lines(&self, server: &str) -> Option<Vec<LogLine>> {
        let rings = self.rings.lock();
        rings
            .iter()
            .find(|(name, _)| extpool_core::name::same_server_name(name, server))
            .map(|(_, ring)| ring.iter().cloned().collect())
    }

    /// Every line kept from now on (all servers: filter by
    /// [`LogLine::server`]); a follower that falls behind misses lines.
    pub fn subscribe(&self) -> broadcast::Receiver<LogLine> {
        self.follow.subscribe()
    }

    /// Compares the servers `observed` now with what was last seen of
    /// them and writes extpool's line for each change.
    pub(crate) fn note(&self, observed: Vec<Seen>) {
        let mut seen = self.seen.lock();
        let mut now = BTreeMap::new();
        for next in observed {
            for line in changes(seen.get(&next.name), &next) {
                self.push(&next.name, LogKind::Extpool, &line);
            }
            now.insert(next.name.clone(), next);
        }
        for gone in seen.keys().filter(|n| !now.contains_key(*n)) {
            self.push(
                gone,
                LogKind::Extpool,
                "removed (no longer configured or discovered)",
            );
        }
        *seen = now;
    }
}

/// extpool's lines for a server that was `before` and is `next`.
fn changes(before: Option<&Seen>, next: &Seen) -> Vec<String> {
    let pid = |s: &Seen| s.pid.map(|p| format!(", pid {p}")).unwrap_or_default();
    let state = |s: &Seen| {
        if s.detail.is_empty() {
            s.state.clone()
        } else {
            format!("{}: {}", s.state, s.detail)
        }
    };
    let Some(before) = before else {
        return vec![format!("started: {}{}", state(next), pid(next))];
    };
    let mut out = Vec::new();
    if next.connections > before.connections && before.connections > 0 {
        out.push(format!(
            "reconnected (connection {}{})",
            next.connections,
            pid(next)
        ));
    } else if before.connected && !next.connected {
        out.push("its connection closed (the server exited or was stopped)".to_owned());
    }
    if next.state != before.state || next.detail != before.detail {
        out.push(format!("now {}", state(next)));
    }
    out
}

/// Keeps every server's stderr lines in `logs` while the pool runs.
pub(crate) fn collect_stderr(
    logs: &Arc<ServerLogs>,
    mut lines: broadcast::Receiver<extpool_mcp::stderr::StderrLine>,
) {
    let logs = Arc::downgrade(logs);
    tokio::spawn(async move {
        loop {
            let line = match lines.recv().await {
                Ok(line) => line,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::debug!("server logs: {n} stderr lines missed");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let Some(logs) = logs.upgrade() else { return };
            logs.push(line.server.as_str(), LogKind::Stderr, &line.line);
        }
    });
}

/// Notes the servers' state changes at each catalog cycle and discovery
/// update, while the host runs.
/// `observe` says what is seen of the servers now (`None`: the host is
/// gone).
pub(crate) fn watch_states(
    logs: &Arc<ServerLogs>,
    observe: impl Fn() -> Option<Vec<Seen>> + Send + 'static,
    mut cycles: tokio::sync::watch::Receiver<u64>,
    updates: Option<tokio::sync::watch::Receiver<u64>>,
) {
    let logs: Weak<ServerLogs> = Arc::downgrade(logs);
    tokio::spawn(async move {
        let mut updates = updates;
        loop {
            {
                let (Some(logs), Some(observed)) = (logs.upgrade(), observe()) else {
                    return;
                };
                logs.note(observed);
            }
            let update = async {
                match updates.as_mut() {
                    Some(u) => u.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = cycles.changed() => if changed.is_err() { return },
                alive = update => if !alive { updates = None },
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(state: &str, connected: bool, connections: u64, pid: u32) -> Seen {
        Seen {
            name: "s".into(),
            state: state.into(),
            detail: String::new(),
            pid: Some(pid),
            connected,
            connections,
        }
    }

    #[test]
    fn changes_are_told_once_each() {
        let up = seen("ready", true, 1, 7);
        assert_eq!(changes(None, &up), ["started: ready, pid 7"]);
        assert!(changes(Some(&up), &up).is_empty());
        let down = seen("failed", false, 1, 7);
        let said = changes(Some(&up), &down);
        assert_eq!(
            said[0],
            "its connection closed (the server exited or was stopped)"
        );
        assert_eq!(said[1], "now failed");
        let again = seen("ready", true, 2, 9);
        assert_eq!(
            changes(Some(&down), &again),
            ["reconnected (connection 2, pid 9)", "now ready"]
        );
    }

    #[test]
    fn the_rings_are_bounded() {
        let logs = ServerLogs::default();
        let mut follow = logs.subscribe();
        for i in 0..LINES_KEPT + 5 {
            logs.push("a", LogKind::Stderr, &format!("line {i}"));
        }
        logs.push("b", LogKind::Extpool, &"x".repeat(MAX_LINE_BYTES * 2));
        let a = logs.lines("A").unwrap();
        assert_eq!(a.len(), LINES_KEPT);
        assert_eq!(a[0].line, "line 5");
        assert!(logs.lines("b").unwrap()[0].line.len() < MAX_LINE_BYTES + 32);
        assert!(logs.lines("c").is_none());
        assert_eq!(follow.try_recv().unwrap().server, "a");
    }
}
