//! Integration tests of the testkit: the example server driven by a real
//! rmcp client over stdio and streamable HTTP, the process helpers, and the
//! Python and Node peers.

// Test helpers (not only `#[test]` functions) may unwrap.
#![allow(clippy::unwrap_used)]

mod balancer;
mod bearer;
mod cancel;
mod common;
mod conformance;
mod crash;
mod faults;
mod helpers;
mod http;
mod modern;
mod notifications;
mod oidc;
mod pagination;
mod peers;
mod raw_echo;
mod skills;
mod state;
mod stdio;
