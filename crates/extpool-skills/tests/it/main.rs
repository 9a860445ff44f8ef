//! Integration tests of extpool-skills, in one binary.

mod support;

mod confinement;
mod corpus;
mod discovery;
mod embedded_mcp;
mod manager;
mod substitution;
mod watcher;
