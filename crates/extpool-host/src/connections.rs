//! [`ServerConnection`]: what each running server's connection is now —
//! its process, the protocol version it answered, whether it is still
//! open, the requests on it and what it last wrote to stderr — read from
//! the clients' own state, never by asking a server. A live display (the
//! gateway's operator page) reads it beside [`crate::Host::sources_report`];
//! [`ServerConnection::state`] is the one rule that turns both into the
//! state an operator sees.

use serde::Serialize;

use crate::health::Degraded;
use crate::servers::ServerEntry;
use crate::status::ServerState;

/// Most stderr lines kept in a [`ServerConnection`] (the client keeps a
/// bounded tail; this is the part shown).
const STDERR_SHOWN: usize = 20;

/// One running server's connection as its client sees it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerConnection {
    /// The server.
    pub name: String,
    /// Its process id, for a stdio server connected now.
    pub pid: Option<u32>,
    /// The protocol version its last connection agreed on (its era: a
    /// date before 2026-07-28 is the session era).
    pub protocol_version: Option<String>,
    /// Whether a connection exists and its transport is open (a stdio
    /// server that exited is not; its next call reconnects).
    pub connected: bool,
    /// How many connections it has had (1 + reconnects).
    pub connections: u64,
    /// Requests running on it now.
    pub in_flight: usize,
    /// The last lines it wrote to stderr (masked), oldest first.
    pub stderr: Vec<String>,
}

/// The state an operator is shown for a server: the start-up state, but
/// `degraded` while calls find it down after reconnecting, and `failed`
/// when its connection closed since it was ready (a process that exited
/// or was killed), with what it last wrote to stderr.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShownState {
    /// One word: `ready`, `connecting`, `degraded`, `failed`, …
    pub word: String,
    /// The whole reason for `failed` and `degraded`; the latest stderr
    /// line while starting; empty otherwise.
    pub detail: String,
}

impl ServerConnection {
    /// The state to show for the server whose start-up state is `state`,
    /// this connection (`None`: no client yet) and its health mark.
    pub fn state(
        state: &ServerState,
        connection: Option<&ServerConnection>,
        degraded: Option<&Degraded>,
    ) -> ShownState {
        let shown = |word: &str, detail: String| ShownState {
            word: word.to_owned(),
            detail,
        };
        if let Some(d) = degraded {
            return shown("degraded", d.reason.clone());
        }
        match state {
            ServerState::Starting { said } => shown("starting", said.clone()),
            ServerState::Failed { reason } => shown("failed", reason.clone()),
            ServerState::Ready { .. } => match connection {
                Some(c) if !c.connected => {
                    let mut reason =
                        "its connection closed (the server exited or was stopped); the next call reconnects"
                            .to_owned();
                    if !c.stderr.is_empty() {
                        reason.push_str("; it last wrote to stderr:\n");
                        reason.push_str(&c.stderr.join("\n"));
                    }
                    shown("failed", reason)
                }
                _ => shown("ready", String::new()),
            },
            other => shown(other.word(), String::new()),
        }
    }
}

/// Each of `entries`' connections now (see [`crate::Host::server_connections`]).
pub(crate) fn of(entries: &[ServerEntry]) -> Vec<ServerConnection> {
    entries
        .iter()
        .filter_map(|e| {
            let client = e.cap.as_ref()?.client()?;
            let mut stderr = client.stderr_tail();
            let keep = stderr.len().saturating_sub(STDERR_SHOWN);
            stderr.drain(..keep);
            Some(ServerConnection {
                name: e.info.name.clone(),
                pid: client.pid(),
                protocol_version: client.server_info().map(|i| i.protocol_version.to_string()),
                connected: client.is_connected(),
                connections: client.connection_count(),
                in_flight: client.in_flight(),
                stderr,
            })
        })
        .collect()
}

/// What is seen of each of `entries` now, for the servers' logs (see
/// [`crate::server_logs`]).
pub(crate) fn observed(entries: &[ServerEntry]) -> Vec<crate::server_logs::Seen> {
    let connections = of(entries);
    entries
        .iter()
        .map(|entry| {
            let name = &entry.info.name;
            let connection = connections.iter().find(|c| &c.name == name);
            crate::server_logs::Seen {
                name: name.clone(),
                state: ServerConnection::state(&entry.info.state, connection, None).word,
                detail: match &entry.info.state {
                    ServerState::Failed { reason } => reason.clone(),
                    _ => String::new(),
                },
                pid: connection.and_then(|c| c.pid),
                connected: connection.is_some_and(|c| c.connected),
                connections: connection.map_or(0, |c| c.connections),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(connected: bool, stderr: &[&str]) -> ServerConnection {
        ServerConnection {
            name: "s".into(),
            pid: Some(7),
            protocol_version: None,
            connected,
            connections: 1,
            in_flight: 0,
            stderr: stderr.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn a_ready_server_whose_connection_closed_is_failed_with_its_stderr() {
        let ready = ServerState::Ready {
            elapsed_ms: 3,
            tools: 2,
        };
        let up = connection(true, &[]);
        assert_eq!(
            ServerConnection::state(&ready, Some(&up), None).word,
            "ready"
        );
        let down = connection(false, &["panic: out of memory"]);
        let shown = ServerConnection::state(&ready, Some(&down), None);
        assert_eq!(shown.word, "failed");
        assert!(
            shown.detail.ends_with("\npanic: out of memory"),
            "{}",
            shown.detail
        );
        let starting = ServerState::Starting {
            said: "Compiling x".into(),
        };
        let shown = ServerConnection::state(&starting, None, None);
        assert_eq!(
            (shown.word.as_str(), shown.detail.as_str()),
            ("starting", "Compiling x")
        );
        let degraded = Degraded {
            capability: "s".into(),
            reason: "unavailable after reconnect".into(),
            since: std::time::SystemTime::now(),
        };
        let shown = ServerConnection::state(&ready, Some(&up), Some(&degraded));
        assert_eq!(shown.word, "degraded");
    }
}
