#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]
//! Integration tests of extpool-auth against a real local authorization
//! server (extpool-testkit's `oauth`), in this process and in child
//! processes started from this same binary (see `child`).

mod child;
mod dcr;
mod enterprise;
mod login;
mod logs;
mod store;
mod support;
