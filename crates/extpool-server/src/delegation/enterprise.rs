//! Enterprise-managed authorization (ID-JAG) as a delegated credential
//! (`oauth.enterprise_managed`, see [`extpool_auth::enterprise`]): the
//! caller's validated token is exchanged at the gateway's issuer — the
//! enterprise IdP — for an ID-JAG (the gateway authenticating as its
//! client there, `gateway.auth.client_id`), which the server's
//! authorization server redeems for the caller's access token. The
//! [`super::Delegation`] keeps it per (principal, server) like an
//! exchanged token.
//!
//! Where the server's authorization server and both token endpoints are
//! is found once per server and kept; a refusal at the authorization
//! server makes the next call find it again (it may have moved).

use extpool_auth::delegated::DelegatedToken;
use extpool_auth::enterprise::{EnterpriseManagedSettings, Stage, TokenEndpointClient};
use extpool_auth::grant::TokenAuthMethod;

use super::{CallerToken, Delegation};

impl Delegation {
    /// The caller's access token at `server` (at `url`) made from `token`
    /// by enterprise-managed authorization; `Err` is what the caller reads
    /// (the server, the stage and its `error` code; no token).
    pub(super) async fn enterprise(
        &self,
        server: &str,
        url: &str,
        settings: &EnterpriseManagedSettings,
        token: &CallerToken,
    ) -> Result<DelegatedToken, String> {
        let (options, idp_issuer, endpoint) =
            self.issuer_client(server, "enterprise-managed authorization")?;
        let idp = TokenEndpointClient {
            issuer: idp_issuer.to_owned(),
            token_endpoint: endpoint.to_owned(),
            client_id: options.client_id.clone(),
            client_secret: options.client_secret.clone(),
            auth_method: TokenAuthMethod::ClientSecretBasic,
        };
        let client = &self.enterprise;
        let insecure = self
            .issuer
            .as_ref()
            .is_some_and(|i| i.settings().insecure_http);
        let config = client
            .resolve(server, url, settings, idp, insecure)
            .await
            .map_err(|e| {
                format!("MCP server {server}: its authorization server could not be found: {e}; the call was not sent")
            })?;
        let issued = client.exchange(&config, &token.0).await.map_err(|e| {
            tracing::info!(server, stage = %e.stage(), error = %e.code(), "an enterprise-managed authorization failed");
            if e.stage() == Stage::AuthorizationServer {
                client.forget(server, url);
            }
            format!(
                "MCP server {server}: enterprise-managed authorization failed: {} ({e}); the call was not sent",
                e.code()
            )
        })?;
        Ok(DelegatedToken {
            token: issued.access_token,
            expires_at: issued.expires_at,
            act: None,
        })
    }
}
