//! The server-name rule, in one place.
//!
//! A server name (or the `prefix` that stands in for it) is the key of a
//! server in configuration, the namespace of its tools
//! (`mcp__<name>__<tool>`), the identity of its skills and the source of
//! its token variable `MCP_<NAME>_TOKEN`. Configuration checking, the MCP
//! client and the catalog all call [`check_server_name`], so a name that
//! passes `config check` is a name the catalog publishes.
//!
//! The rule: ASCII letters, digits and `_` (the behaviour document's
//! `[A-Za-z0-9_]+`), without `__` and without a leading or trailing `_` —
//! `__` is the separator inside catalog names, so a name holding it would
//! make `mcp__a__b__tool` ambiguous — and at most [`MAX_SERVER_NAME_BYTES`],
//! so that every catalog name built from it leaves room for the tool's own
//! name within the catalog's 256-byte limit.

/// Longest server name or prefix, in bytes (all ASCII).
pub const MAX_SERVER_NAME_BYTES: usize = 64;

/// Why a server name (or prefix) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerNameError {
    /// The name is empty.
    #[error("server name is empty")]
    Empty,
    /// A byte outside `[A-Za-z0-9_]`.
    #[error(
        "server name {name:?} has {found:?} at byte {index}; only ASCII letters, digits and '_' are allowed"
    )]
    InvalidChar {
        /// The name as written (Debug-escaped when shown).
        name: String,
        /// The first character that is not allowed.
        found: char,
        /// Its byte offset.
        index: usize,
    },
    /// `__` inside the name.
    #[error(
        "server name {name:?} contains '__', the separator of catalog names (mcp__<server>__<tool>)"
    )]
    DoubleUnderscore {
        /// The name.
        name: String,
    },
    /// A leading or trailing `_`.
    #[error(
        "server name {name:?} starts or ends with '_', which would blur the separator of catalog names"
    )]
    EdgeUnderscore {
        /// The name.
        name: String,
    },
    /// Longer than [`MAX_SERVER_NAME_BYTES`].
    #[error("server name {name:?} is {bytes} bytes, more than the limit of {max}")]
    TooLong {
        /// The name.
        name: String,
        /// Its length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
}

/// Checks a server name or prefix against the rule of this module.
pub fn check_server_name(name: &str) -> Result<(), ServerNameError> {
    let owned = || name.to_owned();
    let bad_char = name
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'));
    let error = if name.is_empty() {
        ServerNameError::Empty
    } else if let Some((index, found)) = bad_char {
        ServerNameError::InvalidChar {
            name: owned(),
            found,
            index,
        }
    } else if name.contains("__") {
        ServerNameError::DoubleUnderscore { name: owned() }
    } else if name.starts_with('_') || name.ends_with('_') {
        ServerNameError::EdgeUnderscore { name: owned() }
    } else if name.len() > MAX_SERVER_NAME_BYTES {
        ServerNameError::TooLong {
            name: owned(),
            bytes: name.len(),
            max: MAX_SERVER_NAME_BYTES,
        }
    } else {
        return Ok(());
    };
    Err(error)
}

/// The key server names are unique under: two names that differ only by
/// ASCII case (`GitHub`, `github`) name the same server, since a token
/// variable (`MCP_<NAME>_TOKEN`), a file system or a model may fold case.
/// Every "is this name taken" question keys by it (see [`ServerNames`]).
pub fn server_name_key(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// Whether `a` and `b` name the same server ([`server_name_key`]'s rule).
pub fn same_server_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Server names taken so far, unique ignoring case ([`server_name_key`]),
/// each with what the caller keeps about its holder (where it was defined,
/// the name as first written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerNames<V> {
    taken: std::collections::HashMap<String, V>,
}

impl<V> Default for ServerNames<V> {
    fn default() -> Self {
        Self {
            taken: std::collections::HashMap::new(),
        }
    }
}

impl<V> ServerNames<V> {
    /// No name taken.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes `name` for `holder`; when a name equal ignoring case is taken
    /// already, keeps the first and returns its holder.
    pub fn claim(&mut self, name: &str, holder: V) -> Result<(), &V> {
        use std::collections::hash_map::Entry;
        match self.taken.entry(server_name_key(name)) {
            Entry::Occupied(first) => Err(first.into_mut()),
            Entry::Vacant(slot) => {
                slot.insert(holder);
                Ok(())
            }
        }
    }

    /// The holder of `name` (ignoring case), if taken.
    pub fn get(&self, name: &str) -> Option<&V> {
        self.taken.get(&server_name_key(name))
    }

    /// The holder of `name` (ignoring case), mutable, if taken.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        self.taken.get_mut(&server_name_key(name))
    }

    /// The holder of `name` (ignoring case), mutable, taking the name for
    /// `holder()` when it is free.
    pub fn entry(&mut self, name: &str, holder: impl FnOnce() -> V) -> &mut V {
        self.taken
            .entry(server_name_key(name))
            .or_insert_with(holder)
    }

    /// Whether `name` (ignoring case) is taken.
    pub fn contains(&self, name: &str) -> bool {
        self.taken.contains_key(&server_name_key(name))
    }

    /// Frees `name` (ignoring case), returning its holder.
    pub fn remove(&mut self, name: &str) -> Option<V> {
        self.taken.remove(&server_name_key(name))
    }

    /// Keeps only the holders `keep` says to.
    pub fn retain(&mut self, mut keep: impl FnMut(&mut V) -> bool) {
        self.taken.retain(|_, v| keep(v));
    }
}

/// True when [`check_server_name`] accepts `name`.
pub fn is_valid_server_name(name: &str) -> bool {
    check_server_name(name).is_ok()
}

/// A valid server name made from any name: other characters become `_`,
/// runs of `_` collapse to one, `_` is trimmed from both ends, and the
/// result is cut to [`MAX_SERVER_NAME_BYTES`] (`sequential-thinking` →
/// `sequential_thinking`, `my.server ` → `my_server`). Used for the names
/// in other programs' configs and for skill-embedded servers; never empty.
pub fn sanitize_server_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len().min(MAX_SERVER_NAME_BYTES));
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if c == '_' && (out.is_empty() || out.ends_with('_')) {
            continue;
        }
        if out.len() == MAX_SERVER_NAME_BYTES {
            break;
        }
        out.push(c);
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("server");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        for ok in ["a", "github", "GitHub_2", "a_b_c", "x1", &"a".repeat(64)] {
            assert!(check_server_name(ok).is_ok(), "{ok}");
        }
        type Check = fn(&ServerNameError) -> bool;
        let long = "a".repeat(65);
        let cases: [(&str, Check); 8] = [
            ("", |e| *e == ServerNameError::Empty),
            ("git-hub", |e| {
                matches!(
                    e,
                    ServerNameError::InvalidChar {
                        found: '-',
                        index: 3,
                        ..
                    }
                )
            }),
            ("é", |e| {
                matches!(e, ServerNameError::InvalidChar { found: 'é', .. })
            }),
            ("a\u{1b}b", |e| {
                matches!(e, ServerNameError::InvalidChar { .. })
            }),
            ("a__b", |e| {
                matches!(e, ServerNameError::DoubleUnderscore { .. })
            }),
            ("_a", |e| {
                matches!(e, ServerNameError::EdgeUnderscore { .. })
            }),
            ("a_", |e| {
                matches!(e, ServerNameError::EdgeUnderscore { .. })
            }),
            (&long, |e| {
                matches!(e, ServerNameError::TooLong { bytes: 65, .. })
            }),
        ];
        for (name, check) in cases {
            let e = check_server_name(name).unwrap_err();
            assert!(check(&e), "{name:?}: {e:?}");
        }
    }

    #[test]
    fn messages_name_the_culprit_escaped() {
        let e = check_server_name("a\u{1b}[31mb").unwrap_err().to_string();
        assert!(e.contains("\\u{1b}"), "{e}");
        assert!(!e.contains('\u{1b}'), "{e}");
        let e = check_server_name("a__b").unwrap_err().to_string();
        assert!(e.contains("\"a__b\"") && e.contains("separator"), "{e}");
    }

    #[test]
    fn names_are_unique_ignoring_case() {
        let mut names = ServerNames::new();
        assert_eq!(names.claim("GitHub", 1), Ok(()));
        assert_eq!(names.claim("github", 2), Err(&1), "the first keeps it");
        assert_eq!(names.claim("GITHUB_2", 3), Ok(()));
        assert!(names.contains("gitHUB") && names.get("github") == Some(&1));
        *names.get_mut("GITHUB").unwrap() = 1;
        assert_eq!(names.remove("GITHUB"), Some(1));
        assert_eq!(names.claim("github", 4), Ok(()));
        *names.entry("Linear", || 5) += 1;
        assert_eq!(names.get("linear"), Some(&6));
        names.retain(|v| *v > 4);
        assert!(!names.contains("github") && names.contains("LINEAR"));
        assert!(same_server_name("Kit", "kIT") && !same_server_name("kit", "kit2"));
        assert_eq!(server_name_key("GitHub_2"), "github_2");
    }

    #[test]
    fn sanitize_always_gives_a_valid_name() {
        for (raw, want) in [
            ("sequential-thinking", "sequential_thinking"),
            ("a.b c", "a_b_c"),
            ("a__b", "a_b"),
            ("-x-", "x"),
            ("é", "server"),
            ("", "server"),
        ] {
            assert_eq!(sanitize_server_name(raw), want, "{raw:?}");
        }
        assert_eq!(sanitize_server_name(&"ab".repeat(100)).len(), 64);
        for raw in [
            "x-",
            "__",
            "a--b",
            "  ",
            "a_-_b",
            "ÄÖÜ-1",
            "_1_",
            &"a-".repeat(40),
        ] {
            let s = sanitize_server_name(raw);
            assert!(is_valid_server_name(&s), "{raw:?} -> {s:?}");
        }
    }
}
