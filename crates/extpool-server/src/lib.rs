//! extpool-server: the gateway. Every MCP server, skill and command of an
//! [`extpool_host::Host`] behind one MCP endpoint, served over streamable
//! HTTP (both protocol eras: sessions with `initialize`, and the stateless
//! 2026-07-28 era) and over stdio, shared by every client session.
//!
//! Upstream servers start once, with the host, and every client reaches
//! them through the host's pool: N client sessions use one connection per
//! server. A client's view is a host [`View`](extpool_host::View) (one per
//! session), so what a client sees is the catalog: namespaced tools,
//! permission-filtered, built-ins included; resources; commands as prompts;
//! skills through the SEP-2640 skills extension and as plain resources.
//!
//! The gateway never decides a rule of its own about what a client sees or
//! may call — permissions, a session's grants, tool-search deferral,
//! unprefixed names are its host view's table (`extpool_host::policy`),
//! which it asks and renders — never asks the store on a call, and never
//! reaches past the host into a capability or an upstream connection.
//!
//! - [`gateway`]: the [`Gateway`] and its options;
//! - [`handler`]: the MCP server a client talks to;
//! - [`convert`]: host rows → MCP wire types;
//! - [`names`]: the prompt names a client sees (unprefixed servers) and
//!   the schemas its HTTP layer checks headers against;
//! - [`lists`]: the order and cache policy of lists and reads;
//! - [`passthrough`]: prompts whole, resource templates, completions,
//!   subscriptions and log levels;
//! - [`subscriptions`]: resource subscriptions over shared upstreams;
//! - [`relay`]: progress, logs, sampling and elicitation back to the caller;
//! - [`notify`]: `list_changed` to every client whose view changed;
//! - [`http`]: the axum router (`/mcp`, `/healthz`, `/readyz`, `/metrics`,
//!   `/v1`), every route behind one guard (`Host`, `Origin`, bearer
//!   token, body size);
//! - `front`: the MCP endpoints' streamable HTTP, the project's own in
//!   both eras (every `initialize`, refusal, `GET` stream, `DELETE`,
//!   resume and durable session's endpoint), answering through the
//!   handler's one dispatch, as the stdio service does;
//! - [`listener`]: connections bounded in number, header time and idle
//!   time;
//! - `shutdown`: the one shutdown path (stop taking work, let requests in
//!   flight finish within a bound, answer and cancel the rest);
//! - [`metrics`], [`audit`]: what operators watch and keep;
//! - `page`: the operator page at `/`, live over server-sent events.

pub mod api;
pub mod audit;
pub mod auth;
pub(crate) mod check;
mod client_peer;
pub mod convert;
pub mod delegation;
mod front;
pub mod gateway;
pub(crate) mod guard;
pub mod handler;
mod held;
pub use handler::{passthrough, relay, source_tools};
pub use sessions::replica;
pub mod http;
pub mod identity;
mod input_rounds;
pub mod listener;
pub mod lists;
mod login;
pub(crate) mod methods;
pub mod metrics;
pub mod names;
pub mod notify;
mod options;
pub mod otel;
pub(crate) mod page;
mod paths;
mod rate;
pub mod sessions;
mod shared;
mod shutdown;
pub mod skills;
pub mod subscriptions;
mod tasks;
pub mod tool_search;
mod trace;
mod wire;

pub use gateway::{Gateway, GatewayError, GatewayOptions};
pub use handler::GatewayHandler;
