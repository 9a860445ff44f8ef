//! Enterprise-managed authorization (the MCP authorization extension's
//! identity assertion authorization grant, "ID-JAG"): a caller's identity
//! assertion becomes an access token for one upstream MCP server without a
//! login of its own.
//!
//! Two token requests, no redirects, no retries:
//! 1. at the **enterprise IdP** (the gateway's issuer) an RFC 8693 token
//!    exchange: `subject_token` = the caller's access token as the gateway
//!    validated it (`subject_token_type` = `…:access_token`),
//!    `requested_token_type` = `…:id-jag`, `audience` = the upstream's
//!    authorization server (its issuer), `resource` = the upstream's URL,
//!    `scope` when configured; the gateway authenticates as its own client;
//! 2. at the **upstream's authorization server** the RFC 7523 JWT bearer
//!    grant with the ID-JAG as `assertion`; the gateway authenticates as
//!    its client there. The answer is the caller's access token for the
//!    server.
//!
//! Why `access_token` as the subject type: rmcp's client side
//! (`rmcp::transport::auth::enterprise`) sends only an OpenID Connect ID
//! token or a refresh token as the subject. A gateway holds neither of its
//! callers' — it holds the access token each caller presented, issued by
//! the same IdP and checked by the gateway (signature, issuer, audience,
//! expiry). Sending that token labelled as an ID token would be refused by
//! an IdP that checks types (and rightly so), so this module sends it under
//! its own type, as RFC 8693 provides; the IdP decides whether it accepts
//! access tokens as identity assertions.
//!
//! Nothing here logs a token, and no error carries one: errors name the
//! stage and the `error` code the IdP or authorization server answered.

mod client;
mod discover;
mod settings;

pub use client::EnterpriseClient;
pub use discover::{DiscoveryError, discover_authorization_server, discover_token_endpoint};
pub use settings::{EnterpriseManagedSettings, SettingsError, check_authorization_server};

use serde::Deserialize;

pub use crate::delegated::{ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT};
use crate::grant::{TokenAuthMethod, now_secs};
use crate::oauth_http::{error_code, form_urlencode, read_bounded};
use crate::secret::Secret;

/// RFC 7523's JWT bearer grant type (how an ID-JAG is redeemed).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The token type of an ID-JAG.
pub const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The grant profile an authorization server that accepts ID-JAGs lists in
/// `authorization_grant_profiles_supported`.
pub const ID_JAG_GRANT_PROFILE: &str = "urn:ietf:params:oauth:grant-profile:id-jag";
/// The JWT `typ` of an ID-JAG.
const ID_JAG_JWT_TYPE: &str = "oauth-id-jag+jwt";

/// An authorization server and the gateway's registered client at it.
#[derive(Clone)]
pub struct TokenEndpointClient {
    /// Its issuer identifier, exactly as its metadata writes it.
    pub issuer: String,
    /// Its token endpoint (from its metadata).
    pub token_endpoint: String,
    /// The gateway's client id there.
    pub client_id: String,
    /// The client's secret.
    pub client_secret: Secret,
    /// How the client authenticates (Basic or in the form body).
    pub auth_method: TokenAuthMethod,
}

impl std::fmt::Debug for TokenEndpointClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEndpointClient")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("auth_method", &self.auth_method)
            .finish_non_exhaustive()
    }
}

/// One upstream server's enterprise-managed authorization, resolved: both
/// servers, the resource and the scopes.
#[derive(Debug, Clone)]
pub struct EnterpriseManaged {
    /// The enterprise IdP (the gateway's issuer) and the gateway's client.
    pub idp: TokenEndpointClient,
    /// The upstream's authorization server and the gateway's client there.
    pub resource_as: TokenEndpointClient,
    /// The upstream's URL (RFC 8707 `resource`).
    pub resource: String,
    /// `scope` asked of the IdP (empty: none sent; the IdP decides).
    pub scopes: Vec<String>,
}

/// An access token for one caller at one upstream server.
#[derive(Clone)]
pub struct IssuedToken {
    /// The token, for that caller's calls to that server only.
    pub access_token: Secret,
    /// When it expires (Unix seconds), when the server said.
    pub expires_at: Option<u64>,
}

impl std::fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedToken")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Which of the two requests failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The ID-JAG request at the enterprise IdP.
    IdentityProvider,
    /// The ID-JAG's redemption at the upstream's authorization server.
    AuthorizationServer,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::IdentityProvider => "the enterprise IdP",
            Self::AuthorizationServer => "the server's authorization server",
        })
    }
}

/// Why no access token was issued (never with a token in it).
#[derive(Debug, thiserror::Error)]
pub enum EnterpriseError {
    /// The IdP or authorization server refused: its `error` code.
    #[error("{stage} refused the ID-JAG {}: {code}", stage_action(*.stage))]
    Refused {
        /// Which request.
        stage: Stage,
        /// The `error` code answered (RFC 6749 §5.2), or `HTTP <status>`.
        code: String,
        /// The HTTP status.
        status: u16,
    },
    /// The token endpoint could not be reached or read.
    #[error("{stage} could not be reached: {reason}")]
    Unreachable {
        /// Which request.
        stage: Stage,
        /// What went wrong (no body, no token).
        reason: String,
    },
    /// The answer is not what the flow requires.
    #[error("{stage} answered {why}")]
    BadAnswer {
        /// Which request.
        stage: Stage,
        /// What is wrong with it.
        why: &'static str,
    },
}

fn stage_action(stage: Stage) -> &'static str {
    match stage {
        Stage::IdentityProvider => "request",
        Stage::AuthorizationServer => "redemption",
    }
}

impl EnterpriseError {
    /// The `error` code answered, or what stands for it (`unreachable`,
    /// `invalid_response`): what a caller's tool error names.
    pub fn code(&self) -> &str {
        match self {
            Self::Refused { code, .. } => code,
            Self::Unreachable { .. } => "unreachable",
            Self::BadAnswer { .. } => "invalid_response",
        }
    }

    /// Which request failed.
    pub fn stage(&self) -> Stage {
        match self {
            Self::Refused { stage, .. }
            | Self::Unreachable { stage, .. }
            | Self::BadAnswer { stage, .. } => *stage,
        }
    }
}

/// The fields of a token endpoint's answer this flow reads.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    issued_token_type: Option<String>,
    token_type: Option<String>,
    expires_in: Option<u64>,
    error: Option<String>,
}

/// Exchanges `assertion` (the caller's validated access token at the
/// gateway) for an access token at `config.resource`: an ID-JAG from the
/// IdP, then its redemption at the authorization server. `http` should be
/// an [`crate::oauth_http::oauth_client`] (no redirects, bounded).
pub async fn exchange(
    http: &reqwest::Client,
    config: &EnterpriseManaged,
    assertion: &Secret,
) -> Result<IssuedToken, EnterpriseError> {
    let id_jag = request_id_jag(http, config, assertion).await?;
    redeem(http, &config.resource_as, &id_jag).await
}

/// Leg 1: the ID-JAG for `config`'s server, checked for its binding to the
/// authorization server and the client there (the IdP's signature is the
/// authorization server's to check).
async fn request_id_jag(
    http: &reqwest::Client,
    config: &EnterpriseManaged,
    assertion: &Secret,
) -> Result<Secret, EnterpriseError> {
    let stage = Stage::IdentityProvider;
    let scope = config.scopes.join(" ");
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE_GRANT),
        ("requested_token_type", ID_JAG_TOKEN_TYPE),
        ("subject_token", assertion.expose()),
        ("subject_token_type", ACCESS_TOKEN_TYPE),
        ("audience", config.resource_as.issuer.as_str()),
        ("resource", config.resource.as_str()),
    ];
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    let answer = post(http, &config.idp, form, stage).await?;
    let bad = |why| EnterpriseError::BadAnswer { stage, why };
    if answer.issued_token_type.as_deref() != Some(ID_JAG_TOKEN_TYPE) {
        return Err(bad("a token that is not an ID-JAG (issued_token_type)"));
    }
    let jag = Secret::new(answer.access_token.unwrap_or_default());
    check_binding(&jag, &config.resource_as).map_err(bad)?;
    Ok(jag)
}

/// Leg 2: redeems `id_jag` at `server` (RFC 7523 JWT bearer grant; only
/// the assertion carries authority, so no scope or resource is repeated).
async fn redeem(
    http: &reqwest::Client,
    server: &TokenEndpointClient,
    id_jag: &Secret,
) -> Result<IssuedToken, EnterpriseError> {
    let stage = Stage::AuthorizationServer;
    let form = vec![
        ("grant_type", JWT_BEARER_GRANT),
        ("assertion", id_jag.expose()),
    ];
    let answer = post(http, server, form, stage).await?;
    if !answer
        .token_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("bearer"))
    {
        return Err(EnterpriseError::BadAnswer {
            stage,
            why: "a token that is not a bearer token (token_type)",
        });
    }
    Ok(IssuedToken {
        access_token: Secret::new(answer.access_token.unwrap_or_default()),
        expires_at: answer.expires_in.map(|s| now_secs().saturating_add(s)),
    })
}

/// POSTs `form` to `server`'s token endpoint as its client; a success
/// with a non-empty `access_token`, or the refusal's `error` code.
async fn post(
    http: &reqwest::Client,
    server: &TokenEndpointClient,
    mut form: Vec<(&str, &str)>,
    stage: Stage,
) -> Result<TokenAnswer, EnterpriseError> {
    // Every client sends its id in the form; some servers (the MCP Python
    // SDK's) look the client up by it even with HTTP Basic.
    form.push(("client_id", &server.client_id));
    let mut request = http.post(&server.token_endpoint);
    match server.auth_method {
        TokenAuthMethod::ClientSecretBasic => {
            request = request.basic_auth(
                form_urlencode(&server.client_id),
                Some(form_urlencode(server.client_secret.expose())),
            );
        }
        TokenAuthMethod::ClientSecretPost => {
            form.push(("client_secret", server.client_secret.expose()));
        }
        TokenAuthMethod::None => {}
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&form)
        .finish();
    let unreachable = |reason: String| EnterpriseError::Unreachable { stage, reason };
    let response = request
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| unreachable(extpool_core::Causes(&e).to_string()))?;
    let status = response.status();
    let bytes = read_bounded(response)
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    let answer: Option<TokenAnswer> = serde_json::from_slice(&bytes).ok();
    let has_token = |a: &TokenAnswer| a.access_token.as_deref().is_some_and(|t| !t.is_empty());
    match answer {
        Some(answer) if status.is_success() && has_token(&answer) => Ok(answer),
        Some(answer) if !status.is_success() => Err(EnterpriseError::Refused {
            stage,
            code: error_code(answer.error.as_deref(), status.as_u16()),
            status: status.as_u16(),
        }),
        None if !status.is_success() => Err(EnterpriseError::Refused {
            stage,
            code: error_code(None, status.as_u16()),
            status: status.as_u16(),
        }),
        _ => Err(EnterpriseError::BadAnswer {
            stage,
            why: "no token (not a token response)",
        }),
    }
}

/// Checks, without the signature (the authorization server's to verify),
/// that `jag` is an ID-JAG for `server` and the gateway's client there: a
/// JWT typed `oauth-id-jag+jwt` whose `aud` is the server's issuer and
/// whose `client_id` is the gateway's. Catches an IdP that would mint it
/// for someone else before it is sent anywhere.
fn check_binding(jag: &Secret, server: &TokenEndpointClient) -> Result<(), &'static str> {
    let Some((header, claims)) = crate::jwt::unverified_parts(jag.expose()) else {
        return Err("an ID-JAG that is not a signed JWT");
    };
    if header["typ"] != ID_JAG_JWT_TYPE {
        return Err("an ID-JAG whose JWT type is not oauth-id-jag+jwt");
    }
    let aud_matches = match &claims["aud"] {
        serde_json::Value::String(aud) => *aud == server.issuer,
        serde_json::Value::Array(auds) => auds.len() == 1 && auds[0] == server.issuer.as_str(),
        _ => false,
    };
    if !aud_matches {
        return Err("an ID-JAG for another authorization server (aud)");
    }
    if claims["client_id"] != server.client_id.as_str() {
        return Err("an ID-JAG for another client (client_id)");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
