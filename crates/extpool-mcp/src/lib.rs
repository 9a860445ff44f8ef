//! extpool-mcp: MCP servers as capabilities.
//!
//! [`McpServerConfig`] says how to reach a server; [`McpClient`] holds one
//! live rmcp connection to it (stdio child or streamable HTTP) with
//! timeouts and the reconnect rules; [`SessionConnectionPool`] shares one
//! client per distinct server config; [`McpServerCap`] exposes a server's
//! tools, resources, prompts and skills through extpool-core's resource
//! protocols.

pub mod cap;
pub mod classify;
pub mod client;
pub mod config;
mod connection;
pub mod convert;
pub mod error;
pub mod handler;
pub mod http;
pub mod name;
pub mod pool;
pub mod progress;
pub mod skills;
pub mod startup;
pub mod stderr;
pub mod stdio;

pub use cap::{CapError, McpServerCap, StaticToolError};
pub use client::{ClientOptions, McpClient, SharedHttpClient};
pub use config::{
    McpServerConfig, ReconnectPolicy, StaticTool, Transport, TransportError, TransportKind,
};
pub use error::{ClientError, ConfigError, ConnectFailure};
pub use http::{BearerToken, HttpSettings, TokenSource};
pub use name::{ServerName, check_names};
pub use pool::{PoolConfig, PoolEntryInfo, PooledClient, SessionConnectionPool};
pub use progress::Progress;
pub use startup::{ServerStatus, StartError, Started, StatusEvent, start_servers};
pub use stdio::SpawnPolicy;
