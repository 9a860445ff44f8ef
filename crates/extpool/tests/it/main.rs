//! CLI tests: the real `extpool` binary, run as a user runs it, with its
//! home directory and working directory in a temporary directory so that
//! nothing of the machine's own configuration is read.
#![allow(clippy::unwrap_used)]

mod answers;
mod banner;
mod catalog;
mod cli_reference;
mod commands;
mod config_errors;
mod config_schema;
mod connect;
mod deploy;
pub mod discovery;
mod display;
mod first_steps;
mod floods;
mod foreign_import;
mod gateway_servers;
mod guardrails;
mod host;
mod implementation;
mod json_logs;
mod listings;
mod log_feedback;
mod masking;
mod mcp_auth;
mod messages;
mod operator_cli;
mod papercuts;
mod per_caller_limits;
mod plugins;
mod plugins_live;
mod plugins_sandbox;
mod quickstart;
mod real_hosts;
mod rebinding;
mod registry;
mod replicas;
mod sandbox;
mod self_proxy;
pub mod serve;
mod servers_cli;
mod service;
mod shutdown;
mod signals;
mod starting;
mod stdio;
mod store_faults;
mod suggestions;
mod support;
mod tasks;
mod teams;
mod traces;
mod tty;
mod unloaded;
mod url_elicitation;
