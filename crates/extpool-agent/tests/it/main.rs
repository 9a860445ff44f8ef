//! Integration tests of the agent library: real testkit servers started as
//! child processes, real skill folders, everything through the public API.
//! The RFC's lifecycle diagrams 5–9 are tests named after them in
//! `scenarios`.
#![allow(clippy::unwrap_used)]

mod deciders;
mod example;
mod extension;
mod plugin_agents;
#[cfg(feature = "rig")]
mod rig;
mod scenarios;
mod search;
mod support;
mod tasks;
mod turns;
