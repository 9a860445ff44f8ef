//! The gateway-wide budget of what replayable streams keep
//! ([`super::replay`]): every byte of every stream's events is counted
//! here, and when the total passes the budget the streams that finished
//! longest ago are dropped, oldest first, across every session — so the
//! gateway's memory for resumable answers is bounded by the gateway, not
//! by how many sessions its clients open or how large their results are.
//! A stream still running is never dropped (its client reads it now), nor
//! the one whose answer just came. A dropped stream's events are freed at
//! once; resuming it is answered as for an event id the gateway never
//! issued.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::replay::Replay;

/// The bytes kept by every replayable stream, and the finished ones in
/// the order they finished.
#[derive(Debug)]
pub(crate) struct KeptStreams {
    limit: usize,
    state: Mutex<State>,
    /// Streams dropped for the budget, ever.
    dropped: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    /// Bytes of every stream's events, running and finished.
    used: usize,
    /// Finished streams by the order they finished in (the oldest first).
    finished: BTreeMap<u64, Weak<Replay>>,
    next: u64,
}

impl KeptStreams {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            state: Mutex::new(State::default()),
            dropped: AtomicU64::new(0),
        })
    }

    /// Counts `bytes` more kept by a stream.
    pub(crate) fn charge(&self, bytes: usize) {
        self.state.lock().used += bytes;
    }

    /// Counts `bytes` a stream no longer keeps.
    pub(crate) fn refund(&self, bytes: usize) {
        let mut state = self.state.lock();
        state.used = state.used.saturating_sub(bytes);
    }

    /// Takes `stream` (whose answer just came) into the finished ones and
    /// drops the oldest others while the budget is passed; returns its
    /// place in the order (to forget it by, [`KeptStreams::forget`]).
    pub(crate) fn finished(&self, stream: &Arc<Replay>) -> u64 {
        let (place, victims) = {
            let mut state = self.state.lock();
            let place = state.next;
            state.next += 1;
            state.finished.insert(place, Arc::downgrade(stream));
            let mut victims = Vec::new();
            let mut over = state.used.saturating_sub(self.limit);
            while over > 0 {
                let Some((&oldest, _)) = state.finished.first_key_value() else {
                    break;
                };
                if oldest == place {
                    break;
                }
                let Some(victim) = state.finished.remove(&oldest).and_then(|w| w.upgrade()) else {
                    continue;
                };
                over = over.saturating_sub(victim.kept_bytes());
                victims.push(victim);
            }
            (place, victims)
        };
        // Outside the lock: each victim refunds what it frees.
        for victim in victims {
            if victim.drop_events(self) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    limit = self.limit,
                    "a kept stream was dropped: the replay budget is spent"
                );
            }
        }
        place
    }

    /// Forgets finished stream `place` (it went: its session forgot it or
    /// ended).
    pub(crate) fn forget(&self, place: u64) {
        self.state.lock().finished.remove(&place);
    }

    /// Bytes kept now.
    pub(crate) fn used(&self) -> usize {
        self.state.lock().used
    }

    /// Its gauges and counter, in Prometheus' text format (`/metrics`).
    pub(crate) fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = write!(
            out,
            "# HELP extpool_replay_bytes Bytes kept by answers a client may resume (running and finished SSE streams).\n\
             # TYPE extpool_replay_bytes gauge\n\
             extpool_replay_bytes {}\n\
             # HELP extpool_replay_limit_bytes The gateway-wide budget of extpool_replay_bytes (extpool serve --max-replay-bytes).\n\
             # TYPE extpool_replay_limit_bytes gauge\n\
             extpool_replay_limit_bytes {}\n\
             # HELP extpool_replay_dropped_total Finished streams dropped, oldest first, to keep within the budget.\n\
             # TYPE extpool_replay_dropped_total counter\n\
             extpool_replay_dropped_total {}\n",
            self.used(),
            self.limit,
            self.dropped.load(Ordering::Relaxed)
        );
    }
}
