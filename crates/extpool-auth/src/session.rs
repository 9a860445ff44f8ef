//! [`OAuthSession`]: the access token of one server while serving.
//!
//! - **Restore.** The first request restores the stored grant (or the
//!   environment-backed one); a grant obtained for another URL, or a
//!   direct-DCR grant of another registration generation, is not used.
//! - **Refresh ahead of expiry.** A token with less than `min(60 s, half
//!   its lifetime)` left is refreshed before it is sent.
//! - **One refresh for everyone.** Tasks of one process queue on a gate;
//!   processes queue on the store's profile lock. Whoever holds the lock
//!   re-reads the record first: if another process already refreshed, its
//!   token is used and no request goes out. A rotated refresh token is
//!   saved before the lock is released.
//! - **401**: the rejected token is refreshed once (or replaced by a newer
//!   stored one); where a login is allowed (an [`Authorizer`] was given)
//!   and refresh cannot help, a login runs instead.
//! - **403 `insufficient_scope`**: with an authorizer, a new authorization
//!   asks for the union of the granted and required scopes, at most
//!   `max_step_ups` times; without one, the wanted scopes are recorded for
//!   the next `mcp login` and the caller is told to run it.
//! - Serving never opens a browser: the default context has no authorizer.
//!   Environment-backed profiles are never written (a refresh lives in
//!   memory only). Direct DCR never refreshes: expiry is `login-required`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::{AuthError, DcrError};
use crate::grant::{Grant, now_secs};
use crate::login::dcr;
use crate::login::{Authorizer, LoginOptions, LoginTarget};
use crate::profile::OAuthProfile;
use crate::refresh::{RefreshError, refresh};
use crate::secret::Secret;
use crate::store::{CredentialStore, default_dir};

/// Host-wide OAuth settings shared by every server's session.
#[derive(Clone)]
pub struct AuthContext {
    /// Where logins may happen while serving (`None`: never; the default).
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Store directory for profiles that name none (default: [`default_dir`]).
    pub store_dir: Option<PathBuf>,
    /// Step-up authorizations allowed per session.
    pub max_step_ups: u32,
    /// Each caller's delegated tokens (`token_exchange`, `passthrough`),
    /// which the gateway puts and the servers' sessions send.
    pub delegated: Arc<crate::delegated::DelegatedTokens>,
}

impl Default for AuthContext {
    fn default() -> Self {
        Self {
            authorizer: None,
            store_dir: None,
            max_step_ups: 2,
            delegated: crate::delegated::DelegatedTokens::new(),
        }
    }
}

impl std::fmt::Debug for AuthContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthContext")
            .field("interactive", &self.authorizer.is_some())
            .field("store_dir", &self.store_dir)
            .field("max_step_ups", &self.max_step_ups)
            .finish()
    }
}

impl AuthContext {
    /// The store directory of `profile`.
    pub fn store_dir_for(&self, profile: &OAuthProfile) -> PathBuf {
        profile
            .store
            .clone()
            .or_else(|| self.store_dir.clone())
            .unwrap_or_else(default_dir)
    }
}

enum Synced {
    Grant(Arc<Grant>),
    NeedsLogin(String),
}

/// The OAuth state of one server; see the module docs.
pub struct OAuthSession {
    server: String,
    /// The name of its records in the store ([`OAuthProfile::record_name`]).
    record: String,
    url: String,
    profile: OAuthProfile,
    context: AuthContext,
    http: reqwest::Client,
    store: parking_lot::Mutex<Option<CredentialStore>>,
    current: parking_lot::RwLock<Option<Arc<Grant>>>,
    gate: tokio::sync::Mutex<()>,
    step_ups: AtomicU32,
}

impl std::fmt::Debug for OAuthSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSession")
            .field("server", &self.server)
            .field("profile", &self.profile)
            .field("has_grant", &self.current.read().is_some())
            .finish()
    }
}

impl OAuthSession {
    /// A session for `server` at `url`; checks the profile, touches nothing.
    pub fn new(
        server: impl Into<String>,
        url: impl Into<String>,
        profile: OAuthProfile,
        context: AuthContext,
    ) -> Result<Self, AuthError> {
        let server = server.into();
        profile.validate().map_err(|source| AuthError::Profile {
            server: server.clone(),
            error: source,
        })?;
        Ok(Self {
            record: profile.record_name(&server),
            server,
            url: url.into(),
            profile,
            context,
            http: crate::oauth_http::oauth_client(),
            store: parking_lot::Mutex::new(None),
            current: parking_lot::RwLock::new(None),
            gate: tokio::sync::Mutex::new(()),
            step_ups: AtomicU32::new(0),
        })
    }

    /// The server name.
    pub fn server(&self) -> &str {
        &self.server
    }

    fn store(&self) -> Result<CredentialStore, AuthError> {
        let mut slot = self.store.lock();
        if let Some(store) = slot.as_ref() {
            return Ok(store.clone());
        }
        let store = CredentialStore::open(self.context.store_dir_for(&self.profile))?;
        *slot = Some(store.clone());
        Ok(store)
    }

    fn current(&self) -> Option<Arc<Grant>> {
        self.current.read().clone()
    }

    fn adopt(&self, grant: Grant) -> Arc<Grant> {
        let grant = Arc::new(grant);
        *self.current.write() = Some(grant.clone());
        grant
    }

    fn login_required(&self, reason: impl Into<String>) -> AuthError {
        if self.profile.is_direct_dcr() {
            return AuthError::Dcr {
                server: self.server.clone(),
                kind: DcrError::LoginRequired(self.server.clone()),
            };
        }
        if let Some(var) = &self.profile.credentials_env {
            return AuthError::Environment {
                server: self.server.clone(),
                var: var.clone(),
                reason: format!(
                    "holds no usable grant ({}); update its Secret and restart the process",
                    reason.into()
                ),
            };
        }
        if self.profile.per_user && self.profile.principal.is_some() {
            return AuthError::CallerLoginRequired {
                server: self.server.clone(),
                reason: reason.into(),
            };
        }
        AuthError::LoginRequired {
            server: self.server.clone(),
            reason: reason.into(),
        }
    }

    fn can_login_here(&self) -> bool {
        self.context.authorizer.is_some()
            && !self.profile.is_direct_dcr()
            && !self.profile.is_environment_backed()
    }

    /// The delegated token of this session's caller, when its profile is
    /// delegated (`Some(Err)`: there is none, or it expired).
    fn delegated_token(&self) -> Option<Result<Secret, AuthError>> {
        let mode = self.profile.delegation()?;
        let found = self
            .context
            .delegated
            .get(&self.record)
            .filter(|t| t.fresh_for(0));
        Some(found.map(|t| t.token).ok_or_else(|| AuthError::Delegated {
            server: self.server.clone(),
            reason: format!(
                "no {} token of this caller's yet (the gateway makes one when the caller calls one of its tools)",
                mode.replace('_', " ")
            ),
        }))
    }

    /// The token for the next request; `None` asks for an unauthenticated
    /// request whose 401 challenge starts a login (only with an authorizer).
    pub async fn access_token(&self) -> Result<Option<Secret>, AuthError> {
        if let Some(delegated) = self.delegated_token() {
            return delegated.map(Some);
        }
        if let Some(g) = self.current()
            && !g.is_due(now_secs())
        {
            return Ok(Some(g.access_token.clone()));
        }
        let _gate = self.gate.lock().await;
        if let Some(g) = self.current()
            && !g.is_due(now_secs())
        {
            return Ok(Some(g.access_token.clone()));
        }
        match self.sync(None).await? {
            Synced::Grant(g) => Ok(Some(g.access_token.clone())),
            Synced::NeedsLogin(_) if self.can_login_here() => Ok(None),
            Synced::NeedsLogin(reason) => Err(self.login_required(reason)),
        }
    }

    /// The server answered 401 to `sent`: one refresh (or a newer stored
    /// token, or a login where allowed).
    pub async fn on_unauthorized(
        &self,
        sent: Option<&Secret>,
        challenge: &str,
    ) -> Result<Secret, AuthError> {
        if let Some(mode) = self.profile.delegation() {
            // Made by the gateway from the caller's token: nothing to
            // refresh here; the caller's next call makes another.
            self.context.delegated.forget(&self.record);
            return Err(AuthError::Delegated {
                server: self.server.clone(),
                reason: format!(
                    "the server refused the caller's {} token",
                    mode.replace('_', " ")
                ),
            });
        }
        let _gate = self.gate.lock().await;
        if let Some(g) = self.current()
            && Some(&g.access_token) != sent
            && !g.is_due(now_secs())
        {
            return Ok(g.access_token.clone());
        }
        let rejected = sent.cloned().unwrap_or_else(|| Secret::new(""));
        match self.sync(Some(&rejected)).await? {
            Synced::Grant(g) => Ok(g.access_token.clone()),
            Synced::NeedsLogin(_) if self.can_login_here() => {
                self.interactive_login(Some(challenge), Vec::new()).await
            }
            Synced::NeedsLogin(reason) => Err(self.login_required(reason)),
        }
    }

    /// The error for a second 401 after the retry.
    pub fn rejected_after_retry(&self) -> AuthError {
        self.login_required("the server rejected the refreshed token")
    }

    /// The server answered 403 `insufficient_scope` to `sent`.
    pub async fn on_insufficient_scope(
        &self,
        sent: Option<&Secret>,
        challenge: &str,
        required: Option<&str>,
    ) -> Result<Secret, AuthError> {
        if self.profile.delegation().is_some() {
            return Err(AuthError::Delegated {
                server: self.server.clone(),
                reason: format!(
                    "the server wants scope {:?}, which the caller's token lacks (insufficient_scope)",
                    required.unwrap_or_default()
                ),
            });
        }
        let _gate = self.gate.lock().await;
        if let Some(g) = self.current()
            && Some(&g.access_token) != sent
        {
            return Ok(g.access_token.clone());
        }
        let required: Vec<String> = required
            .map(str::to_owned)
            .or_else(|| challenge_param(challenge, "scope"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let attempts = self.step_ups.load(Ordering::Acquire);
        if attempts >= self.context.max_step_ups {
            return Err(AuthError::StepUpLimit {
                server: self.server.clone(),
                attempts: attempts + 1,
            });
        }
        self.step_ups.fetch_add(1, Ordering::AcqRel);
        let granted = self.current().map(|g| g.scopes.clone()).unwrap_or_default();
        let mut wanted = granted;
        for s in required {
            if !wanted.contains(&s) {
                wanted.push(s);
            }
        }
        if self.can_login_here() {
            return self.interactive_login(Some(challenge), wanted).await;
        }
        if !self.profile.is_environment_backed() {
            self.record_wanted_scopes(&wanted).await?;
        }
        Err(AuthError::InsufficientScope {
            server: self.server.clone(),
            scopes: wanted.join(" "),
        })
    }

    /// A request made after a step-up succeeded: the step-up budget is restored.
    pub fn step_up_succeeded(&self) {
        self.step_ups.store(0, Ordering::Release);
    }

    async fn record_wanted_scopes(&self, wanted: &[String]) -> Result<(), AuthError> {
        let store = self.store()?;
        let _lock = store.lock_async(&self.record).await?;
        if let Some(mut grant) = store.load::<Grant>(&self.record)? {
            grant.wanted_scopes = wanted.to_vec();
            store.save(&self.record, &grant)?;
        }
        Ok(())
    }

    async fn interactive_login(
        &self,
        challenge: Option<&str>,
        extra_scopes: Vec<String>,
    ) -> Result<Secret, AuthError> {
        let Some(authorizer) = self.context.authorizer.clone() else {
            return Err(self.login_required("no stored grant"));
        };
        let store = self.store()?;
        let options = LoginOptions {
            challenge: challenge.map(str::to_owned),
            extra_scopes,
            ..LoginOptions::default()
        };
        let target = LoginTarget {
            server: &self.server,
            url: &self.url,
            profile: &self.profile,
        };
        let grant = crate::login::login(target, &store, authorizer.as_ref(), &options).await?;
        Ok(self.adopt(grant).access_token.clone())
    }

    /// Brings the in-memory grant up to date; see the module docs.
    async fn sync(&self, rejected: Option<&Secret>) -> Result<Synced, AuthError> {
        if let Some(var) = &self.profile.credentials_env {
            return self.sync_environment(var, rejected).await;
        }
        let store = self.store()?;
        let _lock = store.lock_async(&self.record).await?;
        let grant = match self.load_usable(&store)? {
            Ok(grant) => grant,
            Err(reason) => return Ok(Synced::NeedsLogin(reason)),
        };
        let now = now_secs();
        if !grant.is_due(now) && rejected.is_none_or(|r| *r != grant.access_token) {
            return Ok(Synced::Grant(self.adopt(grant)));
        }
        if grant.can_refresh() {
            match refresh(&self.http, &grant).await {
                Ok(fresh) => {
                    store.save(&self.record, &fresh)?;
                    return Ok(Synced::Grant(self.adopt(fresh)));
                }
                Err(RefreshError::Rejected(reason)) => {
                    *self.current.write() = None;
                    return Ok(Synced::NeedsLogin(format!(
                        "the refresh token was rejected: {reason}"
                    )));
                }
                Err(source) => {
                    return Err(AuthError::Refresh {
                        server: self.server.clone(),
                        error: source,
                    });
                }
            }
        }
        if rejected.is_none() && !grant.is_expired(now) {
            return Ok(Synced::Grant(self.adopt(grant)));
        }
        *self.current.write() = None;
        Ok(Synced::NeedsLogin(if rejected.is_some() {
            "the server rejected the token and there is no refresh token".into()
        } else {
            "the access token expired and cannot be refreshed".into()
        }))
    }

    /// The stored grant if it may be used for this server, else why not.
    fn load_usable(&self, store: &CredentialStore) -> Result<Result<Grant, String>, AuthError> {
        let Some(grant) = store.load::<Grant>(&self.record)? else {
            return Ok(Err("no stored grant".into()));
        };
        if dcr::canonical_resource(&grant.server_url) != dcr::canonical_resource(&self.url) {
            return Ok(Err(format!(
                "the stored grant was obtained for {}, not {}",
                grant.server_url, self.url
            )));
        }
        if self.profile.is_direct_dcr() {
            let current = match dcr::read(store, &self.server)? {
                dcr::Found::Present(r) => dcr::grant_matches(&r, &grant),
                _ => false,
            };
            if !current {
                return Ok(Err("the grant belongs to another DCR registration".into()));
            }
        }
        Ok(Ok(grant))
    }

    async fn sync_environment(
        &self,
        var: &str,
        rejected: Option<&Secret>,
    ) -> Result<Synced, AuthError> {
        let grant = match self.current() {
            Some(g) => (*g).clone(),
            None => self.grant_from_environment(var)?,
        };
        let now = now_secs();
        if !grant.is_due(now) && rejected.is_none_or(|r| *r != grant.access_token) {
            return Ok(Synced::Grant(self.adopt(grant)));
        }
        if grant.can_refresh() {
            // Read-only: the rotation lives in this process only.
            return match refresh(&self.http, &grant).await {
                Ok(fresh) => Ok(Synced::Grant(self.adopt(fresh))),
                Err(RefreshError::Rejected(reason)) => Ok(Synced::NeedsLogin(reason)),
                Err(source) => Err(AuthError::Refresh {
                    server: self.server.clone(),
                    error: source,
                }),
            };
        }
        if rejected.is_none() && !grant.is_expired(now) {
            return Ok(Synced::Grant(self.adopt(grant)));
        }
        Ok(Synced::NeedsLogin("the token expired".into()))
    }

    fn grant_from_environment(&self, var: &str) -> Result<Grant, AuthError> {
        let env_error = |reason: String| AuthError::Environment {
            server: self.server.clone(),
            var: var.to_owned(),
            reason,
        };
        let value = std::env::var(var).map_err(|_| env_error("is not set".into()))?;
        serde_json::from_str::<Grant>(&value)
            // serde's message names the field, never the value of a string.
            .map_err(|e| {
                env_error(format!(
                    "is not a grant record (JSON): {}",
                    json_position(&e)
                ))
            })
    }
}

/// Where a JSON document is wrong, without quoting any of it.
fn json_position(e: &serde_json::Error) -> String {
    format!(
        "{:?} error at line {} column {}",
        e.classify(),
        e.line(),
        e.column()
    )
}

/// One `key="value"` parameter of a `WWW-Authenticate` header.
pub fn challenge_param(header: &str, key: &str) -> Option<String> {
    let url = url::Url::parse("http://localhost/").ok()?;
    let params = rmcp::transport::auth::WWWAuthenticateParams::parse(header, &url);
    match key {
        "scope" => params.scope,
        "error" => params.error,
        _ => None,
    }
}
