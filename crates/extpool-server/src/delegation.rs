//! Delegated credentials: an upstream server whose `oauth` is
//! `token_exchange` or `passthrough` is reached with a token made from the
//! access token its caller presented to the gateway — the caller's own,
//! per (principal, server), never another's (see
//! [`extpool_auth::delegated`]).
//!
//! - **Token exchange** (RFC 8693): the caller's validated token is the
//!   `subject_token` at the gateway's issuer's token endpoint (from its
//!   discovery metadata), the gateway authenticating as its own client
//!   (`gateway.auth.client_id`, `client_secret`), `resource` = the
//!   server's URL (and `audience`, `scope` when configured). The issued
//!   token is kept until [`DelegationOptions::refresh_margin`] before it
//!   expires, then exchanged again; one exchange at a time per caller and
//!   server.
//! - **Enterprise-managed authorization** (ID-JAG, [`enterprise`]): the
//!   caller's validated token exchanged at the gateway's issuer for an
//!   ID-JAG, redeemed at the server's authorization server; kept and
//!   renewed like an exchanged token.
//! - **Passthrough**: the caller's own token, only when its audience names
//!   the server (its URL, or the configured `audience`) — never when it is
//!   only the gateway's (the MCP authorization spec's confused-deputy
//!   rule).
//!
//! [`Delegation::ensure`] runs before a call reaches such a server; when it
//! fails the call is a tool error naming the server and why (the issuer's
//! `error` code), and nothing reaches the server. The caller's token lives
//! on its request only ([`CallerToken`]); no token is logged or shown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use extpool_auth::Secret;
use extpool_auth::delegated::{DelegatedToken, DelegatedTokens, ExchangeRequest};
use extpool_auth::resource::TokenVerifier;
use extpool_host::Host;
use extpool_host::core::Principal;
use parking_lot::Mutex;

mod enterprise;

/// Default time before an exchanged token expires at which the next call
/// exchanges again.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// Most exchanges in progress tracked at once (one gate per caller and
/// server; past it, idle gates are dropped).
const MAX_GATES: usize = 4096;

/// The gateway's own client at its issuer, for token exchange
/// (`gateway.auth.client_id`, `gateway.auth.client_secret`).
#[derive(Clone)]
pub struct DelegationOptions {
    /// The gateway's client id at its issuer.
    pub client_id: String,
    /// Its secret (HTTP Basic at the token endpoint).
    pub client_secret: Secret,
    /// How long before an exchanged token expires it is exchanged again.
    pub refresh_margin: Duration,
}

impl std::fmt::Debug for DelegationOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegationOptions")
            .field("client_id", &self.client_id)
            .field("refresh_margin", &self.refresh_margin)
            .finish_non_exhaustive()
    }
}

/// The access token a request presented, when the gateway's issuer
/// vouched for it (in the request's extensions; never logged).
#[derive(Clone)]
pub(crate) struct CallerToken(pub Secret);

/// What a call to a delegated server went with, for its audit record.
#[derive(Debug, Clone)]
pub(crate) struct Delegated {
    /// `token_exchange` or `passthrough`.
    pub mode: &'static str,
    /// The delegation chain (`act`) of the token sent, if any.
    pub act: Option<serde_json::Value>,
}

/// The gateway's delegated credentials.
pub(crate) struct Delegation {
    options: Option<DelegationOptions>,
    issuer: Option<Arc<TokenVerifier>>,
    tokens: Arc<DelegatedTokens>,
    http: extpool_auth::delegated::Exchanger,
    gates: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    enterprise: extpool_auth::enterprise::EnterpriseClient,
}

impl Delegation {
    /// Delegation for `host`'s servers with the gateway's `issuer` and
    /// client `options`.
    pub(crate) fn new(
        host: &Host,
        issuer: Option<Arc<TokenVerifier>>,
        options: Option<DelegationOptions>,
    ) -> Self {
        Self {
            options,
            issuer,
            tokens: host.delegated_tokens(),
            http: extpool_auth::delegated::Exchanger::default(),
            gates: Mutex::new(HashMap::new()),
            enterprise: Default::default(),
        }
    }

    /// Why the gateway cannot make tokens for a delegated server as
    /// started, if it cannot: checked at start, so a gateway that could
    /// never reach it says so at once (in its log; the other servers work,
    /// and each call of this one's tools says why not).
    pub(crate) fn check(&self, host: &Host) -> Result<(), String> {
        for server in host.delegated_servers() {
            let Some((_, profile)) = host.caller_profile(&server, || "check".to_owned()) else {
                continue;
            };
            if self.issuer.is_none() {
                return Err(format!(
                    "MCP server {server:?} has `oauth.{}`, which makes each caller's credential from the token it presents: the gateway needs an issuer (gateway.auth.issuer, --auth-issuer)",
                    profile.delegation().unwrap_or_default()
                ));
            }
            let mode = profile.delegation().unwrap_or_default();
            if mode != "passthrough" && self.options.is_none() {
                return Err(format!(
                    "MCP server {server:?} has `oauth.{mode}`: the gateway exchanges tokens as its own client at its issuer; set gateway.auth.client_id and gateway.auth.client_secret"
                ));
            }
        }
        Ok(())
    }

    /// Makes sure `principal`'s token for `server` is in place before a
    /// call reaches it: `Ok(None)` when the server's credential is not
    /// delegated, `Err` (the words the caller reads) when no token can be
    /// made.
    pub(crate) async fn ensure(
        &self,
        host: &Host,
        server: &str,
        principal: &Principal,
        presented: Option<&CallerToken>,
    ) -> Result<Option<Delegated>, String> {
        let Some((url, profile)) = host.caller_profile(server, || principal.owner()) else {
            return Ok(None);
        };
        let Some(token) = presented.filter(|_| self.issuer.is_some()) else {
            return Err(format!(
                "MCP server {server} is reached with a token made from yours, and this request carries no access token of the gateway's issuer"
            ));
        };
        let record = profile.record_name(server);
        if let Some(passthrough) = &profile.passthrough {
            let audience = passthrough.audience.as_deref().unwrap_or(&url);
            return self.pass_through(server, audience, &record, token);
        }
        let mode = match profile.delegation() {
            Some(mode @ ("token_exchange" | "enterprise_managed")) => mode,
            _ => return Ok(None),
        };
        let margin = self.margin();
        let fresh = |tokens: &DelegatedTokens| {
            tokens
                .get(&record)
                .filter(|t| t.fresh_for(margin))
                .map(|t| Delegated { mode, act: t.act })
        };
        if let Some(kept) = fresh(&self.tokens) {
            return Ok(Some(kept));
        }
        let gate = self.gate(&record);
        let _one = gate.lock().await;
        if let Some(kept) = fresh(&self.tokens) {
            return Ok(Some(kept));
        }
        let issued = match (&profile.token_exchange, &profile.enterprise_managed) {
            (Some(settings), _) => self.exchange(server, &url, settings, token).await,
            (None, Some(settings)) => self.enterprise(server, &url, settings, token).await,
            (None, None) => return Ok(None),
        }
        .inspect_err(|_| self.tokens.forget(&record))?;
        let act = issued.act.clone();
        self.tokens.put(&record, issued);
        tracing::info!(server, principal = %principal.label(), "a token was exchanged for the caller");
        Ok(Some(Delegated { mode, act }))
    }

    /// Refresh margin in whole seconds.
    fn margin(&self) -> u64 {
        self.options
            .as_ref()
            .map_or(DEFAULT_REFRESH_MARGIN, |o| o.refresh_margin)
            .as_secs()
    }

    /// The gateway's client at its issuer, the issuer and its token
    /// endpoint; else why `server`, which needs `what`, gets no token (the
    /// words the caller reads).
    fn issuer_client(
        &self,
        server: &str,
        what: &str,
    ) -> Result<(&DelegationOptions, &str, &str), String> {
        let (Some(options), Some(issuer)) = (&self.options, &self.issuer) else {
            return Err(format!(
                "MCP server {server} needs {what}, and the gateway has no client at its issuer (gateway.auth.client_id, client_secret)"
            ));
        };
        let issuer_url = issuer.settings().issuer.as_str();
        let Some(endpoint) = issuer.metadata().token_endpoint.as_deref() else {
            return Err(format!(
                "MCP server {server}: the issuer {issuer_url} names no token endpoint in its metadata, so no token can be made for it"
            ));
        };
        Ok((options, issuer_url, endpoint))
    }

    /// Exchanges `token` for one for `server` at `url`.
    async fn exchange(
        &self,
        server: &str,
        url: &str,
        settings: &extpool_auth::TokenExchangeSettings,
        token: &CallerToken,
    ) -> Result<DelegatedToken, String> {
        let (options, issuer_url, endpoint) = self.issuer_client(server, "a token exchange")?;
        let request = ExchangeRequest {
            token_endpoint: endpoint,
            client_id: &options.client_id,
            client_secret: &options.client_secret,
            subject_token: &token.0,
            resource: url,
            audience: settings.audience.as_deref(),
            scopes: &settings.scopes,
        };
        self.http
            .exchange(&request)
            .await
            .map_err(|e| {
                tracing::info!(server, error = %e.code(), "a token exchange failed");
                format!(
                    "MCP server {server}: the token exchange at {issuer_url} failed: {} ({e}); the call was not sent",
                    e.code()
                )
            })
    }

    /// Puts the caller's own `token` for `server` when its audience names
    /// `audience` and that is not the gateway's own.
    fn pass_through(
        &self,
        server: &str,
        audience: &str,
        record: &str,
        token: &CallerToken,
    ) -> Result<Option<Delegated>, String> {
        let gateways = self
            .issuer
            .as_ref()
            .map(|i| i.settings().audiences.clone())
            .unwrap_or_default();
        let named = extpool_auth::delegated::audiences(&token.0);
        let is_gateways = gateways.iter().any(|g| same_audience(g, audience));
        if is_gateways || !named.iter().any(|a| same_audience(a, audience)) {
            self.tokens.forget(record);
            return Err(format!(
                "MCP server {server}: your token is not for it (its audience must name {audience}, not only this gateway), so it is not passed on; the call was not sent"
            ));
        }
        let expires_at =
            extpool_auth::delegated::jwt_claim(&token.0, "exp").and_then(|e| e.as_u64());
        let act = extpool_auth::delegated::jwt_claim(&token.0, "act");
        self.tokens.put(
            record,
            DelegatedToken {
                token: token.0.clone(),
                expires_at,
                act: act.clone(),
            },
        );
        Ok(Some(Delegated {
            mode: "passthrough",
            act,
        }))
    }

    /// The one gate of `record`'s exchanges.
    fn gate(&self, record: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut gates = self.gates.lock();
        if gates.len() >= MAX_GATES {
            gates.retain(|_, g| Arc::strong_count(g) > 1);
        }
        gates.entry(record.to_owned()).or_default().clone()
    }
}

/// Whether audiences `a` and `b` are the same (a URL with or without its
/// trailing `/`).
fn same_audience(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The issuer's token a request presented, from `headers`, when the guard
/// found `principal` by it (the gateway's issuer vouched for it).
pub(crate) fn presented(
    headers: &http::HeaderMap,
    principal: &Principal,
    issuer: Option<&Arc<TokenVerifier>>,
) -> Option<CallerToken> {
    let issuer = issuer?;
    if principal.issuer != issuer.settings().issuer {
        return None;
    }
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let token = value
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("bearer "))
        .map(|_| value[7..].trim())?;
    Some(CallerToken(Secret::new(token)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audiences_match_with_or_without_the_trailing_slash() {
        assert!(same_audience("http://a/mcp/", "http://a/mcp"));
        assert!(!same_audience("http://a/mcp", "http://a"));
    }
}
