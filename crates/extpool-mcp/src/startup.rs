//! Starting many servers at once, each in its own task, with a status event
//! per step for a live display (Codex and Claude Code show the same:
//! connecting → ready with N tools in T ms, or failed with the reason).
//!
//! Partial failure is normal: one slow or broken server never delays or
//! fails the others; the result lists every server with its own outcome.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::cap::{CapError, McpServerCap};
use crate::config::McpServerConfig;
use crate::error::{ClientError, ConfigError};
use crate::pool::SessionConnectionPool;

/// Why one server did not start.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The capability could not be built from the config.
    #[error(transparent)]
    Cap(#[from] CapError),
    /// Connecting or listing tools failed.
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl StartError {
    /// Why the server did not start, for a row that names the server and
    /// says it failed already (no "MCP server \"x\" failed to start:").
    pub fn reason(&self) -> String {
        match self {
            Self::Client(e) => e.start_failure().unwrap_or_else(|| e.to_string()),
            Self::Cap(e) => e.to_string(),
        }
    }
}

/// One step of one server's startup.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Spawning / dialing and initializing.
    Connecting,
    /// Still connecting; `said` is the latest line the server wrote to
    /// stderr (a build step, a download), so a display can say what it is
    /// doing. Sent at most every `SAID_EVERY`, only when the line changed.
    Starting {
        /// The line, as masked for the server's stderr tail.
        said: String,
    },
    /// Connected and its tools listed.
    Ready {
        /// Time from the start of this server's startup.
        elapsed: Duration,
        /// How many tools it offers.
        tools: usize,
    },
    /// Lazy: not connected; tools come from config.
    Lazy {
        /// Declared tools.
        tools: usize,
    },
    /// `enabled: false`.
    Disabled,
    /// Did not start.
    Failed {
        /// Time from the start of this server's startup.
        elapsed: Duration,
        /// Why.
        error: StartError,
    },
}

/// How often a connecting server's latest stderr line is reported at most.
pub const SAID_EVERY: Duration = Duration::from_millis(250);

/// A status change of one server.
#[derive(Debug, Clone)]
pub struct StatusEvent {
    /// The server.
    pub server: String,
    /// Its new status.
    pub status: ServerStatus,
}

/// The outcome for one server.
#[derive(Debug)]
pub struct Started {
    /// The server.
    pub server: String,
    /// Its final status (never `Connecting`).
    pub status: ServerStatus,
    /// The capability, when the server started or is lazy.
    pub cap: Option<Arc<McpServerCap>>,
}

impl Started {
    /// True when the server is usable (ready or lazy).
    pub fn is_ok(&self) -> bool {
        self.cap.is_some()
    }
}

fn emit(events: &Option<UnboundedSender<StatusEvent>>, server: &str, status: &ServerStatus) {
    if let Some(tx) = events {
        let _ = tx.send(StatusEvent {
            server: server.to_owned(),
            status: status.clone(),
        });
    }
}

/// Awaits `counted` while reporting, as [`ServerStatus::Starting`], the
/// latest line `server` writes to stderr meanwhile (at most every
/// [`SAID_EVERY`]; lines of other servers and missed lines are skipped).
async fn telling_what_it_says<T>(
    counted: impl std::future::Future<Output = T>,
    mut said: tokio::sync::broadcast::Receiver<crate::stderr::StderrLine>,
    name: &crate::name::ServerName,
    server: &str,
    events: &Option<UnboundedSender<StatusEvent>>,
) -> T {
    use tokio::sync::broadcast::error::RecvError;
    tokio::pin!(counted);
    let mut latest: Option<String> = None;
    let mut told: Option<String> = None;
    let mut tick = tokio::time::interval(SAID_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut listening = events.is_some();
    loop {
        tokio::select! {
            out = &mut counted => return out,
            line = said.recv(), if listening => match line {
                Ok(line) if &line.server == name && !line.line.trim().is_empty() => {
                    latest = Some(line.line);
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => listening = false,
            },
            _ = tick.tick(), if latest != told => {
                told.clone_from(&latest);
                if let Some(said) = &told {
                    emit(events, server, &ServerStatus::Starting { said: said.clone() });
                }
            }
        }
    }
}

/// Starts every server in parallel; returns one outcome per server, in input order.
pub async fn start_servers(
    pool: &SessionConnectionPool,
    servers: impl IntoIterator<Item = (String, McpServerConfig)>,
    events: Option<UnboundedSender<StatusEvent>>,
) -> Vec<Started> {
    let mut seen = extpool_core::ServerNames::new();
    let mut tasks = Vec::new();
    for (server, config) in servers {
        let duplicate = seen.claim(&server, ()).is_err();
        let pool = pool.clone();
        let events = events.clone();
        tasks.push(tokio::spawn(async move {
            let finish = |status: ServerStatus, cap| {
                emit(&events, &server, &status);
                Started {
                    server: server.clone(),
                    status,
                    cap,
                }
            };
            let started = Instant::now();
            let failed = |error: StartError| ServerStatus::Failed {
                elapsed: started.elapsed(),
                error,
            };
            if duplicate {
                let error = CapError::Config(ConfigError::DuplicateName {
                    first: server.clone(),
                    second: server.clone(),
                });
                return finish(failed(error.into()), None);
            }
            if !config.enabled {
                return finish(ServerStatus::Disabled, None);
            }
            let lazy = config.lazy;
            let said = pool.stderr_lines();
            let cap = match McpServerCap::new(&server, config, pool) {
                Ok(cap) => Arc::new(cap),
                Err(error) => return finish(failed(error.into()), None),
            };
            if lazy && !cap.config().tools.is_empty() {
                let tools = cap.config().tools.len();
                return finish(ServerStatus::Lazy { tools }, Some(cap));
            }
            emit(&events, &server, &ServerStatus::Connecting);
            let counted = cap.tool_count();
            match telling_what_it_says(counted, said, cap.name(), &server, &events).await {
                Ok(tools) => {
                    let status = ServerStatus::Ready {
                        elapsed: started.elapsed(),
                        tools,
                    };
                    finish(status, Some(cap))
                }
                Err(error) => finish(failed(error.into()), None),
            }
        }));
    }
    let mut out = Vec::with_capacity(tasks.len());
    for task in futures::future::join_all(tasks).await {
        match task {
            Ok(started) => out.push(started),
            Err(join) => tracing::error!(%join, "MCP server startup task failed"),
        }
    }
    out
}
