//! What a server sends on its own, bounded per connection.
//!
//! rmcp hands every incoming notification and request to a task of its
//! own, with no limit, so a server that sends 100,000 notifications a
//! second makes the client spawn as many tasks (and whatever they feed:
//! a caller's progress, a gateway client's log). [`FloodGate`] wraps a
//! connection's transport — stdio or streamable HTTP alike — and lets
//! through, per connection:
//!
//! - log messages (`notifications/message`) and progress
//!   (`notifications/progress`) up to a rate each (a token bucket holding
//!   one second's worth); the excess is dropped, and the first drop of
//!   each kind is logged once, naming the server;
//! - `list_changed` of each kind at most once an interval: a burst becomes
//!   its first notification and its last, which is held back until the
//!   interval has passed, so the final state is always seen;
//! - requests (sampling, elicitation, roots, ping) up to a number in
//!   flight; beyond that a request is answered at once with an error.
//!
//! Everything else (responses, cancellations, resource updates) passes
//! untouched. The limits are [`NotificationLimits`] (`extensions.
//! notifications` in extpool.yaml).

use std::collections::HashSet;
use std::future::Future;

use rmcp::model::{ErrorCode, ErrorData, JsonRpcMessage, RequestId, ServerNotification};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::{Deserialize, Serialize};
use tokio::time::{Duration, Instant};

use crate::name::ServerName;

/// How much a server may send on its own, per connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NotificationLimits {
    /// Log messages (`notifications/message`) a second; the excess is dropped.
    pub log_per_second: u32,
    /// Progress notifications a second, all calls of the connection
    /// together; the excess is dropped (progress is sampled).
    pub progress_per_second: u32,
    /// At most one `list_changed` of a kind per this many milliseconds; a
    /// burst is delivered as its first and its last notification.
    pub list_changed_ms: u64,
    /// Requests from the server (sampling, elicitation, roots, ping)
    /// waiting for an answer at once; more are refused with an error.
    pub requests_in_flight: u32,
}

impl Default for NotificationLimits {
    fn default() -> Self {
        Self {
            log_per_second: 100,
            progress_per_second: 100,
            list_changed_ms: 100,
            requests_in_flight: 16,
        }
    }
}

/// What the gate let through and what it held back, so far (per connection).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloodStats {
    /// Log messages passed on.
    pub log_passed: u64,
    /// Log messages dropped.
    pub log_dropped: u64,
    /// Progress notifications passed on.
    pub progress_passed: u64,
    /// Progress notifications dropped.
    pub progress_dropped: u64,
    /// `list_changed` notifications passed on (held ones included).
    pub list_changed_passed: u64,
    /// `list_changed` notifications merged into a later one.
    pub list_changed_merged: u64,
    /// Server requests refused because too many were in flight.
    pub requests_refused: u64,
}

/// A token bucket: `rate` a second, holding at most one second's worth.
#[derive(Debug)]
struct Bucket {
    rate: f64,
    tokens: f64,
    last: Instant,
    warned: bool,
}

impl Bucket {
    fn new(rate: u32, now: Instant) -> Self {
        let rate = f64::from(rate);
        Self {
            rate,
            tokens: rate,
            last: now,
            warned: false,
        }
    }

    fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// True the first time only: the one warning of a flood.
    fn first_drop(&mut self) -> bool {
        !std::mem::replace(&mut self.warned, true)
    }
}

/// The `list_changed` kinds, as indexes.
const TOOLS: usize = 0;
const RESOURCES: usize = 1;
const PROMPTS: usize = 2;

/// One `list_changed` kind: when it last passed, and the one held back.
#[derive(Debug, Default)]
struct Throttle {
    last: Option<Instant>,
    held: Option<RxJsonRpcMessage<RoleClient>>,
}

/// What to do with an incoming message.
enum Verdict {
    Pass(RxJsonRpcMessage<RoleClient>),
    Drop,
    /// Answer the server with this error instead of passing its request on.
    Refuse(TxJsonRpcMessage<RoleClient>),
}

/// A client transport whose incoming traffic is bounded (see the module docs).
pub struct FloodGate<T> {
    inner: T,
    server: ServerName,
    limits: NotificationLimits,
    log: Bucket,
    progress: Bucket,
    lists: [Throttle; 3],
    /// Server requests passed on and not yet answered.
    pending: HashSet<RequestId>,
    refusal_warned: bool,
    stats: std::sync::Arc<parking_lot::Mutex<FloodStats>>,
}

impl<T> std::fmt::Debug for FloodGate<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FloodGate")
            .field("server", &self.server)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<T> FloodGate<T> {
    /// Wraps `inner`, the transport of a connection to `server`; `stats`
    /// is updated as messages pass.
    pub fn new(
        inner: T,
        server: ServerName,
        limits: NotificationLimits,
        stats: std::sync::Arc<parking_lot::Mutex<FloodStats>>,
    ) -> Self {
        let now = Instant::now();
        Self {
            inner,
            log: Bucket::new(limits.log_per_second, now),
            progress: Bucket::new(limits.progress_per_second, now),
            server,
            limits,
            lists: Default::default(),
            pending: HashSet::new(),
            refusal_warned: false,
            stats,
        }
    }

    fn interval(&self) -> Duration {
        Duration::from_millis(self.limits.list_changed_ms)
    }

    /// When the earliest held `list_changed` is due.
    fn next_release(&self) -> Option<Instant> {
        let interval = self.interval();
        self.lists
            .iter()
            .filter(|t| t.held.is_some())
            .filter_map(|t| t.last.map(|last| last + interval))
            .min()
    }

    /// A held `list_changed` that is due at `now`, if any.
    fn release(&mut self, now: Instant) -> Option<RxJsonRpcMessage<RoleClient>> {
        let interval = self.interval();
        let throttle = self
            .lists
            .iter_mut()
            .find(|t| t.held.is_some() && t.last.is_none_or(|last| last + interval <= now))?;
        throttle.last = Some(now);
        self.stats.lock().list_changed_passed += 1;
        throttle.held.take()
    }

    fn judge(&mut self, message: RxJsonRpcMessage<RoleClient>, now: Instant) -> Verdict {
        match &message {
            JsonRpcMessage::Notification(n) => match &n.notification {
                ServerNotification::LoggingMessageNotification(_) => {
                    self.metered(message, now, true)
                }
                ServerNotification::ProgressNotification(_) => self.metered(message, now, false),
                ServerNotification::ToolListChangedNotification(_) => {
                    self.throttled(TOOLS, message, now)
                }
                ServerNotification::ResourceListChangedNotification(_) => {
                    self.throttled(RESOURCES, message, now)
                }
                ServerNotification::PromptListChangedNotification(_) => {
                    self.throttled(PROMPTS, message, now)
                }
                ServerNotification::CancelledNotification(c) => {
                    // The server gave up on a request of its own: it will
                    // get no answer, so it no longer counts as in flight.
                    if let Some(id) = &c.params.request_id {
                        self.pending.remove(id);
                    }
                    Verdict::Pass(message)
                }
                _ => Verdict::Pass(message),
            },
            JsonRpcMessage::Request(request) => {
                let max = self.limits.requests_in_flight as usize;
                if self.pending.len() >= max && !self.pending.contains(&request.id) {
                    self.stats.lock().requests_refused += 1;
                    if !std::mem::replace(&mut self.refusal_warned, true) {
                        tracing::warn!(
                            "MCP server \"{}\" sends more than {max} requests at once; refusing \
                             the excess (extensions.notifications.requests_in_flight)",
                            self.server
                        );
                    }
                    let error = ErrorData::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!(
                            "too many requests in flight: the client answers at most {max} at once"
                        ),
                        None,
                    );
                    return Verdict::Refuse(TxJsonRpcMessage::<RoleClient>::error(
                        error,
                        Some(request.id.clone()),
                    ));
                }
                self.pending.insert(request.id.clone());
                Verdict::Pass(message)
            }
            _ => Verdict::Pass(message),
        }
    }

    /// A log message (`log`) or a progress notification, through its bucket.
    fn metered(
        &mut self,
        message: RxJsonRpcMessage<RoleClient>,
        now: Instant,
        log: bool,
    ) -> Verdict {
        let bucket = if log {
            &mut self.log
        } else {
            &mut self.progress
        };
        let passed = bucket.take(now);
        let first_drop = !passed && bucket.first_drop();
        {
            let mut stats = self.stats.lock();
            match (log, passed) {
                (true, true) => stats.log_passed += 1,
                (true, false) => stats.log_dropped += 1,
                (false, true) => stats.progress_passed += 1,
                (false, false) => stats.progress_dropped += 1,
            }
        }
        if first_drop {
            let (what, limit, key) = if log {
                ("log messages", self.limits.log_per_second, "log_per_second")
            } else {
                (
                    "progress notifications",
                    self.limits.progress_per_second,
                    "progress_per_second",
                )
            };
            tracing::warn!(
                "MCP server \"{}\" sends more than {limit} {what} a second; dropping the excess \
                 (extensions.notifications.{key})",
                self.server
            );
        }
        if passed {
            Verdict::Pass(message)
        } else {
            Verdict::Drop
        }
    }

    fn throttled(
        &mut self,
        kind: usize,
        message: RxJsonRpcMessage<RoleClient>,
        now: Instant,
    ) -> Verdict {
        let interval = self.interval();
        let throttle = &mut self.lists[kind];
        let due = throttle.last.is_none_or(|last| last + interval <= now);
        let mut stats = self.stats.lock();
        if due && throttle.held.is_none() {
            throttle.last = Some(now);
            stats.list_changed_passed += 1;
            Verdict::Pass(message)
        } else {
            if throttle.held.replace(message).is_some() {
                stats.list_changed_merged += 1;
            }
            Verdict::Drop
        }
    }

    /// Notes a response to a server request going out.
    fn note_outgoing(&mut self, item: &TxJsonRpcMessage<RoleClient>) {
        match item {
            JsonRpcMessage::Response(r) => {
                self.pending.remove(&r.id);
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.pending.remove(id);
                }
            }
            _ => {}
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for FloodGate<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.note_outgoing(&item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            // Cancel-safe: the inner transport's receive is, and nothing
            // is awaited between taking a message and returning it.
            let message = match self.next_release() {
                Some(due) => tokio::select! {
                    biased;
                    () = tokio::time::sleep_until(due) => {
                        match self.release(Instant::now()) {
                            Some(held) => return Some(held),
                            None => continue,
                        }
                    }
                    message = self.inner.receive() => message,
                },
                None => self.inner.receive().await,
            };
            match self.judge(message?, Instant::now()) {
                Verdict::Pass(message) => return Some(message),
                Verdict::Drop => {}
                Verdict::Refuse(reply) => {
                    let send = self.inner.send(reply);
                    let server = self.server.clone();
                    tokio::spawn(async move {
                        if let Err(error) = send.await {
                            tracing::debug!(%server, %error, "cannot refuse a server request");
                        }
                    });
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let stats = *self.stats.lock();
        if stats.log_dropped + stats.progress_dropped + stats.requests_refused > 0 {
            tracing::info!(server = %self.server, ?stats, "notification flood summary");
        }
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_lets_a_second_of_burst_through_then_the_rate() {
        let start = Instant::now();
        let mut bucket = Bucket::new(10, start);
        let burst = (0..100).filter(|_| bucket.take(start)).count();
        assert_eq!(burst, 10);
        let later = start + Duration::from_millis(500);
        let refilled = (0..100).filter(|_| bucket.take(later)).count();
        assert_eq!(refilled, 5);
        assert!(bucket.first_drop());
        assert!(!bucket.first_drop(), "one warning per flood");
    }

    #[test]
    fn a_zero_rate_drops_everything() {
        let now = Instant::now();
        let mut bucket = Bucket::new(0, now);
        assert!(!bucket.take(now + Duration::from_secs(5)));
    }
}
