//! extpool-mcp: MCP servers as capabilities.
//!
//! [`McpServerConfig`] says how to reach a server; [`McpClient`] holds one
//! live rmcp connection to it (stdio child or streamable HTTP) with
//! timeouts and the reconnect rules; [`SessionConnectionPool`] shares one
//! client per distinct `(name, config)`; [`McpServerCap`] exposes a server's
//! tools, resources, prompts and skills through extpool-core's resource
//! protocols; [`start_servers`] starts many at once with status events.
//!
//! ```no_run
//! use extpool_core::McpResource;
//! use extpool_mcp::{McpServerCap, McpServerConfig, PoolConfig, SessionConnectionPool};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let pool = SessionConnectionPool::new(PoolConfig::default());
//! let config = McpServerConfig::stdio("uvx", ["mcp-server-time"]);
//! let cap = McpServerCap::new("time", config, pool.clone())?;
//! let tools = cap.list_tools().await?; // connects (non-lazy)
//! let args = serde_json::json!({"timezone": "UTC"});
//! let result = cap
//!     .call_tool("get_current_time", args.as_object().cloned().unwrap_or_default())
//!     .await?;
//! println!("{} tools; {}", tools.len(), result.joined_text());
//! pool.shutdown().await; // every child and its process group exits
//! # Ok(()) }
//! ```
//!
//! Module map: `config` (the shared config struct), `name` (server names),
//! `stdio` + `stderr` (spawning, environment, process groups, stderr
//! capture), `driver` (a stdio connection's own thread), `transport`
//! (stdio over non-blocking pipes, both sides:
//! [`transport::ChildTransport`] for servers we start,
//! [`transport::stdio_server`] for serving on our own stdio), `http`
//! (URL/HTTPS/token rules, the shared HTTP client), `limits` +
//! `sse_guard` (answers too large or too deep fail their call at once),
//! `redact` (values passed to a server masked in its stderr),
//! `client` (one connection, timeouts, reconnect, what is re-sent),
//! `classify` (which failures are retried), `handler` + `progress`
//! (notifications), `listen` (list changes of a 2026-07-28 server),
//! `flood` (what a server sends on its own, bounded per
//! connection), `ordered` (notifications handled before the response that
//! follows them), `pool`, `convert` (rmcp → core entries), `skills`
//! (SEP-2640), `cap` (`McpServerCap`), `startup`, `error` + `describe`
//! (messages: each cause once).
//!
//! Its public surface is what other crates use: the types re-exported
//! here and the modules [`config`], [`convert`] (the wire mapping the
//! gateway answers with), [`handler`] (the client-capability names),
//! [`http`] (the remote-server check), [`stderr`] and [`transport`]; the
//! rest is the client's own machinery and stays private.
//!
//! This crate never decides what a model sees or may call: it speaks each
//! server's own tool names (`mcp__<server>__<tool>`, permissions and grants
//! are the catalog's), it never knows scopes, sessions or front ends, and
//! it never starts a process except through its one spawner.

mod callers;
mod cap;
mod classify;
mod client;
pub mod config;
mod connection;
pub mod convert;
mod describe;
mod direct;
mod driver;
mod elicitation;
mod error;
mod flood;
pub mod handler;
pub mod http;
mod limits;
mod listen;
mod listing;
mod name;
mod ordered;
mod param_headers;
mod pool;
mod progress;
mod redact;
mod skill_dir;
mod skills;
mod spawner;
mod sse_guard;
mod stall;
mod startup;
pub mod stderr;
mod stdio;
pub mod trace;
pub mod transport;
pub mod url_elicitation;
pub mod versions;
pub mod via;

pub use cap::{CapError, McpServerCap, StaticToolError};
pub use client::{ClientOptions, McpClient, SharedHttpClient};
pub use config::{
    McpServerConfig, Protocol, ReconnectPolicy, StaticTool, Transport, TransportError,
    TransportKind,
};
pub use driver::driver_thread_name;
pub use elicitation::{Elicitation, ElicitationHandler};
pub use error::{ClientError, ConfigError, ConnectFailure, is_server_down};
pub use flood::{FloodStats, NotificationLimits};
pub use http::{BearerToken, HttpSettings, TokenSource};
pub use limits::top_level_id;
pub use listing::{ListingProblem, MAX_LIST_ITEMS, MAX_LIST_PAGES, SkippedEntry};
pub use name::{ServerName, check_names};
pub use pool::{PoolConfig, PoolEntryInfo, PooledClient, SessionConnectionPool};
pub use progress::Progress;
pub use startup::{ServerStatus, StartError, Started, StatusEvent, start_servers};
pub use stdio::{SpawnPolicy, default_sandbox_dir, sandbox_trial};
pub use via::Via;
