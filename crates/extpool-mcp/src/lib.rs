//! extpool-mcp: MCP servers as capabilities.
//!
//! [`McpServerConfig`] says how to reach a server; [`McpClient`] holds one
//! live rmcp connection to it (stdio child or streamable HTTP) with
//! timeouts and the reconnect rules; [`SessionConnectionPool`] shares one
//! client per distinct server config; [`McpServerCap`] exposes a server's
//! tools, resources, prompts and skills through extpool-core's resource
//! protocols.

pub mod classify;
pub mod client;
pub mod config;
pub mod error;
pub mod handler;
pub mod http;
pub mod name;
pub mod stderr;
pub mod stdio;

pub use client::{ClientOptions, McpClient};
pub use config::{
    McpServerConfig, ReconnectPolicy, StaticTool, Transport, TransportError, TransportKind,
};
pub use error::{ClientError, ConfigError, ConnectFailure};
pub use http::{BearerToken, HttpSettings};
pub use name::{ServerName, check_names};
pub use stdio::SpawnPolicy;
