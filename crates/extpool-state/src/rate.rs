//! Rate buckets shared by the replicas of one PostgreSQL store.
//!
//! A caller's calls may land on any replica; each replica counting them
//! on its own would give a caller N× its limit behind N replicas. So on
//! PostgreSQL a token bucket is one row per (owner, rule), refilled and
//! taken from by one `INSERT … ON CONFLICT DO UPDATE … RETURNING` per
//! call: every rule the call matches in the same statement, each row
//! locked while it is updated, the time the database's own
//! (`clock_timestamp()`), so replicas whose clocks differ still agree. A
//! call refused under one rule gives back what it took under the others
//! (a second statement, on refusals only).
//!
//! Rows are bounded: a bucket full again is as good as none, and
//! [`StateStore::expire_rate_buckets`] (each replica's heartbeat) deletes
//! those, by an index on when each is full. SQLite is one process's
//! store: there the gateway keeps its buckets in memory.

use crate::error::{StateError, db_error, quote_prefix};
use crate::limits::check_owner;
use crate::store::{Pools, StateStore};

/// Longest rule key kept, in bytes.
pub const MAX_RULE_BYTES: usize = 512;

/// Most rules one call takes from at once.
pub const MAX_RULES_PER_TAKE: usize = 64;

/// One rule's bucket as a call asks for a token of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RateRule {
    /// The rule's key, the same on every replica (its limit in words).
    pub key: String,
    /// The most tokens the bucket holds (the burst).
    pub burst: f64,
    /// Tokens it gains a second.
    pub per_second: f64,
}

/// What a take left in one rule's bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct RateTaken {
    /// The rule's key.
    pub key: String,
    /// Whether the call got a token of it.
    pub took: bool,
    /// The tokens left (fractional: the bucket refills continuously).
    pub tokens: f64,
}

/// The refilled tokens of an existing row `b` at the proposed row's time
/// (`excluded`), capped at the burst.
const REFILLED: &str = "LEAST(excluded.burst, b.tokens + \
     GREATEST(0, excluded.at_ms - b.at_ms) * excluded.per_ms)";

/// The take: a new bucket starts full less the token taken; an existing
/// one is refilled and gives a token if it has one.
fn take_sql() -> String {
    let r = REFILLED;
    format!(
        "INSERT INTO rate_buckets AS b (owner, rule, burst, per_ms, tokens, at_ms, full_ms, took) \
         SELECT $1, r.rule, r.burst, r.per_ms, r.burst - 1, n.now, \
                n.now + CEIL(1 / r.per_ms)::BIGINT, TRUE \
         FROM UNNEST($2::TEXT[], $3::FLOAT8[], $4::FLOAT8[]) AS r(rule, burst, per_ms), \
              (SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT AS now) AS n \
         ON CONFLICT (owner, rule) DO UPDATE SET \
           burst = excluded.burst, per_ms = excluded.per_ms, at_ms = excluded.at_ms, \
           took = {r} >= 1, \
           tokens = CASE WHEN {r} >= 1 THEN {r} - 1 ELSE {r} END, \
           full_ms = excluded.at_ms + CEIL((excluded.burst - \
             CASE WHEN {r} >= 1 THEN {r} - 1 ELSE {r} END) / excluded.per_ms)::BIGINT \
         RETURNING b.rule, b.took, b.tokens"
    )
}

/// Gives back a token to each of an owner's buckets named.
const GIVE_BACK: &str = "UPDATE rate_buckets SET tokens = LEAST(burst, tokens + 1), \
     took = FALSE WHERE owner = $1 AND rule = ANY($2::TEXT[])";

impl StateStore {
    /// Takes a token for `owner`'s call from the bucket of each of
    /// `rules`, shared by every replica of this PostgreSQL store: all of
    /// them, or (when one is empty) none — what was taken is given back.
    /// Returns each rule's bucket as the take left it. Refused on SQLite
    /// (one process's store: its buckets are that process's), for an
    /// empty or oversized owner or rule key, and past
    /// [`MAX_RULES_PER_TAKE`] rules.
    pub async fn take_rate(
        &self,
        owner: &str,
        rules: &[RateRule],
    ) -> Result<Vec<RateTaken>, StateError> {
        let bad = |reason: String| StateError::BadRate {
            owner: quote_prefix(owner),
            reason,
        };
        check_owner(owner).map_err(|r| bad(format!("owner: {r}")))?;
        if rules.len() > MAX_RULES_PER_TAKE {
            return Err(bad(format!(
                "{} rules, over the limit of {MAX_RULES_PER_TAKE}",
                rules.len()
            )));
        }
        for rule in rules {
            if rule.key.is_empty() || rule.key.len() > MAX_RULE_BYTES {
                return Err(bad(format!("a rule key is 1 to {MAX_RULE_BYTES} bytes")));
            }
            if !(rule.burst >= 1.0 && rule.per_second > 0.0 && rule.per_second.is_finite()) {
                return Err(bad(format!(
                    "rule {:?}: a burst of at least 1 and a positive rate",
                    quote_prefix(&rule.key)
                )));
            }
        }
        let Pools::Postgres(pool) = &self.pools else {
            return Err(StateError::NotShared {
                what: "rate buckets",
            });
        };
        // A key once: one statement updates a row once.
        let mut seen = std::collections::HashSet::new();
        let rules: Vec<&RateRule> = rules.iter().filter(|r| seen.insert(&r.key)).collect();
        if rules.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<&str> = rules.iter().map(|r| r.key.as_str()).collect();
        let bursts: Vec<f64> = rules.iter().map(|r| r.burst).collect();
        let per_ms: Vec<f64> = rules.iter().map(|r| r.per_second / 1000.0).collect();
        let rows: Vec<(String, bool, f64)> = sqlx::query_as(&take_sql())
            .bind(owner)
            .bind(&keys)
            .bind(&bursts)
            .bind(&per_ms)
            .fetch_all(pool)
            .await
            .map_err(|e| db_error("take a rate token", None, &e))?;
        let taken: Vec<RateTaken> = rows
            .into_iter()
            .map(|(key, took, tokens)| RateTaken { key, took, tokens })
            .collect();
        if taken.iter().any(|t| !t.took) {
            let back: Vec<&str> = taken
                .iter()
                .filter(|t| t.took)
                .map(|t| t.key.as_str())
                .collect();
            if !back.is_empty() {
                sqlx::query(GIVE_BACK)
                    .bind(owner)
                    .bind(&back)
                    .execute(pool)
                    .await
                    .map_err(|e| db_error("give back a rate token", None, &e))?;
            }
        }
        Ok(taken)
    }

    /// Deletes the shared rate buckets that are full again (as good as
    /// none); returns how many. Nothing on SQLite.
    pub async fn expire_rate_buckets(&self) -> Result<u64, StateError> {
        let Pools::Postgres(pool) = &self.pools else {
            return Ok(0);
        };
        sqlx::query(
            "DELETE FROM rate_buckets \
             WHERE full_ms < (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT",
        )
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
        .map_err(|e| db_error("expire rate buckets", None, &e))
    }

    /// How many shared rate buckets are kept (for tests and operators).
    pub async fn rate_bucket_count(&self) -> Result<u64, StateError> {
        let Pools::Postgres(pool) = &self.pools else {
            return Ok(0);
        };
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM rate_buckets")
            .fetch_one(pool)
            .await
            .map(|n| u64::try_from(n).unwrap_or(0))
            .map_err(|e| db_error("count rate buckets", None, &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_take_refills_then_takes_in_one_statement() {
        let sql = take_sql();
        assert!(sql.starts_with("INSERT INTO rate_buckets"), "{sql}");
        assert!(sql.contains("ON CONFLICT (owner, rule) DO UPDATE"), "{sql}");
        assert!(sql.ends_with("RETURNING b.rule, b.took, b.tokens"), "{sql}");
    }
}
