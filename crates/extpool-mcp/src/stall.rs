//! Whether a streamable HTTP server stalls on a reused connection: one
//! that leaves Nagle's algorithm on holds the tail of each answer until
//! extpool's delayed ACK (~40 ms on Linux), so on a kept connection every
//! call waits for it. Such a server is found right after it connects, from
//! pings timed on the reused connection and on a connection per request
//! ([`PingBatch`] keeps the pings that can tell, [`judge_reuse`] decides),
//! and gets a connection per request; every other server keeps reusing.

use std::time::{Duration, Instant};

/// Shortest ping on a reused connection that can be the delayed ACK's
/// wait (Linux delays an ACK by 40 ms at least; a coarse timer may fire a
/// few milliseconds early).
const STALL_MIN: Duration = Duration::from_millis(30);

/// How much longer than on a connection per request a ping on a reused
/// connection takes when it waits for the delayed ACK: well under its
/// shortest wait, leaving the rest for a loaded machine's scheduling
/// delays on the connection per request.
const STALL_EXCESS: Duration = Duration::from_millis(15);

/// A receiver that got no data for longer than its retransmission timeout
/// (200 ms at least on Linux) acknowledges what comes next at once: a ping
/// answered after such a pause cannot show a stall.
const QUICK_ACK_IDLE: Duration = Duration::from_millis(200);

/// How many judged pings one batch collects.
const JUDGED_PINGS: usize = 3;

/// Most pings one batch sends, judged or not.
const MOST_PINGS: usize = 8;

/// The pings of one batch, sent one after another on one kind of
/// connection, that can tell a stall.
#[derive(Debug, Default)]
pub(crate) struct PingBatch {
    sent: usize,
    last_start: Option<Instant>,
    judged: Vec<Duration>,
}

impl PingBatch {
    /// Records a ping sent at `start` and answered `took` later.
    ///
    /// Not judged: the first of a batch (a young or idle connection's ACKs
    /// are quick), and one answered more than [`QUICK_ACK_IDLE`] after the
    /// previous ping was sent (on a loaded machine the connection may have
    /// had no data for that long in between, and its ACK came at once).
    pub(crate) fn record(&mut self, start: Instant, took: Duration) {
        self.sent += 1;
        let since_previous = self
            .last_start
            .map(|previous| (start + took).saturating_duration_since(previous));
        if since_previous.is_some_and(|span| span <= QUICK_ACK_IDLE) {
            self.judged.push(took);
        }
        self.last_start = Some(start);
    }

    /// Whether to send another ping: fewer than [`JUDGED_PINGS`] judged so
    /// far, fewer than [`MOST_PINGS`] sent, and the quick ones not already
    /// half of a full batch (then no more pings can make most of them
    /// stalled: a quick server is pinged no more than it must be at connect).
    pub(crate) fn wants_more(&self) -> bool {
        let quick = self.judged.iter().filter(|ping| **ping < STALL_MIN).count();
        self.judged.len() < JUDGED_PINGS && self.sent < MOST_PINGS && quick * 2 < JUDGED_PINGS
    }

    /// The judged pings, in the order they were sent.
    pub(crate) fn into_judged(self) -> Vec<Duration> {
        self.judged
    }
}

/// What [`judge_reuse`] makes of a server's pings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reuse {
    /// It answers a reused connection without a stall: keep reusing.
    Keep,
    /// Most of its pings on the reused connection took a delayed ACK's
    /// time: ping it on a connection per request too, then judge again.
    TryFresh,
    /// It stalls on a reused connection: give it a connection per request.
    Stalls,
}

/// Whether a server stalls on a reused connection, from judged pings
/// ([`PingBatch`]): `reused` on the connection its handshake left open,
/// `fresh` on a connection per request (empty: not sent yet).
///
/// A stall is a fixed wait, not a share of anything else: most reused
/// pings took at least [`STALL_MIN`] (the shortest delayed ACK), and their
/// median took [`STALL_EXCESS`] more than the quickest fresh ping. Most,
/// and their median, because a stalling server's ACK can still come at
/// once now and then; the quickest fresh one, because a loaded machine
/// only ever adds time. So a quick server that a loaded machine slows on
/// most reused pings but not on every fresh one may be judged stalling:
/// that costs it a connection per call, while a missed stall costs a
/// delayed ACK's wait on every call. A far server's reused pings are one
/// round trip and its fresh ones two (TCP's handshake, then the ping), so
/// it never stalls by this rule.
pub(crate) fn judge_reuse(reused: &[Duration], fresh: &[Duration]) -> Reuse {
    if reused.len() < 2 {
        return Reuse::Keep;
    }
    let stalled = reused.iter().filter(|ping| **ping >= STALL_MIN).count();
    if stalled * 2 <= reused.len() {
        return Reuse::Keep;
    }
    if fresh.is_empty() {
        return Reuse::TryFresh;
    }
    if fresh.len() < 2 {
        return Reuse::Keep;
    }
    match fresh.iter().min() {
        Some(quickest_fresh) if median(reused) >= *quickest_fresh + STALL_EXCESS => Reuse::Stalls,
        _ => Reuse::Keep,
    }
}

/// The lower median (zero for none): with most of `pings` stalled, a
/// stalled one.
fn median(pings: &[Duration]) -> Duration {
    let mut sorted = pings.to_vec();
    sorted.sort_unstable();
    let middle = sorted.len().saturating_sub(1) / 2;
    sorted.get(middle).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(list: &[u64]) -> Vec<Duration> {
        list.iter().map(|m| Duration::from_millis(*m)).collect()
    }

    fn judge(reused: &[u64], fresh: &[u64]) -> Reuse {
        judge_reuse(&ms(reused), &ms(fresh))
    }

    #[test]
    fn only_a_servers_delayed_ack_wait_on_reuse_is_a_stall() {
        // A local server leaving Nagle on: each ping on the reused
        // connection waits ~40 ms for the ACK, one on a new connection
        // does not.
        assert_eq!(judge(&[41, 43], &[]), Reuse::TryFresh);
        assert_eq!(judge(&[41, 43], &[2, 1]), Reuse::Stalls);
        assert_eq!(judge(&[44, 43, 44], &[3, 2, 2]), Reuse::Stalls);
        // Where the delayed ACK is 200 ms.
        assert_eq!(judge(&[201, 204], &[3, 2]), Reuse::Stalls);
        // The same on a loaded machine: every ping is late, the stall
        // still shows.
        assert_eq!(judge(&[57, 47], &[14, 25]), Reuse::Stalls);
        assert_eq!(judge(&[70, 61], &[22, 40]), Reuse::Stalls);
        // One ping of a stalling server acknowledged at once, or fresh
        // pings slowed by the machine: most, and the quickest, still say it.
        assert_eq!(judge(&[45, 3, 44], &[]), Reuse::TryFresh);
        assert_eq!(judge(&[45, 3, 44], &[2, 2, 48]), Reuse::Stalls);
        assert_eq!(judge(&[45, 3, 44, 46, 2, 47], &[2, 2, 3]), Reuse::Stalls);
        // A quick server, or one that was slow once: no second look.
        assert_eq!(judge(&[1, 1], &[]), Reuse::Keep);
        assert_eq!(judge(&[45, 1], &[]), Reuse::Keep);
        assert_eq!(judge(&[45, 1, 2], &[]), Reuse::Keep);
        assert_eq!(judge(&[29, 11], &[]), Reuse::Keep);
        // A quick server on a loaded machine, most of its pings late: as
        // late on a connection per request, so not a stall.
        assert_eq!(judge(&[35, 32], &[]), Reuse::TryFresh);
        assert_eq!(judge(&[35, 32], &[33, 31]), Reuse::Keep);
        assert_eq!(judge(&[35, 32], &[18, 38]), Reuse::Keep);
        // Slowed on most reused pings and not on one fresh one, it looks
        // like a stall (the cheaper mistake: a connection per call).
        assert_eq!(judge(&[35, 4, 33], &[30, 5, 31]), Reuse::Stalls);
        // A far server: one round trip a ping on the reused connection,
        // two on a new one.
        assert_eq!(judge(&[40, 42], &[]), Reuse::TryFresh);
        assert_eq!(judge(&[40, 42], &[82, 90]), Reuse::Keep);
        // Too few pings to judge.
        assert_eq!(judge(&[43], &[1, 1]), Reuse::Keep);
        assert_eq!(judge(&[], &[]), Reuse::Keep);
        assert_eq!(judge(&[41, 43], &[1]), Reuse::Keep);
    }

    #[test]
    fn a_batch_judges_neither_its_first_ping_nor_one_after_an_idle_pause() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut batch = PingBatch::default();
        // The first: not judged.
        batch.record(at(0), Duration::from_millis(5));
        assert!(batch.wants_more());
        // Sent at once after it, answered in 45 ms: judged.
        batch.record(at(5), Duration::from_millis(45));
        // Sent 300 ms later (the machine was busy), answered in 2 ms: the
        // connection was idle past the quick-ACK pause, not judged.
        batch.record(at(300), Duration::from_millis(2));
        // Then two more in a row: judged, and the batch is full.
        batch.record(at(302), Duration::from_millis(44));
        assert!(batch.wants_more());
        batch.record(at(346), Duration::from_millis(46));
        assert!(!batch.wants_more());
        assert_eq!(batch.into_judged(), ms(&[45, 44, 46]));
    }

    #[test]
    fn a_batch_stops_after_its_most_pings_even_when_few_were_judged() {
        let t0 = Instant::now();
        let mut batch = PingBatch::default();
        for n in 0..MOST_PINGS as u64 {
            assert!(batch.wants_more());
            // Each one a second after the last: none judged.
            batch.record(t0 + Duration::from_secs(n), Duration::from_millis(1));
        }
        assert!(!batch.wants_more());
        assert!(batch.into_judged().is_empty());
    }

    #[test]
    fn a_batch_of_a_quick_server_stops_once_most_cannot_be_stalled() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut batch = PingBatch::default();
        batch.record(at(0), Duration::from_millis(2));
        batch.record(at(2), Duration::from_millis(1));
        assert!(batch.wants_more(), "one quick judged ping settles nothing");
        batch.record(at(3), Duration::from_millis(1));
        assert!(!batch.wants_more(), "two of three quick: reuse is kept");
        let judged = batch.into_judged();
        assert_eq!(judged, ms(&[1, 1]));
        assert_eq!(judge_reuse(&judged, &[]), Reuse::Keep);
    }
}
