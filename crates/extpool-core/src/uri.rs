//! Parsing of extension URIs (`skill://name/SKILL.md`, `mcp://server/…`,
//! and schemes that capabilities register).
//!
//! Parsing is strict on purpose: a URI that could climb out of its owner
//! (`..` segments, in any encoding, or backslashes) is refused here, before
//! any capability sees it.

/// A URI that cannot be routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UriError {
    /// Not of the form `scheme://authority/path`, or has forbidden characters.
    #[error("malformed URI {uri:?}: {reason}")]
    Malformed {
        /// The URI as given.
        uri: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A path segment tries to leave its root.
    #[error("URI {uri:?} contains a path traversal segment")]
    Traversal {
        /// The URI as given.
        uri: String,
    },
}

/// A parsed URI: lower-cased scheme, authority (the owner's name) and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtUri<'a> {
    /// The URI as given.
    pub raw: &'a str,
    /// Scheme, lower-cased.
    pub scheme: String,
    /// The part between `://` and the next `/` (a skill or server name).
    pub authority: &'a str,
    /// Everything after the authority's `/`, possibly empty.
    pub path: &'a str,
}

impl<'a> ExtUri<'a> {
    /// Parses and checks a URI.
    pub fn parse(raw: &'a str) -> Result<Self, UriError> {
        let malformed = |reason| UriError::Malformed {
            uri: raw.to_owned(),
            reason,
        };
        if raw.is_empty() {
            return Err(malformed("empty"));
        }
        if raw.chars().any(|c| c.is_control()) {
            return Err(malformed("contains control characters"));
        }
        let Some((scheme, rest)) = raw.split_once("://") else {
            return Err(malformed("missing \"://\""));
        };
        let mut chars = scheme.chars();
        let valid_scheme = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !valid_scheme {
            return Err(malformed("invalid scheme"));
        }
        if rest.contains('\\') {
            return Err(UriError::Traversal {
                uri: raw.to_owned(),
            });
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let path = path.split(['?', '#']).next().unwrap_or("");
        // Checked as a reader would see it: percent-decoded, where `%2F` and
        // `%5C` are separators too (`..%2Fsecret` climbs as `../secret` does).
        let decoded = percent_decode(path);
        if decoded.contains(&b'\\') {
            return Err(UriError::Traversal {
                uri: raw.to_owned(),
            });
        }
        for segment in decoded.split(|&b| b == b'/') {
            if is_dot_dot(&String::from_utf8_lossy(segment)) {
                return Err(UriError::Traversal {
                    uri: raw.to_owned(),
                });
            }
        }
        if is_dot_dot(authority) {
            return Err(UriError::Traversal {
                uri: raw.to_owned(),
            });
        }
        Ok(Self {
            raw,
            scheme: scheme.to_ascii_lowercase(),
            authority,
            path,
        })
    }
}

/// `s` with `%XX` escapes decoded (an invalid escape stays as it is).
fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// `..` in plain or percent-encoded form (`%2e%2e`, `.%2E`, …).
fn is_dot_dot(segment: &str) -> bool {
    let decoded = segment.to_ascii_lowercase().replace("%2e", ".");
    decoded == ".."
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_skill_uris() {
        let u = ExtUri::parse("skill://ponytail/references/x.md").unwrap();
        assert_eq!(u.scheme, "skill");
        assert_eq!(u.authority, "ponytail");
        assert_eq!(u.path, "references/x.md");
        let u = ExtUri::parse("SKILL://p").unwrap();
        assert_eq!(u.scheme, "skill");
        assert_eq!(u.path, "");
    }

    #[test]
    fn refuses_traversal_in_every_spelling() {
        for uri in [
            "skill://x/../etc/passwd",
            "skill://x/a/../../b",
            "skill://../x",
            "skill://x/%2e%2e/y",
            "skill://x/.%2E/y",
            "skill://x/a\\..\\b",
            "skill://x/..%2Fetc",
            "skill://x/a%2F..%2F..%2Fb",
            "skill://x/a%5C..%5Cb",
            "skill://x/%252e%252e/b",
        ] {
            assert!(
                matches!(ExtUri::parse(uri), Err(UriError::Traversal { .. })),
                "{uri}"
            );
        }
    }

    #[test]
    fn refuses_malformed() {
        for uri in [
            "",
            "skill:/x",
            "noscheme",
            "1x://a",
            "sk ill://a",
            "skill://a\n/b",
        ] {
            assert!(
                matches!(ExtUri::parse(uri), Err(UriError::Malformed { .. })),
                "{uri:?}"
            );
        }
    }
}
