//! Who is calling: every request that passes the guard carries a
//! [`Principal`] in its extensions, which the API, the MCP endpoints and
//! the handler read (session owners, the audit log, log lines, rules).
//!
//! A presented bearer token is, in this order: the gateway's own token
//! (`--token`: the one-person gateway's caller, an operator), a static API
//! key (`epk_…`, kept in the state store as its digest: the key's name, an
//! operator if it was made so), or an access token of the configured
//! issuer (`--auth-issuer`: its subject and chosen claims). With none of
//! the three configured, the gateway is open (loopback only) and every
//! request is [`Principal::local`] — until its store holds an API key:
//! then a request without one is [`Principal::anonymous`], no operator,
//! so it never reaches what a key's holder made. With a token or an
//! issuer, and off loopback always, a request without a valid credential
//! is refused with HTTP 401 and a `WWW-Authenticate` challenge that tells
//! an MCP client where to log in (RFC 9728).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use extpool_auth::resource::{TokenError, TokenVerifier, protected_resource_metadata};
use extpool_host::core::Principal;
use extpool_state::StateStore;
use parking_lot::Mutex;

use crate::auth::BearerToken;

/// The path of the RFC 9728 protected-resource metadata (also answered
/// with any path after it: a client asks for `…/mcp` of `/mcp`).
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// How long an API key found (or not) is believed without asking the
/// store again, on PostgreSQL: a key revoked anywhere is dropped at once
/// through the store's change feed, this is the bound when the feed is
/// down. On SQLite nothing is remembered: `extpool api-keys revoke` runs
/// in another process, whose change no event reports, so every request
/// with a key asks the file (one indexed read).
const API_KEY_TTL: Duration = Duration::from_secs(60);
/// Most API-key answers remembered (a flood of made-up keys clears it).
const MAX_REMEMBERED_KEYS: usize = 1024;
/// How long whether the store holds any API key is believed without
/// asking it again. A key made meanwhile by another process is found at
/// its first use here (which says so at once): until then, nothing it
/// made exists for an anonymous request to reach.
const KEYS_PRESENT_TTL: Duration = Duration::from_secs(60);

/// Why a request was not let through.
#[derive(Debug)]
pub(crate) enum Refused {
    /// No bearer token where one is needed.
    Missing,
    /// A token that is none of the accepted ones.
    Unknown,
    /// An issuer's token that fails a check.
    Token(TokenError),
    /// The store could not say whether an API key is valid.
    Unavailable,
}

/// What an API key lookup found, and when.
struct Remembered {
    principal: Option<Arc<Principal>>,
    at: Instant,
}

/// How requests prove who they are.
pub(crate) struct Identity {
    shared: Option<BearerToken>,
    issuer: Option<Arc<TokenVerifier>>,
    store: Option<StateStore>,
    keys: Mutex<HashMap<String, Remembered>>,
    /// How many times the keys changed (counted under `keys`' lock): a
    /// lookup that began before a change remembers nothing, or a key
    /// revoked while it was being read would be believed for a minute.
    changes: AtomicU64,
    /// Whether the store holds any API key, as last read, and when.
    keys_present: Mutex<Option<(bool, Instant)>>,
    local: Arc<Principal>,
    anonymous: Arc<Principal>,
}

impl Identity {
    /// The gateway's own token, the issuer's tokens and the store's API
    /// keys, each when configured.
    pub(crate) fn new(
        shared: Option<BearerToken>,
        issuer: Option<Arc<TokenVerifier>>,
        store: Option<StateStore>,
    ) -> Self {
        Self {
            shared,
            issuer,
            store,
            keys: Mutex::new(HashMap::new()),
            changes: AtomicU64::new(0),
            keys_present: Mutex::new(None),
            local: Arc::new(Principal::local()),
            anonymous: Arc::new(Principal::anonymous()),
        }
    }

    /// The one caller of a gateway without identities (shared).
    pub(crate) fn local(&self) -> Arc<Principal> {
        self.local.clone()
    }

    /// Whether a request must present a valid token wherever the gateway
    /// listens (its own token or an issuer is configured).
    pub(crate) fn required(&self) -> bool {
        self.shared.is_some() || self.issuer.is_some()
    }

    /// Whether the gateway can tell its callers apart on an address other
    /// machines reach: its own token, an issuer, or API keys in its store
    /// (read now).
    pub(crate) async fn guards_network(&self) -> bool {
        if self.required() {
            return true;
        }
        match &self.store {
            Some(store) => store.has_api_keys().await.unwrap_or_else(|e| {
                tracing::warn!("cannot read whether the state store holds API keys: {e}");
                false
            }),
            None => false,
        }
    }

    /// Who sends a request without a token on loopback, where none is
    /// required: the one local caller, or — once the store holds an API
    /// key — an anonymous one.
    async fn tokenless(&self) -> Arc<Principal> {
        if self.keys_present().await {
            self.anonymous.clone()
        } else {
            self.local.clone()
        }
    }

    /// Whether the store holds any API key: remembered for
    /// [`KEYS_PRESENT_TTL`], forgotten when the keys change, and true at
    /// once when a key is found. A store that cannot say counts as holding
    /// one (the caller is then anonymous, never an operator by mistake).
    async fn keys_present(&self) -> bool {
        let Some(store) = &self.store else {
            return false;
        };
        if let Some((present, at)) = *self.keys_present.lock()
            && at.elapsed() < KEYS_PRESENT_TTL
        {
            return present;
        }
        let seen = self.changes.load(Ordering::Relaxed);
        let present = match store.has_api_keys().await {
            Ok(present) => present,
            Err(e) => {
                tracing::warn!("cannot read whether the state store holds API keys: {e}");
                return true;
            }
        };
        let mut remembered = self.keys_present.lock();
        if self.changes.load(Ordering::Relaxed) == seen {
            *remembered = Some((present, Instant::now()));
        }
        present
    }

    /// The issuer whose tokens are accepted, if any.
    pub(crate) fn issuer(&self) -> Option<&Arc<TokenVerifier>> {
        self.issuer.as_ref()
    }

    /// Forgets every remembered API key (they changed in the store).
    pub(crate) fn api_keys_changed(&self) {
        let mut keys = self.keys.lock();
        self.changes.fetch_add(1, Ordering::Relaxed);
        keys.clear();
        *self.keys_present.lock() = None;
    }

    /// Who sends a request with these headers to a gateway listening on
    /// loopback (`loopback`) or on an address other machines reach (where
    /// a request without a valid credential is always refused).
    pub(crate) async fn authenticate(
        &self,
        headers: &HeaderMap,
        loopback: bool,
    ) -> Result<Arc<Principal>, Refused> {
        let open = loopback && !self.required();
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            // The scheme in any case (RFC 7235 §2.1: `BEARER` is `Bearer`).
            .and_then(|h| {
                h.get(..7)
                    .filter(|scheme| scheme.eq_ignore_ascii_case("bearer "))
                    .map(|_| &h[7..])
            })
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let Some(token) = presented else {
            return if open {
                Ok(self.tokenless().await)
            } else {
                Err(Refused::Missing)
            };
        };
        if let Some(shared) = &self.shared
            && shared.accepts(Some(&format!("Bearer {token}")))
        {
            return Ok(self.local.clone());
        }
        if token.starts_with(extpool_state::API_KEY_PREFIX) && self.store.is_some() {
            return match self.api_key(token).await? {
                Some(principal) => Ok(principal),
                None => Err(Refused::Unknown),
            };
        }
        match &self.issuer {
            Some(issuer) => issuer
                .verify(token)
                .await
                .map(Arc::new)
                .map_err(Refused::Token),
            // No issuer: a token nobody configured is wrong where one is
            // required, and ignored on an open gateway.
            None if open => Ok(self.tokenless().await),
            None => Err(Refused::Unknown),
        }
    }

    /// The principal of API key `secret`, from memory or the store.
    async fn api_key(&self, secret: &str) -> Result<Option<Arc<Principal>>, Refused> {
        let Some(store) = &self.store else {
            return Ok(None);
        };
        let remember = store.backend() == extpool_state::Backend::Postgres;
        let digest = extpool_state::api_key_digest(secret);
        if remember
            && let Some(known) = self.keys.lock().get(&digest)
            && known.at.elapsed() < API_KEY_TTL
        {
            return Ok(known.principal.clone());
        }
        let seen = self.changes.load(Ordering::Relaxed);
        let found = store.api_key_for(secret).await.map_err(|e| {
            tracing::warn!("an API key could not be checked: {e}");
            Refused::Unavailable
        })?;
        if let Some(key) = &found {
            // A key exists: requests without one are anonymous from now.
            *self.keys_present.lock() = Some((true, Instant::now()));
            store.touch_api_key(&key.name).await;
        }
        let principal = found.map(|key| Arc::new(Principal::api_key(&key.name, key.operator)));
        if !remember {
            return Ok(principal);
        }
        self.remember(digest, principal.clone(), seen);
        Ok(principal)
    }

    /// Remembers what a lookup that began after `seen` changes found for
    /// `digest` — nothing if the keys changed since: what it read may be
    /// revoked already.
    fn remember(&self, digest: String, principal: Option<Arc<Principal>>, seen: u64) {
        let mut keys = self.keys.lock();
        if self.changes.load(Ordering::Relaxed) != seen {
            return;
        }
        if keys.len() >= MAX_REMEMBERED_KEYS {
            keys.clear();
        }
        keys.insert(
            digest,
            Remembered {
                principal,
                at: Instant::now(),
            },
        );
    }
}

/// The URL of this gateway's protected-resource metadata, as a client
/// that sent `headers` reaches it (the guard checked the `Host`).
pub(crate) fn metadata_url(headers: &HeaderMap) -> String {
    format!("{}{RESOURCE_METADATA_PATH}", base_url(headers))
}

/// This gateway's address (`scheme://host[:port]`) as a client that sent
/// `headers` reaches it (the guard checked the `Host`): where its
/// metadata and its OAuth callback are.
pub(crate) fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .filter(|p| *p == "https")
        .unwrap_or("http");
    format!("{scheme}://{host}")
}

/// When a request refused because the state store did not answer may be
/// sent again (seconds).
const STORE_RETRY_AFTER_SECS: u64 = 1;

/// The answer to a request refused for `why`: 401 with the challenge (503
/// with `Retry-After` when the store or the issuer could not say), plain
/// text naming the rule.
pub(crate) fn refusal(identity: &Identity, headers: &HeaderMap, why: &Refused) -> Response {
    let (status, message, token_error) = match why {
        Refused::Missing => (
            StatusCode::UNAUTHORIZED,
            if identity.issuer().is_some() {
                "this extpool gateway requires an access token (Authorization: Bearer <token>); its issuer is named in the protected-resource metadata".to_owned()
            } else if identity.shared.is_some() {
                "this extpool gateway requires its bearer token or an API key (Authorization: Bearer <token>)"
                    .to_owned()
            } else {
                "this extpool gateway requires an API key (Authorization: Bearer epk_…)".to_owned()
            },
            None,
        ),
        Refused::Unknown => (
            StatusCode::UNAUTHORIZED,
            "the bearer token is not one this extpool gateway accepts".to_owned(),
            None,
        ),
        // The issuer is down: nothing is known against the token, and a
        // client told `invalid_token` would drop it.
        Refused::Token(e) if e.retry_after_secs().is_some() => {
            (StatusCode::SERVICE_UNAVAILABLE, e.to_string(), None)
        }
        Refused::Token(e) => (StatusCode::UNAUTHORIZED, e.to_string(), Some(e)),
        Refused::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the API key could not be checked (the state store does not answer); retry".to_owned(),
            None,
        ),
    };
    let retry_after = match why {
        Refused::Token(e) => e.retry_after_secs(),
        Refused::Unavailable => Some(STORE_RETRY_AFTER_SECS),
        _ => None,
    };
    let mut challenge = if let Some(issuer) = identity.issuer() {
        extpool_auth::resource::www_authenticate(
            &metadata_url(headers),
            &issuer.settings().scopes,
            token_error,
        )
    } else {
        "Bearer".to_owned()
    };
    if matches!(why, Refused::Unknown) {
        // A token came and is none of ours (a revoked API key, say): RFC
        // 6750 §3.1's invalid_token, as for an issuer's token that fails.
        let separator = if identity.issuer().is_some() {
            ", "
        } else {
            " "
        };
        challenge.push_str(&format!(
            "{separator}error=\"invalid_token\", error_description=\"{message}\""
        ));
    }
    // RFC 6750 §3: the challenge's values are visible ASCII, and a key id
    // the message quotes is as the token wrote it.
    let challenge: String = challenge
        .chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{message}\n"),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED
        && let Ok(value) = http::HeaderValue::from_str(&challenge)
    {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, http::HeaderValue::from(secs));
    }
    response
}

/// `GET /.well-known/oauth-protected-resource[/…]`: where a client gets a
/// token for this gateway (404 without an issuer).
pub(crate) async fn resource_metadata(State(identity): State<Arc<Identity>>) -> Response {
    let Some(issuer) = identity.issuer() else {
        return (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({
                "error": "this extpool gateway takes no tokens of an identity provider"
            })),
        )
            .into_response();
    };
    let settings = issuer.settings();
    let resource = settings.audiences.first().map_or("", String::as_str);
    Json(protected_resource_metadata(
        resource,
        &settings.issuer,
        &settings.scopes,
    ))
    .into_response()
}

/// The principal the guard put on `request` (the local one if none: a
/// request that never passed the guard, such as a test's).
pub(crate) fn of(request: &Request) -> Arc<Principal> {
    of_parts(request.extensions())
}

/// The principal in request extensions.
pub(crate) fn of_parts(extensions: &http::Extensions) -> Arc<Principal> {
    extensions
        .get::<Arc<Principal>>()
        .cloned()
        .unwrap_or_else(|| Arc::new(Principal::local()))
}

/// The owner a principal's new session gets: none for the local caller
/// (a gateway without identities), else its owner key.
pub(crate) fn owner_of(principal: &Principal) -> Option<String> {
    (!principal.is_local()).then(|| principal.owner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(identity: &Identity, why: &Refused) -> String {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "gw.example".parse().unwrap());
        let response = refusal(identity, &headers, why);
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn a_token_that_is_none_of_ours_is_an_invalid_token_and_no_token_is_not() {
        let identity = Identity::new(Some(BearerToken::new("s3cret")), None, None);
        assert_eq!(challenge(&identity, &Refused::Missing), "Bearer");
        assert_eq!(
            challenge(&identity, &Refused::Unknown),
            "Bearer error=\"invalid_token\", error_description=\"the bearer token is not one this extpool gateway accepts\""
        );
    }

    #[test]
    fn a_key_read_before_the_keys_changed_is_not_remembered() {
        let identity = Identity::new(None, None, None);
        let key = Some(Arc::new(Principal::api_key("ci", false)));
        let seen = identity.changes.load(Ordering::Relaxed);
        // Revoked (the change feed said so) while its lookup was running.
        identity.api_keys_changed();
        identity.remember("d1".into(), key.clone(), seen);
        assert!(identity.keys.lock().is_empty());
        // A lookup that began after the change is remembered.
        let seen = identity.changes.load(Ordering::Relaxed);
        identity.remember("d2".into(), key, seen);
        assert!(identity.keys.lock().contains_key("d2"));
    }
}
