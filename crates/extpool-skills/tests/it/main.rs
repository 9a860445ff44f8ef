//! Integration tests of extpool-skills, in one binary.
#![allow(clippy::unwrap_used)]

mod fake;
mod support;

mod confinement;
mod corpus;
mod discovery;
mod embedded_mcp;
mod manager;
mod props;
mod registry;
mod substitution;
mod validation;
mod watcher;
