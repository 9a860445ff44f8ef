//! One request as the handler answers it, whichever front end received
//! it: its id, its cancellation, its `_meta`, who sent it, and the ways
//! back to its client while it runs. The HTTP front end makes one from
//! the request it read (its answer's queue carries what the call sends
//! before its result); the stdio service from rmcp's request context
//! (its peer carries it). Nothing of rmcp's request context reaches the
//! handler.

use std::sync::{Arc, OnceLock};

use extpool_host::CallClient;
use extpool_host::core::ProgressSink;
use rmcp::model::{
    ClientCapabilities, InitializeRequestParams, ProtocolVersion, RequestId, RequestMetaObject,
};
use rmcp::service::{Peer, RoleServer};
use tokio_util::sync::CancellationToken;

/// One request, as the handler answers it.
pub(crate) struct Exchange {
    /// Its JSON-RPC id.
    pub id: RequestId,
    /// Cancelled when its client cancels it (`notifications/cancelled`),
    /// or goes away before its answer.
    pub ct: CancellationToken,
    /// Its `_meta`, taken from its params.
    pub meta: RequestMetaObject,
    /// Who sent it, and the table it sees ([`super::caller`]): the
    /// principal the guard put on its HTTP request, the gateway's one
    /// local caller over stdio.
    pub caller: super::caller::Caller,
    /// Its HTTP headers (none over stdio): where a login's link points,
    /// and nothing else.
    pub headers: Option<Arc<http::HeaderMap>>,
    /// The ways back to its client while it runs.
    pub back: Back,
    /// What its session's client said at `initialize`, if it has a
    /// session that began so.
    pub session: Option<Arc<InitializeRequestParams>>,
    /// Whether it stands alone (no `initialize` began its connection): a
    /// 2026-07-28 request over HTTP, or over a stdio connection that
    /// began without one. Such a request carries its whole `_meta`.
    pub standalone: bool,
    /// The span it is answered in: its HTTP request's, when the front end
    /// made one.
    pub span: Option<tracing::Span>,
    /// What is read of its `_meta` and session more than once, read once.
    pub read: Read,
}

/// What an [`Exchange`] reads of its `_meta` (and its session) on first
/// use and keeps: a call asks its version and its client's capabilities
/// at several steps, and each reading of `_meta` decodes JSON.
#[derive(Default)]
pub(crate) struct Read {
    version: OnceLock<Option<ProtocolVersion>>,
    capabilities: OnceLock<Option<ClientCapabilities>>,
}

/// How a request reaches its client before its answer.
#[derive(Clone)]
pub(crate) enum Back {
    /// Answered in the HTTP task: what the call sends goes on its answer's
    /// queue, read by the answer itself.
    Queue {
        /// Its client as the call sees it: its requests and log messages.
        client: Arc<dyn CallClient>,
        /// Its progress, when it gave a token.
        progress: Option<Arc<dyn ProgressSink>>,
    },
    /// Answered by rmcp's stdio service: through its peer (a task
    /// forwards the call's log messages and progress in order).
    Peer(Peer<RoleServer>),
}

impl Exchange {
    /// The protocol version this request speaks: its `_meta`'s, else its
    /// session's (as rmcp's request context says it).
    pub(crate) fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.version().cloned()
    }

    /// [`Self::protocol_version`], read once.
    fn version(&self) -> Option<&ProtocolVersion> {
        self.read
            .version
            .get_or_init(|| {
                self.meta
                    .protocol_version()
                    .or_else(|| self.session.as_ref().map(|s| s.protocol_version.clone()))
            })
            .as_ref()
    }

    /// Whether it speaks 2026-07-28 or later (per-request `_meta`,
    /// `input_required` rounds, the tasks extension).
    pub(crate) fn is_modern(&self) -> bool {
        self.version()
            .is_some_and(|v| *v >= ProtocolVersion::V_2026_07_28)
    }

    /// The capabilities its client declares: its `_meta`'s, else (a
    /// request of a session begun by `initialize`) its session's.
    pub(crate) fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.capabilities().cloned()
    }

    /// Whether its client declares tasks ([`Self::client_capabilities`]).
    pub(crate) fn declares_tasks(&self) -> bool {
        self.capabilities().is_some_and(|c| c.supports_tasks())
    }

    /// [`Self::client_capabilities`], read once.
    fn capabilities(&self) -> Option<&ClientCapabilities> {
        self.read
            .capabilities
            .get_or_init(|| {
                if self.standalone {
                    return self.meta.client_capabilities();
                }
                self.meta
                    .client_capabilities()
                    .or_else(|| self.session.as_ref().map(|s| s.capabilities.clone()))
            })
            .as_ref()
    }
}
