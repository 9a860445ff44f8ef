//! The rules of the `guardrails:` section that both `config check` and the
//! host apply, so that a section `config check` accepts is one the host
//! runs: how a pattern is compiled (and how large it may be), which
//! webhook URLs may be asked, and the bounds of sizes and timeouts.
//!
//! Patterns are regular expressions of [`regex_bites`] (the `regex`
//! crate's syntax without Unicode classes such as `\p{L}`; every search
//! is linear in the pattern times the text),
//! compiled once per configuration, and at most [`MAX_PATTERN_BYTES`]
//! long: an outside party controls the text they run over, never the
//! pattern.

pub use regex_bites::Regex;

/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;
/// Largest compiled pattern, in bytes (a short pattern with counted
/// repetitions, `a{1000}{1000}`, can compile to far more).
pub const MAX_COMPILED_BYTES: usize = 1 << 20;
/// Most `block` or `redact` rules one section may hold.
pub const MAX_RULES: usize = 256;
/// `max_argument_bytes` when unset: 64 KiB.
pub const DEFAULT_MAX_ARGUMENT_BYTES: u64 = 64 * 1024;
/// `max_result_bytes` when unset: 1 MiB.
pub const DEFAULT_MAX_RESULT_BYTES: u64 = 1024 * 1024;
/// `webhook.timeout_ms` when unset.
pub const DEFAULT_WEBHOOK_TIMEOUT_MS: u64 = 2_000;
/// The longest `webhook.timeout_ms` accepted.
pub const MAX_WEBHOOK_TIMEOUT_MS: u64 = 30_000;
/// The longest redaction name accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// Why a pattern cannot be a guardrail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// Nothing to match.
    #[error("expected a regular expression, found an empty pattern")]
    Empty,
    /// Longer than [`MAX_PATTERN_BYTES`].
    #[error("the pattern is {len} bytes, more than the limit of {MAX_PATTERN_BYTES}")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// Not a regular expression the engine takes (or too large compiled).
    #[error("invalid regular expression {pattern:?}: {error}")]
    Invalid {
        /// The pattern as written.
        pattern: String,
        /// What the engine said.
        error: String,
    },
}

/// Compiles `pattern` as a guardrail does: at most [`MAX_PATTERN_BYTES`],
/// compiled within [`MAX_COMPILED_BYTES`].
pub fn compile_pattern(pattern: &str) -> Result<Regex, PatternError> {
    if pattern.is_empty() {
        return Err(PatternError::Empty);
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(PatternError::TooLong { len: pattern.len() });
    }
    regex_bites::RegexBuilder::new(pattern)
        .size_limit(MAX_COMPILED_BYTES)
        .build()
        .map_err(|e| PatternError::Invalid {
            pattern: pattern.to_owned(),
            error: e.to_string(),
        })
}

/// Why a URL cannot be a guardrail webhook's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookUrlError {
    /// Not an `http://` or `https://` URL ([`extpool_core::check_http_url`]).
    #[error(transparent)]
    Scheme(#[from] extpool_core::HttpUrlError),
    /// Not a URL at all.
    #[error("is not a URL: {0}")]
    Parse(String),
    /// A URL without a host.
    #[error("names no host")]
    NoHost,
    /// `user:password@` in the URL.
    #[error("credentials in the URL are not allowed; send them in `headers`")]
    Credentials,
    /// `http://` to another machine.
    #[error(
        "is plain http:// off loopback; the questions, their arguments and the answers could be read or changed on the way (use https://)"
    )]
    PlainHttp,
}

/// Checks `url` is one a guardrail webhook may be asked at: `https://`,
/// or `http://` to a loopback host ([`extpool_core::is_loopback_host`],
/// the one rule for where plain HTTP may go), with a host and without
/// credentials. Returns it parsed.
pub fn check_webhook_url(url: &str) -> Result<url::Url, WebhookUrlError> {
    extpool_core::check_http_url(url)?;
    let parsed = url::Url::parse(url).map_err(|e| WebhookUrlError::Parse(e.to_string()))?;
    let Some(host) = parsed.host_str() else {
        return Err(WebhookUrlError::NoHost);
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(WebhookUrlError::Credentials);
    }
    if parsed.scheme() == "http" && !extpool_core::is_loopback_host(host) {
        return Err(WebhookUrlError::PlainHttp);
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_bounded_and_checked() {
        assert!(compile_pattern(r"rm\s+-rf").unwrap().is_match("rm  -rf /"));
        assert_eq!(compile_pattern("").err(), Some(PatternError::Empty));
        assert_eq!(
            compile_pattern(&"a".repeat(MAX_PATTERN_BYTES + 1)).err(),
            Some(PatternError::TooLong {
                len: MAX_PATTERN_BYTES + 1
            })
        );
        let e = compile_pattern("(unclosed").unwrap_err().to_string();
        assert!(
            e.starts_with("invalid regular expression \"(unclosed\": "),
            "{e}"
        );
        // Short to write, huge compiled: refused, not built.
        let e = compile_pattern(r"\w{1000}{1000}").unwrap_err();
        assert!(matches!(e, PatternError::Invalid { .. }), "{e}");
    }

    #[test]
    fn webhooks_are_https_or_loopback_http() {
        for ok in [
            "https://policy.example/check",
            "http://127.0.0.1:9000/check",
            "http://localhost/check",
            "http://[::1]:8080/",
        ] {
            assert!(check_webhook_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            check_webhook_url("http://policy.example/check"),
            Err(WebhookUrlError::PlainHttp)
        );
        assert_eq!(
            check_webhook_url("https://u:p@policy.example/"),
            Err(WebhookUrlError::Credentials)
        );
        assert!(matches!(
            check_webhook_url("ftp://policy.example/"),
            Err(WebhookUrlError::Scheme(_))
        ));
        assert!(matches!(
            check_webhook_url("policy.example/check"),
            Err(WebhookUrlError::Scheme(_))
        ));
    }
}
