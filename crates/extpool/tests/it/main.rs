//! CLI tests: the real `extpool` binary, run as a user runs it, with its
//! home directory and working directory in a temporary directory so that
//! nothing of the machine's own configuration is read.
#![allow(clippy::unwrap_used)]

mod catalog;
mod commands;
mod config_errors;
mod deploy;
mod discovery;
mod display;
mod floods;
mod foreign_import;
mod host;
mod mcp_auth;
mod messages;
mod quickstart;
mod replicas;
pub mod serve;
mod signals;
mod starting;
mod support;
mod tty;
mod unloaded;
