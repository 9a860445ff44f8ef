//! extpool-mcp: MCP servers as capabilities.
//!
//! [`McpServerConfig`] says how to reach a server; the rest of the crate
//! (client, transports, pool, `McpServerCap`) is built on rmcp.

pub mod config;

pub use config::{
    McpServerConfig, ReconnectPolicy, StaticTool, Transport, TransportError, TransportKind,
};
