//! The stored access grant of one profile, and when it needs refreshing.

use serde::{Deserialize, Serialize};

use crate::secret::Secret;
use crate::store::Record;

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenAuthMethod {
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// The secret in the form body.
    ClientSecretPost,
    /// A public client: no secret.
    #[default]
    None,
}

impl TokenAuthMethod {
    /// What a client with (or without) a secret uses at a server that lists
    /// `supported` (`token_endpoint_auth_methods_supported`): Basic unless
    /// the server lists only `client_secret_post`.
    pub fn choose(has_secret: bool, supported: Option<&[String]>) -> Self {
        if !has_secret {
            return Self::None;
        }
        let supports = |m: &str| supported.is_some_and(|s| s.iter().any(|x| x == m));
        if supports("client_secret_post") && !supports("client_secret_basic") {
            Self::ClientSecretPost
        } else {
            Self::ClientSecretBasic
        }
    }

    /// The RFC 7591 name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::None => "none",
        }
    }
}

/// An access grant: tokens plus everything needed to refresh them without
/// discovery (the process that serves never talks to metadata endpoints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The MCP server URL of the profile when the grant was obtained; a
    /// grant is never sent to another URL.
    pub server_url: String,
    /// The RFC 8707 resource the grant is for (from the server's metadata).
    pub resource: String,
    /// The authorization server's issuer, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Token endpoint used for refresh.
    pub token_endpoint: String,
    /// The client the grant was issued to.
    pub client_id: String,
    /// Its secret (confidential clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint.
    #[serde(default)]
    pub auth_method: TokenAuthMethod,
    /// True when the client was registered dynamically by a login (reused by
    /// the next login instead of registering again).
    #[serde(default)]
    pub registered_client: bool,
    /// The access token.
    pub access_token: Secret,
    /// The refresh token, if the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// Expiry (seconds since the Unix epoch), if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the current access token was obtained.
    pub obtained_at: u64,
    /// Granted scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Scopes a server asked for (`insufficient_scope`) that the next login requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_scopes: Vec<String>,
    /// The direct-DCR registration generation this grant belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dcr_generation: Option<u64>,
}

impl Record for Grant {
    const KIND: &'static str = "grant";
}

/// Seconds before expiry at which a token is refreshed, at most.
pub const REFRESH_AHEAD_SECS: u64 = 60;

/// Now, in seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl Grant {
    /// True when the token should be refreshed now: less than
    /// `min(60 s, half its lifetime)` remains (so short-lived tokens are
    /// not refreshed on every call).
    pub fn is_due(&self, now: u64) -> bool {
        let Some(expires_at) = self.expires_at else {
            return false;
        };
        let lifetime = expires_at.saturating_sub(self.obtained_at);
        let ahead = REFRESH_AHEAD_SECS.min(lifetime / 2).max(1);
        expires_at.saturating_sub(now) < ahead
    }

    /// True once the access token has expired.
    pub fn is_expired(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// True when this grant can be refreshed (a refresh token, not direct DCR).
    pub fn can_refresh(&self) -> bool {
        self.refresh_token.is_some() && self.dcr_generation.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(obtained_at: u64, expires_at: Option<u64>) -> Grant {
        Grant {
            server_url: "https://x/mcp".into(),
            resource: "https://x/mcp".into(),
            issuer: None,
            token_endpoint: "https://as/token".into(),
            client_id: "c".into(),
            client_secret: Some(Secret::new("cs-secret")),
            auth_method: TokenAuthMethod::ClientSecretBasic,
            registered_client: false,
            access_token: Secret::new("at-secret"),
            refresh_token: Some(Secret::new("rt-secret")),
            expires_at,
            obtained_at,
            scopes: vec![],
            wanted_scopes: vec![],
            dcr_generation: None,
        }
    }

    #[test]
    fn due_ahead_of_expiry_but_not_every_call() {
        let g = grant(1000, Some(4600)); // one hour
        assert!(!g.is_due(1000));
        assert!(!g.is_due(4539));
        assert!(g.is_due(4541));
        assert!(g.is_due(5000) && g.is_expired(5000));
        let short = grant(1000, Some(1010)); // 10 s token: refresh in its last 5 s
        assert!(!short.is_due(1004));
        assert!(short.is_due(1006));
        assert!(!grant(1000, None).is_due(u64::MAX));
    }

    #[test]
    fn debug_redacts_every_secret() {
        let dbg = format!("{:?}", grant(0, None));
        for s in ["cs-secret", "at-secret", "rt-secret"] {
            assert!(!dbg.contains(s), "{dbg}");
        }
    }

    #[test]
    fn auth_method_follows_the_server() {
        let post = vec!["client_secret_post".to_owned()];
        let both = vec![
            "client_secret_post".to_owned(),
            "client_secret_basic".to_owned(),
        ];
        assert_eq!(
            TokenAuthMethod::choose(false, Some(&post)),
            TokenAuthMethod::None
        );
        assert_eq!(
            TokenAuthMethod::choose(true, Some(&post)),
            TokenAuthMethod::ClientSecretPost
        );
        assert_eq!(
            TokenAuthMethod::choose(true, Some(&both)),
            TokenAuthMethod::ClientSecretBasic
        );
        assert_eq!(
            TokenAuthMethod::choose(true, None),
            TokenAuthMethod::ClientSecretBasic
        );
    }
}
