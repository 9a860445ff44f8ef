//! Integration tests of extpool-catalog against real servers: the testkit
//! MCP server (stdio, through `McpServerCap`), `server-everything` (npm),
//! and a loopback HTTP server for `FetchMcpResource`.

// Test helpers may unwrap: a failure there is a test failure with its location.
#![allow(clippy::unwrap_used)]

mod everything;
mod fetch;
mod membership;
mod props;
mod support;
mod testkit;
