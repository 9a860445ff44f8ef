//! Where the two token requests of enterprise-managed authorization go:
//! the token endpoint of an issuer (OpenID Connect discovery, RFC 8414 as
//! the fallback), and the authorization server of an MCP server (its RFC
//! 9728 protected-resource metadata). Each document is bounded in size and
//! time, fetched over https (http only on loopback), and must name the
//! issuer exactly as asked.

use serde::Deserialize;

use crate::resource::discovery::{check_fetchable, get_json, metadata_urls};

/// Why a server of the flow could not be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// A URL is unusable (not http(s), plain http off loopback).
    #[error("{url:?} {why}")]
    Url {
        /// As given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// No metadata document could be read.
    #[error("the metadata of {url} could not be read: {why}")]
    Unreadable {
        /// The issuer or resource.
        url: String,
        /// What each request said.
        why: String,
    },
    /// The metadata names another issuer.
    #[error("the metadata of {issuer} names the issuer {found:?}")]
    IssuerMismatch {
        /// As asked.
        issuer: String,
        /// As the metadata writes it.
        found: String,
    },
    /// The authorization server does not take ID-JAGs.
    #[error(
        "the authorization server {issuer} does not list the ID-JAG grant profile (authorization_grant_profiles_supported)"
    )]
    NoIdJag {
        /// The authorization server.
        issuer: String,
    },
}

/// What this flow reads of an issuer's metadata.
#[derive(Deserialize)]
struct AsMetadata {
    issuer: String,
    token_endpoint: Option<String>,
    #[serde(default)]
    authorization_grant_profiles_supported: Vec<String>,
}

/// The token endpoint of `issuer`, and whether it lists the ID-JAG grant
/// profile. `insecure_http` allows plain http off loopback (tests, lab
/// setups).
pub async fn discover_token_endpoint(
    http: &reqwest::Client,
    issuer: &str,
    insecure_http: bool,
) -> Result<(String, bool), DiscoveryError> {
    let parsed = check_fetchable(issuer, insecure_http).map_err(|why| DiscoveryError::Url {
        url: issuer.to_owned(),
        why,
    })?;
    let (oidc_url, rfc8414_url) = metadata_urls(&parsed);
    let metadata = match get_json::<AsMetadata>(http, &oidc_url).await {
        Ok(m) => m,
        Err(oidc) => get_json::<AsMetadata>(http, &rfc8414_url)
            .await
            .map_err(|rfc8414| DiscoveryError::Unreadable {
                url: issuer.to_owned(),
                why: format!("{oidc} (OpenID Connect discovery); {rfc8414} (RFC 8414)"),
            })?,
    };
    if metadata.issuer != issuer {
        return Err(DiscoveryError::IssuerMismatch {
            issuer: issuer.to_owned(),
            found: metadata.issuer,
        });
    }
    let endpoint = metadata
        .token_endpoint
        .ok_or_else(|| DiscoveryError::Unreadable {
            url: issuer.to_owned(),
            why: "it names no token_endpoint".into(),
        })?;
    check_fetchable(&endpoint, insecure_http).map_err(|why| DiscoveryError::Url {
        url: endpoint.clone(),
        why,
    })?;
    let id_jag = metadata
        .authorization_grant_profiles_supported
        .iter()
        .any(|p| p == super::ID_JAG_GRANT_PROFILE);
    Ok((endpoint, id_jag))
}

/// What this flow reads of a protected resource's metadata.
#[derive(Deserialize)]
struct ResourceMetadata {
    #[serde(default)]
    authorization_servers: Vec<String>,
}

/// The (first) authorization server that MCP server `resource` names in
/// its protected-resource metadata (RFC 9728: at
/// `/.well-known/oauth-protected-resource` with the resource's path
/// appended, then at the root).
pub async fn discover_authorization_server(
    http: &reqwest::Client,
    resource: &str,
    insecure_http: bool,
) -> Result<String, DiscoveryError> {
    let parsed = check_fetchable(resource, insecure_http).map_err(|why| DiscoveryError::Url {
        url: resource.to_owned(),
        why,
    })?;
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    let mut tried = Vec::new();
    for url in [
        format!("{origin}/.well-known/oauth-protected-resource{path}"),
        format!("{origin}/.well-known/oauth-protected-resource"),
    ] {
        match get_json::<ResourceMetadata>(http, &url).await {
            Ok(m) => match m.authorization_servers.into_iter().next() {
                Some(server) => return Ok(server),
                None => tried.push(format!("{url} names no authorization server")),
            },
            Err(e) => tried.push(e),
        }
        if path.is_empty() {
            break;
        }
    }
    Err(DiscoveryError::Unreadable {
        url: resource.to_owned(),
        why: tried.join("; "),
    })
}
