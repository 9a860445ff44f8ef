//! One refresh-token exchange (RFC 6749 §6, with the RFC 8707 `resource`),
//! through the `oauth2` crate.

use oauth2::basic::{BasicClient, BasicErrorResponseType};
use oauth2::{
    AuthType, ClientId, ClientSecret, RefreshToken, RequestTokenError, TokenResponse, TokenUrl,
};

use crate::grant::{Grant, TokenAuthMethod, now_secs};
use crate::oauth_http;
use crate::secret::Secret;

/// Why a refresh did not produce a token.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RefreshError {
    /// The grant has no refresh token (or must not be refreshed).
    #[error("the grant has no refresh token")]
    NoRefreshToken,
    /// The authorization server rejected the refresh token (`invalid_grant`):
    /// only a new login helps.
    #[error("the authorization server rejected the refresh token ({0})")]
    Rejected(String),
    /// Anything else (network, server error); may work later.
    #[error("refreshing at {endpoint} failed: {reason}")]
    Failed {
        /// The token endpoint.
        endpoint: String,
        /// Why (never a token or secret).
        reason: String,
    },
}

/// Exchanges the grant's refresh token; returns the updated grant (a
/// rotated refresh token replaces the old one; an omitted one is kept).
pub async fn refresh(http: &reqwest::Client, grant: &Grant) -> Result<Grant, RefreshError> {
    let refresh_token = match (&grant.refresh_token, grant.dcr_generation) {
        (Some(rt), None) => rt,
        _ => return Err(RefreshError::NoRefreshToken),
    };
    let failed = |reason: String| RefreshError::Failed {
        endpoint: grant.token_endpoint.clone(),
        reason,
    };
    let token_url =
        TokenUrl::new(grant.token_endpoint.clone()).map_err(|e| failed(e.to_string()))?;
    let mut client =
        BasicClient::new(ClientId::new(grant.client_id.clone())).set_token_uri(token_url);
    if grant.auth_method != TokenAuthMethod::None
        && let Some(secret) = &grant.client_secret
    {
        client = client.set_client_secret(ClientSecret::new(secret.expose().to_owned()));
        if grant.auth_method == TokenAuthMethod::ClientSecretPost {
            client = client.set_auth_type(AuthType::RequestBody);
        }
    }
    let send = oauth_http::OAuthHttp(http.clone());
    let token = RefreshToken::new(refresh_token.expose().to_owned());
    let response = client
        .exchange_refresh_token(&token)
        .add_extra_param("resource", grant.resource.clone())
        .request_async(&send)
        .await
        .map_err(|error| match error {
            RequestTokenError::ServerResponse(r)
                if *r.error() == BasicErrorResponseType::InvalidGrant =>
            {
                RefreshError::Rejected(
                    r.error_description()
                        .cloned()
                        .unwrap_or_else(|| "invalid_grant".into()),
                )
            }
            RequestTokenError::ServerResponse(r) => failed(format!(
                "{}{}",
                r.error(),
                r.error_description()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            )),
            RequestTokenError::Request(e) => failed(e.to_string()),
            RequestTokenError::Parse(e, _body) => {
                failed(format!("unreadable token response ({e})"))
            }
            RequestTokenError::Other(e) => failed(e),
        })?;
    let now = now_secs();
    let mut updated = grant.clone();
    updated.access_token = Secret::new(response.access_token().secret().clone());
    if let Some(rotated) = response.refresh_token() {
        updated.refresh_token = Some(Secret::new(rotated.secret().clone()));
    }
    updated.obtained_at = now;
    updated.expires_at = response
        .expires_in()
        .map(|d| now.saturating_add(d.as_secs()));
    if let Some(scopes) = response.scopes() {
        updated.scopes = scopes.iter().map(|s| s.to_string()).collect();
    }
    tracing::info!(
        rotated = response.refresh_token().is_some(),
        expires_in = ?response.expires_in().map(|d| d.as_secs()),
        "refreshed an OAuth access token"
    );
    Ok(updated)
}
