//! The last minute of tool calls, per server, in one-second slots: what
//! the operator page charts (calls per second, p50 and p99 latency).
//! Latencies go into a fixed histogram per slot, so a minute costs the
//! same whatever the call rate, and the quantiles are bucket bounds.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

/// Seconds kept.
pub const SECONDS: usize = 60;

/// Upper bounds of the latency buckets, in microseconds (the last one
/// takes everything slower).
const BOUNDS_US: [u64; 20] = [
    100,
    200,
    500,
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    30_000_000,
    60_000_000,
    300_000_000,
    u64::MAX,
];

/// Most servers counted (names come from configuration and discovery;
/// past it, calls are counted under `other`).
const MAX_SERVERS: usize = 1024;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The second (since the window's start) this slot holds.
    second: u64,
    calls: u64,
    errors: u64,
    buckets: [u32; BOUNDS_US.len()],
}

#[derive(Debug)]
struct Series {
    slots: [Slot; SECONDS],
}

impl Default for Series {
    fn default() -> Self {
        Self {
            slots: [Slot::default(); SECONDS],
        }
    }
}

/// Per server, the calls of the last [`SECONDS`].
#[derive(Debug)]
pub struct Window {
    start: Instant,
    series: Mutex<HashMap<String, Series>>,
}

impl Default for Window {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            series: Mutex::new(HashMap::new()),
        }
    }
}

/// One server's last minute, as the page charts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Minute {
    /// Calls in each second, oldest first (the last is the second now).
    pub calls: Vec<u64>,
    /// Median latency of each second's calls in milliseconds, oldest
    /// first (`None`: no call ended that second).
    pub p50_each: Vec<Option<f64>>,
    /// 99th percentile latency of each second's calls, likewise.
    pub p99_each: Vec<Option<f64>>,
    /// Calls that failed in the minute.
    pub errors: u64,
    /// Calls per second over the minute.
    pub rate: f64,
    /// Median latency in milliseconds (a bucket's upper bound), when any call ended.
    pub p50_ms: Option<f64>,
    /// 99th percentile latency in milliseconds, likewise.
    pub p99_ms: Option<f64>,
}

impl Window {
    fn second(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_secs() + 1
    }

    /// Counts a call of `server` that took `elapsed`, ending now.
    pub fn record(&self, server: &str, elapsed: Duration, failed: bool) {
        self.record_at(Instant::now(), server, elapsed, failed);
    }

    fn record_at(&self, at: Instant, server: &str, elapsed: Duration, failed: bool) {
        let second = self.second(at);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let bucket = BOUNDS_US
            .iter()
            .position(|b| micros <= *b)
            .unwrap_or(BOUNDS_US.len() - 1);
        let mut series = self.series.lock();
        // A name seen before costs no allocation (the common case).
        let key = if series.contains_key(server) || series.len() < MAX_SERVERS {
            server
        } else {
            "other"
        };
        if !series.contains_key(key) {
            series.insert(key.to_owned(), Series::default());
        }
        let Some(s) = series.get_mut(key) else {
            return;
        };
        let slot = &mut s.slots[usize::try_from(second).unwrap_or(0) % SECONDS];
        if slot.second != second {
            *slot = Slot {
                second,
                ..Slot::default()
            };
        }
        slot.calls += 1;
        slot.errors += u64::from(failed);
        slot.buckets[bucket] = slot.buckets[bucket].saturating_add(1);
    }

    /// Each server's last minute, as of now.
    pub fn minutes(&self) -> HashMap<String, Minute> {
        self.minutes_at(Instant::now())
    }

    fn minutes_at(&self, at: Instant) -> HashMap<String, Minute> {
        let now = self.second(at);
        let series = self.series.lock();
        series
            .iter()
            .map(|(name, s)| (name.clone(), minute(s, now)))
            .collect()
    }
}

/// `s`'s minute ending at second `now`.
fn minute(s: &Series, now: u64) -> Minute {
    let mut calls = Vec::with_capacity(SECONDS);
    let mut p50_each = Vec::with_capacity(SECONDS);
    let mut p99_each = Vec::with_capacity(SECONDS);
    let mut errors = 0;
    let mut buckets = [0u64; BOUNDS_US.len()];
    for back in (0..SECONDS as u64).rev() {
        let slot = now
            .checked_sub(back)
            .map(|second| {
                (
                    second,
                    &s.slots[usize::try_from(second).unwrap_or(0) % SECONDS],
                )
            })
            .filter(|(second, slot)| slot.second == *second)
            .map(|(_, slot)| slot);
        let Some(slot) = slot else {
            calls.push(0);
            p50_each.push(None);
            p99_each.push(None);
            continue;
        };
        calls.push(slot.calls);
        errors += slot.errors;
        let mut own = [0u64; BOUNDS_US.len()];
        for ((sum, mine), n) in buckets.iter_mut().zip(own.iter_mut()).zip(slot.buckets) {
            *sum += u64::from(n);
            *mine = u64::from(n);
        }
        p50_each.push(quantile(&own, slot.calls, 0.50));
        p99_each.push(quantile(&own, slot.calls, 0.99));
    }
    let total: u64 = calls.iter().sum();
    Minute {
        rate: total as f64 / SECONDS as f64,
        errors,
        p50_ms: quantile(&buckets, total, 0.50),
        p99_ms: quantile(&buckets, total, 0.99),
        calls,
        p50_each,
        p99_each,
    }
}

/// The upper bound (ms) of the bucket holding quantile `q` of `total`
/// calls; the slowest bucket reads as its lower bound.
fn quantile(buckets: &[u64; BOUNDS_US.len()], total: u64, q: f64) -> Option<f64> {
    if total == 0 {
        return None;
    }
    let rank = ((total as f64 * q).ceil() as u64).max(1);
    let mut seen = 0;
    for (i, n) in buckets.iter().enumerate() {
        seen += n;
        if seen >= rank {
            let bound = if i + 1 == BOUNDS_US.len() {
                BOUNDS_US[i - 1]
            } else {
                BOUNDS_US[i]
            };
            return Some(bound as f64 / 1000.0);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_counts_its_calls_and_their_quantiles() {
        let w = Window::default();
        let at = Instant::now();
        for _ in 0..98 {
            w.record_at(at, "a", Duration::from_micros(150), false);
        }
        w.record_at(at, "a", Duration::from_millis(40), true);
        w.record_at(at, "a", Duration::from_millis(40), false);
        // Two seconds later, one slow call.
        let later = at + Duration::from_secs(2);
        w.record_at(later, "a", Duration::from_millis(400), false);
        let m = &w.minutes_at(later)["a"];
        assert_eq!(m.calls.len(), SECONDS);
        assert_eq!(m.calls.iter().sum::<u64>(), 101);
        assert_eq!(m.calls[SECONDS - 3..], [100, 0, 1]);
        assert_eq!(m.errors, 1);
        assert_eq!(m.p50_ms, Some(0.2));
        assert_eq!(m.p99_ms, Some(50.0));
        // Each second's own quantiles.
        assert_eq!(m.p50_each[SECONDS - 3..], [Some(0.2), None, Some(500.0)]);
        assert_eq!(m.p99_each[SECONDS - 3..], [Some(50.0), None, Some(500.0)]);
    }

    #[test]
    fn calls_older_than_a_minute_are_forgotten() {
        let w = Window::default();
        w.record("a", Duration::from_millis(1), false);
        let later = Instant::now() + Duration::from_secs(SECONDS as u64 + 1);
        let m = &w.minutes_at(later)["a"];
        assert_eq!(m.calls.iter().sum::<u64>(), 0);
        assert_eq!(m.p50_ms, None);
    }
}
