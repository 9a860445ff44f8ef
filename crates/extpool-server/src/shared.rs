//! The gateway's hub: what every client session shares ([`Shared`]), by
//! concern. It names only the tables it holds and the low modules that
//! define them, never a module that takes a `Shared`, so no import circle
//! runs through it.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use extpool_host::{Host, View, ViewPolicy};
use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::metrics::Metrics;
use crate::names::NamesCache;
use crate::notify::Notifier;
use crate::options::GatewayOptions;
use crate::subscriptions::Subscriptions;

/// What every client session shares, by concern: the front end's
/// sessions and shutdown ([`Front`]), who is calling and what each caller
/// sees ([`Access`]), what operators watch ([`Ops`]), and the host's
/// shared state every connection's handler reads.
pub(crate) struct Shared {
    /// The host being served: its catalog, pool and views.
    pub host: Host,
    /// How the gateway was configured.
    pub options: GatewayOptions,
    /// The front end's sessions, their answers kept, and the shutdown.
    pub front: Front,
    /// Who is calling, and what each caller sees and may call.
    pub access: Access,
    /// What operators watch and keep.
    pub ops: Ops,
    /// Who hears the gateway's list changes (clients without a durable
    /// session).
    pub notifier: Notifier,
    /// Resource subscriptions of every session.
    pub subscriptions: Subscriptions,
    /// The tasks started through the gateway, and whose they are.
    pub tasks: Arc<crate::tasks::Tasks>,
    /// Calls of 2026-07-28 clients waiting for their answers to what an
    /// upstream asked ([`crate::input_rounds`]).
    pub rounds: crate::input_rounds::Rounds<extpool_host::GuardedCall>,
    /// The most verbose log level any client asked for and upstream
    /// servers were told (a rank of `LOG_LEVELS`; `usize::MAX`: none yet).
    pub upstream_log_level: AtomicUsize,
    /// What `initialize` tells clients of the gateway (its servers'
    /// instructions among them).
    pub instructions: String,
    /// Durable sessions, when a store is configured.
    pub sessions: Option<crate::held::sessions::Sessions>,
}

/// The front end's sessions and their lifetime.
pub(crate) struct Front {
    /// The MCP sessions held here, their slots and activity.
    pub live: Arc<crate::held::live::Live>,
    /// Every endpoint's MCP session records, resumable by any replica.
    pub resume: crate::held::resume::Resumable,
    /// What every session's resumable answers keep, against
    /// [`GatewayOptions::max_replay_bytes`].
    pub kept_streams: Arc<crate::held::kept::KeptStreams>,
    /// The tag of the SSE event ids this replica sends.
    pub event_tag: String,
    /// Numbers the implicit sessions this replica makes.
    next_session: AtomicU64,
    /// The shutdown began: no new connection, request or stream is taken
    /// ([`crate::shutdown`]). A child of `stop`.
    pub draining: CancellationToken,
    /// Everything ends: requests still running are answered with the
    /// shutdown error and cancelled.
    pub stop: CancellationToken,
}

/// Who is calling, and what each caller sees and may call.
pub(crate) struct Access {
    /// Who is calling: the gateway's token, API keys, an issuer's tokens.
    pub identity: Arc<crate::identity::Identity>,
    /// Each caller's tool-call buckets, when limits are set (shared by the
    /// replicas when the store is PostgreSQL); each request's caller
    /// carries its own (the handler's `Caller`).
    pub rate_limits: Option<Arc<crate::rate::RateLimits>>,
    /// Each caller's tokens for servers reached with a token made from
    /// its own ([`crate::delegation`]).
    pub delegation: crate::delegation::Delegation,
    /// Callers' logins to their own servers in progress.
    pub logins: Arc<crate::held::logins::Logins>,
    /// Each caller's own view for requests without a session.
    pub callers: crate::held::callers::CallerViews,
    /// The view of clients without a session (2026-07-28 requests).
    pub stateless: View,
    /// The listed prompt names of the stateless view's revision.
    pub stateless_names: NamesCache,
    /// What every client's model sees and may call, before a session's own
    /// grants: the gateway's naming, its unprefixed servers, its own tools
    /// and tool search. Every view without grants shares it (and so shares
    /// one compiled table per revision).
    pub policy: Arc<ViewPolicy>,
    /// [`Access::policy`] with `CloseSession` among the gateway's own
    /// tools: what durable sessions' grants refine (they share one
    /// compiled table per revision between them).
    pub session_policy: Arc<ViewPolicy>,
    /// The servers of [`GatewayOptions::unprefixed`].
    pub unprefixed: HashSet<String>,
}

/// What operators watch and keep.
pub(crate) struct Ops {
    /// The counters `/metrics` shows.
    pub metrics: Arc<Metrics>,
    /// The audit log of calls, when one is configured.
    pub audit: Option<AuditLog>,
    /// What the operator page's streams share.
    pub page: crate::held::page::PageState,
    /// This replica's id among those sharing the store.
    pub replica: extpool_state::ReplicaId,
    /// Whether the store answered this replica's last heartbeat.
    pub replica_health: crate::held::store_health::StoreHealth,
}

impl Front {
    /// The front end's parts; implicit sessions numbered from 1, and the
    /// shutdown's `draining` a child of `stop`.
    pub(crate) fn new(
        live: Arc<crate::held::live::Live>,
        resume: crate::held::resume::Resumable,
        kept_streams: Arc<crate::held::kept::KeptStreams>,
        event_tag: String,
        stop: CancellationToken,
    ) -> Self {
        Self {
            live,
            resume,
            kept_streams,
            event_tag,
            next_session: AtomicU64::new(1),
            draining: stop.child_token(),
            stop,
        }
    }
}

impl Shared {
    /// A new session id, unique among the replicas (it carries this
    /// replica's id).
    pub(crate) fn session_id(&self) -> String {
        let n = self.front.next_session.fetch_add(1, Ordering::Relaxed);
        format!("gw-{}-{n}", self.ops.replica)
    }
}
