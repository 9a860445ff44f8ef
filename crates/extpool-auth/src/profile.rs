//! Operator profiles: `mcp_servers.<name>.oauth` in the configuration.
//!
//! ```yaml
//! mcp_servers:
//!   github:
//!     url: https://mcp.example.com/github
//!     oauth:
//!       client_id: extpool-cli            # pre-registered client (optional)
//!       client_secret: ${GITHUB_SECRET}   # confidential clients only
//!       client_metadata_url: https://example.com/client.json   # CIMD (optional)
//!       scopes: [repo, read:org]
//!       store: /var/lib/extpool/credentials   # credential store directory
//!   linear:
//!     url: https://mcp.example.com/linear
//!     oauth:
//!       client: {mode: dcr, dcr: {}}      # direct DCR: public client, openid only
//!   exa:
//!     url: https://mcp.example.com/exa
//!     oauth:
//!       credentials_env: EXA_OAUTH_GRANT  # environment-backed, read-only
//!   notion:
//!     url: https://mcp.example.com/notion
//!     oauth:
//!       per_user: true                    # each caller of a gateway logs in for itself
//!   jira:
//!     url: https://mcp.example.com/jira
//!     oauth:
//!       token_exchange: {audience: jira, scopes: [read]}   # RFC 8693 at the gateway's issuer
//!   wiki:
//!     url: https://wiki.example.com/mcp
//!     oauth:
//!       passthrough: {}                   # the caller's own token, when its `aud` names this server
//!   crm:
//!     url: https://crm.example.com/mcp
//!     oauth:
//!       enterprise_managed: {client_id: extpool-gateway, client_secret: ${CRM_AS_SECRET}}   # ID-JAG
//! ```
//!
//! `token_exchange`, `enterprise_managed` and `passthrough` are delegated
//! credentials: each caller's own, made from the access token it presented
//! to the gateway (see [`crate::delegated`] and [`crate::enterprise`]);
//! like `per_user`, every principal gets its own profile and connection.
//!
//! A `per_user` profile's grants are each caller's own: the gateway gives
//! every principal its own profile ([`OAuthProfile::for_principal`]), whose
//! grant is a record of its own in the store ([`OAuthProfile::record_name`])
//! and whose connection is its own — never another caller's credential.
//!
//! Without `client_id`, a client is found the way the MCP specification
//! orders it: a client ID metadata document when the authorization server
//! supports one and `client_metadata_url` is set, else dynamic client
//! registration (kept with the grant and reused by the next login).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::enterprise::EnterpriseManagedSettings;

/// How one MCP server is authorized with OAuth.
///
/// `Debug` never prints `client_secret`.
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthProfile {
    /// A client id registered with the authorization server out of band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its secret, for confidential clients (use `${VAR}` in files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// HTTPS URL of a client ID metadata document (used when the
    /// authorization server advertises support and no `client_id` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// Client registration mode (`{mode: dcr, dcr: {}}` for direct DCR).
    #[serde(default, skip_serializing_if = "ClientSettings::is_default")]
    pub client: ClientSettings,
    /// Scopes to request (default: what the server's metadata asks for).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Directory of the encrypted credential store (default: the user's data
    /// directory, `extpool/credentials`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<PathBuf>,
    /// Environment variable holding the grant (JSON, as `mcp login --export`
    /// would write it): the profile is then read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_env: Option<String>,
    /// Who the grant is for (default: the local user); part of a direct-DCR
    /// registration's identity, and of a `per_user` grant's record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Each caller of a gateway logs in for itself: its calls use its own
    /// grant and connection (one-person use: the local user's, as without).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_user: bool,
    /// Each caller's access token exchanged (RFC 8693) at the gateway's
    /// issuer for one for this server (`resource` = its URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_exchange: Option<TokenExchangeSettings>,
    /// The caller's own access token sent on, only when its audience
    /// (`aud`) names this server (its URL, or `audience`), never the
    /// gateway's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passthrough: Option<PassthroughSettings>,
    /// Enterprise-managed authorization (ID-JAG): each caller's access
    /// token exchanged at the gateway's issuer (the enterprise IdP) for an
    /// ID-JAG, redeemed at this server's authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enterprise_managed: Option<EnterpriseManagedSettings>,
}

/// `oauth.token_exchange`: how a caller's token is exchanged.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct TokenExchangeSettings {
    /// `audience` asked for (a logical name the issuer knows the server
    /// by), besides `resource` = the server's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// `scope` asked for (default: none; the issuer decides).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// `oauth.passthrough`: when a caller's own token may go on.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct PassthroughSettings {
    /// The audience the caller's token must name for this server (default:
    /// the server's URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

impl std::fmt::Debug for OAuthProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthProfile")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client", &self.client)
            .field("scopes", &self.scopes)
            .field("store", &self.store)
            .field("credentials_env", &self.credentials_env)
            .field("principal", &self.principal)
            .field("per_user", &self.per_user)
            .field("token_exchange", &self.token_exchange)
            .field("passthrough", &self.passthrough)
            .field("enterprise_managed", &self.enterprise_managed)
            .finish()
    }
}

/// `oauth.client`: how the client is registered.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct ClientSettings {
    /// The registration mode.
    #[serde(default)]
    pub mode: ClientMode,
    /// Options of direct DCR (`mode: dcr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dcr: Option<DcrSettings>,
}

impl ClientSettings {
    /// True for the default (automatic) settings.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Client registration modes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ClientMode {
    /// Pre-registered client, else client ID metadata document, else DCR.
    #[default]
    Auto,
    /// Direct DCR: a public client with explicit consent that requests only
    /// `openid`, keeps its registration apart from a generation-bound access
    /// grant, and never requests or uses refresh.
    Dcr,
}

/// `oauth.client.dcr`: options of direct DCR.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct DcrSettings {
    /// `client_name` sent at registration (default `extpool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
}

/// A profile that contradicts itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// `client_secret` without `client_id`.
    #[error("`oauth.client_secret` needs `oauth.client_id`")]
    SecretWithoutId,
    /// Direct DCR registers its own client.
    #[error("`oauth.client.mode: dcr` registers its own public client; remove `{field}`")]
    DcrWithClient {
        /// The conflicting field.
        field: &'static str,
    },
    /// `dcr:` options under another mode.
    #[error("`oauth.client.dcr` is only used with `oauth.client.mode: dcr`")]
    DcrOptionsWithoutMode,
    /// Direct DCR needs a mutable local store.
    #[error(
        "`oauth.client.mode: dcr` needs a mutable local credential store; remove `credentials_env`"
    )]
    DcrFromEnvironment,
    /// A CIMD URL must be HTTPS with a path.
    #[error("`oauth.client_metadata_url` must be an https:// URL with a path, got {0:?}")]
    BadMetadataUrl(String),
    /// Environment variable names are `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("`oauth.credentials_env` {0:?} is not an environment variable name")]
    BadEnvName(String),
    /// A per-user grant is each caller's login: no shared source of it.
    #[error(
        "`oauth.per_user` grants are each caller's own login; remove `{field}`, which gives one grant to everyone"
    )]
    PerUserShared {
        /// The conflicting field.
        field: &'static str,
    },
    /// A delegated credential is made from each caller's token: nothing
    /// else gives this server a grant.
    #[error("`oauth.{mode}` makes each caller's credential from its own token; remove `{field}`")]
    Delegated {
        /// `token_exchange`, `enterprise_managed` or `passthrough`.
        mode: &'static str,
        /// The conflicting field.
        field: &'static str,
    },
    /// `oauth.enterprise_managed` is unusable.
    #[error(transparent)]
    EnterpriseManaged(crate::enterprise::SettingsError),
}

/// A short name of a principal's owner key that holds nothing of it: 16
/// hex digits of its SHA-256. Where a principal names a file or a view.
pub fn principal_digest(owner: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(owner.as_bytes()))[..16].to_owned()
}

impl OAuthProfile {
    /// The name of this profile's records for `server` in the credential
    /// store: the server's, or for a `per_user` profile given a principal
    /// the server's and a digest of the principal (`notion--u1f2e…`: a
    /// server name holds no `-`, so no two names meet).
    pub fn record_name(&self, server: &str) -> String {
        match (&self.principal, self.is_each_callers()) {
            (Some(principal), true) => format!("{server}--u{}", principal_digest(principal)),
            _ => server.to_owned(),
        }
    }

    /// This `per_user` profile for the principal whose owner key is
    /// `owner` (itself when not per user).
    pub fn for_principal(&self, owner: &str) -> OAuthProfile {
        if !self.is_each_callers() {
            return self.clone();
        }
        OAuthProfile {
            principal: Some(owner.to_owned()),
            ..self.clone()
        }
    }

    /// Whether each caller of a gateway has its own credential for the
    /// server: a per-user grant, or a delegated credential.
    pub fn is_each_callers(&self) -> bool {
        self.per_user || self.delegation().is_some()
    }

    /// `token_exchange`, `enterprise_managed` or `passthrough`, when the
    /// credential is made from each caller's token.
    pub fn delegation(&self) -> Option<&'static str> {
        if self.token_exchange.is_some() {
            Some("token_exchange")
        } else if self.enterprise_managed.is_some() {
            Some("enterprise_managed")
        } else if self.passthrough.is_some() {
            Some("passthrough")
        } else {
            None
        }
    }

    /// A delegated profile names nothing else that gives a grant.
    fn validate_delegation(&self) -> Result<(), ProfileError> {
        let Some(mode) = self.delegation() else {
            return Ok(());
        };
        let conflicts = [
            (
                mode == "token_exchange" && self.enterprise_managed.is_some(),
                "enterprise_managed",
            ),
            (
                mode != "passthrough" && self.passthrough.is_some(),
                "passthrough",
            ),
            (self.per_user, "per_user"),
            (self.client_id.is_some(), "client_id"),
            (self.client_secret.is_some(), "client_secret"),
            (self.client_metadata_url.is_some(), "client_metadata_url"),
            (!self.client.is_default(), "client"),
            (!self.scopes.is_empty(), "scopes"),
            (self.credentials_env.is_some(), "credentials_env"),
        ];
        if let Some((_, field)) = conflicts.iter().find(|(set, _)| *set) {
            return Err(ProfileError::Delegated { mode, field });
        }
        match &self.enterprise_managed {
            Some(ema) => ema.validate().map_err(ProfileError::EnterpriseManaged),
            None => Ok(()),
        }
    }

    /// Checks the fields against each other.
    pub fn validate(&self) -> Result<(), ProfileError> {
        self.validate_delegation()?;
        if self.per_user {
            if self.credentials_env.is_some() {
                return Err(ProfileError::PerUserShared {
                    field: "credentials_env",
                });
            }
            if self.is_direct_dcr() {
                return Err(ProfileError::PerUserShared {
                    field: "client.mode: dcr",
                });
            }
        }
        if self.client_secret.is_some() && self.client_id.is_none() {
            return Err(ProfileError::SecretWithoutId);
        }
        match self.client.mode {
            ClientMode::Dcr => {
                for (set, field) in [
                    (self.client_id.is_some(), "client_id"),
                    (self.client_metadata_url.is_some(), "client_metadata_url"),
                ] {
                    if set {
                        return Err(ProfileError::DcrWithClient { field });
                    }
                }
                if self.credentials_env.is_some() {
                    return Err(ProfileError::DcrFromEnvironment);
                }
            }
            ClientMode::Auto => {
                if self.client.dcr.is_some() {
                    return Err(ProfileError::DcrOptionsWithoutMode);
                }
            }
        }
        if let Some(url) = &self.client_metadata_url {
            let ok = url::Url::parse(url)
                .is_ok_and(|u| u.scheme() == "https" && u.host().is_some() && u.path() != "/");
            if !ok {
                return Err(ProfileError::BadMetadataUrl(url.clone()));
            }
        }
        if let Some(var) = &self.credentials_env {
            let mut chars = var.chars();
            let ok = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(ProfileError::BadEnvName(var.clone()));
            }
        }
        Ok(())
    }

    /// True for direct DCR.
    pub fn is_direct_dcr(&self) -> bool {
        self.client.mode == ClientMode::Dcr
    }

    /// True when the grant comes from the environment (read-only).
    pub fn is_environment_backed(&self) -> bool {
        self.credentials_env.is_some()
    }

    /// The principal the grant is for: the configured one, else the local user.
    pub fn principal(&self) -> String {
        if let Some(p) = &self.principal {
            return p.clone();
        }
        std::env::var("USER")
            .or_else(|_| std::env::var("USERNAME"))
            .unwrap_or_else(|_| "local".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> OAuthProfile {
        serde_json::from_value(serde_yaml_json(yaml)).expect("profile parses")
    }

    // A tiny YAML subset is enough here: the tests use JSON.
    fn serde_yaml_json(json: &str) -> serde_json::Value {
        serde_json::from_str(json).expect("json")
    }

    #[test]
    fn dcr_mode_parses_and_validates() {
        let p = parse(r#"{"client": {"mode": "dcr", "dcr": {}}}"#);
        assert!(p.is_direct_dcr());
        assert_eq!(p.validate(), Ok(()));
        let p = parse(r#"{"client": {"mode": "dcr"}, "client_id": "x"}"#);
        assert_eq!(
            p.validate(),
            Err(ProfileError::DcrWithClient { field: "client_id" })
        );
        let p = parse(r#"{"client": {"dcr": {}}}"#);
        assert_eq!(p.validate(), Err(ProfileError::DcrOptionsWithoutMode));
    }

    #[test]
    fn unknown_fields_and_bad_values_are_refused() {
        assert!(serde_json::from_str::<OAuthProfile>(r#"{"clientid": "x"}"#).is_err());
        assert!(serde_json::from_str::<OAuthProfile>(r#"{"client": {"mode": "magic"}}"#).is_err());
        let p = parse(r#"{"client_secret": "s"}"#);
        assert_eq!(p.validate(), Err(ProfileError::SecretWithoutId));
        let p = parse(r#"{"client_metadata_url": "http://x/c.json"}"#);
        assert!(matches!(p.validate(), Err(ProfileError::BadMetadataUrl(_))));
        let p = parse(r#"{"credentials_env": "A-B"}"#);
        assert!(matches!(p.validate(), Err(ProfileError::BadEnvName(_))));
    }

    #[test]
    fn delegated_profiles_take_nothing_that_gives_a_grant() {
        let p = parse(r#"{"token_exchange": {"audience": "jira", "scopes": ["read"]}}"#);
        assert_eq!(p.validate(), Ok(()));
        assert!(p.is_each_callers());
        assert_eq!(
            p.for_principal("alice").record_name("jira"),
            format!("jira--u{}", principal_digest("alice"))
        );
        let p = parse(r#"{"passthrough": {}}"#);
        assert_eq!(
            (p.validate(), p.delegation()),
            (Ok(()), Some("passthrough"))
        );
        let p = parse(r#"{"token_exchange": {}, "client_id": "x"}"#);
        assert_eq!(
            p.validate(),
            Err(ProfileError::Delegated {
                mode: "token_exchange",
                field: "client_id"
            })
        );
        let p = parse(r#"{"token_exchange": {}, "passthrough": {}}"#);
        assert_eq!(
            p.validate(),
            Err(ProfileError::Delegated {
                mode: "token_exchange",
                field: "passthrough"
            })
        );
        assert!(
            serde_json::from_str::<OAuthProfile>(r#"{"token_exchange": {"audiance": "x"}}"#)
                .is_err()
        );
        let ema = r#""enterprise_managed": {"client_id": "gw", "client_secret": "s"}"#;
        let p = parse(&format!("{{{ema}}}"));
        assert_eq!(
            (p.validate(), p.delegation()),
            (Ok(()), Some("enterprise_managed"))
        );
        assert!(p.is_each_callers());
        let p = parse(&format!(r#"{{{ema}, "passthrough": {{}}}}"#));
        assert_eq!(
            p.validate(),
            Err(ProfileError::Delegated {
                mode: "enterprise_managed",
                field: "passthrough"
            })
        );
        let p = parse(&format!(r#"{{{ema}, "token_exchange": {{}}}}"#));
        assert_eq!(
            p.validate(),
            Err(ProfileError::Delegated {
                mode: "token_exchange",
                field: "enterprise_managed"
            })
        );
        let p = parse(r#"{"enterprise_managed": {"client_id": "", "client_secret": "s"}}"#);
        assert_eq!(
            p.validate().unwrap_err().to_string(),
            "`oauth.enterprise_managed.client_id` must not be empty"
        );
    }

    #[test]
    fn debug_hides_the_client_secret() {
        let p = parse(r#"{"client_id": "id", "client_secret": "s3cr3t"}"#);
        let dbg = format!("{p:?}");
        assert!(dbg.contains("id") && !dbg.contains("s3cr3t"), "{dbg}");
    }
}
