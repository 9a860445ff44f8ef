//! Who is calling: a [`Principal`] is the identity a gateway request
//! carries — who vouched for it (an issuer), who it is (a subject), the
//! claims the operator chose to keep (groups, an e-mail), and whether it
//! is an operator. Sessions are owned by a principal ([`Principal::owner`]),
//! permission rules may match its claims, and every log line and audit
//! record of a call names it ([`Principal::label`]).
//!
//! A gateway without identities has one caller, [`Principal::local`]: the
//! person who holds its token (or, on loopback without one, this
//! machine's user), an operator.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The issuer of the one caller of a gateway without identities.
pub const LOCAL_ISSUER: &str = "extpool:local";
/// The issuer of a principal that presented a static API key (its subject
/// is the key's name).
pub const API_KEY_ISSUER: &str = "extpool:api-key";
/// The issuer of a request without a token on a loopback gateway whose
/// store holds API keys.
pub const ANONYMOUS_ISSUER: &str = "extpool:anonymous";
/// Longest subject or issuer kept (a token's are refused beyond it).
pub const MAX_IDENTIFIER_BYTES: usize = 255;
/// Most values of one claim kept (a longer list is cut, and said once).
pub const MAX_CLAIM_VALUES: usize = 64;
/// Longest claim value kept (a longer one is left out).
pub const MAX_CLAIM_VALUE_BYTES: usize = 256;

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// Who vouched for it: a token issuer's URL, [`API_KEY_ISSUER`] or
    /// [`LOCAL_ISSUER`].
    pub issuer: String,
    /// Who it is, as its issuer names it (`sub`; an API key's name).
    pub subject: String,
    /// The claims the operator chose to keep, each as a list of strings
    /// (a scalar claim is a list of one), by claim name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: BTreeMap<String, Vec<String>>,
    /// Whether it may see and manage every principal's sessions.
    #[serde(default)]
    pub operator: bool,
}

impl Principal {
    /// The one caller of a gateway without identities: an operator.
    pub fn local() -> Self {
        Self {
            issuer: LOCAL_ISSUER.to_owned(),
            subject: "operator".to_owned(),
            claims: BTreeMap::new(),
            operator: true,
        }
    }

    /// Whoever sends a request without a token to a loopback gateway
    /// whose store holds API keys: not an operator, so it never reaches
    /// what a key's holder (or the operator) made.
    pub fn anonymous() -> Self {
        Self {
            issuer: ANONYMOUS_ISSUER.to_owned(),
            subject: "anonymous".to_owned(),
            claims: BTreeMap::new(),
            operator: false,
        }
    }

    /// The principal of API key `name`.
    pub fn api_key(name: &str, operator: bool) -> Self {
        Self {
            issuer: API_KEY_ISSUER.to_owned(),
            subject: name.to_owned(),
            claims: BTreeMap::new(),
            operator,
        }
    }

    /// Whether this is the one caller of a gateway without identities.
    pub fn is_local(&self) -> bool {
        self.issuer == LOCAL_ISSUER
    }

    /// The owner key of what this principal creates (its sessions, its
    /// grants): issuer and subject, which together name one identity. A
    /// space cannot occur in an issuer URL, so no two principals share one.
    pub fn owner(&self) -> String {
        format!("{} {}", self.issuer, self.subject)
    }

    /// How logs, metrics, the audit log and the session API name it: the
    /// subject, and the issuer where it is not the gateway's own
    /// (`alice@https://idp.example`, `api-key:ci`, `local`, `anonymous`).
    /// The one spelling of a principal shown to people.
    pub fn label(&self) -> String {
        label_of(&self.issuer, &self.subject)
    }

    /// The [`label`](Self::label) of the principal whose
    /// [`owner`](Self::owner) key is `owner` (what a stored session keeps).
    pub fn label_of_owner(owner: &str) -> String {
        match owner.split_once(' ') {
            Some((issuer, subject)) => label_of(issuer, subject),
            None => owner.to_owned(),
        }
    }

    /// Whether claim `name` holds `value` (one of its values).
    pub fn has_claim(&self, name: &str, value: &str) -> bool {
        self.claims
            .get(name)
            .is_some_and(|values| values.iter().any(|v| v == value))
    }

    /// Whether this principal may act on something owned by `owner`
    /// (`None`: made without identities, which only an operator reaches).
    pub fn may_act_on(&self, owner: Option<&str>) -> bool {
        self.operator || owner.is_some_and(|o| o == self.owner())
    }
}

/// The one rule of [`Principal::label`].
fn label_of(issuer: &str, subject: &str) -> String {
    match issuer {
        LOCAL_ISSUER => "local".to_owned(),
        ANONYMOUS_ISSUER => "anonymous".to_owned(),
        API_KEY_ISSUER => format!("api-key:{subject}"),
        issuer => format!("{subject}@{issuer}"),
    }
}

/// A claim's JSON value as the list of strings a [`Principal`] keeps: a
/// string is a list of one, an array keeps its strings (and numbers and
/// booleans as written), anything else is no value. Values over
/// [`MAX_CLAIM_VALUE_BYTES`] are left out and at most [`MAX_CLAIM_VALUES`]
/// are kept.
pub fn claim_values(value: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let one = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let values: Vec<String> = match value {
        Value::Array(items) => items.iter().filter_map(one).collect(),
        other => one(other).into_iter().collect(),
    };
    values
        .into_iter()
        .filter(|v| v.len() <= MAX_CLAIM_VALUE_BYTES)
        .take(MAX_CLAIM_VALUES)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_owner_is_issuer_and_subject_and_only_they_or_an_operator_act_on_it() {
        let alice = Principal {
            issuer: "https://idp.example".into(),
            subject: "alice".into(),
            claims: BTreeMap::new(),
            operator: false,
        };
        let bob = Principal {
            subject: "bob".into(),
            ..alice.clone()
        };
        assert_eq!(alice.owner(), "https://idp.example alice");
        assert!(alice.may_act_on(Some(&alice.owner())));
        assert!(!bob.may_act_on(Some(&alice.owner())));
        assert!(!alice.may_act_on(None));
        assert!(Principal::local().may_act_on(Some(&alice.owner())));
        assert!(Principal::local().may_act_on(None));
        assert_eq!(alice.label(), "alice@https://idp.example");
        assert_eq!(Principal::api_key("ci", false).label(), "api-key:ci");
        let anonymous = Principal::anonymous();
        assert!(!anonymous.operator && !anonymous.is_local());
        assert!(!anonymous.may_act_on(Some(&alice.owner())) && !anonymous.may_act_on(None));
        assert_eq!(anonymous.label(), "anonymous");
        for p in [alice, Principal::api_key("ci", false), anonymous] {
            assert_eq!(Principal::label_of_owner(&p.owner()), p.label());
        }
    }

    #[test]
    fn claims_are_kept_as_bounded_lists_of_strings() {
        assert_eq!(claim_values(&json!("eng")), vec!["eng"]);
        assert_eq!(
            claim_values(&json!(["eng", 7, true, {"x": 1}])),
            vec!["eng", "7", "true"]
        );
        assert!(claim_values(&json!(null)).is_empty());
        assert!(claim_values(&json!("x".repeat(MAX_CLAIM_VALUE_BYTES + 1))).is_empty());
        let many: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        assert_eq!(claim_values(&json!(many)).len(), MAX_CLAIM_VALUES);
    }
}
