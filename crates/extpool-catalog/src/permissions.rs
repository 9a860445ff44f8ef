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
//!
//! On a gateway that knows who is calling, `principals:` adds rules for
//! the callers whose claims match ([`PrincipalRulesConfig`]): they only
//! narrow what the rules above allow (a `deny`, or an `allow` list that is
//! all such a caller may use), so no claim ever opens a name the
//! gateway's own rules deny.

use std::collections::{BTreeMap, HashMap};

use extpool_core::Principal;

use serde::{Deserialize, Serialize};

use crate::names::{MAX_NAME_BYTES, validate_name};

/// What happens to a name no rule matches.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Rules for the callers whose claims match, each narrowing the rules
    /// above for them (a gateway with identities).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub principals: Vec<PrincipalRulesConfig>,
}

/// One `permissions.principals` entry:
///
/// ```yaml
/// permissions:
///   principals:
///     - match: {groups: sales}       # every claim named holds its value
///       deny: ["mcp__github__*"]
///     - match: {groups: contractors}
///       allow: ["mcp__docs__*"]      # all such a caller may use
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrincipalRulesConfig {
    /// The claims a caller must hold, each with this value (one of its
    /// values, for a list such as `groups`); `sub` names one caller.
    #[serde(rename = "match")]
    pub claims: BTreeMap<String, String>,
    /// When set, the only names a matching caller may use (besides what
    /// the gateway's own rules already refuse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    /// Names or globs a matching caller may not use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl PrincipalRulesConfig {
    /// Whether `principal` holds every claim this entry names (`sub` is
    /// its subject).
    pub fn matches(&self, principal: &Principal) -> bool {
        !self.claims.is_empty()
            && self
                .claims
                .iter()
                .all(|(claim, value)| match claim.as_str() {
                    "sub" => principal.subject == *value,
                    _ => principal.has_claim(claim, value),
                })
    }

    /// The entry's condition in words (`groups=sales`).
    pub fn condition(&self) -> String {
        self.claims
            .iter()
            .map(|(c, v)| format!("{c}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Which list a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuleList {
    /// The `allow` list.
    Allow,
    /// The `deny` list.
    Deny,
}

/// One configured rule, as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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
    #[error("invalid permission pattern {pattern:?}: {error}")]
    InvalidPattern {
        /// The pattern as written.
        pattern: String,
        /// What is wrong with it (shown in the message, so not a `source()`).
        error: crate::names::NameError,
    },
}

/// A catalog-name pattern as the rules write it: `*` matches any run of
/// characters, nothing else is special. The one matcher of permission
/// rules, callers' rules and rate limits.
#[derive(Debug, Clone)]
pub struct Glob {
    /// Literal pieces between `*`s.
    pieces: Vec<String>,
    anchored_start: bool,
    anchored_end: bool,
}

impl Glob {
    /// The pattern `pattern`.
    pub fn new(pattern: &str) -> Self {
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
    pub fn matches(&self, name: &str) -> bool {
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

/// One compiled `principals` entry.
#[derive(Debug, Clone)]
struct PrincipalRules {
    allow: Option<RuleSet>,
    deny: RuleSet,
}

/// Compiled permission rules. Cheap to share (`Arc`) and to query.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    config: PermissionsConfig,
    allow: RuleSet,
    deny: RuleSet,
    principals: Vec<PrincipalRules>,
}

impl Permissions {
    /// Compiles the configured rules.
    pub fn new(config: PermissionsConfig) -> Result<Self, PermissionError> {
        let compile = |patterns: &[String]| -> Result<RuleSet, PermissionError> {
            let mut set = RuleSet::default();
            for (i, pattern) in patterns.iter().enumerate() {
                validate_name(pattern, "permission pattern").map_err(|error| {
                    PermissionError::InvalidPattern {
                        pattern: pattern.clone(),
                        error,
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
        let mut principals = Vec::with_capacity(config.principals.len());
        for entry in &config.principals {
            principals.push(PrincipalRules {
                allow: entry.allow.as_deref().map(compile).transpose()?,
                deny: compile(&entry.deny)?,
            });
        }
        Ok(Self {
            allow: compile(&config.allow)?,
            deny: compile(&config.deny)?,
            principals,
            config,
        })
    }

    /// Whether any rule depends on who is calling.
    pub fn has_principal_rules(&self) -> bool {
        !self.principals.is_empty()
    }

    /// The `principals` entries that match `principal`, by index: callers
    /// with the same matches are under the same rules.
    pub fn matching(&self, principal: &Principal) -> Vec<usize> {
        self.config
            .principals
            .iter()
            .enumerate()
            .filter(|(_, e)| e.matches(principal))
            .map(|(i, _)| i)
            .collect()
    }

    /// Why the `principals` entries `matched` (from [`Permissions::matching`])
    /// refuse `name`, if one does: a deny rule of one, or an allow list of
    /// one that does not hold it. `None`: they leave it as the gateway's
    /// rules decide.
    pub fn refused_for(&self, matched: &[usize], name: &str) -> Option<String> {
        for &i in matched {
            let (Some(rules), Some(entry)) =
                (self.principals.get(i), self.config.principals.get(i))
            else {
                continue;
            };
            if let Some(j) = rules.deny.first_match(name) {
                return Some(format!(
                    "deny rule {:?} for callers with {}",
                    entry.deny[j],
                    entry.condition()
                ));
            }
            if let Some(allow) = &rules.allow
                && allow.first_match(name).is_none()
            {
                return Some(format!(
                    "the allow list of callers with {}, which does not name it",
                    entry.condition()
                ));
            }
        }
        None
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

    fn caller(subject: &str, groups: &[&str]) -> Principal {
        Principal {
            issuer: "https://idp.example".into(),
            subject: subject.into(),
            claims: [(
                "groups".to_owned(),
                groups.iter().map(|g| (*g).to_owned()).collect(),
            )]
            .into(),
            operator: false,
        }
    }

    #[test]
    fn a_callers_rules_only_narrow_and_apply_to_matching_callers() {
        let rules = Permissions::new(PermissionsConfig {
            deny: vec!["mcp__db__drop".into()],
            principals: vec![
                PrincipalRulesConfig {
                    claims: [("groups".to_owned(), "sales".to_owned())].into(),
                    allow: None,
                    deny: vec!["mcp__github__*".into()],
                },
                PrincipalRulesConfig {
                    claims: [("groups".to_owned(), "contractors".to_owned())].into(),
                    allow: Some(vec!["mcp__docs__*".into()]),
                    deny: Vec::new(),
                },
                PrincipalRulesConfig {
                    claims: [("sub".to_owned(), "bob".to_owned())].into(),
                    allow: None,
                    deny: vec!["mcp__docs__edit".into()],
                },
            ],
            ..PermissionsConfig::default()
        })
        .unwrap();
        assert!(rules.has_principal_rules());
        let eng = rules.matching(&caller("alice", &["eng"]));
        assert!(eng.is_empty());
        assert_eq!(rules.refused_for(&eng, "mcp__github__get"), None);
        let sales = rules.matching(&caller("carol", &["eng", "sales"]));
        assert_eq!(sales, vec![0]);
        let why = rules.refused_for(&sales, "mcp__github__get").unwrap();
        assert!(
            why.contains("mcp__github__*") && why.contains("groups=sales"),
            "{why}"
        );
        assert_eq!(rules.refused_for(&sales, "mcp__docs__read"), None);
        let contractor = rules.matching(&caller("dan", &["contractors"]));
        assert_eq!(rules.refused_for(&contractor, "mcp__docs__read"), None);
        let why = rules.refused_for(&contractor, "mcp__github__get").unwrap();
        assert!(why.contains("allow list"), "{why}");
        let bob = rules.matching(&caller("bob", &[]));
        assert_eq!(bob, vec![2]);
        assert!(rules.refused_for(&bob, "mcp__docs__edit").is_some());
        // An entry naming no claim matches nobody.
        let none = PrincipalRulesConfig::default();
        assert!(!none.matches(&caller("alice", &["eng"])));
        // The gateway's own deny is the gateway's: a caller's rules never
        // open it.
        assert!(!rules.decide("mcp__db__drop").is_allowed());
    }

    fn perms(allow: &[&str], deny: &[&str], default: DefaultPolicy) -> Permissions {
        Permissions::new(PermissionsConfig {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            default,
            ..PermissionsConfig::default()
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
