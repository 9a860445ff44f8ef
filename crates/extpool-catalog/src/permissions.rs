//! Permission rules over catalog names: `allow` / `deny` lists of exact
//! names and `*` globs, a default policy, deny over allow.
//!
//! Rules name complete catalog names (`mcp__github__create_issue`), whole
//! servers (`mcp__github__*`) or partial globs (`mcp__github__get*`, the
//! usual way to allow a read-only set). A denied tool is neither advertised
//! nor callable, and the error names the rule that denied it.
//!
//! The same rules cover prompt commands (`mcp__<server>__<prompt>`) and the
//! built-in tools (`ListMcpResources`, …), as Claude Code's rules do.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::names::{MAX_NAME_BYTES, validate_name};

/// What happens to a name no rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DefaultPolicy {
    /// Unmatched names are allowed (the default).
    #[default]
    Allow,
    /// Unmatched names are denied: only `allow` rules open access.
    Deny,
}

/// The `permissions:` block of the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Names or globs that are allowed.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Names or globs that are denied; a deny beats any allow.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Policy when no rule matches.
    #[serde(default)]
    pub default: DefaultPolicy,
}

/// Which list a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuleList {
    /// The `allow` list.
    Allow,
    /// The `deny` list.
    Deny,
}

/// One configured rule, as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rule {
    /// The list it belongs to.
    pub list: RuleList,
    /// The pattern as written.
    pub pattern: String,
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = match self.list {
            RuleList::Allow => "allow",
            RuleList::Deny => "deny",
        };
        write!(f, "{list} rule {:?}", self.pattern)
    }
}

/// The outcome for one name: allowed or denied, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Allowed by `rule`, or by the default policy when `None`.
    Allow {
        /// The matching allow rule, if any.
        rule: Option<Rule>,
    },
    /// Denied by `rule`, or by the default policy when `None`.
    Deny {
        /// The matching deny rule, if any.
        rule: Option<Rule>,
    },
}

impl Decision {
    /// True when the name may be advertised and called.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allow { .. })
    }

    /// What decided, in words for the caller ("deny rule \"mcp__x__*\"",
    /// "the default policy (deny)").
    pub fn reason(&self) -> String {
        match self {
            Self::Allow { rule: Some(r) } | Self::Deny { rule: Some(r) } => r.to_string(),
            Self::Allow { rule: None } => "the default policy (allow)".into(),
            Self::Deny { rule: None } => "the default policy (deny)".into(),
        }
    }
}

/// A rule that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PermissionError {
    /// The pattern is empty, holds a control character or is too long.
    #[error("invalid permission pattern {pattern:?}: {source}")]
    InvalidPattern {
        /// The pattern as written.
        pattern: String,
        /// What is wrong with it.
        #[source]
        source: crate::names::NameError,
    },
}

/// A compiled pattern: exact names go to a map, globs to a list.
#[derive(Debug, Clone)]
struct Glob {
    /// Literal pieces between `*`s.
    pieces: Vec<String>,
    anchored_start: bool,
    anchored_end: bool,
}

impl Glob {
    fn new(pattern: &str) -> Self {
        Self {
            pieces: pattern
                .split('*')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
            anchored_start: !pattern.starts_with('*'),
            anchored_end: !pattern.ends_with('*'),
        }
    }

    /// `*` matches any run of characters, including none; nothing else is special.
    fn matches(&self, name: &str) -> bool {
        let mut rest = name;
        let last = self.pieces.len().saturating_sub(1);
        for (i, piece) in self.pieces.iter().enumerate() {
            if i == 0 && self.anchored_start {
                match rest.strip_prefix(piece.as_str()) {
                    Some(r) => rest = r,
                    None => return false,
                }
                if i == last && self.anchored_end {
                    return rest.is_empty();
                }
                continue;
            }
            if i == last && self.anchored_end {
                return rest.ends_with(piece.as_str());
            }
            match rest.find(piece.as_str()) {
                Some(at) => rest = &rest[at + piece.len()..],
                None => return false,
            }
        }
        !self.anchored_end || rest.is_empty() || self.pieces.is_empty()
    }
}

#[derive(Debug, Clone, Default)]
struct RuleSet {
    exact: HashMap<String, usize>,
    globs: Vec<(Glob, usize)>,
}

impl RuleSet {
    /// Index of the first rule (in written order) that matches.
    fn first_match(&self, name: &str) -> Option<usize> {
        // Most configurations have no exact rules of one kind: skip the hash.
        let exact = if self.exact.is_empty() {
            None
        } else {
            self.exact.get(name).copied()
        };
        let glob = self
            .globs
            .iter()
            .find(|(g, _)| g.matches(name))
            .map(|(_, i)| *i);
        match (exact, glob) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Compiled permission rules. Cheap to share (`Arc`) and to query.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    config: PermissionsConfig,
    allow: RuleSet,
    deny: RuleSet,
}

impl Permissions {
    /// Compiles the configured rules.
    pub fn new(config: PermissionsConfig) -> Result<Self, PermissionError> {
        let compile = |patterns: &[String]| -> Result<RuleSet, PermissionError> {
            let mut set = RuleSet::default();
            for (i, pattern) in patterns.iter().enumerate() {
                validate_name(pattern, "permission pattern").map_err(|source| {
                    PermissionError::InvalidPattern {
                        pattern: pattern.clone(),
                        source,
                    }
                })?;
                debug_assert!(pattern.len() <= MAX_NAME_BYTES);
                if pattern.contains('*') {
                    set.globs.push((Glob::new(pattern), i));
                } else {
                    set.exact.entry(pattern.clone()).or_insert(i);
                }
            }
            Ok(set)
        };
        Ok(Self {
            allow: compile(&config.allow)?,
            deny: compile(&config.deny)?,
            config,
        })
    }

    /// Rules that allow everything.
    pub fn allow_all() -> Self {
        Self::default()
    }

    /// The configuration these rules were compiled from.
    pub fn config(&self) -> &PermissionsConfig {
        &self.config
    }

    /// Decides for one catalog name: deny rules first, then allow rules,
    /// then the default policy.
    pub fn decide(&self, name: &str) -> Decision {
        if let Some(i) = self.deny.first_match(name) {
            return Decision::Deny {
                rule: Some(Rule {
                    list: RuleList::Deny,
                    pattern: self.config.deny[i].clone(),
                }),
            };
        }
        if let Some(i) = self.allow.first_match(name) {
            return Decision::Allow {
                rule: Some(Rule {
                    list: RuleList::Allow,
                    pattern: self.config.allow[i].clone(),
                }),
            };
        }
        match self.config.default {
            DefaultPolicy::Allow => Decision::Allow { rule: None },
            DefaultPolicy::Deny => Decision::Deny { rule: None },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perms(allow: &[&str], deny: &[&str], default: DefaultPolicy) -> Permissions {
        Permissions::new(PermissionsConfig {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            default,
        })
        .unwrap()
    }

    #[test]
    fn glob_matching() {
        let cases = [
            ("mcp__github__*", "mcp__github__create_issue", true),
            ("mcp__github__*", "mcp__github__", true),
            ("mcp__github__*", "mcp__githubx__a", false),
            ("mcp__github__get*", "mcp__github__get_issue", true),
            ("mcp__github__get*", "mcp__github__list_issues", false),
            ("*__get_*", "mcp__a__get_x", true),
            ("mcp__*__read", "mcp__fs__read", true),
            ("mcp__*__read", "mcp__fs__read_all", false),
            ("mcp__*_issue*", "mcp__gh__create_issue_comment", true),
            ("*", "anything", true),
            ("**", "anything", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "ac", false),
            ("a*a", "a", false),
            ("a*a", "aa", true),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(
                Glob::new(pattern).matches(name),
                expected,
                "{pattern} vs {name}"
            );
        }
    }

    #[test]
    fn permission_matrix() {
        use DefaultPolicy::{Allow, Deny};
        let gh_read = ["mcp__github__get*", "mcp__github__list*"];
        // (allow, deny, default, name, allowed?, deciding rule)
        type Row<'a> = (
            Vec<&'a str>,
            Vec<&'a str>,
            DefaultPolicy,
            &'a str,
            bool,
            Option<&'a str>,
        );
        let matrix: Vec<Row> = vec![
            (vec![], vec![], Allow, "mcp__x__y", true, None),
            (vec![], vec![], Deny, "mcp__x__y", false, None),
            // exact allow and deny
            (
                vec!["mcp__github__create_issue"],
                vec![],
                Deny,
                "mcp__github__create_issue",
                true,
                Some("mcp__github__create_issue"),
            ),
            (
                vec![],
                vec!["mcp__linear__delete_issue"],
                Allow,
                "mcp__linear__delete_issue",
                false,
                Some("mcp__linear__delete_issue"),
            ),
            (
                vec![],
                vec!["mcp__linear__delete_issue"],
                Allow,
                "mcp__linear__search_issues",
                true,
                None,
            ),
            // whole server
            (
                vec!["mcp__github__*"],
                vec![],
                Deny,
                "mcp__github__anything",
                true,
                Some("mcp__github__*"),
            ),
            (
                vec!["mcp__github__*"],
                vec![],
                Deny,
                "mcp__gitlab__anything",
                false,
                None,
            ),
            // partial globs for a read-only set
            (
                gh_read.to_vec(),
                vec![],
                Deny,
                "mcp__github__get_issue",
                true,
                Some("mcp__github__get*"),
            ),
            (
                gh_read.to_vec(),
                vec![],
                Deny,
                "mcp__github__list_repos",
                true,
                Some("mcp__github__list*"),
            ),
            (
                gh_read.to_vec(),
                vec![],
                Deny,
                "mcp__github__create_issue",
                false,
                None,
            ),
            // deny wins over allow, whatever the specificity
            (
                vec!["mcp__github__create_issue"],
                vec!["mcp__github__*"],
                Allow,
                "mcp__github__create_issue",
                false,
                Some("mcp__github__*"),
            ),
            (
                vec!["mcp__github__*"],
                vec!["mcp__github__create_issue"],
                Deny,
                "mcp__github__create_issue",
                false,
                Some("mcp__github__create_issue"),
            ),
            (
                vec!["mcp__github__*"],
                vec!["mcp__github__delete*"],
                Deny,
                "mcp__github__delete_repo",
                false,
                Some("mcp__github__delete*"),
            ),
            (
                vec!["mcp__github__*"],
                vec!["mcp__github__delete*"],
                Deny,
                "mcp__github__get_repo",
                true,
                Some("mcp__github__*"),
            ),
            // built-ins are names like any other
            (
                vec![],
                vec!["FetchMcpResource"],
                Allow,
                "FetchMcpResource",
                false,
                Some("FetchMcpResource"),
            ),
        ];
        for (allow, deny, default, name, allowed, rule) in matrix {
            let p = perms(&allow, &deny, default);
            let d = p.decide(name);
            assert_eq!(
                d.is_allowed(),
                allowed,
                "{allow:?}/{deny:?}/{default:?} on {name}"
            );
            let got = match &d {
                Decision::Allow { rule } | Decision::Deny { rule } => {
                    rule.as_ref().map(|r| r.pattern.as_str())
                }
            };
            assert_eq!(got, rule, "{allow:?}/{deny:?} on {name}");
        }
    }

    #[test]
    fn the_reason_names_the_rule() {
        let p = perms(&[], &["mcp__github__*"], DefaultPolicy::Allow);
        let reason = p.decide("mcp__github__x").reason();
        assert_eq!(reason, "deny rule \"mcp__github__*\"");
        let p = perms(&[], &[], DefaultPolicy::Deny);
        assert_eq!(p.decide("x").reason(), "the default policy (deny)");
    }

    #[test]
    fn the_first_written_rule_is_reported() {
        let p = perms(&[], &["mcp__a__*", "mcp__a__b"], DefaultPolicy::Allow);
        match p.decide("mcp__a__b") {
            Decision::Deny { rule: Some(r) } => assert_eq!(r.pattern, "mcp__a__*"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_patterns_are_refused() {
        let err = Permissions::new(PermissionsConfig {
            allow: vec!["bad\npattern".into()],
            ..Default::default()
        })
        .unwrap_err();
        assert!(matches!(err, PermissionError::InvalidPattern { .. }));
        assert!(
            Permissions::new(PermissionsConfig {
                deny: vec![String::new()],
                ..Default::default()
            })
            .is_err()
        );
    }

    #[test]
    fn config_deserializes_from_yaml_shape() {
        let json = serde_json::json!({
            "allow": ["mcp__github__create_issue"],
            "deny": ["mcp__linear__delete_issue"],
            "default": "deny"
        });
        let c: PermissionsConfig = serde_json::from_value(json).unwrap();
        assert_eq!(c.default, DefaultPolicy::Deny);
        assert_eq!(c.allow.len(), 1);
    }
}
