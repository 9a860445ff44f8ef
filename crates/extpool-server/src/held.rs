//! What the gateway keeps between requests, held by the hub every client
//! session shares: tables, each behind its own lock, that name neither the
//! hub nor the modules that act on them, so both import them without an
//! import circle. The front end's: the MCP sessions this replica holds and
//! their slots ([`live`]), the SSE answers kept so a client resumes them
//! ([`replay`]) within one gateway-wide budget ([`kept`]), and the records
//! that let any replica resume a session ([`resume`]). Who is calling:
//! each caller's own view ([`callers`]) and its logins in progress
//! ([`logins`]). The durable sessions open here ([`sessions`]). What
//! operators watch: the operator page's feed and streams ([`page`]) and the
//! store's health as the last heartbeat found it ([`store_health`]).

pub(crate) mod callers;
pub(crate) mod kept;
pub(crate) mod live;
pub(crate) mod logins;
pub(crate) mod page;
pub(crate) mod replay;
pub(crate) mod resume;
pub(crate) mod sessions;
pub(crate) mod store_health;
