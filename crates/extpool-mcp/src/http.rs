//! Streamable HTTP servers: URL and token rules, headers, the shared
//! `reqwest` client.
//!
//! - The bearer token comes from `MCP_<NAME>_TOKEN` and lives in a
//!   [`BearerToken`], which never prints its value.
//! - A token-bearing request (env token or a configured `Authorization`
//!   header) must go over HTTPS, except to a loopback host; `insecure_http`
//!   lifts that for one named server.
//! - One `reqwest::Client` serves every HTTP server of a pool (shared DNS,
//!   TLS and connection state), with `TCP_NODELAY` on extpool's side. Idle
//!   connections are kept for reuse by default (rmcp's own client opens
//!   one per request): a call then costs no TCP or TLS handshake. A
//!   server that leaves Nagle's algorithm on answers a reused connection
//!   only after extpool's delayed ACK (~40 ms a call on Linux); such a
//!   server is found right after it connects (module `stall`: most of
//!   its pings on the reused connection take at least the delayed ACK's
//!   time, and clearly more than pings on a connection per request) and gets a
//!   connection per request from then on, while every other server keeps
//!   reusing.
//!   Redirects are followed only within one origin and only for 307/308,
//!   so headers and tokens never travel to another host.

use std::collections::HashMap;
use std::time::Duration;

use extpool_core::address::{AddressRefused, AddressRule};
use http::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::config::McpServerConfig;
use crate::error::ConfigError;
use crate::name::ServerName;
use crate::sse_guard::Guarded;

/// A bearer token; its value never appears in `Debug` output or errors.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// Wraps a token value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// Where bearer tokens come from.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum TokenSource {
    /// `MCP_<NAME>_TOKEN` from the process environment (NAME upper-cased).
    #[default]
    Environment,
    /// Tokens handed over by the host (a secret store, tests), by server name.
    Fixed(std::collections::BTreeMap<String, BearerToken>),
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Environment => f.write_str("Environment"),
            Self::Fixed(map) => f
                .debug_tuple("Fixed")
                .field(&map.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl TokenSource {
    /// The token for `name`, if any (empty values count as none).
    pub fn token_for(&self, name: &ServerName) -> Option<BearerToken> {
        match self {
            Self::Environment => std::env::var(name.token_env_var())
                .ok()
                .filter(|t| !t.is_empty())
                .map(BearerToken::new),
            Self::Fixed(map) => map.get(name.as_str()).filter(|t| !t.0.is_empty()).cloned(),
        }
    }
}

/// Headers the transport sets itself; configuring them is refused.
const RESERVED_HEADERS: &[&str] = &["accept", "mcp-session-id", "last-event-id", "content-type"];

/// Headers of HTTP itself — where the request goes (`Host`), how its body
/// is framed, the connection's own (hop-by-hop, RFC 9110 §7.6.1) and a
/// proxy's: set by the HTTP client, never by a server entry.
const HTTP_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "proxy-connection",
];

/// Why a server entry may not set header `name` (lower case), if it may
/// not: the one rule configuration checking and the gateway's per-session
/// servers share.
fn reserved_header(name: &HeaderName) -> Option<&'static str> {
    let name = name.as_str();
    if RESERVED_HEADERS.contains(&name) {
        return Some("set by the MCP transport");
    }
    if HTTP_HEADERS.contains(&name) || name.starts_with("proxy-") {
        return Some(
            "a header of HTTP itself (framing, the connection, a proxy), set by the HTTP client",
        );
    }
    None
}

/// Settings shared by every HTTP server of a pool.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Keep idle connections for reuse (default on; a server found to
    /// stall on reuse gets a connection per request: see the module docs).
    pub keep_alive: bool,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Maximum POSTs in flight per server.
    pub max_concurrent_requests: usize,
    /// How many times a broken response stream is resumed (SSE
    /// `Last-Event-ID`; the first resume is immediate, at least one is made)
    /// before the request fails as a dropped connection and the client's own
    /// reconnect takes over. rmcp's default is unbounded, which leaves a call
    /// hanging until its timeout when the server was restarted or is gone.
    pub sse_resume_attempts: usize,
    /// Delay between further resumes, doubled each time (capped at 2 s; a
    /// server's SSE `retry` field can only lengthen it).
    pub sse_resume_backoff: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            keep_alive: true,
            connect_timeout: Duration::from_secs(10),
            max_concurrent_requests: 64,
            sse_resume_attempts: 1,
            sse_resume_backoff: Duration::from_millis(200),
        }
    }
}

impl HttpSettings {
    /// Builds a client of the pool: one that keeps idle connections for
    /// reuse, or (`reuse` false) one that opens a connection per request.
    pub fn build_client(&self, reuse: bool) -> reqwest::Client {
        self.build_client_with(reuse, None)
    }

    /// [`HttpSettings::build_client`], whose connections (with `rule`)
    /// reach only addresses the rule allows: each name is resolved and
    /// every address checked before the connection is made to one of
    /// them, at every connection, and no proxy stands between (it would
    /// resolve the name itself).
    pub fn build_client_with(&self, reuse: bool, rule: Option<AddressRule>) -> reqwest::Client {
        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .connect_timeout(self.connect_timeout)
            .redirect(same_origin_redirects());
        if !reuse {
            builder = builder.pool_max_idle_per_host(0);
        }
        if let Some(rule) = rule {
            builder = builder
                .no_proxy()
                .dns_resolver(std::sync::Arc::new(RuleResolver { rule }));
        }
        match builder.build() {
            Ok(client) => client,
            Err(error) => {
                // Only a broken TLS backend fails here; fall back to defaults.
                tracing::warn!(%error, "could not build the configured HTTP client; using defaults");
                reqwest::Client::new()
            }
        }
    }
}

/// The resolver of a client under an [`AddressRule`]: what a name
/// resolves to is checked, whole, before any connection is made; a name
/// with one refused address is refused (the connection could reach it).
struct RuleResolver {
    rule: AddressRule,
}

impl reqwest::dns::Resolve for RuleResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let rule = self.rule;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(refused) = rule.refuses_any(&host, addresses.iter().map(|a| a.ip())) {
                return Err(Box::new(refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin || attempt.previous().len() > 10 {
            attempt.stop()
        } else {
            attempt.follow()
        }
    })
}

/// An HTTP server, checked and ready to connect (any number of times).
#[derive(Clone)]
pub struct HttpPlan {
    url: reqwest::Url,
    headers: HashMap<HeaderName, HeaderValue>,
    token: Option<BearerToken>,
    /// The server's OAuth session (`oauth` profile), shared by reconnects.
    oauth: Option<std::sync::Arc<extpool_auth::OAuthSession>>,
    /// The addresses it may be on, checked at every connection
    /// ([`McpServerConfig::address_rule`]).
    address_rule: Option<AddressRule>,
}

impl std::fmt::Debug for HttpPlan {
    // Header values may carry credentials: names only; the URL without userinfo or query.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPlan")
            .field("url", &redacted_url(&self.url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("token", &self.token)
            .field("oauth", &self.oauth.is_some())
            .field("address_rule", &self.address_rule)
            .finish()
    }
}

/// `scheme://host:port/path`, without userinfo, query or fragment.
pub fn redacted_url(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{}://{host}:{port}{}", url.scheme(), url.path()),
        None => format!("{}://{host}{}", url.scheme(), url.path()),
    }
}

/// True for `localhost`, `127.0.0.0/8` and `::1`
/// ([`extpool_core::web::is_loopback_host`]).
pub fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str()
        .is_some_and(extpool_core::web::is_loopback_host)
}

/// Most headers one HTTP server entry may configure (a header map holds
/// at most 32,768, and no server needs more than a few).
pub const MAX_HEADERS: usize = 64;
/// Longest header name accepted, in bytes.
pub const MAX_HEADER_NAME_BYTES: usize = 256;
/// Longest header value accepted, in bytes.
pub const MAX_HEADER_VALUE_BYTES: usize = 8192;

/// A header name as errors show it: whole up to 64 characters, else its
/// start and its length (it may be a client's megabyte of junk).
fn shown_header_name(name: &str) -> String {
    extpool_core::text::shown_name(name).into_owned()
}

/// Checks a remote server entry as connecting to it would, without
/// connecting: URL (http or https, a host, no credentials), headers
/// (count, sizes, names, values, none the transport sets), and HTTPS for
/// a token off loopback. The one owner of the rule: configuration checking
/// (`extpool config check`, and the loading of every file) and the gateway
/// (a client's per-session server, before the session is accepted) call it,
/// so what they accept is what connecting accepts.
pub fn check_remote(name: &ServerName, config: &McpServerConfig) -> Result<(), ConfigError> {
    HttpPlan::with_token(name, config, None).map(|_| ())
}

impl HttpPlan {
    /// Checks the URL and headers and takes the token from `tokens`
    /// (by default `MCP_<NAME>_TOKEN`).
    pub fn new(
        name: &ServerName,
        config: &McpServerConfig,
        tokens: &TokenSource,
    ) -> Result<Self, ConfigError> {
        Self::with_token(name, config, tokens.token_for(name))
    }

    /// Like [`HttpPlan::new`] with the token given explicitly.
    pub fn with_token(
        name: &ServerName,
        config: &McpServerConfig,
        token: Option<BearerToken>,
    ) -> Result<Self, ConfigError> {
        let invalid = |reason: String| ConfigError::InvalidUrl {
            server: name.to_string(),
            reason,
        };
        let raw = config.url.as_deref().unwrap_or_default();
        extpool_core::check_http_url(raw).map_err(|e| invalid(e.to_string()))?;
        let url = reqwest::Url::parse(raw).map_err(|e| invalid(e.to_string()))?;
        if url.host().is_none() {
            return Err(invalid("no host".into()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(
                "credentials in the URL are not allowed; use MCP_<NAME>_TOKEN".into(),
            ));
        }
        if config.headers.len() > MAX_HEADERS {
            return Err(ConfigError::TooManyHeaders {
                server: name.to_string(),
                count: config.headers.len(),
                max: MAX_HEADERS,
            });
        }
        let mut headers = HashMap::new();
        let mut has_auth_header = false;
        for (key, value) in &config.headers {
            let bad = |reason| ConfigError::InvalidHeader {
                server: name.to_string(),
                header: shown_header_name(key),
                reason,
            };
            if key.len() > MAX_HEADER_NAME_BYTES {
                return Err(bad("a header name is at most 256 bytes"));
            }
            if value.len() > MAX_HEADER_VALUE_BYTES {
                return Err(bad("a header value is at most 8192 bytes"));
            }
            let header_name =
                HeaderName::try_from(key.as_str()).map_err(|_| bad("not a valid header name"))?;
            if let Some(why) = reserved_header(&header_name) {
                return Err(bad(why));
            }
            if header_name == http::header::AUTHORIZATION {
                if token.is_some() {
                    return Err(bad("conflicts with the token from MCP_<NAME>_TOKEN"));
                }
                has_auth_header = true;
            }
            let mut header_value =
                HeaderValue::try_from(value.as_str()).map_err(|_| bad("not a valid value"))?;
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let token_bearing = token.is_some() || has_auth_header;
        if token_bearing && url.scheme() == "http" && !is_loopback(&url) && !config.insecure_http {
            return Err(ConfigError::InsecureHttp {
                server: name.to_string(),
            });
        }
        Ok(Self {
            url,
            headers,
            token,
            oauth: None,
            address_rule: config.address_rule,
        })
    }

    /// The rule of the addresses this server may be on, if any.
    pub fn address_rule(&self) -> Option<AddressRule> {
        self.address_rule
    }

    /// Why its URL's host is refused by its address rule before any name
    /// is resolved (an IP literal, a metadata host name), if it is.
    pub fn refused_host(&self) -> Option<AddressRefused> {
        let rule = self.address_rule?;
        rule.refuses_host(self.url.host_str()?)
    }

    /// Adds the OAuth session of `config.oauth`, if any: it conflicts with
    /// a static token or `Authorization` header, and (carrying tokens)
    /// needs HTTPS off loopback like them.
    pub fn with_oauth(
        mut self,
        name: &ServerName,
        config: &McpServerConfig,
        auth: &extpool_auth::AuthContext,
    ) -> Result<Self, ConfigError> {
        let Some(profile) = &config.oauth else {
            return Ok(self);
        };
        let invalid = |reason: String| ConfigError::OAuth {
            server: name.to_string(),
            reason,
        };
        if self.token.is_some() || self.headers.contains_key(&http::header::AUTHORIZATION) {
            return Err(invalid(
                "conflicts with the token from MCP_<NAME>_TOKEN or an Authorization header".into(),
            ));
        }
        if self.url.scheme() == "http" && !is_loopback(&self.url) && !config.insecure_http {
            return Err(ConfigError::InsecureHttp {
                server: name.to_string(),
            });
        }
        let session = extpool_auth::OAuthSession::new(
            name.as_str(),
            self.url.as_str(),
            profile.clone(),
            auth.clone(),
        )
        .map_err(|e| invalid(e.to_string()))?;
        self.oauth = Some(std::sync::Arc::new(session));
        Ok(self)
    }

    /// The URL without userinfo, query or fragment (safe to log).
    pub fn display_url(&self) -> String {
        redacted_url(&self.url)
    }

    /// True when a token will be sent.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// A fresh transport on the shared client, whose requests carry the
    /// listed tools' parameter headers and the pool's mark ([`crate::via`]).
    /// `max_message_bytes` bounds each response body and SSE event; a
    /// larger answer fails its request at once (see the `limits` module).
    pub fn transport(
        &self,
        client: &reqwest::Client,
        settings: &HttpSettings,
        max_message_bytes: u64,
        (params, via): (
            std::sync::Arc<crate::param_headers::ParamHeaders>,
            crate::via::Via,
        ),
        declared: crate::transport::whole::Declared,
    ) -> StreamableHttpClientTransport<Guarded<extpool_auth::AuthorizedClient>> {
        let mut cfg = StreamableHttpClientTransportConfig::with_uri(self.url.as_str())
            .max_concurrent_requests(settings.max_concurrent_requests)
            // A 404 for the session is handled by the client, which starts a
            // new session but sends again only what is safe to repeat
            // (rmcp's recovery re-sends every interrupted request).
            .reinit_on_expired_session(false);
        let mut backoff = ExponentialBackoff::default();
        backoff.max_times = Some(settings.sse_resume_attempts);
        backoff.base_duration = settings.sse_resume_backoff;
        backoff.max_delay = Some(Duration::from_secs(2));
        cfg.retry_config = std::sync::Arc::new(backoff);
        if !self.headers.is_empty() {
            cfg = cfg.custom_headers(self.headers.clone());
        }
        if let Some(token) = &self.token {
            cfg = cfg.auth_header(token.expose());
        }
        let max = usize::try_from(max_message_bytes).unwrap_or(usize::MAX);
        cfg.max_sse_event_size = max;
        cfg.max_json_response_size = max;
        let client = extpool_auth::AuthorizedClient::new(client.clone(), self.oauth.clone());
        StreamableHttpClientTransport::with_client(
            Guarded::new(client)
                .with_param_headers(params)
                .with_via(via)
                .with_declared(declared),
            cfg,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> ServerName {
        ServerName::new("gh").unwrap()
    }

    fn plan(url: &str, token: bool, insecure: bool) -> Result<HttpPlan, ConfigError> {
        let mut cfg = McpServerConfig::http(url);
        cfg.insecure_http = insecure;
        HttpPlan::with_token(&name(), &cfg, token.then(|| BearerToken::new("s3cr3t")))
    }

    #[test]
    fn token_needs_https_off_host() {
        assert!(plan("https://mcp.example.com/mcp", true, false).is_ok());
        assert!(matches!(
            plan("http://mcp.example.com/mcp", true, false),
            Err(ConfigError::InsecureHttp { .. })
        ));
        assert!(plan("http://mcp.example.com/mcp", true, true).is_ok());
        assert!(plan("http://mcp.example.com/mcp", false, false).is_ok());
    }

    #[test]
    fn loopback_is_exempt() {
        for url in [
            "http://127.0.0.1:3000/mcp",
            "http://127.1.2.3/mcp",
            "http://localhost:8080/mcp",
            "http://[::1]:9/mcp",
        ] {
            assert!(plan(url, true, false).is_ok(), "{url}");
        }
        for url in ["http://10.0.0.1/mcp", "http://localhost.evil.com/mcp"] {
            assert!(plan(url, true, false).is_err(), "{url}");
        }
    }

    #[test]
    fn authorization_header_counts_as_a_token() {
        let mut cfg = McpServerConfig::http("http://mcp.example.com/mcp");
        cfg.headers
            .insert("Authorization".into(), "Bearer s3cr3t".into());
        assert!(matches!(
            HttpPlan::with_token(&name(), &cfg, None),
            Err(ConfigError::InsecureHttp { .. })
        ));
    }

    #[test]
    fn reserved_and_bad_headers_are_refused() {
        let mut cfg = McpServerConfig::http("https://x/mcp");
        cfg.headers.insert("Mcp-Session-Id".into(), "x".into());
        assert!(matches!(
            HttpPlan::with_token(&name(), &cfg, None),
            Err(ConfigError::InvalidHeader { .. })
        ));
        let mut cfg = McpServerConfig::http("https://x/mcp");
        cfg.headers.insert("X-Ok".into(), "line\nbreak".into());
        assert!(HttpPlan::with_token(&name(), &cfg, None).is_err());
    }

    #[test]
    fn headers_of_http_itself_are_refused_naming_the_header() {
        for header in [
            "Host",
            "Content-Length",
            "Transfer-Encoding",
            "Connection",
            "Keep-Alive",
            "Upgrade",
            "TE",
            "Trailer",
            "Expect",
            "Proxy-Authorization",
            "proxy-connection",
        ] {
            let mut cfg = McpServerConfig::http("https://x/mcp");
            cfg.headers.insert(header.into(), "v".into());
            let e = HttpPlan::with_token(&name(), &cfg, None).unwrap_err();
            assert!(
                matches!(&e, ConfigError::InvalidHeader { header: h, .. } if h == header),
                "{header}: {e:?}"
            );
            assert!(e.to_string().contains("set by the HTTP client"), "{e}");
        }
        let mut cfg = McpServerConfig::http("https://x/mcp");
        cfg.headers.insert("X-Hosted-By".into(), "v".into());
        assert!(HttpPlan::with_token(&name(), &cfg, None).is_ok());
    }

    #[test]
    fn bad_urls_are_refused() {
        for url in ["ftp://x/", "not a url", "https://user:pw@x/mcp"] {
            assert!(
                matches!(plan(url, false, false), Err(ConfigError::InvalidUrl { .. })),
                "{url}"
            );
        }
    }

    #[test]
    fn debug_never_shows_secrets() {
        let mut cfg = McpServerConfig::http("https://x.example/mcp?key=q1");
        cfg.headers.insert("X-Api-Key".into(), "hdr-secret".into());
        let p = HttpPlan::with_token(&name(), &cfg, Some(BearerToken::new("s3cr3t"))).unwrap();
        let dbg = format!("{p:?}");
        for secret in ["s3cr3t", "hdr-secret", "q1"] {
            assert!(!dbg.contains(secret), "{dbg}");
        }
        assert_eq!(p.display_url(), "https://x.example/mcp");
    }
}
