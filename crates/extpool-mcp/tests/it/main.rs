//! Integration tests of extpool-mcp against real servers started for each
//! test: the testkit server (stdio and streamable HTTP),
//! `@modelcontextprotocol/server-everything` and a Python `mcp` SDK server.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod cap;
mod client;
mod driver;
mod eras;
mod fake_http;
mod fault_matrix;
mod flood;
mod limits;
mod messages;
mod oauth;
mod peers;
mod pool;
mod reconnect;
mod replay;
mod security;
mod startup;
mod support;
