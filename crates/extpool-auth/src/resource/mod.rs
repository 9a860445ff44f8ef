//! The gateway as an OAuth 2.1 protected resource (MCP authorization,
//! 2025-11-25): it accepts access tokens that an identity provider (the
//! issuer) signed for it, and tells clients where to get one.
//!
//! - [`TokenVerifier::discover`] reads the issuer's metadata (OpenID
//!   Connect discovery at `ISSUER/.well-known/openid-configuration`, RFC
//!   8414 `/.well-known/oauth-authorization-server` as the fallback) and
//!   its JWKS, bounded in size and time.
//! - [`TokenVerifier::verify`] checks a JWT access token: signed by a key
//!   the issuer publishes, with an algorithm that key allows (asymmetric
//!   only: never `none`, never HS* — a public key is no shared secret),
//!   issued by the issuer, for one of the gateway's audiences, within its
//!   `exp` and `nbf` give or take the leeway, with a subject. Its answer is
//!   the [`Principal`], with the claims the operator chose to keep.
//! - A token signed with a key not in the cached JWKS (the issuer rotated
//!   its keys) makes the verifier fetch the JWKS again — once, then no more
//!   often than [`IssuerSettings::refetch_interval`], so tokens with made-up
//!   key ids cannot make it hammer the issuer.
//! - [`protected_resource_metadata`] is the RFC 9728 document clients read
//!   (through `WWW-Authenticate: Bearer resource_metadata=…`) to find the
//!   issuer.
//!
//! A token is never logged nor shown in an error. A token accepted once is
//! remembered by its digest (bounded) until it expires or the keys are
//! fetched again, so a client's every request does not check a signature.

mod accepted;
pub(crate) mod discovery;
mod keys;
mod verify;

use std::time::Duration;

pub use discovery::IssuerMetadata;
pub use verify::{TokenError, TokenVerifier};

/// Longest access token read (a longer one is refused unread).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Most keys of a JWKS kept (the rest are ignored, and said once).
pub const MAX_KEYS: usize = 64;
/// Default leeway on `exp` and `nbf`, for clocks that differ.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);
/// Default least time between two JWKS fetches that unknown key ids cause.
pub const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(60);
/// Default age after which the JWKS is fetched again on its next use.
pub const DEFAULT_KEYS_MAX_AGE: Duration = Duration::from_secs(3600);

/// A claim and a value it must hold (`groups=operators`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMatch {
    /// The claim's name.
    pub claim: String,
    /// The value (one of the claim's values, for a list).
    pub value: String,
}

impl std::str::FromStr for ClaimMatch {
    type Err = String;

    /// `CLAIM=VALUE`, both non-empty.
    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once('=') {
            Some((claim, value)) if !claim.trim().is_empty() && !value.is_empty() => Ok(Self {
                claim: claim.trim().to_owned(),
                value: value.to_owned(),
            }),
            _ => Err(format!(
                "{text:?} is not CLAIM=VALUE (for example groups=operators)"
            )),
        }
    }
}

impl std::fmt::Display for ClaimMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.claim, self.value)
    }
}

/// Which tokens the gateway accepts.
#[derive(Debug, Clone)]
pub struct IssuerSettings {
    /// The issuer's URL, exactly as its tokens' `iss` and its metadata's
    /// `issuer` write it.
    pub issuer: String,
    /// The audiences a token may be for (its `aud`: the gateway's URL). A
    /// URL is also accepted with or without its `/` path.
    pub audiences: Vec<String>,
    /// The claims kept on the principal (besides `iss` and `sub`), for
    /// permission rules and logs (`groups`, `email`).
    pub claims: Vec<String>,
    /// What makes a principal an operator (sees every session).
    pub operator: Option<ClaimMatch>,
    /// Leeway on `exp` and `nbf`.
    pub leeway: Duration,
    /// Least time between two JWKS fetches that unknown key ids cause.
    pub refetch_interval: Duration,
    /// Age after which the JWKS is fetched again on its next use.
    pub keys_max_age: Duration,
    /// Whether the issuer's metadata and keys may be fetched over plain
    /// `http://` off loopback (never in production: keys read over plain
    /// HTTP can be replaced on the way).
    pub insecure_http: bool,
    /// The scopes a client should ask the issuer for, advertised in the
    /// metadata (`scopes_supported`) and the challenge (`scope`), which
    /// MCP clients read before they log in (empty: none advertised, and a
    /// client asks for its own or the issuer's).
    pub scopes: Vec<String>,
}

impl IssuerSettings {
    /// Tokens of `issuer` for `audience`, keeping the `groups` claim, with
    /// the default leeway and key refresh.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audiences: vec![audience.into()],
            claims: vec!["groups".to_owned()],
            operator: None,
            leeway: DEFAULT_LEEWAY,
            refetch_interval: DEFAULT_REFETCH_INTERVAL,
            keys_max_age: DEFAULT_KEYS_MAX_AGE,
            insecure_http: false,
            scopes: Vec::new(),
        }
    }

    /// Every spelling of the audiences a token may name: each as written
    /// and, for a URL without a path, with and without its `/`
    /// (`http://h:1` and `http://h:1/` are one resource, and URL libraries
    /// write the second).
    pub fn accepted_audiences(&self) -> Vec<String> {
        let mut all = Vec::new();
        for audience in &self.audiences {
            all.push(audience.clone());
            let alternative = match url::Url::parse(audience) {
                Ok(url) if url.path() == "/" && url.query().is_none() => {
                    if audience.ends_with('/') {
                        Some(audience.trim_end_matches('/').to_owned())
                    } else {
                        Some(format!("{audience}/"))
                    }
                }
                _ => None,
            };
            all.extend(alternative);
        }
        all.sort();
        all.dedup();
        all
    }
}

/// The RFC 9728 protected-resource metadata of a gateway that accepts the
/// tokens of `issuer` for `resource` (its audience), advertising `scopes`
/// when there are any.
pub fn protected_resource_metadata(
    resource: &str,
    issuer: &str,
    scopes: &[String],
) -> serde_json::Value {
    let mut metadata = serde_json::json!({
        "resource": resource,
        "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "extpool gateway",
    });
    if !scopes.is_empty() {
        metadata["scopes_supported"] = serde_json::json!(scopes);
    }
    metadata
}

/// The `WWW-Authenticate` value of a refused request: where the metadata
/// is, the scopes to ask for (when advertised) and, for a token that was
/// presented, why it was refused (RFC 6750: no `error` when no token came).
pub fn www_authenticate(
    metadata_url: &str,
    scopes: &[String],
    refused: Option<&TokenError>,
) -> String {
    let quote = |s: &str| s.replace(['\\', '"'], "'");
    let mut value = format!("Bearer resource_metadata=\"{}\"", quote(metadata_url));
    if !scopes.is_empty() {
        value.push_str(&format!(", scope=\"{}\"", quote(&scopes.join(" "))));
    }
    if let Some(e) = refused {
        value.push_str(&format!(
            ", error=\"invalid_token\", error_description=\"{}\"",
            quote(&e.to_string())
        ));
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_audience_is_accepted_with_and_without_its_slash() {
        let mut s = IssuerSettings::new("https://idp", "http://127.0.0.1:9");
        assert_eq!(
            s.accepted_audiences(),
            vec!["http://127.0.0.1:9", "http://127.0.0.1:9/"]
        );
        s.audiences = vec!["https://gw.example/mcp".into(), "api://extpool".into()];
        assert_eq!(
            s.accepted_audiences(),
            vec!["api://extpool", "https://gw.example/mcp"]
        );
    }

    #[test]
    fn a_claim_match_is_claim_equals_value() {
        let m: ClaimMatch = "groups=operators".parse().unwrap();
        assert_eq!(
            (m.claim.as_str(), m.value.as_str()),
            ("groups", "operators")
        );
        assert!("groups".parse::<ClaimMatch>().is_err());
        assert!("=x".parse::<ClaimMatch>().is_err());
        assert!("groups=".parse::<ClaimMatch>().is_err());
    }

    #[test]
    fn the_challenge_names_the_metadata_and_why_without_quotes_breaking_it() {
        assert_eq!(
            www_authenticate("http://h/.well-known/oauth-protected-resource", &[], None),
            "Bearer resource_metadata=\"http://h/.well-known/oauth-protected-resource\""
        );
        let e = TokenError::Malformed("a \"quoted\" thing".into());
        let header = www_authenticate("http://h/m", &[], Some(&e));
        let scoped = www_authenticate("http://h/m", &["mcp".into(), "openid".into()], None);
        assert_eq!(
            scoped,
            "Bearer resource_metadata=\"http://h/m\", scope=\"mcp openid\""
        );
        assert!(header.contains("error=\"invalid_token\""), "{header}");
        assert!(!header.contains("\\\""), "{header}");
        assert_eq!(header.matches('"').count(), 6, "{header}");
    }
}
