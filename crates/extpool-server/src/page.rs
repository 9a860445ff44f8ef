//! The operator page: `GET /` of `extpool serve`, behind the router's one
//! guard like every route (loopback open, otherwise the gateway's token or
//! an API key; only an operator principal is shown it). Server-rendered
//! HTML with a small dependency-free script and style sheet embedded in
//! the binary (`/page/app.js`, `/page/app.css`), under a content security
//! policy that allows nothing but this gateway: no external request, no
//! inline script.
//!
//! The page is live: `GET /v1/page/events` is a server-sent event stream
//! that sends a `snapshot` (servers, catalog, sources, sessions, skills,
//! last calls: [`snapshot`]) when any of them changes, and `tools` when the
//! catalog's revision does. It wakes on the gateway's own change signals
//! (calls, sessions made or deleted through the API, reconciliation
//! cycles, discovery, health marks) and once a second for what moves by
//! itself (a process that exits, the last minute's charts), sending only
//! what differs from what it sent last. The page never polls.
//!
//! Session buttons call the `/v1` API (`DELETE /v1/sessions/{id}`, `POST
//! …/mcp-refresh`); the playground (`extpool serve --playground`) calls a
//! tool with a 2026-07-28 request to `/mcp`, the path every client's call
//! takes (audited, metered, permission-checked). The script builds the DOM
//! with `textContent` only: every value is text, never markup.

pub(crate) mod events;
pub(crate) mod snapshot;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Extension, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use extpool_host::core::Principal;
use tokio::sync::watch;

use crate::shared::Shared;

/// The path of the page's event stream.
pub const EVENTS_PATH: &str = "/v1/page/events";

/// The least time between two snapshots of one stream (calls arriving by
/// the thousand make one snapshot, not a thousand).
const MIN_INTERVAL: Duration = Duration::from_millis(250);

/// How often a stream looks again without a signal: for what changes by
/// itself (a server's process exiting, the last minute moving on).
const TICK: Duration = Duration::from_secs(1);

const HTML: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// Only this gateway's own script, style sheet and stream; nothing inline,
/// nothing from elsewhere; never framed.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Notes each revision's publication as it happens (for "published at").
pub(crate) async fn follow(shared: Arc<Shared>) {
    let mut revisions = shared.host.catalog().subscribe();
    loop {
        let revision = *revisions.borrow_and_update();
        shared.ops.page.published_ms(revision);
        shared.ops.page.touch();
        if revisions.changed().await.is_err() {
            return;
        }
    }
}

fn refused(principal: &Principal) -> Option<Response> {
    (!principal.operator).then(|| {
        (
            StatusCode::FORBIDDEN,
            "the operator page is for this gateway's operators (an operator's token or API key)\n",
        )
            .into_response()
    })
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn page(Extension(principal): Extension<Arc<Principal>>) -> Response {
    refused(&principal).unwrap_or_else(|| asset("text/html; charset=utf-8", HTML))
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

/// Waits for `rx` to move; forever once its sender is gone.
async fn moved<T>(rx: &mut watch::Receiver<T>) {
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// What makes the page look again: the gateway's change signals, and a
/// tick for what changes by itself.
struct Signals {
    calls: watch::Receiver<u64>,
    changed: watch::Receiver<u64>,
    cycles: watch::Receiver<u64>,
    discovery: watch::Receiver<u64>,
    health: tokio::sync::broadcast::Receiver<extpool_host::HealthEvent>,
    tick: tokio::time::Interval,
    /// The next wait skips [`MIN_INTERVAL`].
    at_once: bool,
}

impl Signals {
    fn new(shared: &Shared) -> Self {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Self {
            calls: shared.ops.page.feed.changes(),
            changed: shared.ops.page.changes(),
            cycles: shared.host.catalog().cycles(),
            discovery: shared.host.discovery_updates(),
            health: shared.host.health().subscribe(),
            tick,
            at_once: false,
        }
    }

    /// The next wait does not begin with [`MIN_INTERVAL`].
    fn skip_pause(&mut self) {
        self.at_once = true;
    }

    /// Waits at least [`MIN_INTERVAL`], then for any signal.
    async fn next(&mut self) {
        if !std::mem::take(&mut self.at_once) {
            tokio::time::sleep(MIN_INTERVAL).await;
        }
        tokio::select! {
            () = moved(&mut self.calls) => {}
            () = moved(&mut self.changed) => {}
            () = moved(&mut self.cycles) => {}
            () = moved(&mut self.discovery) => {}
            _ = self.health.recv() => {}
            _ = self.tick.tick() => {}
        }
    }
}

async fn events(
    State(shared): State<Arc<Shared>>,
    Extension(principal): Extension<Arc<Principal>>,
    cut: Option<Extension<crate::listener::Cut>>,
) -> Response {
    if let Some(refusal) = refused(&principal) {
        return refusal;
    }
    events::open(shared, cut.map(|Extension(cut)| cut.0))
}

/// The page's routes.
pub(crate) fn routes(shared: &Arc<Shared>) -> Vec<(&'static str, MethodRouter)> {
    vec![
        ("/", get(page)),
        ("/page/app.js", get(script)),
        ("/page/app.css", get(style)),
        (EVENTS_PATH, get(events).with_state(shared.clone())),
    ]
}
