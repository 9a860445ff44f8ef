//! `FetchMcpResource`: fetching an `https` resource link without becoming
//! a server-side request forgery tool.
//!
//! - Only `https` URLs, without credentials in the URL.
//! - Every address is checked *after* DNS resolution, by the resolver the
//!   HTTP client connects through, so the connection goes to an address
//!   that was checked (no rebinding between check and connect). Loopback,
//!   private, link-local, shared (CGNAT), unspecified, multicast, reserved
//!   and cloud-metadata addresses are refused, including IPv4 addresses
//!   embedded in IPv6 (mapped, NAT64, 6to4).
//! - Redirects are followed by hand, at most [`FetchConfig::max_redirects`],
//!   and every hop is validated like the first URL.
//! - No proxy (a proxy would resolve names where we cannot check them),
//!   bounded time and body size.
//!
//! [`FetchConfig::test_only_allow_loopback`] is an explicit override for
//! tests that serve from `127.0.0.1`: it allows `http` and loopback
//! addresses only; every other refusal stays.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use extpool_core::Causes;
use reqwest::Url;
use reqwest::dns::{Name, Resolve, Resolving};
use serde::{Deserialize, Serialize};

pub use extpool_core::address::{BlockedAddress, check_address, check_host};

/// Limits and overrides of `FetchMcpResource`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchConfig {
    /// Largest body read, in bytes; the rest is cut (and marked).
    pub max_bytes: usize,
    /// Whole-request timeout, in milliseconds.
    pub timeout_ms: u64,
    /// Redirects followed before giving up.
    pub max_redirects: usize,
    /// TEST ONLY: allow `http` and loopback addresses, so that tests can
    /// serve from `127.0.0.1`. Private, link-local and metadata addresses
    /// stay refused. Never set this in production.
    pub test_only_allow_loopback: bool,
    /// TEST ONLY: fixed host → addresses answers, consulted before DNS and
    /// checked like DNS answers (lets tests name a host that resolves to a
    /// private address).
    pub test_only_hosts: BTreeMap<String, Vec<IpAddr>>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            max_bytes: 1 << 20,
            timeout_ms: 30_000,
            max_redirects: 5,
            test_only_allow_loopback: false,
            test_only_hosts: BTreeMap::new(),
        }
    }
}

/// A refusal raised inside the resolver; found again in the error chain.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{host} resolves to {address}, a {reason} address")]
struct ResolverRefusal {
    host: String,
    address: IpAddr,
    reason: BlockedAddress,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// Not a URL.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Not `https` (or credentials in the URL).
    #[error(
        "refused {url}: only https URLs without credentials can be fetched; use ReadMcpResource for other schemes"
    )]
    SchemeNotAllowed {
        /// The URL.
        url: String,
    },
    /// The host is, or resolves to, a refused address.
    #[error("refused {url}: {host} is a {reason} address ({address})")]
    AddressBlocked {
        /// The URL (the first URL, or the redirect target).
        url: String,
        /// The host as written.
        host: String,
        /// The offending address (unspecified for refused host names).
        address: IpAddr,
        /// Why it is refused.
        reason: BlockedAddress,
    },
    /// A redirect went to a refused URL.
    #[error("redirect from {from} refused: {error}")]
    RedirectRefused {
        /// The URL that redirected.
        from: String,
        /// Why the target was refused (shown in the message, so not a
        /// `source()`).
        error: Box<FetchError>,
    },
    /// More redirects than allowed.
    #[error("too many redirects (more than {max}) from {url}")]
    TooManyRedirects {
        /// The first URL.
        url: String,
        /// The limit.
        max: usize,
    },
    /// The server answered with an error status.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The request failed (connection, TLS, timeout).
    #[error("fetching {url} failed: {}", Causes(error))]
    Http {
        /// The URL.
        url: String,
        /// The client error (shown in the message with its causes, so not
        /// a `source()`).
        error: reqwest::Error,
    },
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
}

impl FetchError {
    /// True when the address policy refused the URL or a redirect target.
    pub fn is_blocked(&self) -> bool {
        match self {
            Self::AddressBlocked { .. } | Self::SchemeNotAllowed { .. } => true,
            Self::RedirectRefused { error, .. } => error.is_blocked(),
            _ => false,
        }
    }

    /// True when a redirect target was refused.
    pub fn is_redirect_refused(&self) -> bool {
        matches!(self, Self::RedirectRefused { .. })
    }

    /// The address class that was refused, when one was.
    pub fn blocked_reason(&self) -> Option<BlockedAddress> {
        match self {
            Self::AddressBlocked { reason, .. } => Some(*reason),
            Self::RedirectRefused { error, .. } => error.blocked_reason(),
            _ => None,
        }
    }
}

/// What was fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The final URL (after redirects).
    pub url: String,
    /// The `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The body, at most `max_bytes`.
    pub body: Vec<u8>,
    /// Bytes cut from the body, when it was larger than `max_bytes`.
    pub truncated_bytes: Option<u64>,
}

/// The resolver the client connects through: resolves, then checks.
#[derive(Debug)]
struct CheckingResolver {
    allow_loopback: bool,
    hosts: BTreeMap<String, Vec<IpAddr>>,
}

impl Resolve for CheckingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_ascii_lowercase();
        let fixed = self.hosts.get(&host).cloned();
        let allow_loopback = self.allow_loopback;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = match fixed {
                Some(ips) => ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect(),
                None => tokio::net::lookup_host((host.as_str(), 0)).await?.collect(),
            };
            for addr in &addrs {
                if let Some(reason) = check_address(addr.ip())
                    && !(allow_loopback && reason == BlockedAddress::Loopback)
                {
                    return Err(Box::new(ResolverRefusal {
                        host: host.clone(),
                        address: addr.ip(),
                        reason,
                    })
                        as Box<dyn std::error::Error + Send + Sync>);
                }
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Fetches `https` resources under the address policy.
#[derive(Debug)]
pub struct Fetcher {
    config: FetchConfig,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl Fetcher {
    /// A fetcher; the HTTP client is built on first use.
    pub fn new(config: FetchConfig) -> Self {
        Self {
            config,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, FetchError> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .no_proxy()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(Duration::from_millis(self.config.timeout_ms))
                    .dns_resolver(Arc::new(CheckingResolver {
                        allow_loopback: self.config.test_only_allow_loopback,
                        hosts: self
                            .config
                            .test_only_hosts
                            .iter()
                            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
                            .collect(),
                    }))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| FetchError::Client(e.clone()))
    }

    /// Checks a URL before any connection: scheme, credentials, IP literals
    /// and metadata host names. Host names are checked again after resolution.
    pub fn check_url(&self, url: &Url) -> Result<(), FetchError> {
        let allow_http = self.config.test_only_allow_loopback;
        let scheme_ok = url.scheme() == "https" || (allow_http && url.scheme() == "http");
        if !scheme_ok || !url.username().is_empty() || url.password().is_some() {
            return Err(FetchError::SchemeNotAllowed {
                url: url.to_string(),
            });
        }
        let blocked = |host: &str, address: IpAddr, reason| FetchError::AddressBlocked {
            url: url.to_string(),
            host: host.to_owned(),
            address,
            reason,
        };
        let Some(host) = url.host_str() else {
            return Err(FetchError::InvalidUrl {
                url: url.to_string(),
                reason: "no host".into(),
            });
        };
        // The URL parser has normalized IPv4 forms (0x7f000001, 2130706433).
        match check_host(host) {
            Some((_, BlockedAddress::Loopback)) if self.config.test_only_allow_loopback => Ok(()),
            Some((address, reason)) => Err(blocked(
                host.trim_end_matches('.').to_ascii_lowercase().as_str(),
                address,
                reason,
            )),
            None => Ok(()),
        }
    }

    /// Fetches `url`, following and re-validating redirects.
    pub async fn fetch(&self, url: &str) -> Result<Fetched, FetchError> {
        let first = Url::parse(url).map_err(|e| FetchError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        let client = self.client()?;
        let mut current = first.clone();
        let mut hops = 0usize;
        loop {
            let checked = self.check_url(&current);
            if let Err(e) = checked {
                return Err(redirected(e, hops, &first));
            }
            let response = match client.get(current.clone()).send().await {
                Ok(r) => r,
                Err(e) => return Err(redirected(classify(&current, e), hops, &first)),
            };
            let status = response.status();
            if status.is_redirection()
                && let Some(location) = response.headers().get(reqwest::header::LOCATION)
            {
                hops += 1;
                if hops > self.config.max_redirects {
                    return Err(FetchError::TooManyRedirects {
                        url: first.to_string(),
                        max: self.config.max_redirects,
                    });
                }
                let target = location
                    .to_str()
                    .ok()
                    .and_then(|l| current.join(l).ok())
                    .ok_or_else(|| FetchError::InvalidUrl {
                        url: format!("{location:?}"),
                        reason: "unusable Location header".into(),
                    })?;
                tracing::debug!(from = %current, to = %target, "FetchMcpResource: following redirect");
                current = target;
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Status {
                    url: current.to_string(),
                    status: status.as_u16(),
                });
            }
            return self.read_body(current, response).await;
        }
    }

    async fn read_body(
        &self,
        url: Url,
        mut response: reqwest::Response,
    ) -> Result<Fetched, FetchError> {
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let max = self.config.max_bytes;
        let mut body = Vec::new();
        let mut cut: u64 = 0;
        loop {
            let chunk = response.chunk().await.map_err(|error| FetchError::Http {
                url: url.to_string(),
                error,
            })?;
            let Some(chunk) = chunk else { break };
            let room = max.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            cut += chunk.len().saturating_sub(room) as u64;
            // Stop reading a body far past the limit; count what we saw.
            if cut > max as u64 {
                break;
            }
        }
        Ok(Fetched {
            url: url.to_string(),
            content_type,
            body,
            truncated_bytes: (cut > 0).then_some(cut),
        })
    }
}

/// Wraps an error on a redirect target so the caller sees which hop failed.
fn redirected(e: FetchError, hops: usize, first: &Url) -> FetchError {
    if hops == 0 {
        e
    } else {
        FetchError::RedirectRefused {
            from: first.to_string(),
            error: Box::new(e),
        }
    }
}

/// Turns a client error into an address refusal when the resolver refused.
fn classify(url: &Url, e: reqwest::Error) -> FetchError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<ResolverRefusal>() {
            return FetchError::AddressBlocked {
                url: url.to_string(),
                host: r.host.clone(),
                address: r.address,
                reason: r.reason,
            };
        }
        cause = c.source();
    }
    FetchError::Http {
        url: url.to_string(),
        error: e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_before_connecting() {
        let f = Fetcher::new(FetchConfig::default());
        let check = |u: &str| f.check_url(&Url::parse(u).unwrap());
        assert!(check("https://example.com/x").is_ok());
        for bad in [
            "http://example.com/",
            "ftp://example.com/",
            "file:///etc/passwd",
            "https://user:pw@example.com/",
        ] {
            assert!(
                matches!(check(bad), Err(FetchError::SchemeNotAllowed { .. })),
                "{bad}"
            );
        }
        for (bad, reason) in [
            ("https://127.0.0.1/", BlockedAddress::Loopback),
            ("https://[::1]/", BlockedAddress::Loopback),
            ("https://10.1.2.3/", BlockedAddress::Private),
            (
                "https://169.254.169.254/latest/meta-data/",
                BlockedAddress::Metadata,
            ),
            (
                "https://metadata.google.internal/computeMetadata/v1/",
                BlockedAddress::Metadata,
            ),
            ("https://[::ffff:a9fe:a9fe]/", BlockedAddress::Metadata),
            ("https://0x7f000001/", BlockedAddress::Loopback),
            ("https://2130706433/", BlockedAddress::Loopback),
        ] {
            let err = check(bad).unwrap_err();
            assert_eq!(err.blocked_reason(), Some(reason), "{bad}: {err}");
        }
        // The test override allows loopback and http, nothing else.
        let f = Fetcher::new(FetchConfig {
            test_only_allow_loopback: true,
            ..FetchConfig::default()
        });
        let check = |u: &str| f.check_url(&Url::parse(u).unwrap());
        assert!(check("http://127.0.0.1:8080/").is_ok());
        assert!(check("https://10.0.0.1/").is_err());
        assert!(check("http://169.254.169.254/").is_err());
    }
}
