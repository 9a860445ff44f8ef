//! The mark an extpool puts on what it sends its servers, so that a chain
//! of extpools that leads back to one of them is refused instead of
//! growing for ever (a gateway that lists its own tools lists them again
//! under a new prefix at every change, and every connection takes more).
//!
//! Each pool has an id of its own ([`Via::id`], random). Every HTTP
//! request its clients send carries `Extpool-Via: <ids>`: its own id, the
//! ids of the extpools that started it (a stdio server's `EXTPOOL_VIA`),
//! and those seen in the requests that reached it lately — at most
//! [`MAX_CHAIN`]. A gateway refuses a request whose mark holds its own id
//! ([`Via::check`]): A → B → A is refused by A, since B learnt A's id from
//! A's requests and passes it on (however many extpools lie between). The
//! ids a gateway's callers bring are a set, not a path, so their number
//! is no loop. A stdio server gets its ancestry — its starter's id and
//! those of the extpools that started that one — in its environment
//! ([`VIA_ENV`]): that is a path, and an extpool started [`MAX_HOPS`]
//! deep is in a loop of processes.
//!
//! A mark is a hint between extpools, never a credential: what it may
//! cause is a refusal of the request that carries it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The header every request to a server carries.
pub const VIA_HEADER: &str = "extpool-via";
/// The environment variable a stdio server is started with.
pub const VIA_ENV: &str = "EXTPOOL_VIA";
/// Most extpools that may have started one another as stdio servers; an
/// extpool started that deep is in a loop of processes.
pub const MAX_HOPS: usize = 8;
/// Most ids a request's mark carries.
pub const MAX_CHAIN: usize = 32;
/// Most ids read from one mark (the rest of a longer one is ignored).
const MAX_READ: usize = 64;
/// Most callers' ids remembered at once.
const MAX_SEEN: usize = 32;
/// How long a caller's id is passed on after its last request.
const SEEN_FOR: Duration = Duration::from_secs(600);
/// Random bytes of an id (written as hex).
const ID_BYTES: usize = 8;

/// Why a request's mark is refused: it came through this extpool
/// already.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this request came through this extpool already ({VIA_HEADER} holds its id): a chain of extpool gateways leads back here; remove the server entry that points an extpool at this one (or at one that points back here)"
)]
pub struct Loop;

/// One pool's mark; see the module docs. Cheap to clone (shared).
#[derive(Clone)]
pub struct Via {
    inner: Arc<Inner>,
}

struct Inner {
    own: String,
    /// The extpools that started this process (its `EXTPOOL_VIA`).
    inherited: Vec<String>,
    /// Callers' ids and when they were last seen, most recent first.
    seen: Mutex<Vec<(String, Instant)>>,
}

impl std::fmt::Debug for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Via")
            .field("id", &self.inner.own)
            .field("inherited", &self.inner.inherited)
            .finish_non_exhaustive()
    }
}

impl Default for Via {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `id` is one an extpool makes (hex of [`ID_BYTES`]).
fn is_id(id: &str) -> bool {
    id.len() == ID_BYTES * 2 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The ids of a mark (`a, b`), in order, at most [`MAX_READ`]; anything
/// that is not an id is skipped.
fn ids_of<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    values
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .take(MAX_READ)
        .filter(|id| is_id(id))
        .map(str::to_ascii_lowercase)
        .collect()
}

impl Via {
    /// A fresh id, and the chain this process was started with
    /// ([`VIA_ENV`]).
    pub fn new() -> Self {
        let inherited = std::env::var(VIA_ENV)
            .map(|v| ids_of([v.as_str()]))
            .unwrap_or_default();
        Self::with_inherited(inherited)
    }

    /// A fresh id after the chain `inherited`.
    pub fn with_inherited(inherited: Vec<String>) -> Self {
        let mut bytes = [0u8; ID_BYTES];
        if getrandom::fill(&mut bytes).is_err() {
            // No randomness: an id from the clock and the process still
            // tells this pool from another.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            bytes[..4].copy_from_slice(&nanos.to_le_bytes());
            bytes[4..].copy_from_slice(&std::process::id().to_le_bytes());
        }
        Self {
            inner: Arc::new(Inner {
                own: hex::encode(bytes),
                inherited,
                seen: Mutex::new(Vec::new()),
            }),
        }
    }

    /// This pool's id.
    pub fn id(&self) -> &str {
        &self.inner.own
    }

    /// How many extpools started this process, one the other (the ids
    /// of its [`VIA_ENV`]).
    pub fn inherited_hops(&self) -> usize {
        self.inner.inherited.len()
    }

    /// The value of [`VIA_ENV`] for a stdio server this pool starts: its
    /// own id, then those of the extpools that started it.
    pub fn ancestry(&self) -> String {
        std::iter::once(&self.inner.own)
            .chain(&self.inner.inherited)
            .take(MAX_HOPS + 1)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The ids its requests carry: its own, those of the extpools that
    /// started it, then those of its recent callers — each once, at most
    /// [`MAX_CHAIN`].
    pub fn chain(&self) -> Vec<String> {
        let mut chain = vec![self.inner.own.clone()];
        let seen = self.inner.seen.lock();
        let recent = seen
            .iter()
            .filter(|(_, at)| at.elapsed() < SEEN_FOR)
            .map(|(id, _)| id);
        for id in self.inner.inherited.iter().chain(recent) {
            if chain.len() >= MAX_CHAIN {
                break;
            }
            if !chain.contains(id) {
                chain.push(id.clone());
            }
        }
        chain
    }

    /// The value of [`VIA_HEADER`]: [`Via::chain`], comma-separated.
    pub fn value(&self) -> String {
        self.chain().join(", ")
    }

    /// Checks the marks (`values` of [`VIA_HEADER`]) of a request that
    /// reached this pool's gateway: `Err` when it came through here
    /// already; else the ids it names, to [`remember`](Self::remember)
    /// once the request is admitted.
    pub fn check<'a>(
        &self,
        values: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<String>, Loop> {
        let ids = ids_of(values);
        if ids.iter().any(|id| *id == self.inner.own) {
            return Err(Loop);
        }
        Ok(ids)
    }

    /// Passes `ids` (an admitted request's callers) on in this pool's own
    /// requests from now on.
    pub fn remember(&self, ids: Vec<String>) {
        if ids.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut seen = self.inner.seen.lock();
        seen.retain(|(id, at)| at.elapsed() < SEEN_FOR && !ids.contains(id));
        for id in ids.into_iter().rev() {
            seen.insert(0, (id, now));
        }
        seen.truncate(MAX_SEEN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Via {
        Via::with_inherited(Vec::new())
    }

    #[test]
    fn a_loop_back_to_a_pool_is_refused_there() {
        let (a, b) = (fresh(), fresh());
        assert_ne!(a.id(), b.id());
        assert!(is_id(a.id()));
        // A calls B: B admits it and passes A's id on.
        let ids = b.check([a.value().as_str()]).unwrap();
        b.remember(ids);
        assert_eq!(b.chain(), [b.id(), a.id()]);
        // B calls A: A finds itself.
        assert_eq!(a.check([b.value().as_str()]), Err(Loop));
        // Pools between them: A → C → D → A is found at A too.
        let (c, d) = (fresh(), fresh());
        c.remember(c.check([a.value().as_str()]).unwrap());
        d.remember(d.check([c.value().as_str()]).unwrap());
        assert_eq!(a.check([d.value().as_str()]), Err(Loop));
    }

    #[test]
    fn many_callers_are_no_loop_and_a_mark_stays_bounded() {
        let v = fresh();
        // A gateway with many callers that are extpools: its own requests
        // name them, bounded, and another pool admits them.
        for i in 0..100u64 {
            v.remember(v.check([format!("{i:016x}").as_str()]).unwrap());
        }
        assert_eq!(v.chain().len(), MAX_CHAIN);
        assert_eq!(v.chain()[1], format!("{:016x}", 99));
        assert!(fresh().check([v.value().as_str()]).is_ok());
        // Junk in a mark is skipped, and a long one read only so far.
        let junk = format!("x, {}, <script>, {}", "ab".repeat(8), "z".repeat(10_000));
        assert_eq!(v.check([junk.as_str()]).unwrap(), ["ab".repeat(8)]);
        let long: Vec<String> = (0..1000u64).map(|i| format!("{:016x}", i + 1000)).collect();
        assert_eq!(v.check([long.join(",").as_str()]).unwrap().len(), MAX_READ);
    }

    #[test]
    fn a_stdio_server_is_told_its_ancestry_only() {
        let v = fresh();
        v.remember(vec!["00000000000000aa".to_owned()]);
        // Its callers are no ancestors of the servers it starts.
        assert_eq!(v.ancestry(), v.id());
        let child = Via::with_inherited(ids_of([v.ancestry().as_str()]));
        assert_eq!(child.inherited_hops(), 1);
        assert_eq!(child.chain(), [child.id(), v.id()]);
        assert_eq!(child.ancestry(), format!("{}, {}", child.id(), v.id()));
        assert_eq!(v.check([child.value().as_str()]), Err(Loop));
    }
}
