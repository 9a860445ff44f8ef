//! An issuer's metadata: OpenID Connect discovery first, RFC 8414 as the
//! fallback, each answer bounded; the metadata must name the issuer
//! exactly as configured (else its tokens would never match).

use serde::Deserialize;

use super::verify::TokenError;
use crate::oauth_http::read_bounded;

/// What the gateway needs of an issuer's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssuerMetadata {
    /// The issuer, as its tokens write `iss`.
    pub issuer: String,
    /// Where its signing keys are published.
    pub jwks_uri: String,
    /// Where a client sends its user to log in (shown to operators).
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where tokens are issued (the gateway's token exchanges go there).
    #[serde(default)]
    pub token_endpoint: Option<String>,
}

/// Why an issuer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The issuer is not an http(s) URL, or plain http off loopback.
    #[error("the issuer {issuer:?} {why}")]
    Issuer {
        /// As configured.
        issuer: String,
        /// What is wrong with it.
        why: String,
    },
    /// Neither metadata document could be read.
    #[error(
        "the issuer {issuer}'s metadata could not be read: {oidc} (OpenID Connect discovery); {rfc8414} (RFC 8414)"
    )]
    Unreadable {
        /// As configured.
        issuer: String,
        /// What the OpenID Connect document's request said.
        oidc: String,
        /// What the RFC 8414 document's request said.
        rfc8414: String,
    },
    /// The metadata names another issuer.
    #[error(
        "the metadata at {url} names the issuer {found:?}, not {issuer:?}; configure the issuer as its tokens write it (--auth-issuer {found})"
    )]
    IssuerMismatch {
        /// As configured.
        issuer: String,
        /// As the metadata writes it.
        found: String,
        /// The document read.
        url: String,
    },
    /// The JWKS could not be fetched or read.
    #[error("the issuer {issuer}'s keys could not be read: {error}")]
    Keys {
        /// As configured.
        issuer: String,
        /// Why (shown in the message, so not a `source()`).
        error: Box<TokenError>,
    },
}

/// Checks `url` is `https://`, or `http://` on loopback (or anywhere when
/// `insecure_http`): keys fetched over plain HTTP could be replaced.
pub(crate) fn check_fetchable(url: &str, insecure_http: bool) -> Result<url::Url, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("is not a URL: {e}"))?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http"
            if insecure_http
                || parsed
                    .host_str()
                    .is_some_and(extpool_core::web::is_loopback_host) =>
        {
            Ok(parsed)
        }
        "http" => Err(
            "is plain http:// off loopback; keys read over it could be replaced on the way (use https://)"
                .into(),
        ),
        other => Err(format!("has the scheme {other:?}; expected https://")),
    }
}

/// The two places an issuer's metadata may be, in the order tried.
pub(crate) fn metadata_urls(issuer: &url::Url) -> (String, String) {
    let trimmed = issuer.as_str().trim_end_matches('/');
    let oidc = format!("{trimmed}/.well-known/openid-configuration");
    let path = issuer.path().trim_end_matches('/');
    let origin = issuer.origin().ascii_serialization();
    let rfc8414 = format!("{origin}/.well-known/oauth-authorization-server{path}");
    (oidc, rfc8414)
}

/// GETs `url` as JSON within the body bound.
pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<T, String> {
    let response = http
        .get(url)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("{}", extpool_core::Causes(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered HTTP {}", status.as_u16()));
    }
    let body = read_bounded(response).await.map_err(|e| e.to_string())?;
    serde_json::from_slice(&body).map_err(|e| format!("{url} is not the expected JSON: {e}"))
}

/// Reads `issuer`'s metadata.
pub(crate) async fn discover(
    http: &reqwest::Client,
    issuer: &str,
    insecure_http: bool,
) -> Result<IssuerMetadata, DiscoveryError> {
    let parsed = check_fetchable(issuer, insecure_http).map_err(|why| DiscoveryError::Issuer {
        issuer: issuer.to_owned(),
        why,
    })?;
    let (oidc_url, rfc8414_url) = metadata_urls(&parsed);
    let (metadata, url) = match get_json::<IssuerMetadata>(http, &oidc_url).await {
        Ok(m) => (m, oidc_url),
        Err(oidc) => match get_json::<IssuerMetadata>(http, &rfc8414_url).await {
            Ok(m) => (m, rfc8414_url),
            Err(rfc8414) => {
                return Err(DiscoveryError::Unreadable {
                    issuer: issuer.to_owned(),
                    oidc,
                    rfc8414,
                });
            }
        },
    };
    if metadata.issuer != issuer {
        return Err(DiscoveryError::IssuerMismatch {
            issuer: issuer.to_owned(),
            found: metadata.issuer,
            url,
        });
    }
    check_fetchable(&metadata.jwks_uri, insecure_http).map_err(|why| DiscoveryError::Keys {
        issuer: issuer.to_owned(),
        error: Box::new(TokenError::Keys(format!(
            "its jwks_uri {:?} {why}",
            metadata.jwks_uri
        ))),
    })?;
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_specifications_put_it() {
        let at = |s: &str| metadata_urls(&url::Url::parse(s).unwrap());
        assert_eq!(
            at("https://idp.example"),
            (
                "https://idp.example/.well-known/openid-configuration".into(),
                "https://idp.example/.well-known/oauth-authorization-server".into()
            )
        );
        assert_eq!(
            at("https://idp.example/realms/eng/"),
            (
                "https://idp.example/realms/eng/.well-known/openid-configuration".into(),
                "https://idp.example/.well-known/oauth-authorization-server/realms/eng".into()
            )
        );
    }

    #[test]
    fn keys_come_over_https_or_from_this_machine() {
        assert!(check_fetchable("https://idp.example", false).is_ok());
        assert!(check_fetchable("http://127.0.0.1:9", false).is_ok());
        assert!(check_fetchable("http://localhost:9/x", false).is_ok());
        let e = check_fetchable("http://idp.example", false).unwrap_err();
        assert!(e.contains("plain http"), "{e}");
        assert!(check_fetchable("http://idp.example", true).is_ok());
        assert!(check_fetchable("file:///etc/passwd", true).is_err());
        assert!(check_fetchable("idp.example", false).is_err());
    }
}
