//! [`Slots`]: every discovery source with what it last said — its last
//! usable answer, when it is due, its backoff and status — and the servers
//! they want together.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use parking_lot::Mutex;

use super::{
    Discovered, DiscoveredServer, DiscoverySource, DiscoveryStatus, FailedServer, Timing, epoch_ms,
};
use crate::servers::ServerEntry;

/// One server the sources want, and which source names it.
pub(crate) struct Want {
    /// The index of the source in [`Slots`].
    pub slot: usize,
    /// The server.
    pub server: DiscoveredServer,
}

/// Why the candidate built from a source's answer was not published.
pub(crate) struct CandidateFailure {
    /// The index of the source in [`Slots`].
    pub slot: usize,
    /// The whole message, naming the server when there is one.
    pub message: String,
    /// The server at fault, when one is.
    pub server: Option<FailedServer>,
}

/// One discovery source and what it last said.
struct Slot {
    source: Arc<dyn DiscoverySource>,
    /// Consult at the next cycle (a file changed, a refresh).
    dirty: AtomicBool,
    st: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// Its last usable answer.
    last: Option<Discovered>,
    /// When a polled source is consulted next.
    due: Option<Instant>,
    backoff: Duration,
    /// Its last consultation failed.
    consult_failed: bool,
    /// The candidate built from its answer failed, and why.
    candidate_error: Option<String>,
    last_success: Option<SystemTime>,
    last_attempt: Option<SystemTime>,
    last_error: Option<(String, SystemTime)>,
    /// Servers of its answer left out because another source has the name.
    clashes: Vec<String>,
    /// Servers of its answer that could not be started or listed.
    failed: Vec<FailedServer>,
}

impl SlotState {
    fn stale(&self) -> bool {
        self.consult_failed || self.candidate_error.is_some()
    }

    /// Records a failure; returns when to try again (the backoff doubles).
    fn fail(&mut self, error: String, timing: &Timing) -> Instant {
        self.last_error = Some((error, SystemTime::now()));
        let wait = self.backoff.max(timing.backoff_initial);
        self.backoff = (wait * 2).min(timing.backoff_max);
        Instant::now() + wait
    }
}

/// Every discovery source, in precedence order (a name the first names wins).
pub(crate) struct Slots {
    slots: Vec<Slot>,
    timing: Timing,
}

impl Slots {
    /// The sources, each with its first answer if it has one (the
    /// configuration read at start); polled ones are due at once.
    pub(crate) fn new(
        sources: Vec<(Arc<dyn DiscoverySource>, Option<Discovered>)>,
        timing: Timing,
    ) -> Self {
        let now = Instant::now();
        let slots = sources
            .into_iter()
            .map(|(source, first)| Slot {
                st: Mutex::new(SlotState {
                    due: source.polled().then_some(now),
                    backoff: timing.backoff_initial,
                    last_success: first.as_ref().map(|_| SystemTime::now()),
                    last: first,
                    ..SlotState::default()
                }),
                source,
                dirty: AtomicBool::new(false),
            })
            .collect();
        Self { slots, timing }
    }

    /// The id of source `i`.
    pub(crate) fn id(&self, i: usize) -> &str {
        self.slots[i].source.id()
    }

    /// The index of the source with this id.
    pub(crate) fn index_of(&self, id: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.source.id() == id)
    }

    /// Marks source `id` (every source with `None`) to be consulted at the
    /// next cycle.
    pub(crate) fn mark(&self, id: Option<&str>) {
        for slot in &self.slots {
            if id.is_none_or(|id| slot.source.id() == id) {
                slot.dirty.store(true, Ordering::Release);
            }
        }
    }

    /// When a source is next due (now when one is marked).
    pub(crate) fn next_due(&self) -> Option<Instant> {
        let now = Instant::now();
        self.slots
            .iter()
            .filter_map(|slot| {
                if slot.dirty.load(Ordering::Acquire) {
                    Some(now)
                } else if slot.source.polled() {
                    slot.st.lock().due
                } else {
                    None
                }
            })
            .min()
    }

    /// Consults every source that is due, a bounded number at once, each
    /// within the timeout; a failure keeps the last usable answer.
    pub(crate) async fn consult_due(&self) {
        let now = Instant::now();
        let due: Vec<usize> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| {
                let dirty = slot.dirty.swap(false, Ordering::AcqRel);
                let polled = slot.source.polled() && slot.st.lock().due.is_some_and(|d| d <= now);
                dirty || polled
            })
            .map(|(i, _)| i)
            .collect();
        if due.is_empty() {
            return;
        }
        let timeout = self.timing.timeout;
        let answers: Vec<_> = futures::stream::iter(due)
            .map(|i| async move {
                let source = &self.slots[i].source;
                let answer = tokio::time::timeout(timeout, source.consult()).await;
                (i, answer)
            })
            .buffer_unordered(self.timing.max_concurrent)
            .collect()
            .await;
        for (i, answer) in answers {
            let slot = &self.slots[i];
            let answer = answer
                .map_err(|_| {
                    format!(
                        "{} did not answer within {} ms",
                        slot.source.endpoint(),
                        timeout.as_millis()
                    )
                })
                .and_then(|a| a.map_err(|e| e.to_string()));
            self.record(slot, answer, now);
        }
    }

    fn record(&self, slot: &Slot, answer: Result<Discovered, String>, now: Instant) {
        let id = slot.source.id();
        let mut st = slot.st.lock();
        st.last_attempt = Some(SystemTime::now());
        match answer {
            Ok(found) => {
                if st.consult_failed {
                    tracing::info!(source = id, "discovery: source answers again");
                }
                st.consult_failed = false;
                st.backoff = self.timing.backoff_initial;
                st.due = slot.source.polled().then(|| now + self.timing.interval);
                st.last = Some(found);
            }
            Err(error) => {
                if st.consult_failed {
                    tracing::debug!(source = id, "discovery: still failing: {error}");
                } else {
                    tracing::warn!(
                        source = id,
                        "discovery: keeping the last usable servers: {error}"
                    );
                }
                st.consult_failed = true;
                let retry = st.fail(error, &self.timing);
                st.due = slot.source.polled().then_some(retry);
            }
        }
    }

    /// The servers every source wants, the first source winning a name
    /// (ignoring case) — after the `fixed` servers, which belong to no
    /// source here, and the names `held` says a session's own server
    /// holds; a clash is noted on the losing source.
    pub(crate) fn desired(&self, fixed: &[ServerEntry], held: impl Fn(&str) -> bool) -> Vec<Want> {
        let mut taken = extpool_core::ServerNames::new();
        for e in fixed {
            // The first of two fixed servers of one name keeps it.
            let _ = taken.claim(&e.info.name, e.info.origin.clone());
        }
        let mut wants = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            let mut st = slot.st.lock();
            let mut clashes = Vec::new();
            for server in st.last.iter().flat_map(|d| d.servers.iter()) {
                let owner = taken.get(&server.name).cloned().or_else(|| {
                    // Which session is not said: its id reaches its endpoint.
                    held(&server.name).then(|| "a session's own server".to_owned())
                });
                if let Some(owner) = owner {
                    clashes.push(format!(
                        "server {:?} left out: the name is taken by {owner}",
                        server.name
                    ));
                    continue;
                }
                taken.entry(&server.name, || {
                    format!("{} ({})", server.origin, slot.source.id())
                });
                wants.push(Want {
                    slot: i,
                    server: server.clone(),
                });
            }
            st.clashes = clashes;
        }
        wants
    }

    /// Marks the sources of failed servers stale (one failure, and one
    /// backoff step, per source however many of its servers failed);
    /// returns the end of the longest of their backoffs (no candidate is
    /// built before it).
    pub(crate) fn candidate_failed(&self, failures: &[CandidateFailure]) -> Option<Instant> {
        let mut until: Option<Instant> = None;
        for (i, slot) in self.slots.iter().enumerate() {
            let own: Vec<&CandidateFailure> = failures.iter().filter(|f| f.slot == i).collect();
            if own.is_empty() {
                continue;
            }
            let error = own
                .iter()
                .map(|f| f.message.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            tracing::warn!(
                source = slot.source.id(),
                "discovery: candidate not published, keeping the last usable servers: {error}"
            );
            let mut st = slot.st.lock();
            st.failed = own.iter().filter_map(|f| f.server.clone()).collect();
            st.candidate_error = Some(error.clone());
            let at = st.fail(error, &self.timing);
            until = Some(until.map_or(at, |u| u.max(at)));
        }
        until
    }

    /// The sources whose answer the runtime now holds are up to date.
    pub(crate) fn settled(&self) {
        let now = SystemTime::now();
        for slot in &self.slots {
            let mut st = slot.st.lock();
            if st.last.is_none() {
                continue;
            }
            if st.candidate_error.take().is_some() {
                st.backoff = self.timing.backoff_initial;
            }
            st.failed.clear();
            if !st.consult_failed {
                st.last_success = Some(now);
            }
        }
    }

    /// The cached state of every source; `entries` are the running
    /// servers, `blocked` the end of a candidate backoff.
    pub(crate) fn statuses(
        &self,
        entries: &[ServerEntry],
        blocked: Option<Instant>,
    ) -> Vec<DiscoveryStatus> {
        let now = Instant::now();
        self.slots
            .iter()
            .map(|slot| {
                let st = slot.st.lock();
                let id = slot.source.id();
                let mut notes: Vec<String> = st
                    .last
                    .iter()
                    .flat_map(|d| d.notes.iter().cloned())
                    .collect();
                notes.extend(st.clashes.iter().cloned());
                let polled = slot.source.polled().then_some(st.due).flatten();
                let retry = blocked.filter(|_| st.candidate_error.is_some());
                let next = [polled, retry].into_iter().flatten().min();
                DiscoveryStatus {
                    source: id.to_owned(),
                    endpoint: slot.source.endpoint(),
                    state: if st.stale() {
                        "stale"
                    } else if st.last.is_none() {
                        "pending"
                    } else {
                        "ok"
                    },
                    stale: st.stale(),
                    last_success_ms: st.last_success.map(epoch_ms),
                    last_attempt_ms: st.last_attempt.map(epoch_ms),
                    last_error: st.last_error.as_ref().map(|(e, _)| e.clone()),
                    last_error_ms: st.last_error.as_ref().map(|(_, t)| epoch_ms(*t)),
                    servers: entries
                        .iter()
                        .filter(|e| e.source == id)
                        .map(|e| e.info.name.clone())
                        .collect(),
                    notes,
                    failed: st.failed.clone(),
                    next_in_ms: next.map(|t| {
                        u64::try_from(t.saturating_duration_since(now).as_millis())
                            .unwrap_or(u64::MAX)
                    }),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use async_trait::async_trait;

    use super::*;
    use crate::discovery::DiscoveryError;

    /// A polled source that counts how many consultations overlap.
    struct Counting {
        id: String,
        running: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
        fail: bool,
    }

    #[async_trait]
    impl DiscoverySource for Counting {
        fn id(&self) -> &str {
            &self.id
        }
        fn endpoint(&self) -> String {
            self.id.clone()
        }
        fn polled(&self) -> bool {
            true
        }
        async fn consult(&self) -> Result<Discovered, DiscoveryError> {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            self.running.fetch_sub(1, Ordering::SeqCst);
            if self.fail {
                return Err(DiscoveryError::Unreachable {
                    endpoint: self.id.clone(),
                    reason: "refused".into(),
                });
            }
            Ok(Discovered::default())
        }
    }

    fn timing(max_concurrent: usize) -> Timing {
        Timing {
            interval: Duration::from_secs(3600),
            timeout: Duration::from_secs(60),
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_millis(350),
            max_concurrent,
        }
    }

    fn counting(n: usize, fail: bool) -> (Slots, Arc<AtomicUsize>) {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let sources = (0..n)
            .map(|i| {
                let source: Arc<dyn DiscoverySource> = Arc::new(Counting {
                    id: format!("s{i}"),
                    running: running.clone(),
                    most: most.clone(),
                    fail,
                });
                (source, None)
            })
            .collect();
        (Slots::new(sources, timing(2)), most)
    }

    #[tokio::test]
    async fn consultations_are_bounded_and_not_repeated_before_they_are_due() {
        let (slots, most) = counting(5, false);
        slots.consult_due().await;
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "at most two at once, and two did overlap"
        );
        let statuses = slots.statuses(&[], None);
        assert!(statuses.iter().all(|s| s.state == "ok" && !s.stale));
        // Nothing is due before the interval: a second cycle consults nothing.
        let attempts: Vec<_> = statuses.iter().map(|s| s.last_attempt_ms).collect();
        slots.consult_due().await;
        let again: Vec<_> = slots
            .statuses(&[], None)
            .iter()
            .map(|s| s.last_attempt_ms)
            .collect();
        assert_eq!(attempts, again);
        // A mark makes one due at once.
        slots.mark(Some("s3"));
        assert!(slots.next_due().is_some_and(|t| t <= Instant::now()));
    }

    #[tokio::test]
    async fn failures_back_off_doubling_up_to_the_bound() {
        let (slots, _) = counting(1, true);
        let mut waits = Vec::new();
        for _ in 0..4 {
            // Due now, whatever the backoff said.
            let wait = {
                let mut st = slots.slots[0].st.lock();
                st.due = Some(Instant::now());
                st.backoff
            };
            let before = Instant::now();
            slots.consult_due().await;
            let st = slots.slots[0].st.lock();
            // The next try waits the backoff it found, which then doubles.
            assert!(st.due.unwrap() >= before + wait);
            waits.push((wait.as_millis(), st.backoff.as_millis()));
        }
        assert_eq!(waits, [(100, 200), (200, 350), (350, 350), (350, 350)]);
        let status = &slots.statuses(&[], None)[0];
        assert!(status.stale && status.state == "stale");
        assert!(status.last_error.as_deref().unwrap().contains("refused"));
        assert_eq!(status.last_success_ms, None);
    }
}
