//! Gateway tests: a real host (the testkit server, server-everything,
//! skills) served over HTTP by the gateway, and real clients talking to
//! it — the Python and TypeScript MCP SDKs as child processes, and rmcp
//! clients of both protocol eras.
#![allow(clippy::unwrap_used)]

mod clients;
mod conformance;
mod eras;
mod headers;
mod limits;
mod lists;
mod mrtr;
mod names;
mod ops;
mod passthrough;
mod relay;
mod sessions;
mod sharing;
mod support;
mod tool_search;
