//! Delegated credentials: an upstream server's token made from the access
//! token a caller presented to the gateway, for that caller only.
//!
//! - **Token exchange** (RFC 8693, `oauth.token_exchange`): the caller's
//!   token is the `subject_token` at the gateway's issuer's token endpoint,
//!   the gateway authenticating as its own client; the issued token is for
//!   `resource` = the server's URL (and `audience` when configured).
//!   [`exchange`] sends that request.
//! - **Passthrough** (`oauth.passthrough`): the caller's own token, when
//!   its audience names the server.
//!
//! Either way the token is put in the host's [`DelegatedTokens`] under the
//! record name of the caller's profile (server and principal digest: one
//! entry per principal and server, never shared), and the server's
//! [`crate::OAuthSession`] sends it. Nothing here logs a token, and no
//! error carries one.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Deserialize;

use crate::grant::now_secs;
use crate::oauth_http::{error_code, form_urlencode, read_bounded};
use crate::secret::Secret;

/// RFC 8693's grant type.
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// RFC 8693's token type of an access token.
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// Most delegated tokens kept (callers × servers); past it the entries
/// that expire first are dropped (their callers exchange again).
pub const MAX_DELEGATED_TOKENS: usize = 10_000;

/// One caller's token for one server.
#[derive(Clone)]
pub struct DelegatedToken {
    /// The token sent to the server.
    pub token: Secret,
    /// When it expires (Unix seconds), if known.
    pub expires_at: Option<u64>,
    /// The delegation chain (`act` claim: who acts for the subject), when
    /// the issuer said it.
    pub act: Option<serde_json::Value>,
}

impl std::fmt::Debug for DelegatedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegatedToken")
            .field("expires_at", &self.expires_at)
            .field("act", &self.act)
            .finish_non_exhaustive()
    }
}

impl DelegatedToken {
    /// Whether it is still good `margin` seconds from now.
    pub fn fresh_for(&self, margin: u64) -> bool {
        self.expires_at
            .is_none_or(|at| at > now_secs().saturating_add(margin))
    }
}

/// The delegated tokens of a host, by record name (server and principal
/// digest, [`crate::OAuthProfile::record_name`]); shared by the gateway,
/// which puts them, and the servers' sessions, which send them.
#[derive(Debug, Default)]
pub struct DelegatedTokens {
    tokens: Mutex<HashMap<String, DelegatedToken>>,
}

impl DelegatedTokens {
    /// An empty set.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The token under `record`, if any.
    pub fn get(&self, record: &str) -> Option<DelegatedToken> {
        self.tokens.lock().get(record).cloned()
    }

    /// Puts `token` under `record` (bounded: expired entries, then those
    /// that expire first, make room).
    pub fn put(&self, record: &str, token: DelegatedToken) {
        let mut tokens = self.tokens.lock();
        if tokens.len() >= MAX_DELEGATED_TOKENS && !tokens.contains_key(record) {
            let now = now_secs();
            tokens.retain(|_, t| t.expires_at.is_none_or(|at| at > now));
            while tokens.len() >= MAX_DELEGATED_TOKENS {
                let first = tokens
                    .iter()
                    .min_by_key(|(_, t)| t.expires_at.unwrap_or(u64::MAX))
                    .map(|(k, _)| k.clone());
                match first {
                    Some(key) => tokens.remove(&key),
                    None => break,
                };
            }
        }
        tokens.insert(record.to_owned(), token);
    }

    /// Forgets the token under `record` (its server refused it).
    pub fn forget(&self, record: &str) {
        self.tokens.lock().remove(record);
    }
}

/// One token-exchange request.
#[derive(Debug)]
pub struct ExchangeRequest<'a> {
    /// The issuer's token endpoint.
    pub token_endpoint: &'a str,
    /// The gateway's client at the issuer.
    pub client_id: &'a str,
    /// Its secret (HTTP Basic, RFC 6749 §2.3.1).
    pub client_secret: &'a Secret,
    /// The caller's validated access token.
    pub subject_token: &'a Secret,
    /// The server's URL.
    pub resource: &'a str,
    /// `audience`, when configured.
    pub audience: Option<&'a str>,
    /// `scope`, when configured.
    pub scopes: &'a [String],
}

/// Why an exchange gave no token (never with a token in it).
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The issuer refused: its `error` code (RFC 6749 §5.2).
    #[error("the issuer refused the token exchange: {error}")]
    Refused {
        /// The issuer's `error` code (at most 64 visible ASCII characters).
        error: String,
        /// The HTTP status.
        status: u16,
    },
    /// The token endpoint could not be reached or read.
    #[error("the issuer's token endpoint could not be reached: {0}")]
    Unreachable(String),
    /// The answer is no token response.
    #[error("the issuer's token endpoint answered no token ({0})")]
    BadAnswer(String),
}

impl ExchangeError {
    /// The issuer's `error` code, or what stands for it (`unreachable`,
    /// `invalid_response`).
    pub fn code(&self) -> &str {
        match self {
            Self::Refused { error, .. } => error,
            Self::Unreachable(_) => "unreachable",
            Self::BadAnswer(_) => "invalid_response",
        }
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    expires_in: Option<u64>,
    act: Option<serde_json::Value>,
    error: Option<String>,
}

/// Sends token exchanges on one HTTP client for OAuth endpoints
/// ([`crate::oauth_http::oauth_client`]: no redirects, bounded).
#[derive(Debug, Clone)]
pub struct Exchanger {
    http: reqwest::Client,
}

impl Default for Exchanger {
    fn default() -> Self {
        Self {
            http: crate::oauth_http::oauth_client(),
        }
    }
}

impl Exchanger {
    /// Sends `request` to its token endpoint ([`exchange`]).
    pub async fn exchange(
        &self,
        request: &ExchangeRequest<'_>,
    ) -> Result<DelegatedToken, ExchangeError> {
        exchange(&self.http, request).await
    }
}

/// Sends `request` to its token endpoint with `http` (an
/// [`crate::oauth_http::oauth_client`]): the issued token, its expiry, and
/// its `act` chain (from the token when it is a JWT, else from the answer).
pub async fn exchange(
    http: &reqwest::Client,
    request: &ExchangeRequest<'_>,
) -> Result<DelegatedToken, ExchangeError> {
    let mut form: Vec<(&str, &str)> = vec![
        ("grant_type", TOKEN_EXCHANGE_GRANT),
        ("subject_token", request.subject_token.expose()),
        ("subject_token_type", ACCESS_TOKEN_TYPE),
        ("requested_token_type", ACCESS_TOKEN_TYPE),
        ("resource", request.resource),
    ];
    if let Some(audience) = request.audience {
        form.push(("audience", audience));
    }
    let scope = request.scopes.join(" ");
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&form)
        .finish();
    let response = http
        .post(request.token_endpoint)
        .basic_auth(
            form_urlencode(request.client_id),
            Some(form_urlencode(request.client_secret.expose())),
        )
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await
        .map_err(|e| ExchangeError::Unreachable(extpool_core::Causes(&e).to_string()))?;
    let status = response.status();
    let body = read_bounded(response)
        .await
        .map_err(|e| ExchangeError::Unreachable(e.to_string()))?;
    let answer: TokenAnswer = serde_json::from_slice(&body)
        .map_err(|_| ExchangeError::BadAnswer(format!("HTTP {}, not JSON", status.as_u16())))?;
    if !status.is_success() || answer.access_token.is_none() {
        let error = error_code(answer.error.as_deref(), status.as_u16());
        return Err(ExchangeError::Refused {
            error,
            status: status.as_u16(),
        });
    }
    let token = Secret::new(answer.access_token.unwrap_or_default());
    let act = jwt_claim(&token, "act").or(answer.act);
    Ok(DelegatedToken {
        expires_at: answer.expires_in.map(|s| now_secs().saturating_add(s)),
        token,
        act,
    })
}

/// Claim `name` of `token` read without checking it, when the token is a
/// JWT (what the issuer said of a token it just issued to us, or of one
/// the gateway verified already).
pub fn jwt_claim(token: &Secret, name: &str) -> Option<serde_json::Value> {
    match crate::jwt::unverified_parts(token.expose())?.1 {
        serde_json::Value::Object(mut claims) => claims.remove(name),
        _ => None,
    }
}

/// The audiences (`aud`) of a verified JWT access token.
pub fn audiences(token: &Secret) -> Vec<String> {
    match jwt_claim(token, "aud") {
        Some(serde_json::Value::String(aud)) => vec![aud],
        Some(serde_json::Value::Array(auds)) => auds
            .into_iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: serde_json::Value) -> Secret {
        use base64::Engine as _;
        let enc = |v: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        Secret::new(format!(
            "{}.{}.sig",
            enc(&serde_json::json!({"alg": "RS256"})),
            enc(&claims)
        ))
    }

    #[test]
    fn claims_and_audiences_are_read_from_a_jwt() {
        let t = jwt(serde_json::json!({"aud": ["a", "b"], "act": {"sub": "gw"}}));
        assert_eq!(audiences(&t), ["a", "b"]);
        assert_eq!(jwt_claim(&t, "act"), Some(serde_json::json!({"sub": "gw"})));
        assert!(audiences(&Secret::new("opaque")).is_empty());
    }

    #[test]
    fn the_store_is_bounded_and_keeps_what_expires_last() {
        let store = DelegatedTokens::default();
        let now = now_secs();
        for i in 0..MAX_DELEGATED_TOKENS {
            let token = DelegatedToken {
                token: Secret::new("t"),
                expires_at: Some(now + 100 + i as u64),
                act: None,
            };
            store.put(&format!("s--u{i}"), token);
        }
        let last = DelegatedToken {
            token: Secret::new("t"),
            expires_at: Some(now + 1_000_000),
            act: None,
        };
        store.put("new", last);
        assert!(store.get("new").is_some());
        assert!(
            store.get("s--u0").is_none(),
            "the first to expire made room"
        );
        assert_eq!(store.tokens.lock().len(), MAX_DELEGATED_TOKENS);
    }
}
