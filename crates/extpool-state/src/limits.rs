//! [`Limits`]: the bounds on what one session may hold, and the checks that
//! apply them before anything is written (a refused operation writes
//! nothing).

use std::collections::{BTreeMap, BTreeSet};

use extpool_mcp::config::McpServerConfig;

use crate::error::{StateError, quote_prefix};
use crate::model::SessionId;

/// Longest owner (principal: an issuer and a subject, as one opaque
/// string) a session or MCP session may have, in bytes.
pub const MAX_OWNER_BYTES: usize = 512;

/// Longest API key name, in characters (all ASCII).
pub const MAX_API_KEY_NAME_CHARS: usize = 64;

/// Longest API key secret looked up, in bytes; a longer one is simply not
/// found (no digest is computed of it).
pub const MAX_API_KEY_SECRET_BYTES: usize = 256;

/// Why `owner` (a principal) cannot be stored, if it cannot: empty, or
/// over [`MAX_OWNER_BYTES`]. Otherwise opaque: never parsed.
pub(crate) fn check_owner(owner: &str) -> Result<(), String> {
    if owner.is_empty() {
        return Err("empty".into());
    }
    if owner.len() > MAX_OWNER_BYTES {
        return Err(format!(
            "{} bytes, over the limit of {MAX_OWNER_BYTES}",
            owner.len()
        ));
    }
    Ok(())
}

/// The rule of API key names, as errors state it.
pub(crate) const API_KEY_NAME_RULE: &str =
    "an API key name is 1 to 64 characters of A-Z, a-z, 0-9 and _ . -, and not \".\" or \"..\"";

/// Checks an API key name against [`API_KEY_NAME_RULE`] (names may appear
/// in URL paths, so `.` and `..`, which URL clients remove, are refused).
pub(crate) fn check_api_key_name(name: &str) -> Result<(), StateError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_API_KEY_NAME_CHARS
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StateError::InvalidApiKeyName {
            name: quote_prefix(name),
            rule: API_KEY_NAME_RULE,
        })
    }
}

/// Bounds on stored state. Every list, name and config an outside party
/// controls is bounded here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most catalog names one session's authority may hold (default 10 000).
    pub max_names_per_session: usize,
    /// Longest catalog name, in bytes (default 256).
    pub max_name_bytes: usize,
    /// Most per-session MCP servers one session may have (default 32).
    pub max_servers_per_session: usize,
    /// Largest per-session server config, as stored JSON (default 64 KiB).
    pub max_config_bytes: usize,
    /// Most sessions one list page returns; a larger page asked for is
    /// served at this size (default 500).
    pub max_page: usize,
    /// Largest `initialize` parameters kept for a resumable MCP session,
    /// as JSON (default 64 KiB).
    pub max_init_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_names_per_session: 10_000,
            max_name_bytes: 256,
            max_servers_per_session: 32,
            max_config_bytes: 64 * 1024,
            max_page: 500,
            max_init_bytes: 64 * 1024,
        }
    }
}

impl Limits {
    /// Checks catalog names about to be granted to `session`: non-empty,
    /// within the byte bound, no control characters.
    pub fn check_names<'a>(
        &self,
        session: &SessionId,
        names: impl IntoIterator<Item = &'a String>,
    ) -> Result<(), StateError> {
        for name in names {
            self.check_label(name)
                .map_err(|reason| StateError::InvalidName {
                    session: session.clone(),
                    name: quote_prefix(name),
                    reason,
                })?;
        }
        Ok(())
    }

    /// Checks that `session` holding `held` names may take `adding` more.
    pub fn check_name_count(
        &self,
        session: &SessionId,
        held: usize,
        adding: usize,
    ) -> Result<(), StateError> {
        let would_hold = held.saturating_add(adding);
        if would_hold > self.max_names_per_session {
            return Err(StateError::TooManyNames {
                session: session.clone(),
                adding,
                would_hold,
                limit: self.max_names_per_session,
            });
        }
        Ok(())
    }

    /// Checks a session's per-session servers and returns each config as
    /// the JSON to store: within the count and size bounds, named, and
    /// never holding resolved secret values.
    pub fn encode_servers(
        &self,
        session: &SessionId,
        servers: &BTreeMap<String, McpServerConfig>,
    ) -> Result<Vec<(String, String)>, StateError> {
        if servers.len() > self.max_servers_per_session {
            return Err(StateError::TooManyServers {
                session: session.clone(),
                count: servers.len(),
                limit: self.max_servers_per_session,
            });
        }
        servers
            .iter()
            .map(|(name, config)| {
                self.check_label(name)
                    .map_err(|reason| StateError::InvalidServerName {
                        session: session.clone(),
                        server: quote_prefix(name),
                        reason,
                    })?;
                if !config.secrets.is_empty() {
                    return Err(StateError::ResolvedSecrets {
                        session: session.clone(),
                        server: name.clone(),
                    });
                }
                let json = serde_json::to_string(config).map_err(|e| StateError::Corrupt {
                    session: session.clone(),
                    what: format!("per-session server {name:?} config"),
                    detail: e.to_string(),
                })?;
                if json.len() > self.max_config_bytes {
                    return Err(StateError::ConfigTooLarge {
                        session: session.clone(),
                        server: name.clone(),
                        bytes: json.len(),
                        limit: self.max_config_bytes,
                    });
                }
                Ok((name.clone(), json))
            })
            .collect()
    }

    /// Why `label` (a catalog or server name) is unacceptable, if it is:
    /// empty, over [`Limits::max_name_bytes`], or holding a control character.
    fn check_label(&self, label: &str) -> Result<(), String> {
        if label.is_empty() {
            return Err("empty".into());
        }
        if label.len() > self.max_name_bytes {
            return Err(format!(
                "{} bytes, over the limit of {}",
                label.len(),
                self.max_name_bytes
            ));
        }
        if label.chars().any(char::is_control) {
            return Err("contains a control character".into());
        }
        Ok(())
    }

    /// The page size served for a request of `asked` (0 means the largest).
    pub fn page_size(&self, asked: usize) -> usize {
        if asked == 0 {
            self.max_page
        } else {
            asked.min(self.max_page)
        }
    }
}

/// The distinct names of `names`, sorted.
pub(crate) fn distinct<I, S>(names: I) -> BTreeSet<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    names.into_iter().map(|n| n.as_ref().to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> SessionId {
        SessionId::new("s1").expect("id")
    }

    #[test]
    fn names_are_bounded_and_named_in_errors() {
        let l = Limits {
            max_name_bytes: 8,
            ..Limits::default()
        };
        assert!(l.check_names(&id(), &distinct(["mcp__a"])).is_ok());
        let e = l
            .check_names(&id(), &distinct(["mcp__abcdef"]))
            .expect_err("too long");
        assert_eq!(
            e.to_string(),
            "session s1: invalid name \"mcp__abcdef\": 11 bytes, over the limit of 8"
        );
        assert!(l.check_names(&id(), &distinct([""])).is_err());
        assert!(l.check_names(&id(), &distinct(["a\nb"])).is_err());
    }

    #[test]
    fn name_count_says_what_would_be_held() {
        let l = Limits {
            max_names_per_session: 3,
            ..Limits::default()
        };
        assert!(l.check_name_count(&id(), 1, 2).is_ok());
        let e = l.check_name_count(&id(), 2, 2).expect_err("over");
        assert_eq!(
            e.to_string(),
            "session s1: granting 2 more names would hold 4, over the limit of 3 names per \
             session; nothing was granted"
        );
    }

    #[test]
    fn servers_are_counted_sized_and_never_resolved() {
        let l = Limits {
            max_servers_per_session: 1,
            max_config_bytes: 64,
            ..Limits::default()
        };
        let mut servers = BTreeMap::new();
        servers.insert("a".to_owned(), McpServerConfig::stdio("x", ["y"]));
        let stored = l.encode_servers(&id(), &servers).expect("fits");
        assert_eq!(stored[0].0, "a");
        assert!(stored[0].1.contains("\"command\":\"x\""), "{}", stored[0].1);

        servers.insert("b".to_owned(), McpServerConfig::stdio("x", ["y"]));
        let e = l.encode_servers(&id(), &servers).expect_err("two");
        assert!(matches!(e, StateError::TooManyServers { count: 2, .. }));

        let mut big = BTreeMap::new();
        big.insert(
            "a".to_owned(),
            McpServerConfig::stdio("x".repeat(100), ["y"]),
        );
        let e = l.encode_servers(&id(), &big).expect_err("big");
        assert!(e.to_string().contains("server \"a\" config is"), "{e}");

        let mut resolved = McpServerConfig::stdio("x", ["y"]);
        resolved.secrets.push("hunter2".into());
        let one = BTreeMap::from([("a".to_owned(), resolved)]);
        let e = l.encode_servers(&id(), &one).expect_err("resolved");
        assert!(matches!(e, StateError::ResolvedSecrets { .. }));
        assert!(!e.to_string().contains("hunter2"));
    }

    #[test]
    fn owners_are_opaque_but_bounded() {
        assert!(check_owner("https://idp.example/ alice").is_ok());
        assert!(check_owner(&"é".repeat(256)).is_ok(), "512 bytes");
        assert_eq!(check_owner(""), Err("empty".into()));
        assert_eq!(
            check_owner(&"x".repeat(513)),
            Err("513 bytes, over the limit of 512".into())
        );
    }

    #[test]
    fn api_key_names_follow_one_rule() {
        for ok in ["ci", "a.b-c_D9", &"x".repeat(64), "..."] {
            assert!(check_api_key_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a/b", "é", &"x".repeat(65), ".", "..", "a\n"] {
            let e = check_api_key_name(bad).expect_err(bad);
            assert!(matches!(e, StateError::InvalidApiKeyName { .. }), "{e:?}");
        }
        assert_eq!(
            check_api_key_name("a/b").expect_err("slash").to_string(),
            "invalid API key name \"a/b\": an API key name is 1 to 64 characters of A-Z, \
             a-z, 0-9 and _ . -, and not \".\" or \"..\""
        );
    }

    #[test]
    fn page_size_is_clamped() {
        let l = Limits::default();
        assert_eq!(l.page_size(0), 500);
        assert_eq!(l.page_size(10), 10);
        assert_eq!(l.page_size(10_000), 500);
    }
}
