//! The one guard in front of every route of the gateway's router: `Host`
//! and `Origin` (DNS rebinding and cross-site requests), the bearer token,
//! and the declared body size, in that order. It wraps the whole router,
//! so a route added later is guarded without anyone remembering to.
//!
//! - `Host` must name this gateway: a loopback name (any port), the
//!   listen address, an `--allowed-host`, or the IP address and port the
//!   request's connection arrived on (a load balancer's probe or a client
//!   that dials the address itself: a rebinding page always sends its own
//!   host *name*, never this machine's address). One `Host` only, and a
//!   request target in absolute form must name the same host: a proxy
//!   that reads the other one must not be shown a host the guard did not
//!   check. A `Host` that is empty or blank names nothing and is refused
//!   as a missing one is; one that names a port of no host is malformed.
//! - `Origin`, when a browser sends one, must be a loopback origin, an
//!   `--allowed-origin`, or the origin of the host `Host` names (a page
//!   this gateway served, its operator page); `null` (sandboxed frames,
//!   files) and several `Origin` headers are refused.
//! - Who is calling ([`crate::identity`]): the gateway's token, an API key
//!   or an issuer's access token, when any is configured, is required
//!   everywhere but the probes and the protected-resource metadata
//!   ([`is_public`]), which load balancers and logging-in clients read
//!   without one; the [`Principal`](extpool_host::core::Principal) found is
//!   put on the request for what follows.
//! - A request that came through this gateway already — its
//!   `Extpool-Via` mark holds this gateway's id — is refused with HTTP
//!   508 (a chain of extpools that loops, [`extpool_host::mcp::via`]); the
//!   marks of a request let through are passed on in the gateway's own
//!   requests to its servers.
//! - A declared body larger than `--max-request-bytes` is refused at once
//!   (HTTP 413); a body sent without a length is cut at the same size
//!   where it is read.
//!
//! Refusals are plain text naming the rule and the flag that changes it;
//! they are counted in `/metrics` and logged at debug level only (a web
//! page could send them by the thousand).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::identity::{Identity, RESOURCE_METADATA_PATH};
use crate::metrics::{Metrics, Refusal};

/// Paths answered without the bearer token (health probes). Every other
/// path, present or future, needs it when one is set, but the
/// protected-resource metadata ([`is_public`]).
pub const PUBLIC_PATHS: &[&str] = &["/healthz", "/readyz"];

/// Whether `path` is answered without a token: the probes, the
/// protected-resource metadata a client reads to learn where to log in,
/// and a caller's login in its browser — the login page and the OAuth
/// callback (its `state` and the login page's cookie tie it to the login
/// and the browser that started it).
pub fn is_public(path: &str) -> bool {
    PUBLIC_PATHS.contains(&path)
        || path == crate::paths::CALLBACK_PATH
        || path == crate::paths::LOGIN_PAGE_PATH
        || path == RESOURCE_METADATA_PATH
        || path
            .strip_prefix(RESOURCE_METADATA_PATH)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Where a request's connection arrived: set by the gateway's listener on
/// every request, read by the `Host` rule.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// The local address the connection was accepted on.
    pub local: SocketAddr,
    /// The peer's address.
    pub peer: SocketAddr,
}

/// A `host[:port]` this gateway answers to; no port: any port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostRule {
    host: String,
    port: Option<u16>,
}

/// An origin this gateway accepts; no port: any port (`:*`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginRule {
    scheme: String,
    host: String,
    port: Option<u16>,
}

/// The guard's rules, made once per router.
pub(crate) struct Guard {
    hosts: Vec<HostRule>,
    origins: Vec<OriginRule>,
    identity: Arc<Identity>,
    /// Whether the gateway listens on loopback only (elsewhere a request
    /// without a credential is refused whatever is configured).
    loopback: bool,
    /// The mark of this gateway's host (none: no loop is looked for).
    via: Option<extpool_host::mcp::Via>,
    max_body: usize,
    metrics: Arc<Metrics>,
}

/// A host name or IP literal, lower case, without IPv6 brackets.
fn normal_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// `host[:port]` as a rule or a `Host` value; `None` when malformed.
fn parse_authority(value: &str) -> Option<HostRule> {
    let value = value.trim();
    if value.is_empty() || value.contains(['/', '@', '?', '#']) {
        return None;
    }
    let authority = http::uri::Authority::try_from(value).ok()?;
    let host = normal_host(authority.host());
    if host.is_empty() {
        // `:8520` names a port of no host.
        return None;
    }
    Some(HostRule {
        host,
        port: authority.port_u16(),
    })
}

/// `scheme://host[:port]` (or `…:*`) as an origin; `None` when malformed.
fn parse_origin(value: &str) -> Option<OriginRule> {
    let value = value.trim();
    let (value, any_port) = match value.strip_suffix(":*") {
        Some(base) => (base, true),
        None => (value, false),
    };
    let (scheme, rest) = value.split_once("://")?;
    if !extpool_host::core::is_http_scheme(scheme) {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    let rule = parse_authority(rest.trim_end_matches('/'))?;
    let port = match (any_port, rule.port) {
        (true, Some(_)) => return None,
        (true, None) => None,
        (false, Some(port)) => Some(port),
        (false, None) => Some(if scheme == "https" { 443 } else { 80 }),
    };
    Some(OriginRule {
        scheme,
        host: rule.host,
        port,
    })
}

impl Guard {
    /// The rules of a gateway listening on `listen`: loopback names and
    /// origins, the listen address, and what the operator allowed.
    pub(crate) fn new(
        listen: SocketAddr,
        allowed_hosts: &[String],
        allowed_origins: &[String],
        (identity, via): (Arc<Identity>, Option<extpool_host::mcp::Via>),
        max_body: usize,
        metrics: Arc<Metrics>,
    ) -> Self {
        let mut hosts: Vec<HostRule> = ["localhost", "127.0.0.1", "[::1]"]
            .into_iter()
            .filter_map(parse_authority)
            .collect();
        hosts.push(HostRule {
            host: normal_host(&listen.ip().to_string()),
            port: Some(listen.port()),
        });
        for allowed in allowed_hosts {
            match parse_authority(allowed) {
                Some(rule) => hosts.push(rule),
                None => tracing::warn!(
                    host = allowed.as_str(),
                    "--allowed-host is not a host[:port]; ignored"
                ),
            }
        }
        let mut origins: Vec<OriginRule> =
            ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .into_iter()
                .filter_map(parse_origin)
                .collect();
        for allowed in allowed_origins {
            match parse_origin(allowed) {
                Some(rule) => origins.push(rule),
                None => tracing::warn!(
                    origin = allowed.as_str(),
                    "--allowed-origin is not an http(s)://host[:port] origin; ignored"
                ),
            }
        }
        Self {
            hosts,
            origins,
            identity,
            loopback: listen.ip().is_loopback(),
            via,
            max_body,
            metrics,
        }
    }

    /// Whether the one `Host` (or, without one, the URI's authority; the
    /// two must agree when both are sent) names this gateway; `Err`
    /// carries the refusal.
    fn check_host(&self, request: &Request) -> Result<(), Box<Response>> {
        let headers = request.headers();
        if headers.get_all(header::HOST).iter().nth(1).is_some() {
            return Err(self.refuse(
                Refusal::Host,
                StatusCode::BAD_REQUEST,
                "this extpool gateway takes one Host header, not several\n".into(),
            ));
        }
        let target = request.uri().authority().map(|a| a.as_str());
        // A Host that is empty (or blank) names nothing: as if none were
        // sent, and never made up for by the target.
        let value = match headers.get(header::HOST) {
            Some(v) => v.to_str().ok().map(str::trim).filter(|v| !v.is_empty()),
            None => target,
        };
        // A request target in absolute form names the host itself (and
        // wins over Host, RFC 9112): it must be the same host.
        let default_port = if request.uri().scheme_str() == Some("https") {
            443
        } else {
            80
        };
        let same = |a: &str, b: &str| {
            let place =
                |v: &str| parse_authority(v).map(|r| (r.host, r.port.unwrap_or(default_port)));
            place(a) == place(b)
        };
        if let (Some(target), Some(value)) = (target, value)
            && !same(target, value)
        {
            return Err(self.refuse(
                Refusal::Host,
                StatusCode::BAD_REQUEST,
                format!(
                    "the request target names the host {target:?} and the Host header {value:?}; send one host\n"
                ),
            ));
        }
        let Some(value) = value else {
            return Err(self.refuse(
                Refusal::Host,
                StatusCode::BAD_REQUEST,
                "this extpool gateway needs a Host header that names it\n".into(),
            ));
        };
        let Some(host) = parse_authority(value) else {
            return Err(self.refuse(
                Refusal::Host,
                StatusCode::BAD_REQUEST,
                format!("the Host header {value:?} is not a host[:port]\n"),
            ));
        };
        let named = |rule: &HostRule| {
            rule.host == host.host && rule.port.is_none_or(|p| host.port.unwrap_or(80) == p)
        };
        // The address the request arrived on, however its IP is spelled.
        let arrived = || {
            request.extensions().get::<Arrival>().is_some_and(|a| {
                host.port.unwrap_or(80) == a.local.port()
                    && host.host.parse::<std::net::IpAddr>() == Ok(a.local.ip())
            })
        };
        if self.hosts.iter().any(named) || arrived() {
            return Ok(());
        }
        Err(self.refuse(
            Refusal::Host,
            StatusCode::FORBIDDEN,
            format!(
                "this extpool gateway does not answer to the host {value:?} (a protection against DNS rebinding); if that is this gateway's name, start it with --allowed-host {value}\n"
            ),
        ))
    }

    /// Whether a browser's `Origin`, if any, is one this gateway accepts.
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let Some(value) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        if headers.get_all(header::ORIGIN).iter().nth(1).is_some() {
            return Err(self.refuse(
                Refusal::Origin,
                StatusCode::FORBIDDEN,
                "this extpool gateway refuses a request with several Origin headers (a browser sends one)\n"
                    .into(),
            ));
        }
        let text = value.to_str().unwrap_or("");
        let accepted = parse_origin(text).is_some_and(|origin| {
            same_origin(&origin, headers)
                || self.origins.iter().any(|rule| {
                    rule.scheme == origin.scheme
                        && rule.host == origin.host
                        && rule.port.is_none_or(|p| origin.port == Some(p))
                })
        });
        if accepted {
            return Ok(());
        }
        Err(self.refuse(
            Refusal::Origin,
            StatusCode::FORBIDDEN,
            format!(
                "this extpool gateway refuses requests from web pages of another origin (Origin: {text:?}); start it with --allowed-origin ORIGIN to allow a page of yours\n"
            ),
        ))
    }

    /// Who sends `request` (the local caller on a public path); `Err` is
    /// the refusal.
    async fn check_identity(
        &self,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<Arc<extpool_host::core::Principal>, Box<Response>> {
        if is_public(path) {
            return Ok(self.identity.local());
        }
        match self.identity.authenticate(headers, self.loopback).await {
            Ok(principal) => Ok(principal),
            Err(why) => {
                self.metrics.refused(Refusal::Auth);
                tracing::debug!(reason = ?why, "a request was refused for its credentials");
                Err(Box::new(crate::identity::refusal(
                    &self.identity,
                    headers,
                    &why,
                )))
            }
        }
    }

    /// The extpools a request came through (its `Extpool-Via`), unless
    /// one of them is this gateway; `Err` carries the refusal.
    fn check_via(&self, headers: &HeaderMap) -> Result<Vec<String>, Box<Response>> {
        let Some(via) = &self.via else {
            return Ok(Vec::new());
        };
        let marks = headers
            .get_all(extpool_host::mcp::via::VIA_HEADER)
            .iter()
            .filter_map(|v| v.to_str().ok());
        via.check(marks).map_err(|refused| {
            self.refuse(
                Refusal::Loop,
                StatusCode::LOOP_DETECTED,
                format!("{refused}\n"),
            )
        })
    }

    /// Whether the declared body fits.
    fn check_length(&self, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        match declared {
            Some(size) if size > self.max_body as u64 => Err(self.refuse(
                Refusal::Body,
                StatusCode::PAYLOAD_TOO_LARGE,
                too_large(Some(size), self.max_body),
            )),
            _ => Ok(()),
        }
    }

    /// A refusal: counted, logged at debug level, answered in plain text.
    fn refuse(&self, why: Refusal, status: StatusCode, message: String) -> Box<Response> {
        self.metrics.refused(why);
        tracing::debug!(
            reason = why.label(),
            status = status.as_u16(),
            "{}",
            message.trim_end()
        );
        Box::new(
            (
                status,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                message,
            )
                .into_response(),
        )
    }
}

/// Whether `origin` names the host the request's `Host` header names (a
/// page this gateway served, such as its operator page, calling it back):
/// the `Host` rule already found that name to be this gateway's, and a
/// page elsewhere cannot send this gateway's name as its origin. A `Host`
/// without a port matches the origin scheme's default (a proxy in front
/// that ends TLS).
fn same_origin(origin: &OriginRule, headers: &HeaderMap) -> bool {
    let Some(host) = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_authority)
    else {
        return false;
    };
    let default = if origin.scheme == "https" { 443 } else { 80 };
    host.host == origin.host && origin.port == Some(host.port.unwrap_or(default))
}

/// The middleware: every rule, then the route.
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let mut request = request;
    // A refusal leaves the body unread: with one, it says so
    // (`Connection: close`): the connection ends with the answer when the
    // body has not all arrived by then (no request can follow an unread
    // body on it), and a client told so sends its next request on a new
    // connection instead of losing it on this one (an SDK's login, whose
    // first POST is refused for its missing token, then asks for the
    // gateway's metadata).
    let has_body = has_body(request.headers());
    let refused = |refusal: Box<Response>| {
        if has_body { closed(*refusal) } else { *refusal }
    };
    let checked = guard
        .check_host(&request)
        .and_then(|()| guard.check_origin(request.headers()))
        .and_then(|()| guard.check_via(request.headers()));
    let callers = match checked {
        Ok(callers) => callers,
        Err(refusal) => return refused(refusal),
    };
    let principal = match guard
        .check_identity(request.uri().path(), request.headers())
        .await
    {
        Ok(principal) => principal,
        Err(refusal) => return refused(refusal),
    };
    // Only an admitted request's callers are passed on.
    if let Some(via) = &guard.via {
        via.remember(callers);
    }
    if let Err(refusal) = guard.check_length(request.headers()) {
        return refused(refusal);
    }
    if let Some(token) =
        crate::delegation::presented(request.headers(), &principal, guard.identity.issuer())
    {
        request.extensions_mut().insert(token);
    }
    request.extensions_mut().insert(principal);
    let response = next.run(request).await;
    // The router's own refusals (no such route, not this method) leave
    // the body unread too.
    let unrouted = matches!(
        response.status(),
        StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
    );
    if has_body && unrouted {
        return closed(response);
    }
    response
}

/// Whether a body comes with the request of `headers`.
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// `response` saying `Connection: close`.
fn closed(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// The message of a refused oversized body.
pub(crate) fn too_large(declared: Option<u64>, max: usize) -> String {
    match declared {
        Some(size) => format!(
            "the request body is {size} bytes; this extpool gateway accepts at most {max} (extpool serve --max-request-bytes)\n"
        ),
        None => format!(
            "the request body is over {max} bytes, the most this extpool gateway accepts (extpool serve --max-request-bytes)\n"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            "127.0.0.1:8520".parse().unwrap(),
            &["gw.example".into(), "other.example:9000".into()],
            &["https://app.example".into(), "http://dev.example:*".into()],
            (Arc::new(Identity::new(None, None, None)), None),
            1024,
            Arc::default(),
        )
    }

    fn request(host: Option<&str>, origin: Option<&str>) -> Request {
        let mut builder = http::Request::builder().uri("/v1/sessions");
        if let Some(host) = host {
            builder = builder.header(header::HOST, host);
        }
        if let Some(origin) = origin {
            builder = builder.header(header::ORIGIN, origin);
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn hosts_of_this_gateway_pass_and_others_are_refused() {
        let g = guard();
        for ok in [
            "localhost",
            "localhost:1234",
            "127.0.0.1:8520",
            "[::1]:8520",
            "GW.example:8443",
            "other.example:9000",
        ] {
            assert!(g.check_host(&request(Some(ok), None)).is_ok(), "{ok}");
        }
        for bad in [
            "evil.example",
            "other.example:9001",
            "localhost.evil.example",
            "127.0.0.2:8520",
            "user@localhost",
            ":8520",
            "[]:8520",
        ] {
            assert!(g.check_host(&request(Some(bad), None)).is_err(), "{bad}");
        }
        // No Host, or one that names nothing: refused alike.
        for nothing in [None, Some(""), Some(" "), Some(" \t ")] {
            let refusal = g.check_host(&request(nothing, None)).unwrap_err();
            assert_eq!(refusal.status(), StatusCode::BAD_REQUEST, "{nothing:?}");
        }
        let mut absolute = http::Request::builder()
            .uri("http://localhost/v1/sessions")
            .header(header::HOST, "")
            .body(axum::body::Body::empty())
            .unwrap();
        assert!(
            g.check_host(&absolute).is_err(),
            "an empty Host is not the target's"
        );
        absolute.headers_mut().remove(header::HOST);
        assert!(g.check_host(&absolute).is_ok(), "the target names the host");
    }

    #[test]
    fn the_address_a_connection_arrived_on_is_this_gateways() {
        let g = guard();
        let mut r = request(Some("10.1.2.3:8520"), None);
        assert!(g.check_host(&r).is_err());
        r.extensions_mut().insert(Arrival {
            local: "10.1.2.3:8520".parse().unwrap(),
            peer: "10.9.9.9:5000".parse().unwrap(),
        });
        assert!(g.check_host(&r).is_ok());
        let mut other_port = request(Some("10.1.2.3:9999"), None);
        other_port.extensions_mut().insert(Arrival {
            local: "10.1.2.3:8520".parse().unwrap(),
            peer: "10.9.9.9:5000".parse().unwrap(),
        });
        assert!(g.check_host(&other_port).is_err());
        // An IPv6 address, however it is spelled.
        let mut v6 = request(Some("[FE80:0::A:1]:8520"), None);
        v6.extensions_mut().insert(Arrival {
            local: "[fe80::a:1]:8520".parse().unwrap(),
            peer: "[fe80::9]:5000".parse().unwrap(),
        });
        assert!(g.check_host(&v6).is_ok());
    }

    #[test]
    fn loopback_and_allowed_origins_pass_and_others_are_refused() {
        let g = guard();
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1:9",
            "http://[::1]:80",
            "https://app.example",
            "https://app.example:443",
            "http://dev.example:5173",
        ] {
            assert!(
                g.check_origin(request(None, Some(ok)).headers()).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "http://evil.example",
            "https://localhost:3000",
            "https://app.example:8443",
            "http://app.example",
            "null",
            "file://",
            "not an origin",
        ] {
            assert!(
                g.check_origin(request(None, Some(bad)).headers()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_page_of_the_host_the_request_names_is_of_this_gateway() {
        let g = guard();
        for (host, origin) in [
            ("gw.example:8520", "http://gw.example:8520"),
            ("gw.example", "http://gw.example"),
            ("gw.example", "https://gw.example"),
            ("10.1.2.3:8520", "http://10.1.2.3:8520"),
        ] {
            assert!(
                g.check_origin(request(Some(host), Some(origin)).headers())
                    .is_ok(),
                "{host} {origin}"
            );
        }
        for (host, origin) in [
            ("gw.example:8520", "http://gw.example:8521"),
            ("gw.example:8520", "http://evil.example:8520"),
            ("gw.example", "https://gw.example:8443"),
        ] {
            assert!(
                g.check_origin(request(Some(host), Some(origin)).headers())
                    .is_err(),
                "{host} {origin}"
            );
        }
    }

    #[tokio::test]
    async fn only_probes_and_the_resource_metadata_go_without_the_token() {
        let mut g = guard();
        g.identity = Arc::new(Identity::new(
            Some(crate::auth::BearerToken::new("s3cret")),
            None,
            None,
        ));
        let paths = PUBLIC_PATHS.iter().copied().chain([
            RESOURCE_METADATA_PATH,
            "/.well-known/oauth-protected-resource/mcp",
            crate::paths::CALLBACK_PATH,
            crate::paths::LOGIN_PAGE_PATH,
        ]);
        for path in paths {
            let r = http::Request::builder()
                .uri(path)
                .body(axum::body::Body::empty())
                .unwrap();
            assert!(
                g.check_identity(r.uri().path(), r.headers()).await.is_ok(),
                "{path}"
            );
        }
        for path in [
            "/",
            "/mcp",
            "/metrics",
            "/v1",
            "/anything-new",
            "/healthz/x",
            "/.well-known/oauth-protected-resourcex",
        ] {
            let r = http::Request::builder()
                .uri(path)
                .body(axum::body::Body::empty())
                .unwrap();
            assert!(
                g.check_identity(r.uri().path(), r.headers()).await.is_err(),
                "{path}"
            );
        }
    }
}
