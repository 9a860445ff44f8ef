//! extpool-testkit: test support for every extpool crate.
//!
//! Tests of a capability host are only worth something against real servers,
//! so this crate provides one: `extpool-testkit-server`, an rmcp MCP server
//! (stdio and streamable HTTP) whose tools are made for tests — echo, add,
//! persistent counters to count executions across reconnects, sleep with
//! cancellation accounting, a crash mid-call, `list_changed` on demand, large
//! and structured results, resources, prompts and an MCP-hosted skill.
//!
//! Around it, helpers every test needs:
//! - [`server_binary`]: the path of the built server, built on first use;
//! - [`StateDir`]: a temporary state directory with counter readers;
//! - [`HttpServer`] and [`stdio_command`]: the server as a child process,
//!   killed with its whole process group on drop;
//! - [`peers`]: the third-party peers (`server-everything`, a Python FastMCP
//!   server) installed by `scripts/peers.sh`.
//!
//! Nothing here skips silently: a missing peer or a server that cannot be
//! built is a panic with a message saying how to fix it.

mod binary;
mod child;
pub mod peers;
pub mod server;
pub mod state;
mod state_dir;

pub use binary::{SERVER_BIN_NAME, server_binary};
pub use child::{HttpServer, StdioCommand, stdio_command};
pub use state_dir::StateDir;
