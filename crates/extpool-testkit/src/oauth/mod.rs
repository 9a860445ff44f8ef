//! A local OAuth 2.1 authorization server guarding the testkit MCP server,
//! speaking the real wire formats, for tests of OAuth clients.
//!
//! One listener on `127.0.0.1:0` serves:
//! - `/mcp`: the [`TestServer`](crate::server::TestServer) over streamable
//!   HTTP behind bearer validation: no or unknown token → 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="…"`; a `tools/call`
//!   without the configured scope → 403 `insufficient_scope`;
//! - RFC 9728 protected-resource metadata and RFC 8414 authorization-server
//!   metadata (with `authorization_response_iss_parameter_supported`);
//! - `/authorize` (approves at once: 302 to the redirect URI with `code`,
//!   `state` and `iss`; checks client, redirect URI with the RFC 8252
//!   loopback-port rule, PKCE S256 and `resource`);
//! - `/token` (`authorization_code` with PKCE verification, and
//!   `refresh_token` with rotation: a used refresh token is dead);
//!   client authentication by Basic, form body or none as registered;
//! - `/register` (RFC 7591).
//!
//! Counters and recorded requests let tests assert what reached the server
//! (e.g. exactly one refresh). Tokens are random and never logged.

mod endpoints;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use state::{Counts, RecordedRegistration};

/// How the authorization server behaves.
#[derive(Debug, Clone)]
pub struct OAuthServerOptions {
    /// Access-token lifetime in seconds.
    pub access_token_ttl: u64,
    /// Issue refresh tokens.
    pub refresh_tokens: bool,
    /// Rotate refresh tokens on use (the old one becomes invalid).
    pub rotate_refresh_tokens: bool,
    /// Scope a `tools/call` needs (403 `insufficient_scope` without it).
    pub tool_scope: Option<String>,
    /// `scopes_supported` in both metadata documents.
    pub scopes_supported: Vec<String>,
    /// Pre-registered clients: `(client_id, secret)`.
    pub clients: Vec<(String, Option<String>)>,
    /// Send RFC 9207 `iss` on the redirect.
    pub iss_parameter: bool,
    /// Offer dynamic client registration.
    pub registration: bool,
    /// The `authorization_endpoint` its metadata names instead of its own
    /// `/authorize` (a hostile server's, for tests of what a client does
    /// with the URL it builds from it).
    pub authorization_endpoint: Option<String>,
}

impl Default for OAuthServerOptions {
    fn default() -> Self {
        Self {
            access_token_ttl: 3600,
            refresh_tokens: true,
            rotate_refresh_tokens: true,
            tool_scope: None,
            scopes_supported: vec!["mcp:read".into(), "mcp:write".into(), "openid".into()],
            clients: Vec::new(),
            iss_parameter: true,
            registration: true,
            authorization_endpoint: None,
        }
    }
}

/// A running authorization server + protected MCP endpoint; stops on drop.
pub struct OAuthServer {
    addr: SocketAddr,
    state: Arc<state::State>,
    ct: CancellationToken,
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self.ct.cancel();
    }
}

impl OAuthServer {
    /// Starts on `127.0.0.1:0`.
    pub async fn start(options: OAuthServerOptions) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let base = format!("http://127.0.0.1:{}", addr.port());
        let state = Arc::new(state::State::new(base, options));
        let ct = CancellationToken::new();
        let app = endpoints::router(state.clone(), &ct);
        let stop = ct.clone();
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await
            {
                tracing::warn!("oauth test server: {e}");
            }
        });
        Ok(Self { addr, state, ct })
    }

    /// The protected MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.addr.port())
    }

    /// The issuer identifier.
    pub fn issuer(&self) -> String {
        self.state.base.clone()
    }

    /// What reached the server so far.
    pub fn counts(&self) -> Counts {
        self.state.counts()
    }

    /// Registrations received (DCR requests, as sent).
    pub fn registrations(&self) -> Vec<RecordedRegistration> {
        self.state.registrations()
    }

    /// Query parameters of every authorization request, in order.
    pub fn authorization_requests(&self) -> Vec<Vec<(String, String)>> {
        self.state.authorization_requests()
    }

    /// Makes every issued access token invalid (as a server restart or a
    /// revocation would); refresh tokens stay valid.
    pub fn revoke_access_tokens(&self) {
        self.state.revoke_access_tokens();
    }

    /// Makes every refresh token invalid.
    pub fn revoke_refresh_tokens(&self) {
        self.state.revoke_refresh_tokens();
    }

    /// Every code, token and client secret this server handed out (for
    /// tests proving none of them reaches a log or an error).
    pub fn issued_secrets(&self) -> Vec<String> {
        self.state.issued()
    }

    /// SHA-256 fingerprints (12 hex) of the access tokens the MCP endpoint accepted.
    pub fn accepted_token_fingerprints(&self) -> Vec<String> {
        self.state.accepted()
    }
}

/// The token of a request's `Authorization: Bearer <token>` header (`None`
/// without one, or for another scheme): what the guarded servers of this
/// crate validate.
pub(crate) fn bearer_token(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned)
}

/// The fingerprint [`OAuthServer::accepted_token_fingerprints`] uses.
pub fn fingerprint(token: &str) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(token.as_bytes())[..6])
}
