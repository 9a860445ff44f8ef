//! Secrets recognised by their value, wherever they appear in a piece of
//! text: service tokens by their well-known prefixes (`sk-ant-…`,
//! `ghp_…`, `xoxb-…`, `AKIA…`, …), JSON Web Tokens, the password of a URL
//! (`postgres://user:password@host`), the values of URL query parameters,
//! and the credential after `Bearer`/`Basic`/`token`.

use std::ops::Range;

/// Well-known token prefixes and how many token characters must follow.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-ant-", 16),
    ("sk-proj-", 16),
    ("sk-svcacct-", 16),
    ("sk-", 32),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghu_", 20),
    ("ghs_", 20),
    ("ghr_", 20),
    ("github_pat_", 20),
    ("glpat-", 16),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("xoxe-", 10),
    ("xapp-", 10),
    ("AIza", 30),
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("npm_", 30),
    ("hf_", 30),
    ("pypi-", 50),
    ("dop_v1_", 40),
    ("shpat_", 20),
    ("lin_api_", 30),
];

/// What kind of secret a span is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanKind {
    /// A service token or a JSON Web Token.
    Token,
    /// The password of a URL (`scheme://user:password@host`).
    UrlPassword,
    /// The value of URL query parameter `name`.
    QueryValue(String),
    /// The credential after an authorization scheme (`Bearer …`).
    Credential,
}

/// Where a secret is in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Its bytes in the text.
    pub range: Range<usize>,
    /// What it is.
    pub kind: SpanKind,
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+' | b'/' | b'=')
}

/// The end of the token starting at `start`.
fn token_end(bytes: &[u8], start: usize) -> usize {
    let mut end = start;
    while end < bytes.len() && is_token_byte(bytes[end]) {
        end += 1;
    }
    end
}

/// A JSON Web Token at `start` (`eyJ….eyJ….…`), its end if so.
fn jwt_end(bytes: &[u8], start: usize) -> Option<usize> {
    if !bytes[start..].starts_with(b"eyJ") {
        return None;
    }
    let end = token_end(bytes, start);
    let token = &bytes[start..end];
    let dots = token.iter().filter(|&&b| b == b'.').count();
    (dots == 2 && token.len() >= 30).then_some(end)
}

/// A byte that continues a word: a token starts only after another byte.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Service tokens and JWTs.
fn tokens(text: &str, out: &mut Vec<Span>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !is_word_byte(bytes[i - 1]);
        if !boundary || !bytes[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let end = token_end(bytes, i);
        let word = &text[i..end];
        let prefixed = PREFIXES
            .iter()
            .any(|(p, min)| word.starts_with(p) && word.len() >= p.len() + min);
        let aws = (word.starts_with("AKIA") || word.starts_with("ASIA"))
            && word.len() == 20
            && word
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        if prefixed || aws || jwt_end(bytes, i).is_some() {
            out.push(Span {
                range: i..end,
                kind: SpanKind::Token,
            });
            i = end;
        } else {
            i += 1;
        }
    }
}

/// The end of a URL starting at `start` (at the first space, quote or bracket).
fn url_end(bytes: &[u8], start: usize) -> usize {
    let mut end = start;
    while end < bytes.len()
        && !bytes[end].is_ascii_whitespace()
        && !matches!(bytes[end], b'"' | b'\'' | b'<' | b'>' | b'`' | b')' | b']')
    {
        end += 1;
    }
    end
}

/// URL passwords and, when `queries`, the values of query parameters
/// (every one, or only the ones `keep` does not exempt).
fn urls(text: &str, queries: bool, out: &mut Vec<Span>) {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let after = from + found + 3;
        let end = url_end(bytes, after);
        let url = &text[after..end];
        // userinfo: up to `@`, before any `/`, `?` or `#`.
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        if let Some(at) = url[..authority_end].rfind('@')
            && let Some(colon) = url[..at].find(':')
            && colon + 1 < at
        {
            out.push(Span {
                range: after + colon + 1..after + at,
                kind: SpanKind::UrlPassword,
            });
        }
        if queries && let Some(q) = url.find('?') {
            let query_end = url[q..].find('#').map_or(url.len(), |f| q + f);
            let mut at = after + q + 1;
            for pair in url[q + 1..query_end].split('&') {
                if let Some((k, v)) = pair.split_once('=')
                    && !v.is_empty()
                {
                    let start = at + k.len() + 1;
                    out.push(Span {
                        range: start..start + v.len(),
                        kind: SpanKind::QueryValue(k.to_owned()),
                    });
                }
                at += pair.len() + 1;
            }
        }
        from = end.max(after);
    }
}

/// Credentials after `Bearer `, `Basic ` or `token ` (any case).
fn credentials(text: &str, out: &mut Vec<Span>) {
    let lower = text.to_ascii_lowercase();
    for scheme in ["bearer ", "basic ", "token "] {
        let mut from = 0;
        while let Some(found) = lower[from..].find(scheme) {
            let start = from + found;
            let boundary = start == 0 || !lower.as_bytes()[start - 1].is_ascii_alphanumeric();
            let value_start = start + scheme.len();
            let end = token_end(text.as_bytes(), value_start);
            let value = &text[value_start..end];
            // After `Bearer`/`Basic` a credential is any long enough word;
            // after `token` it must look like one (long, or with a digit),
            // not like the next word of a sentence.
            let credential = value.len() >= 20
                || (value.len() >= 8
                    && (scheme != "token " || value.bytes().any(|b| b.is_ascii_digit())));
            if boundary && credential {
                out.push(Span {
                    range: value_start..end,
                    kind: SpanKind::Credential,
                });
            }
            from = end.max(value_start);
        }
    }
}

/// Every secret recognisable in `text` by its value, in order, without
/// overlaps. With `query_values`, every URL query value counts (for text
/// shown to people); without, only those that look like secrets.
pub fn spans(text: &str, query_values: bool) -> Vec<Span> {
    let mut found = Vec::new();
    tokens(text, &mut found);
    urls(text, query_values, &mut found);
    credentials(text, &mut found);
    found.sort_by_key(|s| (s.range.start, std::cmp::Reverse(s.range.end)));
    let mut out: Vec<Span> = Vec::new();
    for s in found {
        match out.last_mut() {
            Some(last) if s.range.start < last.range.end => {
                last.range.end = last.range.end.max(s.range.end);
            }
            _ => out.push(s),
        }
    }
    out
}

/// True when `value` contains a secret recognisable by its value alone.
pub fn looks_like_secret(value: &str) -> bool {
    !spans(value, false).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(text: &str, queries: bool) -> Vec<&str> {
        spans(text, queries)
            .into_iter()
            .map(|s| &text[s.range])
            .collect()
    }

    #[test]
    fn service_tokens_by_prefix() {
        for token in [
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijkl",
            "xoxb-123456789012-abcdefghijkl",
            "AKIAIOSFODNN7EXAMPLE",
            "glpat-abcdefghijklmnopqrst",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl",
        ] {
            assert_eq!(secrets(&format!("--key={token} x"), false), [token]);
            assert!(looks_like_secret(token), "{token}");
        }
        for plain in [
            "sk-learn",
            "ghp_short",
            "AKIA",
            "xoxb-1",
            "skills",
            "--port=8080",
            "/usr/bin/node",
            "@modelcontextprotocol/server-github",
            "AKIAIOSFODNN7EXAMPLEX",
        ] {
            assert!(!looks_like_secret(plain), "{plain}");
        }
    }

    #[test]
    fn url_passwords_and_query_values() {
        let text = "postgres://app:s3cr3t@db:5432/app and https://h/x?api_key=k1&fmt=json#f";
        assert_eq!(secrets(text, false), ["s3cr3t"]);
        assert_eq!(secrets(text, true), ["s3cr3t", "k1", "json"]);
        assert!(looks_like_secret("mysql://root:pw@localhost/db"));
        assert!(!looks_like_secret("https://user@host/x"));
        assert!(!looks_like_secret("https://host:8080/x"));
    }

    #[test]
    fn credentials_after_a_scheme() {
        assert_eq!(
            secrets("Authorization: Bearer abc.def-1 rest", false),
            ["abc.def-1"]
        );
        assert_eq!(secrets("basic dXNlcjpwdw==", false), ["dXNlcjpwdw=="]);
        assert!(secrets("a tokenizer run", false).is_empty());
        assert!(secrets("the token is not valid", false).is_empty());
    }
}
