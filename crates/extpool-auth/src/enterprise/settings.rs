//! `mcp_servers.<name>.oauth.enterprise_managed`: the configuration of one
//! server's enterprise-managed authorization, its checks, and its
//! resolution into an [`EnterpriseManaged`] (both token endpoints found).
//!
//! ```yaml
//! mcp_servers:
//!   crm:
//!     url: https://crm.example.com/mcp
//!     oauth:
//!       enterprise_managed:
//!         client_id: extpool-gateway        # the gateway's client at the server's authorization server
//!         client_secret: ${CRM_AS_SECRET}
//!         authorization_server: https://as.crm.example.com   # default: from the server's metadata
//!         scopes: [crm.read]                # asked of the enterprise IdP (default: none)
//! ```
//!
//! The enterprise IdP is the gateway's issuer (`gateway.auth.issuer`), and
//! the gateway's client there is `gateway.auth.client_id` /
//! `client_secret`: one client for every server.

use serde::{Deserialize, Serialize};

use super::{
    DiscoveryError, EnterpriseManaged, TokenEndpointClient, discover_authorization_server,
    discover_token_endpoint,
};
use crate::grant::TokenAuthMethod;
use crate::secret::Secret;

/// `oauth.enterprise_managed` of one server.
///
/// `Debug` never prints `client_secret`.
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnterpriseManagedSettings {
    /// The gateway's client id at the server's authorization server.
    pub client_id: String,
    /// Its secret (use `${VAR}` in files); the ID-JAG grant is for
    /// confidential clients.
    pub client_secret: String,
    /// How the client authenticates there: `client_secret_basic`
    /// (default) or `client_secret_post`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// The server's authorization server (its issuer); default: the first
    /// its protected-resource metadata names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_server: Option<String>,
    /// Scopes asked of the enterprise IdP for the ID-JAG (default: none;
    /// the IdP decides).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for EnterpriseManagedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseManagedSettings")
            .field("client_id", &self.client_id)
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("authorization_server", &self.authorization_server)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// What is wrong with an `oauth.enterprise_managed` section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// A required field is empty.
    #[error("`oauth.enterprise_managed.{0}` must not be empty")]
    Empty(&'static str),
    /// The authentication method is not one this flow uses.
    #[error(
        "`oauth.enterprise_managed.token_endpoint_auth_method` is {0:?}; expected client_secret_basic or client_secret_post"
    )]
    AuthMethod(String),
    /// `authorization_server` is no usable URL.
    #[error("`oauth.enterprise_managed.authorization_server` {0}")]
    AuthorizationServer(String),
    /// A scope is no scope token (RFC 6749 §3.3), or repeated.
    #[error(
        "`oauth.enterprise_managed.scopes` has {0:?}, which is no scope (one word of visible characters, each listed once)"
    )]
    Scope(String),
}

/// Checks `url` as an `authorization_server`: https, or http on loopback.
pub fn check_authorization_server(url: &str) -> Result<(), SettingsError> {
    crate::resource::discovery::check_fetchable(url, false)
        .map(|_| ())
        .map_err(SettingsError::AuthorizationServer)
}

impl EnterpriseManagedSettings {
    /// Checks the fields (a server whose section fails is not started, and
    /// the message names the field). `authorization_server` is checked by
    /// [`check_authorization_server`] once its `${VAR}` references are
    /// expanded, and again when it is fetched.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.client_id.trim().is_empty() {
            return Err(SettingsError::Empty("client_id"));
        }
        if self.client_secret.trim().is_empty() {
            return Err(SettingsError::Empty("client_secret"));
        }
        self.auth_method()?;
        let mut seen = std::collections::HashSet::new();
        for scope in &self.scopes {
            let token = !scope.is_empty()
                && scope
                    .bytes()
                    .all(|b| matches!(b, b'!' | b'#'..=b'[' | b']'..=b'~'));
            if !token || !seen.insert(scope) {
                return Err(SettingsError::Scope(scope.clone()));
            }
        }
        Ok(())
    }

    /// The client's authentication method at the authorization server.
    pub fn auth_method(&self) -> Result<TokenAuthMethod, SettingsError> {
        match self.token_endpoint_auth_method.as_deref() {
            None | Some("client_secret_basic") => Ok(TokenAuthMethod::ClientSecretBasic),
            Some("client_secret_post") => Ok(TokenAuthMethod::ClientSecretPost),
            Some(other) => Err(SettingsError::AuthMethod(other.to_owned())),
        }
    }

    /// Resolves these settings for the server at `resource` with the
    /// enterprise IdP `idp` (the gateway's issuer, its token endpoint
    /// already known, and the gateway's client there): the authorization
    /// server found (configured, else from the server's metadata) and its
    /// token endpoint, which must list the ID-JAG grant profile.
    /// `insecure_http` allows plain http off loopback.
    pub async fn resolve(
        &self,
        http: &reqwest::Client,
        idp: TokenEndpointClient,
        resource: &str,
        insecure_http: bool,
    ) -> Result<EnterpriseManaged, DiscoveryError> {
        let issuer = match &self.authorization_server {
            Some(issuer) => issuer.clone(),
            None => discover_authorization_server(http, resource, insecure_http).await?,
        };
        let (token_endpoint, id_jag) =
            discover_token_endpoint(http, &issuer, insecure_http).await?;
        if !id_jag {
            return Err(DiscoveryError::NoIdJag { issuer });
        }
        Ok(EnterpriseManaged {
            idp,
            resource_as: TokenEndpointClient {
                issuer,
                token_endpoint,
                client_id: self.client_id.clone(),
                client_secret: Secret::new(self.client_secret.clone()),
                auth_method: self
                    .auth_method()
                    .unwrap_or(TokenAuthMethod::ClientSecretBasic),
            },
            resource: resource.to_owned(),
            scopes: self.scopes.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> EnterpriseManagedSettings {
        serde_json::from_str(json).expect("parses")
    }

    #[test]
    fn bad_sections_are_named_by_field() {
        let ok = parse(r#"{"client_id": "gw", "client_secret": "s", "scopes": ["crm.read"]}"#);
        assert_eq!(ok.validate(), Ok(()));
        let cases = [
            (
                r#"{"client_id": " ", "client_secret": "s"}"#,
                "client_id` must not be empty",
            ),
            (
                r#"{"client_id": "gw", "client_secret": ""}"#,
                "client_secret` must not be empty",
            ),
            (
                r#"{"client_id": "gw", "client_secret": "s", "token_endpoint_auth_method": "none"}"#,
                "token_endpoint_auth_method` is \"none\"",
            ),
            (
                r#"{"client_id": "gw", "client_secret": "s", "scopes": ["a b"]}"#,
                "scopes` has \"a b\"",
            ),
            (
                r#"{"client_id": "gw", "client_secret": "s", "scopes": ["a", "a"]}"#,
                "scopes` has \"a\"",
            ),
        ];
        for (json, expected) in cases {
            let err = parse(json).validate().unwrap_err().to_string();
            assert!(err.contains(expected), "{json}: {err}");
        }
        assert!(
            serde_json::from_str::<EnterpriseManagedSettings>(r#"{"client_id": "gw"}"#).is_err(),
            "client_secret is required"
        );
        assert!(
            serde_json::from_str::<EnterpriseManagedSettings>(
                r#"{"client_id": "gw", "client_secret": "s", "audience": "x"}"#
            )
            .is_err()
        );
    }

    #[test]
    fn an_authorization_server_is_https_or_loopback() {
        assert_eq!(check_authorization_server("https://as.example"), Ok(()));
        assert_eq!(check_authorization_server("http://127.0.0.1:8080"), Ok(()));
        let err = check_authorization_server("http://as.example").unwrap_err();
        assert!(
            err.to_string()
                .contains("authorization_server` is plain http:// off loopback"),
            "{err}"
        );
    }

    #[test]
    fn debug_hides_the_secret() {
        let s = parse(r#"{"client_id": "gw", "client_secret": "s3cr3t-value"}"#);
        assert!(!format!("{s:?}").contains("s3cr3t-value"));
    }
}
