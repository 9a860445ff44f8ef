//! Rate limits (`gateway.rate_limits`): token buckets, each caller's own.
//! A bucket holds `burst` tokens and refills at `calls_per_minute`; a
//! `tools/call` takes one token from every bucket whose rule matches one of
//! its names (the all-tools rule, and each `tools` rule) — the name called,
//! and the tool a built-in reaches for it (`CallMcpWithQuery`'s) — or none
//! when one of them is empty: then the call is refused in SEP-3304's shape
//! ([`answer`]: `-32023`, and HTTP 429 with `Retry-After` and
//! `RateLimit-*` for a plain JSON answer), and counted in `/metrics`.
//!
//! A caller is a principal ([`extpool_host::core::Principal::owner`]): one
//! caller's calls never spend another's tokens. Each request's
//! `Caller` (`handler::caller`) carries its caller's [`Bucket`].
//!
//! Where the buckets live: with a PostgreSQL store, in it, shared by every
//! replica ([`extpool_state::StateStore::take_rate`]: one statement a
//! call), so a caller's limit holds however its calls are spread; with
//! SQLite or no store, in this process. When the shared store does not
//! answer, a call is counted in this process's buckets instead (the limit
//! then holds per replica until it answers again). The buckets in memory
//! are bounded: a full bucket is as good as none and is dropped first.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use extpool_host::catalog::permissions::Glob;
use extpool_host::config::RateLimitsConfig;
use parking_lot::Mutex;
use tokio::time::Instant;

pub(crate) mod answer;

/// Most buckets kept (callers × rules); past it, full ones are dropped,
/// then all (a caller then starts with a full bucket again).
const MAX_BUCKETS: usize = 100_000;

/// One limit.
#[derive(Debug)]
struct Rule {
    /// The names it limits (`None`: every tool).
    tools: Option<(String, Glob)>,
    per_minute: u32,
    burst: u32,
}

impl Rule {
    fn new(tools: Option<&str>, per_minute: u32, burst: Option<u32>) -> Self {
        Self {
            tools: tools.map(|t| (t.to_owned(), Glob::new(t))),
            per_minute: per_minute.max(1),
            burst: burst.unwrap_or(per_minute / 10).max(1),
        }
    }

    fn matches(&self, names: &[&str]) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|(_, g)| names.iter().any(|n| g.matches(n)))
    }

    /// The limit in words, for the refusal and the metric's label.
    fn label(&self) -> String {
        let what = match &self.tools {
            Some((pattern, _)) => format!("calls to {pattern}"),
            None => "tool calls".to_owned(),
        };
        format!(
            "{} {what} a minute per caller (burst {})",
            self.per_minute, self.burst
        )
    }

    /// Tokens a second.
    fn rate(&self) -> f64 {
        f64::from(self.per_minute) / 60.0
    }

    /// Refused under this rule with `tokens` left: the limit, and when a
    /// token is there.
    fn refusal(&self, tokens: f64) -> Limited {
        Limited {
            rule: self.label(),
            limit: self.per_minute,
            remaining: 0,
            retry_after: Duration::from_secs_f64(((1.0 - tokens) / self.rate()).max(0.001)),
        }
    }
}

/// A caller's tokens under one rule.
#[derive(Debug, Clone, Copy)]
struct Tokens {
    tokens: f64,
    at: Instant,
}

/// A call refused for a limit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Limited {
    /// The limit, in words (also the metric's label).
    pub rule: String,
    /// Calls the rule permits a minute (SEP-3304's `limit`).
    pub limit: u32,
    /// Calls left now under it (SEP-3304's `remaining`: none, refused).
    pub remaining: u32,
    /// When the next token is there.
    pub retry_after: Duration,
}

impl Limited {
    /// The refusal's message: the limit and when to retry.
    pub(crate) fn message(&self) -> String {
        format!(
            "rate limit reached: at most {} (gateway.rate_limits); retry in {:.1} s",
            self.rule,
            self.retry_after.as_secs_f64()
        )
    }
}

/// The gateway's limits and every caller's buckets.
#[derive(Debug)]
pub(crate) struct RateLimits {
    rules: Vec<Rule>,
    /// This process's buckets: all of them without a shared store, else
    /// those counted while it did not answer.
    buckets: Mutex<HashMap<(String, usize), Tokens>>,
    /// The store the replicas share their buckets in (PostgreSQL).
    shared: Option<extpool_state::StateStore>,
}

/// One caller's buckets: what a request's caller takes its tokens from.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    limits: Arc<RateLimits>,
    /// The caller ([`extpool_host::core::Principal::owner`]).
    owner: String,
}

impl Bucket {
    /// Takes a token for a call known by `names` (the name called, and the
    /// tool a built-in reaches for it) from each of this caller's buckets
    /// whose rule matches one of them, or none and the limit that refuses it.
    pub(crate) async fn take(&self, names: &[&str]) -> Result<(), Limited> {
        self.limits.take_shared(&self.owner, names).await
    }
}

impl RateLimits {
    /// The limits `config` sets, their buckets in `store` when it is one
    /// replicas share (PostgreSQL); `None` when it sets none.
    pub(crate) fn with_store(
        config: &RateLimitsConfig,
        store: Option<&extpool_state::StateStore>,
    ) -> Option<Self> {
        let mut limits = Self::new(config)?;
        limits.shared = store
            .filter(|s| s.backend() == extpool_state::Backend::Postgres)
            .cloned();
        Some(limits)
    }

    /// `owner`'s buckets.
    pub(crate) fn bucket(self: &Arc<Self>, owner: String) -> Bucket {
        Bucket {
            limits: self.clone(),
            owner,
        }
    }

    /// [`RateLimits::take`], in the shared store when there is one.
    async fn take_shared(&self, owner: &str, names: &[&str]) -> Result<(), Limited> {
        let Some(store) = &self.shared else {
            return self.take(owner, names);
        };
        let matching = self.matching(names);
        if matching.is_empty() {
            return Ok(());
        }
        let rules: Vec<extpool_state::RateRule> = matching
            .iter()
            .map(|&i| {
                let rule = &self.rules[i];
                extpool_state::RateRule {
                    key: rule.label(),
                    burst: f64::from(rule.burst),
                    per_second: rule.rate(),
                }
            })
            .collect();
        let taken = match store.take_rate(owner, &rules).await {
            Ok(taken) => taken,
            Err(e) => {
                tracing::warn!(
                    "the shared rate limits cannot be read ({e}); this call is counted by this replica alone"
                );
                return self.take(owner, names);
            }
        };
        let refused = taken
            .iter()
            .filter(|t| !t.took)
            .filter_map(|t| {
                let i = matching.iter().find(|&&i| self.rules[i].label() == t.key)?;
                Some(self.rules[*i].refusal(t.tokens))
            })
            .max_by_key(|l| l.retry_after);
        refused.map_or(Ok(()), Err)
    }

    /// The rules a call known by `names` falls under.
    fn matching(&self, names: &[&str]) -> Vec<usize> {
        (0..self.rules.len())
            .filter(|&i| self.rules[i].matches(names))
            .collect()
    }

    /// The limits `config` sets; `None` when it sets none.
    pub(crate) fn new(config: &RateLimitsConfig) -> Option<Self> {
        let mut rules = Vec::new();
        if let Some(per_minute) = config.calls_per_minute {
            rules.push(Rule::new(None, per_minute, config.burst));
        }
        for tool in &config.tools {
            rules.push(Rule::new(
                Some(&tool.tools),
                tool.calls_per_minute,
                tool.burst,
            ));
        }
        (!rules.is_empty()).then(|| Self {
            rules,
            buckets: Mutex::new(HashMap::new()),
            shared: None,
        })
    }

    /// Takes a token for `caller`'s call known by `names` (the name called,
    /// and the tool a built-in reaches for it) from each of this process's
    /// buckets whose rule matches one of them, or none and the limit that
    /// refuses it.
    fn take(&self, caller: &str, names: &[&str]) -> Result<(), Limited> {
        let now = Instant::now();
        let matching = self.matching(names);
        if matching.is_empty() {
            return Ok(());
        }
        let mut buckets = self.buckets.lock();
        if buckets.len() + matching.len() > MAX_BUCKETS {
            self.drop_full(&mut buckets, now);
        }
        let mut refused: Option<Limited> = None;
        let mut filled = Vec::with_capacity(matching.len());
        for &i in &matching {
            let rule = &self.rules[i];
            let bucket = buckets
                .get(&(caller.to_owned(), i))
                .copied()
                .unwrap_or(Tokens {
                    tokens: f64::from(rule.burst),
                    at: now,
                });
            let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
            let tokens = (bucket.tokens + elapsed * rule.rate()).min(f64::from(rule.burst));
            if tokens < 1.0 {
                let limited = rule.refusal(tokens);
                if refused
                    .as_ref()
                    .is_none_or(|r| limited.retry_after > r.retry_after)
                {
                    refused = Some(limited);
                }
            }
            filled.push((i, tokens));
        }
        if let Some(limited) = refused {
            return Err(limited);
        }
        for (i, tokens) in filled {
            buckets.insert(
                (caller.to_owned(), i),
                Tokens {
                    tokens: tokens - 1.0,
                    at: now,
                },
            );
        }
        Ok(())
    }

    /// Drops the buckets that refilled (as good as none); all of them if
    /// that frees too little.
    fn drop_full(&self, buckets: &mut HashMap<(String, usize), Tokens>, now: Instant) {
        buckets.retain(|(_, i), b| {
            let rule = &self.rules[*i];
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            b.tokens + elapsed * rule.rate() < f64::from(rule.burst)
        });
        if buckets.len() >= MAX_BUCKETS / 2 {
            buckets.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extpool_host::config::ToolRateLimit;

    fn limits() -> RateLimits {
        RateLimits::new(&RateLimitsConfig {
            calls_per_minute: Some(60),
            burst: Some(3),
            tools: vec![ToolRateLimit {
                tools: "mcp__gh__create*".into(),
                calls_per_minute: 6,
                burst: Some(1),
            }],
        })
        .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_callers_burst_is_spent_then_refilled_at_the_rate() {
        let l = limits();
        for _ in 0..3 {
            l.take("alice", &["mcp__gh__get"]).unwrap();
        }
        let refused = l.take("alice", &["mcp__gh__get"]).unwrap_err();
        assert!(
            refused.rule.starts_with("60 tool calls a minute"),
            "{refused:?}"
        );
        assert_eq!(refused.retry_after, Duration::from_secs(1));
        assert!(
            refused.message().contains("retry in 1.0 s"),
            "{}",
            refused.message()
        );
        // Another caller has its own tokens.
        l.take("bob", &["mcp__gh__get"]).unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        l.take("alice", &["mcp__gh__get"]).unwrap();
        assert!(l.take("alice", &["mcp__gh__get"]).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_rule_limits_its_tools_and_a_refused_call_takes_no_token() {
        let l = limits();
        l.take("alice", &["mcp__gh__create_issue"]).unwrap();
        let refused = l.take("alice", &["mcp__gh__create_pr"]).unwrap_err();
        assert!(
            refused.rule.contains("calls to mcp__gh__create*"),
            "{refused:?}"
        );
        assert_eq!(refused.retry_after, Duration::from_secs(10));
        // The refused call spent nothing of the all-tools bucket: two of
        // its three tokens are left.
        l.take("alice", &["mcp__gh__get"]).unwrap();
        l.take("alice", &["mcp__gh__get"]).unwrap();
        assert!(l.take("alice", &["mcp__gh__get"]).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_known_by_two_names_takes_one_token_of_each_matching_bucket() {
        let l = limits();
        // CallMcpWithQuery reaching mcp__gh__create_issue: the tool's rule
        // and the all-tools rule, one token each.
        l.take("alice", &["CallMcpWithQuery", "mcp__gh__create_issue"])
            .unwrap();
        let refused = l.take("alice", &["mcp__gh__create_pr"]).unwrap_err();
        assert!(refused.rule.contains("mcp__gh__create*"), "{refused:?}");
        // Two of the all-tools bucket's three tokens are left.
        l.take("alice", &["CallMcpWithQuery"]).unwrap();
        l.take("alice", &["CallMcpWithQuery"]).unwrap();
        assert!(l.take("alice", &["CallMcpWithQuery"]).is_err());
    }

    #[test]
    fn no_limit_configured_is_no_limiter() {
        assert!(RateLimits::new(&RateLimitsConfig::default()).is_none());
    }
}
