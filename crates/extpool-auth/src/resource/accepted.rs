//! Tokens a verifier accepted, so that a client sending the same token on
//! every request (as MCP clients do) has its signature checked once, not
//! on every call. An entry is used only while its token is still within
//! `exp` (give or take the leeway, the rule the full check applies) and
//! while the keys it was checked with are still the verifier's current,
//! unexpired set: a rotation or a refetch checks every token again. Keyed
//! by the token's SHA-256, so no token is kept; bounded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use extpool_core::Principal;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use super::keys::KeySet;
use crate::grant::now_secs as now;

/// How many accepted tokens are remembered at most.
pub(crate) const MAX_ACCEPTED: usize = 4096;

/// One accepted token.
struct Entry {
    principal: Principal,
    /// Its `exp` claim (seconds since the epoch).
    exp: u64,
    /// The key set its signature was checked with.
    keys: Arc<KeySet>,
}

/// The accepted tokens of one verifier.
#[derive(Default)]
pub(crate) struct Accepted {
    entries: Mutex<HashMap<[u8; 32], Entry>>,
}

/// Whether a token of expiry `exp` is still accepted at `now`: the full
/// check's rule (`exp` may be up to `leeway` past).
pub(crate) fn within_expiry(exp: u64, leeway: Duration, now: u64) -> bool {
    exp.saturating_add(leeway.as_secs()) >= now
}

/// The key of `token` in the cache.
pub(crate) fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Accepted {
    /// The principal of `token` if it was accepted under `keys` and has
    /// not expired since.
    pub(crate) fn get(
        &self,
        token: &[u8; 32],
        keys: &Arc<KeySet>,
        leeway: Duration,
    ) -> Option<Principal> {
        let entries = self.entries.lock();
        let entry = entries.get(token)?;
        (Arc::ptr_eq(&entry.keys, keys) && within_expiry(entry.exp, leeway, now()))
            .then(|| entry.principal.clone())
    }

    /// Remembers that `token`, expiring at `exp`, names `principal` under
    /// `keys`. When full, the expired and superseded entries go first,
    /// then all of them.
    pub(crate) fn insert(
        &self,
        token: [u8; 32],
        exp: u64,
        keys: &Arc<KeySet>,
        principal: &Principal,
        leeway: Duration,
    ) {
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ACCEPTED && !entries.contains_key(&token) {
            let now = now();
            entries.retain(|_, e| Arc::ptr_eq(&e.keys, keys) && within_expiry(e.exp, leeway, now));
            if entries.len() >= MAX_ACCEPTED {
                entries.clear();
            }
        }
        entries.insert(
            token,
            Entry {
                principal: principal.clone(),
                exp,
                keys: keys.clone(),
            },
        );
    }

    /// How many tokens are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Instant;

    fn keys() -> Arc<KeySet> {
        Arc::new(KeySet {
            by_id: HashMap::new(),
            unnamed: Vec::new(),
            fetched: Instant::now(),
            skipped: Vec::new(),
        })
    }

    fn alice() -> Principal {
        Principal {
            issuer: "https://issuer.example".into(),
            subject: "alice".into(),
            claims: BTreeMap::new(),
            operator: false,
        }
    }

    #[test]
    fn the_expiry_rule_is_the_full_checks() {
        let leeway = Duration::from_secs(60);
        assert!(within_expiry(1000, leeway, 1000));
        assert!(within_expiry(1000, leeway, 1060));
        assert!(!within_expiry(1000, leeway, 1061));
        assert!(within_expiry(u64::MAX, leeway, 5));
    }

    #[test]
    fn a_token_is_remembered_only_under_its_keys_and_until_it_expires() {
        let cache = Accepted::default();
        let (first, second) = (keys(), keys());
        let leeway = Duration::from_secs(60);
        let token = digest("a.b.c");
        cache.insert(token, now() + 600, &first, &alice(), leeway);
        assert_eq!(cache.get(&token, &first, leeway), Some(alice()));
        // Keys fetched again: the token is checked again.
        assert_eq!(cache.get(&token, &second, leeway), None);
        assert_eq!(cache.get(&digest("a.b.d"), &first, leeway), None);
        // Expired beyond the leeway: not used.
        let old = digest("old");
        cache.insert(old, now() - 61, &first, &alice(), leeway);
        assert_eq!(cache.get(&old, &first, leeway), None);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = Accepted::default();
        let k = keys();
        let leeway = Duration::from_secs(0);
        for i in 0..(MAX_ACCEPTED + 10) {
            cache.insert(digest(&i.to_string()), now() + 600, &k, &alice(), leeway);
            assert!(cache.len() <= MAX_ACCEPTED);
        }
        let last = digest(&(MAX_ACCEPTED + 9).to_string());
        assert_eq!(cache.get(&last, &k, leeway), Some(alice()));
    }
}
