//! Checking an access token: its key, its algorithm, its claims; the
//! JWKS cache and when it is fetched again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use extpool_core::Principal;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use parking_lot::RwLock;
use serde_json::{Map, Value};

use super::accepted::{self, Accepted};
use super::discovery::{self, DiscoveryError, IssuerMetadata, get_json};
use super::keys::KeySet;
use super::{IssuerSettings, MAX_TOKEN_BYTES};

/// Why an access token was refused. The message names the rule, never the
/// token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Longer than [`MAX_TOKEN_BYTES`].
    #[error("the access token is longer than {MAX_TOKEN_BYTES} bytes")]
    TooLong,
    /// Not a JWT whose header can be read, or claims of the wrong shape.
    #[error("the access token is not a JWT this gateway can read: {0}")]
    Malformed(String),
    /// Signed with HMAC, or `none`.
    #[error(
        "the access token is signed with {0}; only an issuer's public-key signatures are accepted"
    )]
    Algorithm(String),
    /// Its key id is not among the issuer's keys (after fetching them again
    /// where allowed).
    #[error("the access token's signing key {kid} is not one the issuer publishes")]
    UnknownKey {
        /// The `kid` as the token writes it (quoted), or "without a key id".
        kid: String,
    },
    /// The key does not verify the algorithm the token names.
    #[error("the access token names {alg}, which its signing key does not verify")]
    KeyAlgorithm {
        /// The header's `alg`.
        alg: String,
    },
    /// The signature does not verify.
    #[error("the access token's signature does not verify")]
    Signature,
    /// `exp` is past.
    #[error("the access token has expired")]
    Expired,
    /// `nbf` is ahead.
    #[error("the access token is not valid yet (nbf)")]
    NotYetValid,
    /// `iss` is another issuer.
    #[error("the access token was issued by another issuer than this gateway's")]
    Issuer,
    /// `aud` names another resource.
    #[error("the access token is for another audience than this gateway")]
    Audience,
    /// A claim the gateway needs is absent.
    #[error("the access token has no {0} claim")]
    MissingClaim(String),
    /// The issuer's keys could not be fetched or read.
    #[error("the issuer's keys: {0}")]
    Keys(String),
    /// The token names a key the cached set lacks, and the issuer's keys
    /// could not be fetched again to look for it (the issuer is down or
    /// answers garbage): nothing is known against the token, so the
    /// request is to be retried, not the token dropped.
    #[error(
        "the issuer's keys could not be fetched to check this token's signing key ({reason}); retry in {retry_after_secs} s"
    )]
    KeysUnavailable {
        /// Why the fetch failed.
        reason: String,
        /// Seconds until the keys are fetched again.
        retry_after_secs: u64,
    },
}

impl TokenError {
    /// Seconds after which a request refused for this error may succeed
    /// with the same token: `Some` only when the issuer, not the token, is
    /// at fault ([`TokenError::KeysUnavailable`]), which a gateway answers
    /// with 503 and `Retry-After` rather than 401 `invalid_token` (a client
    /// drops a token on `invalid_token`).
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Self::KeysUnavailable {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        }
    }
}

/// The last fetch of the keys that an unknown key id caused (or that
/// failed): when it was made, and why it failed, if it did.
struct LastFetch {
    at: Instant,
    failed: Option<String>,
}

/// Validates the access tokens of one issuer for this gateway.
pub struct TokenVerifier {
    settings: IssuerSettings,
    metadata: IssuerMetadata,
    http: reqwest::Client,
    keys: RwLock<Arc<KeySet>>,
    /// One fetch at a time; holds the last fetch that an unknown key id
    /// caused, or that failed.
    fetching: tokio::sync::Mutex<Option<LastFetch>>,
    fetches: AtomicU64,
    /// Tokens accepted under the current keys, by digest.
    accepted: Accepted,
    signature_checks: AtomicU64,
}

impl std::fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("issuer", &self.settings.issuer)
            .field("jwks_uri", &self.metadata.jwks_uri)
            .finish_non_exhaustive()
    }
}

/// The JWKS at `uri`, as keys.
async fn fetch_keys(http: &reqwest::Client, uri: &str) -> Result<KeySet, TokenError> {
    let document: Value = get_json(http, uri).await.map_err(TokenError::Keys)?;
    let set = KeySet::from_document(&document).map_err(TokenError::Keys)?;
    if !set.skipped.is_empty() {
        tracing::warn!(jwks_uri = uri, skipped = %set.skipped.join("; "), "some of the issuer's keys are not used");
    }
    Ok(set)
}

/// What a `jsonwebtoken` refusal means here.
fn refusal(error: &jsonwebtoken::errors::Error) -> TokenError {
    match error.kind() {
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer => TokenError::Issuer,
        ErrorKind::InvalidAudience => TokenError::Audience,
        ErrorKind::InvalidSignature => TokenError::Signature,
        ErrorKind::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim.clone()),
        ErrorKind::InvalidAlgorithm => TokenError::KeyAlgorithm {
            alg: "an algorithm".into(),
        },
        other => TokenError::Malformed(format!("{other:?}")),
    }
}

impl TokenVerifier {
    /// Reads the issuer's metadata and keys; fails when either cannot be
    /// read, so a misconfigured gateway says so at start.
    pub async fn discover(settings: IssuerSettings) -> Result<Self, DiscoveryError> {
        let http = crate::oauth_http::oauth_client();
        let metadata = discovery::discover(&http, &settings.issuer, settings.insecure_http).await?;
        let keys =
            fetch_keys(&http, &metadata.jwks_uri)
                .await
                .map_err(|e| DiscoveryError::Keys {
                    issuer: settings.issuer.clone(),
                    error: Box::new(e),
                })?;
        Ok(Self {
            settings,
            metadata,
            http,
            keys: RwLock::new(Arc::new(keys)),
            fetching: tokio::sync::Mutex::new(None),
            fetches: AtomicU64::new(1),
            accepted: Accepted::default(),
            signature_checks: AtomicU64::new(0),
        })
    }

    /// The settings it checks tokens with.
    pub fn settings(&self) -> &IssuerSettings {
        &self.settings
    }

    /// The issuer's metadata, as read at start.
    pub fn metadata(&self) -> &IssuerMetadata {
        &self.metadata
    }

    /// How many times the JWKS was fetched (the first at start).
    pub fn key_fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// How many tokens had their signature and claims checked (a token
    /// accepted before, under the same keys, is not checked again).
    pub fn signature_checks(&self) -> u64 {
        self.signature_checks.load(Ordering::Relaxed)
    }

    /// Checks `token` and answers who presented it: at once for a token
    /// accepted before under the current keys and not expired since.
    pub async fn verify(&self, token: &str) -> Result<Principal, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::TooLong);
        }
        let digest = accepted::digest(token);
        let current = self.keys.read().clone();
        if current.fetched.elapsed() < self.settings.keys_max_age
            && let Some(principal) = self.accepted.get(&digest, &current, self.settings.leeway)
        {
            return Ok(principal);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| {
            // `alg: none` (or anything unknown) cannot be read as a header.
            TokenError::Malformed(match e.kind() {
                ErrorKind::Json(_) | ErrorKind::Base64(_) | ErrorKind::Utf8(_) => {
                    "its header cannot be read (alg none and unknown algorithms are refused)"
                        .to_owned()
                }
                other => format!("{other:?}"),
            })
        })?;
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(TokenError::Algorithm(format!("{:?}", header.alg)));
        }
        let kid = header.kid.as_deref();
        let keys = self.keys_for(kid, header.alg).await?;
        let Some(key) = keys.find(kid, header.alg) else {
            return Err(TokenError::UnknownKey {
                kid: kid.map_or_else(|| "(without a key id)".to_owned(), |k| format!("{k:?}")),
            });
        };
        if !key.algorithms.contains(&header.alg) {
            return Err(TokenError::KeyAlgorithm {
                alg: format!("{:?}", header.alg),
            });
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = self.settings.leeway.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&self.settings.accepted_audiences());
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        self.signature_checks.fetch_add(1, Ordering::Relaxed);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| refusal(&e))?;
        let principal = self.principal(&data.claims)?;
        // `exp` is required and was checked: a number of seconds.
        if let Some(exp) = data.claims.get("exp").and_then(Value::as_f64) {
            let exp = exp.max(0.0) as u64;
            self.accepted
                .insert(digest, exp, &keys, &principal, self.settings.leeway);
        }
        Ok(principal)
    }

    /// The principal of verified `claims`.
    fn principal(&self, claims: &Map<String, Value>) -> Result<Principal, TokenError> {
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| TokenError::MissingClaim("sub".into()))?;
        if subject.len() > extpool_core::principal::MAX_IDENTIFIER_BYTES {
            return Err(TokenError::Malformed(format!(
                "its subject is longer than {} bytes",
                extpool_core::principal::MAX_IDENTIFIER_BYTES
            )));
        }
        let mut kept = std::collections::BTreeMap::new();
        for name in &self.settings.claims {
            if let Some(value) = claims.get(name) {
                kept.insert(name.clone(), extpool_core::claim_values(value));
            }
        }
        let mut principal = Principal {
            issuer: self.settings.issuer.clone(),
            subject: subject.to_owned(),
            claims: kept,
            operator: false,
        };
        if let Some(operator) = &self.settings.operator {
            let values = claims.get(&operator.claim).map(extpool_core::claim_values);
            principal.operator = values.is_some_and(|v| v.contains(&operator.value));
        }
        Ok(principal)
    }

    /// The key set to look `kid` up in: the cached one, fetched again when
    /// it is older than its max age, or when it lacks `kid` and no fetch
    /// for an unknown key happened within the refetch interval.
    async fn keys_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<Arc<KeySet>, TokenError> {
        let cached = self.keys.read().clone();
        let stale = cached.fetched.elapsed() >= self.settings.keys_max_age;
        let known = cached.find(kid, alg).is_some();
        if known && !stale {
            return Ok(cached);
        }
        let mut last = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        let current = self.keys.read().clone();
        if !Arc::ptr_eq(&current, &cached) {
            return Ok(current);
        }
        let interval = self.settings.refetch_interval;
        // A fetch failed within the interval: the issuer is not asked
        // again before it is over (an outage is not hammered), and a key
        // the cache lacks cannot be checked until then.
        if let Some(LastFetch {
            at,
            failed: Some(reason),
        }) = last.as_ref()
            && at.elapsed() < interval
        {
            if known {
                return Ok(current);
            }
            return Err(TokenError::KeysUnavailable {
                reason: reason.clone(),
                retry_after_secs: retry_after(interval.saturating_sub(at.elapsed())),
            });
        }
        let allowed = stale || last.as_ref().is_none_or(|l| l.at.elapsed() >= interval);
        if !allowed {
            return Ok(current);
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        match fetch_keys(&self.http, &self.metadata.jwks_uri).await {
            Ok(keys) => {
                if !stale {
                    *last = Some(LastFetch {
                        at: Instant::now(),
                        failed: None,
                    });
                } else if last.as_ref().is_some_and(|l| l.failed.is_some()) {
                    *last = None;
                }
                let keys = Arc::new(keys);
                *self.keys.write() = keys.clone();
                tracing::debug!(issuer = %self.settings.issuer, "the issuer's keys were fetched again");
                Ok(keys)
            }
            Err(e) => {
                tracing::warn!(issuer = %self.settings.issuer, "fetching the issuer's keys again failed; the cached keys stay: {e}");
                let reason = e.to_string();
                *last = Some(LastFetch {
                    at: Instant::now(),
                    failed: Some(reason.clone()),
                });
                // A stale set that knows the key still verifies it; an
                // unknown key cannot be checked until the issuer answers.
                if known {
                    Ok(current)
                } else {
                    Err(TokenError::KeysUnavailable {
                        reason,
                        retry_after_secs: retry_after(interval),
                    })
                }
            }
        }
    }
}

/// Whole seconds (at least one) of `wait`, as `Retry-After` says them.
fn retry_after(wait: std::time::Duration) -> u64 {
    wait.as_secs()
        .saturating_add(u64::from(wait.subsec_nanos() > 0))
        .max(1)
}
