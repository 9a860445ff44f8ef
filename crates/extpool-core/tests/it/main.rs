//! Integration tests of the registry, with small local capabilities written for the tests.
#![allow(missing_docs, clippy::unwrap_used)]

mod composition;
mod concurrency;
mod membership;
mod merge;
mod props;
mod replace;
mod resolve;
mod shutdown;
mod support;
mod visibility;
