//! Gateway tests: a real host (the testkit server, server-everything,
//! skills) served over HTTP by the gateway, and real clients talking to
//! it — the Python and TypeScript MCP SDKs as child processes, and rmcp
//! clients of both protocol eras.
#![allow(clippy::unwrap_used)]

mod answers;
mod apps;
mod callers;
mod clients;
mod conformance;
mod deciders;
mod delegation;
mod enterprise_managed;
mod eras;
mod guard;
mod headers;
mod identity;
mod limits;
mod lists;
mod memory;
mod messages;
mod mrtr;
mod names;
mod ops;
mod page;
mod passthrough;
mod plugins;
mod quotas;
mod rate_answers;
mod redaction;
mod refresh;
mod relay;
mod session_api;
mod session_ids;
mod sessions;
mod sharing;
mod shutdown;
mod side_doors;
mod skill_dirs;
mod slots;
mod support;
mod tasks;
mod tool_search;
mod upstreams;
mod url_elicitation;

/// Counts the bytes held on the heap, for the memory tests.
#[global_allocator]
static HEAP: memory::Counting = memory::Counting;
