//! Catalog names: `mcp__<namespace>__<tool>`, their validation, and the
//! provider-safe alias.
//!
//! This is the only module that builds, checks or splits a catalog name,
//! and every crate calls it: [`canonical_name`] builds a published name,
//! [`split`] and [`in_namespace`] take one apart for a front end that holds
//! a name and no revision, [`compose`] writes a pattern or a suggestion,
//! [`provider_alias`] and [`is_client_safe`] say which name a model or an
//! MCP client is given, [`unprefixed`] which tools a gateway lists under
//! their own names. The catalog itself keeps the original server and tool
//! names beside every canonical name and looks names up by map.
//!
//! Rules (from the MCP client behaviour document):
//! - every remote tool is `mcp__<namespace>__<tool>`, so a remote tool can
//!   never shadow a built-in (built-ins carry no `mcp__` prefix);
//! - the namespace (the server name, or its configured prefix) follows the
//!   one server-name rule of `extpool_core::name` (`[A-Za-z0-9_]+` without
//!   `__` and without a leading or trailing `_`), so the namespace boundary
//!   is unambiguous, two servers can never produce the same name, and a name
//!   that passes `config check` is published here;
//! - the complete name is valid UTF-8, holds no control character and fits
//!   in [`MAX_NAME_BYTES`]; a malformed name is rejected with a diagnostic,
//!   never rewritten.
//!
//! Model providers often restrict tool names to 64 characters of
//! `[A-Za-z0-9_-]`. [`NameAllocator`] gives each canonical name a
//! deterministic alias that satisfies that rule (the name itself when it
//! already does, else a sanitized prefix plus a SHA-256 suffix), unique
//! within a revision and stable across restarts.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

/// Prefix of every remote tool, prompt command and alias.
pub const MCP_PREFIX: &str = "mcp__";
/// Separator between namespace and tool.
pub const SEPARATOR: &str = "__";
/// Largest catalog name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// Largest provider-safe alias, in characters (all ASCII).
pub const MAX_ALIAS_LEN: usize = 64;
/// Hex digits of the hash suffix of an alias (grown only on a collision).
const ALIAS_HASH_HEX: usize = 8;

/// Why a name (or namespace) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name or one of its parts is empty.
    #[error("{what} is empty")]
    Empty {
        /// Which part was empty ("tool name", "namespace", …).
        what: &'static str,
    },
    /// The name holds a control character.
    #[error("name {name:?} contains control character U+{code:04X} at byte {index}")]
    ControlChar {
        /// The name, as received (Debug-escaped when displayed).
        name: String,
        /// Byte offset of the character.
        index: usize,
        /// The character's code point.
        code: u32,
    },
    /// The bytes are not valid UTF-8.
    #[error("name is not valid UTF-8 (valid up to byte {valid_up_to})")]
    InvalidUtf8 {
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
    /// The name holds U+FFFD: invalid UTF-8 from the server, decoded lossily upstream.
    #[error("name {name:?} contains U+FFFD at byte {index} (invalid UTF-8 from the server)")]
    ReplacementChar {
        /// The name, as received.
        name: String,
        /// Byte offset of the replacement character.
        index: usize,
    },
    /// The complete name is longer than [`MAX_NAME_BYTES`].
    #[error("name {name:?} is {bytes} bytes, more than the limit of {max}")]
    TooLong {
        /// The name (possibly long).
        name: String,
        /// Its length in bytes.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A namespace that breaks the server-name rule (`extpool_core::name`).
    #[error("namespace {namespace:?} is invalid: {reason}")]
    InvalidNamespace {
        /// The namespace.
        namespace: String,
        /// What the rule says about it.
        reason: extpool_core::ServerNameError,
    },
}

impl NameError {
    /// True when the name was too long.
    pub fn is_too_long(&self) -> bool {
        matches!(self, Self::TooLong { .. })
    }

    /// True when the name held a control character.
    pub fn is_control_char(&self) -> bool {
        matches!(self, Self::ControlChar { .. })
    }

    /// True when the name was (or came from) invalid UTF-8.
    pub fn is_invalid_utf8(&self) -> bool {
        matches!(
            self,
            Self::InvalidUtf8 { .. } | Self::ReplacementChar { .. }
        )
    }

    /// True when the namespace was refused.
    pub fn is_invalid_namespace(&self) -> bool {
        matches!(self, Self::InvalidNamespace { .. })
    }
}

/// Checks a name (complete or one part): non-empty, no control characters,
/// no U+FFFD, at most [`MAX_NAME_BYTES`].
pub fn validate_name(name: &str, what: &'static str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty { what });
    }
    for (index, c) in name.char_indices() {
        if c.is_control() {
            return Err(NameError::ControlChar {
                name: name.to_owned(),
                index,
                code: c as u32,
            });
        }
        if c == char::REPLACEMENT_CHARACTER {
            return Err(NameError::ReplacementChar {
                name: name.to_owned(),
                index,
            });
        }
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong {
            name: name.to_owned(),
            bytes: name.len(),
            max: MAX_NAME_BYTES,
        });
    }
    Ok(())
}

/// Checks raw bytes received from a server and returns them as a name.
pub fn validate_name_bytes<'a>(bytes: &'a [u8], what: &'static str) -> Result<&'a str, NameError> {
    let name = std::str::from_utf8(bytes).map_err(|e| NameError::InvalidUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    validate_name(name, what)?;
    Ok(name)
}

/// Checks a namespace (server name or configured prefix) with the one
/// server-name rule, `extpool_core::check_server_name`.
pub fn validate_namespace(namespace: &str) -> Result<(), NameError> {
    match extpool_core::check_server_name(namespace) {
        Ok(()) => Ok(()),
        Err(extpool_core::ServerNameError::Empty) => Err(NameError::Empty { what: "namespace" }),
        Err(reason) => Err(NameError::InvalidNamespace {
            namespace: namespace.to_owned(),
            reason,
        }),
    }
}

/// The catalog name of a remote tool or prompt: `mcp__<namespace>__<name>`.
///
/// Checks the namespace ([`validate_namespace`]), the original name and
/// the length of the complete name.
pub fn canonical_name(namespace: &str, original: &str) -> Result<String, NameError> {
    validate_namespace(namespace)?;
    join(namespace, original)
}

/// [`canonical_name`] for a namespace already checked with
/// [`validate_namespace`] (ASCII, so the complete name is valid exactly
/// when the original is and the length fits).
pub(crate) fn join(namespace: &str, original: &str) -> Result<String, NameError> {
    validate_name(original, "tool name")?;
    let len = MCP_PREFIX.len() + namespace.len() + SEPARATOR.len() + original.len();
    let mut name = String::with_capacity(len);
    name.push_str(MCP_PREFIX);
    name.push_str(namespace);
    name.push_str(SEPARATOR);
    name.push_str(original);
    if len > MAX_NAME_BYTES {
        return Err(NameError::TooLong {
            name,
            bytes: len,
            max: MAX_NAME_BYTES,
        });
    }
    Ok(name)
}

/// Whether `name` is a name of `namespace` (`mcp__<namespace>__<name>`,
/// the name not empty): the one test every "which server owns this tool"
/// question uses. Namespaces never hold `__`, so at most one matches.
pub fn in_namespace(name: &str, namespace: &str) -> bool {
    split(name).is_some_and(|(ns, _)| ns == namespace)
}

/// The namespace and the server's own name of `name`
/// (`mcp__<namespace>__<name>`, both parts not empty), for a front end
/// that holds a name and no revision: a mistyped name's suggestion, the
/// words a search ranks. Namespaces never hold `__`, so the first `__`
/// after the prefix ends the namespace. A published name is looked up in
/// its revision, never split.
pub fn split(name: &str) -> Option<(&str, &str)> {
    let (namespace, original) = name.strip_prefix(MCP_PREFIX)?.split_once(SEPARATOR)?;
    (!namespace.is_empty() && !original.is_empty()).then_some((namespace, original))
}

/// Whether `name` is written as a server's name (`mcp__…`): built-ins and
/// skills' commands never are.
pub fn is_namespaced(name: &str) -> bool {
    name.starts_with(MCP_PREFIX)
}

/// `name` without its `mcp__` prefix (`github__create_issue`), or `name`
/// itself: the words of a name, for ranking.
pub fn without_prefix(name: &str) -> &str {
    name.strip_prefix(MCP_PREFIX).unwrap_or(name)
}

/// `mcp__<namespace>__<name>` without any check: for a rule's pattern
/// (a foreign configuration's disabled tool) or a suggestion, never for a
/// name a revision publishes ([`canonical_name`] checks those).
pub fn compose(namespace: &str, name: &str) -> String {
    format!("{MCP_PREFIX}{namespace}{SEPARATOR}{name}")
}

/// The unprefixed names of `candidates` (`(own name, catalog name)`, the
/// tools or prompts of the servers a gateway lists under their own
/// names): the pairs whose own name is `free` (it collides with no
/// built-in, catalog name or alias) and no other candidate's — two
/// servers with a tool of the same name both keep the prefix for it,
/// whatever their order.
pub fn unprefixed<'a>(
    candidates: impl Iterator<Item = (&'a str, &'a str)>,
    free: impl Fn(&str) -> bool,
) -> Vec<(&'a str, &'a str)> {
    let candidates: Vec<(&str, &str)> = candidates.collect();
    let mut count: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(candidates.len());
    for (own, _) in &candidates {
        *count.entry(own).or_default() += 1;
    }
    candidates
        .into_iter()
        .filter(|(own, _)| count.get(own) == Some(&1) && free(own))
        .collect()
}

/// Longest tool name MCP clients accept (the specification's 128).
pub const MAX_CLIENT_NAME_LEN: usize = 128;

/// A character model providers accept in a tool name: `[A-Za-z0-9_-]`.
fn is_provider_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// True when `name` already satisfies the common provider rule:
/// 1 to 64 characters of `[A-Za-z0-9_-]`.
pub fn is_provider_safe(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_ALIAS_LEN && name.chars().all(is_provider_char)
}

/// True when MCP clients accept `name` as a tool name: 1 to 128
/// characters of `[A-Za-z0-9_.-]` (the specification's rule; a provider's
/// `[A-Za-z0-9_-]` plus `.`). A name that fails it is listed by its alias.
pub fn is_client_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_CLIENT_NAME_LEN
        && name.chars().all(|c| is_provider_char(c) || c == '.')
}

/// The alias of `canonical` with a hash suffix of `hex_len` digits (or the
/// name itself when it is provider-safe and `hex_len` is 0).
fn alias_with_hash(canonical: &str, hex_len: usize) -> String {
    if hex_len == 0 {
        return canonical.to_owned();
    }
    let digest = Sha256::digest(canonical.as_bytes());
    let bytes = hex_len.div_ceil(2).min(digest.len());
    let encoded = hex::encode(&digest[..bytes]);
    let hash = &encoded[..hex_len.min(encoded.len())];
    let keep = MAX_ALIAS_LEN - 1 - hash.len();
    let mut alias = String::with_capacity(MAX_ALIAS_LEN);
    for c in canonical.chars() {
        if alias.len() >= keep {
            break;
        }
        alias.push(if is_provider_char(c) { c } else { '_' });
    }
    alias.push('_');
    alias.push_str(hash);
    alias
}

/// The default provider-safe alias of a canonical name: the name itself
/// when it is already provider-safe, else a sanitized prefix plus an
/// 8-digit SHA-256 suffix. Deterministic: the same name always gives the
/// same alias, across processes and restarts.
pub fn provider_alias(canonical: &str) -> String {
    if is_provider_safe(canonical) {
        canonical.to_owned()
    } else {
        alias_with_hash(canonical, ALIAS_HASH_HEX)
    }
}

/// Hands out canonical names and aliases for one revision, refusing
/// duplicates.
///
/// Claim every canonical name first ([`NameAllocator::claim`]), then ask
/// for aliases ([`NameAllocator::alias`]) in a fixed order: an alias is
/// then never taken by a canonical name that comes later, and the result
/// depends only on the set of names.
#[derive(Debug, Default)]
pub struct NameAllocator {
    taken: HashSet<String>,
}

impl NameAllocator {
    /// An empty allocator.
    pub fn new() -> Self {
        Self::default()
    }

    /// An allocator sized for `n` names.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            taken: HashSet::with_capacity(n * 2),
        }
    }

    /// Reserves a name (built-in or canonical). False when it was taken.
    pub fn claim(&mut self, name: &str) -> bool {
        if self.taken.contains(name) {
            return false;
        }
        self.taken.insert(name.to_owned());
        true
    }

    /// True when `name` is already reserved.
    pub fn is_taken(&self, name: &str) -> bool {
        self.taken.contains(name)
    }

    /// The provider-safe alias of an already-claimed canonical name (see
    /// [`allocate_alias`]); the alias is reserved.
    pub fn alias(&mut self, canonical: &str) -> String {
        let alias = allocate_alias(canonical, |a| self.taken.contains(a));
        self.taken.insert(alias.clone());
        alias
    }
}

/// The provider-safe alias of `canonical`, given which names are taken.
///
/// A provider-safe name is its own alias. Otherwise the alias carries an
/// 8-digit hash; when that collides with a taken name the hash grows (12,
/// 16, … digits) until it is unique. The result depends only on the name
/// and the set of taken names, never on timing or process.
pub fn allocate_alias(canonical: &str, is_taken: impl Fn(&str) -> bool) -> String {
    if is_provider_safe(canonical) {
        return canonical.to_owned();
    }
    let mut hex_len = ALIAS_HASH_HEX;
    loop {
        let alias = alias_with_hash(canonical, hex_len);
        // At 62 digits (the whole room) two distinct names cannot clash
        // unless SHA-256 does; accept rather than loop forever.
        if !is_taken(&alias) || hex_len >= MAX_ALIAS_LEN - 2 {
            return alias;
        }
        hex_len += 4;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_name_splits_at_the_end_of_its_namespace_and_composes_back() {
        use super::{compose, is_namespaced, split, without_prefix};
        assert_eq!(split("mcp__kit__echo"), Some(("kit", "echo")));
        assert_eq!(
            split("mcp__kit__a__b"),
            Some(("kit", "a__b")),
            "__ in the tool"
        );
        for bad in [
            "mcp__kit__",
            "mcp____echo",
            "mcp__kit",
            "kit__echo",
            "ListMcpResources",
        ] {
            assert_eq!(split(bad), None, "{bad}");
        }
        assert_eq!(compose("kit", "a__b"), "mcp__kit__a__b");
        assert!(is_namespaced("mcp__kit__echo") && !is_namespaced("CallMcpWithQuery"));
        assert_eq!(without_prefix("mcp__gh__create_issue"), "gh__create_issue");
        assert_eq!(without_prefix("ToolSearch"), "ToolSearch");
    }

    #[test]
    fn an_unprefixed_name_is_kept_only_when_one_candidate_has_it_and_it_is_free() {
        let candidates = [
            ("echo", "mcp__a__echo"),
            ("add", "mcp__a__add"),
            ("add", "mcp__b__add"),
            ("ListMcpResources", "mcp__a__ListMcpResources"),
        ];
        let bare = super::unprefixed(candidates.into_iter(), |own| own != "ListMcpResources");
        assert_eq!(bare, [("echo", "mcp__a__echo")]);
    }

    #[test]
    fn a_name_is_in_the_namespace_it_begins_with() {
        use super::in_namespace;
        assert!(in_namespace("mcp__kit__echo", "kit"));
        assert!(!in_namespace("mcp__kit__", "kit"), "no name after it");
        assert!(!in_namespace("mcp__kitten__echo", "kit"));
        assert!(!in_namespace("kit__echo", "kit"));
        assert!(!in_namespace("mcp__kit_echo", "kit"));
    }

    use super::*;

    #[test]
    fn client_safe_names_are_the_specifications_and_provider_safe_ones_narrower() {
        for (name, client, provider) in [
            ("mcp__s__t", true, true),
            ("get-sum", true, true),
            ("mcp__s__v1.2", true, false),
            ("mcp__s__a/b", false, false),
            ("mcp__s__日本", false, false),
            ("a b", false, false),
            ("", false, false),
        ] {
            assert_eq!(is_client_safe(name), client, "{name:?}");
            assert_eq!(is_provider_safe(name), provider, "{name:?}");
        }
        let long = |n: usize| "x".repeat(n);
        assert!(is_client_safe(&long(MAX_CLIENT_NAME_LEN)));
        assert!(!is_client_safe(&long(MAX_CLIENT_NAME_LEN + 1)));
        assert!(is_provider_safe(&long(MAX_ALIAS_LEN)) && !is_provider_safe(&long(65)));
        // Every alias is client-safe too: a listed name always is.
        assert!(is_client_safe(&provider_alias("mcp__s__a/b")));
    }

    #[test]
    fn canonical_names_follow_the_table() {
        let table = [
            ("github", "create_issue", "mcp__github__create_issue"),
            ("linear", "search_issues", "mcp__linear__search_issues"),
            ("exa", "web_search_exa", "mcp__exa__web_search_exa"),
            (
                "server_everything",
                "get-sum",
                "mcp__server_everything__get-sum",
            ),
        ];
        for (server, tool, expected) in table {
            assert_eq!(canonical_name(server, tool).unwrap(), expected);
        }
    }

    #[test]
    fn validation_table() {
        // (namespace, tool, predicate on the error)
        type Check = fn(&NameError) -> bool;
        let long_tool = "t".repeat(MAX_NAME_BYTES - "mcp__s__".len() + 1);
        let cases: Vec<(&str, String, Check)> = vec![
            ("s", "bad\nname".into(), NameError::is_control_char),
            ("s", "bell\u{7}".into(), NameError::is_control_char),
            ("s", "nul\0".into(), NameError::is_control_char),
            ("s", "del\u{7f}".into(), NameError::is_control_char),
            ("s", "c1\u{85}".into(), NameError::is_control_char),
            ("s", "lossy\u{fffd}".into(), NameError::is_invalid_utf8),
            ("s", long_tool, NameError::is_too_long),
            ("s", String::new(), |e| matches!(e, NameError::Empty { .. })),
            ("a__b", "t".into(), NameError::is_invalid_namespace),
            ("_a", "t".into(), NameError::is_invalid_namespace),
            ("a_", "t".into(), NameError::is_invalid_namespace),
            ("a.b", "t".into(), NameError::is_invalid_namespace),
            ("a-b", "t".into(), NameError::is_invalid_namespace),
            ("", "t".into(), |e| matches!(e, NameError::Empty { .. })),
        ];
        for (ns, tool, check) in cases {
            let err = canonical_name(ns, &tool).unwrap_err();
            assert!(check(&err), "{ns:?}/{tool:?} gave {err:?}");
            // The message names the problem; Display never panics.
            assert!(!err.to_string().is_empty());
        }
    }

    #[test]
    fn exactly_256_bytes_is_accepted_and_257_is_not() {
        let room = MAX_NAME_BYTES - "mcp__s__".len();
        let ok = canonical_name("s", &"x".repeat(room)).unwrap();
        assert_eq!(ok.len(), 256);
        let err = canonical_name("s", &"x".repeat(room + 1)).unwrap_err();
        assert!(
            matches!(err, NameError::TooLong { bytes: 257, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn multibyte_names_are_measured_in_bytes() {
        // 'é' is two bytes: 124 of them fill 248 bytes + 8 of prefix = 256.
        let ok = canonical_name("s", &"é".repeat(124)).unwrap();
        assert_eq!(ok.len(), 256);
        assert!(
            canonical_name("s", &"é".repeat(125))
                .unwrap_err()
                .is_too_long()
        );
        // Non-ASCII but printable names are valid catalog names.
        assert_eq!(canonical_name("s", "日本").unwrap(), "mcp__s__日本");
    }

    #[test]
    fn invalid_utf8_bytes_are_a_diagnostic() {
        let err = validate_name_bytes(b"ok\xff\xfe", "tool name").unwrap_err();
        assert_eq!(err, NameError::InvalidUtf8 { valid_up_to: 2 });
        assert!(err.is_invalid_utf8());
        assert_eq!(validate_name_bytes(b"fine", "tool name").unwrap(), "fine");
    }

    #[test]
    fn aliases_are_deterministic_and_provider_safe() {
        let long = canonical_name("s", &"x".repeat(200)).unwrap();
        let dotted = canonical_name("s", "files.read").unwrap();
        let unicode = canonical_name("s", "日本").unwrap();
        for name in [&long, &dotted, &unicode] {
            let a = provider_alias(name);
            assert!(is_provider_safe(&a), "{a}");
            assert_eq!(a, provider_alias(name), "alias must be deterministic");
            assert_ne!(&a, name);
        }
        // Known value: stable across restarts and releases.
        assert_eq!(provider_alias(&dotted), "mcp__s__files_read_571aec47");
        // Safe names are their own alias.
        assert_eq!(
            provider_alias("mcp__github__create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(provider_alias(&long).len(), MAX_ALIAS_LEN);
    }

    #[test]
    fn allocator_refuses_duplicates_and_keeps_aliases_unique() {
        let mut names = NameAllocator::new();
        assert!(names.claim("mcp__s__a"));
        assert!(
            !names.claim("mcp__s__a"),
            "a duplicate canonical name is refused"
        );

        // Two long names that share their first 55 sanitized characters.
        let a = canonical_name("s", &format!("{}a", "y".repeat(100))).unwrap();
        let b = canonical_name("s", &format!("{}b", "y".repeat(100))).unwrap();
        assert!(names.claim(&a) && names.claim(&b));
        let (aa, ab) = (names.alias(&a), names.alias(&b));
        assert_ne!(aa, ab);

        // A safe canonical name that equals another name's default alias
        // pushes that alias to a longer hash instead of colliding.
        let dotted = canonical_name("s", "files.read").unwrap();
        let squatter = provider_alias(&dotted);
        let mut names = NameAllocator::new();
        assert!(names.claim(&squatter) && names.claim(&dotted));
        let alias = names.alias(&dotted);
        assert_ne!(alias, squatter);
        assert!(is_provider_safe(&alias));
        assert!(alias.starts_with("mcp__s__files_read_"));
    }
}
