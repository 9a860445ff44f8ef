//! Direct DCR (`client: {mode: dcr}`), as the behaviour doc defines it.
//!
//! - A public client (`token_endpoint_auth_method: none`), registered with
//!   `grant_types: [authorization_code]` only; the authorization asks for
//!   `openid` alone with `prompt=consent` (explicit consent); a refresh
//!   token, if one is issued anyway, is discarded: no refresh, ever.
//! - The registration is its own record, apart from the access grant. Each
//!   registration has a generation; a grant is bound to the generation it
//!   was obtained under, and is void under any other.
//! - A registration is written `pending` (with its identity: profile,
//!   principal, canonical resource, exact issuer) before the request goes
//!   out and `ready` once the client id is back, so an interrupted one is
//!   recognised. `--retry-dcr-registration` redoes it when the identity
//!   still matches (else `pending-identity-mismatch`);
//!   `--reset-dcr-registration` replaces a ready registration whose grant
//!   is valid. Any other state fails closed, changing nothing. The upstream
//!   client is never revoked.

use serde::{Deserialize, Serialize};

use oauth2::TokenResponse;
use rmcp::transport::auth::{AuthorizationSession, OAuthClientConfig};

use super::{DcrAction, LoginOptions, LoginTarget, complete, discover};
use crate::error::{AuthError, DcrError};
use crate::grant::{Grant, now_secs};
use crate::login::authorizer::Authorizer;
use crate::store::{CredentialStore, Record};

/// Where a registration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegistrationState {
    /// The request was (maybe) sent; no client id recorded.
    Pending,
    /// The client id is known.
    Ready,
}

/// Who a registration is for; a retry must match it exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DcrIdentity {
    /// The profile (server name).
    pub profile: String,
    /// The principal.
    pub principal: String,
    /// The canonical MCP resource URL.
    pub resource: String,
    /// The exact issuer string.
    pub issuer: String,
}

/// A direct-DCR registration record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Pending or ready.
    pub state: RegistrationState,
    /// Generation, starting at 1, increased by each reset.
    pub generation: u64,
    /// Who it is for.
    pub identity: DcrIdentity,
    /// The client id, once ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The registration endpoint used.
    pub registration_endpoint: String,
    /// When the record was written.
    pub updated_at: u64,
}

impl Record for Registration {
    const KIND: &'static str = "registration";
}

/// A stored registration as found.
pub enum Found {
    /// No record.
    Absent,
    /// A record.
    Present(Registration),
    /// A record that cannot be read.
    Corrupt(String),
}

impl Found {
    fn name(&self) -> &'static str {
        match self {
            Self::Absent => "absent",
            Self::Present(r) if r.state == RegistrationState::Pending => "pending",
            Self::Present(_) => "ready",
            Self::Corrupt(_) => "corrupt",
        }
    }
}

/// Reads the registration of `server`.
pub fn read(store: &CredentialStore, server: &str) -> Result<Found, AuthError> {
    match store.load::<Registration>(server) {
        Ok(None) => Ok(Found::Absent),
        Ok(Some(r)) => Ok(Found::Present(r)),
        Err(e) if e.is_corrupt() => Ok(Found::Corrupt(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// The canonical form of a resource URL (parsed and re-serialised).
pub fn canonical_resource(url: &str) -> String {
    url::Url::parse(url)
        .map(|u| u.to_string())
        .unwrap_or_else(|_| url.to_owned())
}

fn dcr_error(server: &str, kind: DcrError) -> AuthError {
    AuthError::Dcr {
        server: server.to_owned(),
        kind,
    }
}

/// Is `grant` usable under `registration` (same generation, ready)?
pub fn grant_matches(registration: &Registration, grant: &Grant) -> bool {
    registration.state == RegistrationState::Ready
        && grant.dcr_generation == Some(registration.generation)
}

/// Logs in with direct DCR; see the module docs.
pub(super) async fn login(
    target: LoginTarget<'_>,
    store: &CredentialStore,
    authorizer: &dyn Authorizer,
    options: &LoginOptions,
) -> Result<Grant, AuthError> {
    let server = target.server;
    let (manager, metadata) = discover(server, target.url, options.challenge.as_deref()).await?;
    let issuer = metadata
        .issuer
        .clone()
        .ok_or_else(|| AuthError::Discovery {
            server: server.to_owned(),
            reason: "direct DCR needs an authorization server that publishes its issuer".into(),
        })?;
    let identity = DcrIdentity {
        profile: server.to_owned(),
        principal: target.profile.principal(),
        resource: canonical_resource(target.url),
        issuer,
    };
    let pending = super::start(server, authorizer).await?;
    let redirect_uri = pending.redirect_uri();

    // Decide under the lock; write `pending` before anything goes out.
    let lock = store.lock_async(server).await?;
    let found = read(store, server)?;
    let generation = match decide(server, found, options.dcr, &identity, store)? {
        Decision::Register(generation) => generation,
        Decision::Reuse(registration) => {
            drop(lock);
            return authorize_with(target, store, manager, &metadata, registration, pending).await;
        }
    };
    let endpoint =
        metadata
            .registration_endpoint
            .clone()
            .ok_or_else(|| AuthError::Registration {
                server: server.to_owned(),
                reason: "the authorization server has no registration_endpoint".into(),
            })?;
    let mut record = Registration {
        state: RegistrationState::Pending,
        generation,
        identity,
        client_id: None,
        registration_endpoint: endpoint.clone(),
        updated_at: now_secs(),
    };
    store.save(server, &record)?;
    let client_id = register(server, &endpoint, &redirect_uri, target).await?;
    record.state = RegistrationState::Ready;
    record.client_id = Some(client_id);
    record.updated_at = now_secs();
    store.save(server, &record)?;
    drop(lock);
    tracing::info!(server, generation, "direct DCR registration ready");
    authorize_with(target, store, manager, &metadata, record, pending).await
}

enum Decision {
    Register(u64),
    Reuse(Registration),
}

/// The state machine: what a login does in each (state, action).
fn decide(
    server: &str,
    found: Found,
    action: DcrAction,
    identity: &DcrIdentity,
    store: &CredentialStore,
) -> Result<Decision, AuthError> {
    let state = found.name();
    let fail = |kind| Err(dcr_error(server, kind));
    let registration = match found {
        Found::Corrupt(reason) => return fail(DcrError::Corrupt(reason)),
        Found::Absent => {
            return match action {
                DcrAction::Normal => Ok(Decision::Register(1)),
                DcrAction::Retry => fail(DcrError::NotPending(state)),
                DcrAction::Reset => fail(DcrError::NotReady(state)),
            };
        }
        Found::Present(r) => r,
    };
    match (registration.state, action) {
        (RegistrationState::Pending, DcrAction::Normal) => {
            fail(DcrError::Pending(server.to_owned()))
        }
        (RegistrationState::Pending, DcrAction::Reset) => fail(DcrError::NotReady(state)),
        (RegistrationState::Pending, DcrAction::Retry) => {
            check_identity(&registration.identity, identity).map_err(|k| dcr_error(server, k))?;
            Ok(Decision::Register(registration.generation))
        }
        (RegistrationState::Ready, DcrAction::Retry) => fail(DcrError::NotPending(state)),
        (RegistrationState::Ready, DcrAction::Reset) => {
            let valid = store
                .load::<Grant>(server)
                .ok()
                .flatten()
                .is_some_and(|g| grant_matches(&registration, &g) && !g.is_expired(now_secs()));
            if !valid {
                return fail(DcrError::NotReady("ready without a valid grant"));
            }
            Ok(Decision::Register(registration.generation + 1))
        }
        (RegistrationState::Ready, DcrAction::Normal) => {
            if registration.identity != *identity {
                return Err(AuthError::Registration {
                    server: server.to_owned(),
                    reason: format!(
                        "the stored registration was made for another identity (issuer {:?}, resource {:?}); run `extpool mcp logout {server}` first",
                        registration.identity.issuer, registration.identity.resource
                    ),
                });
            }
            Ok(Decision::Reuse(registration))
        }
    }
}

fn check_identity(recorded: &DcrIdentity, current: &DcrIdentity) -> Result<(), DcrError> {
    let pairs = [
        ("profile", &recorded.profile, &current.profile),
        ("principal", &recorded.principal, &current.principal),
        ("resource", &recorded.resource, &current.resource),
        ("issuer", &recorded.issuer, &current.issuer),
    ];
    for (field, recorded, current) in pairs {
        if recorded != current {
            return Err(DcrError::PendingIdentityMismatch {
                field,
                recorded: recorded.clone(),
                current: current.clone(),
            });
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct RegistrationRequest<'a> {
    client_name: &'a str,
    redirect_uris: [&'a str; 1],
    grant_types: [&'static str; 1],
    response_types: [&'static str; 1],
    token_endpoint_auth_method: &'static str,
    scope: &'static str,
    application_type: &'static str,
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
}

/// RFC 7591 registration of a public, authorization-code-only client.
async fn register(
    server: &str,
    endpoint: &str,
    redirect_uri: &str,
    target: LoginTarget<'_>,
) -> Result<String, AuthError> {
    let failed = |reason: String| AuthError::Registration {
        server: server.to_owned(),
        reason,
    };
    let name = target
        .profile
        .client
        .dcr
        .as_ref()
        .and_then(|d| d.client_name.as_deref())
        .unwrap_or(super::CLIENT_NAME);
    let request = RegistrationRequest {
        client_name: name,
        redirect_uris: [redirect_uri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        scope: "openid",
        application_type: "native",
    };
    let response = crate::oauth_http::oauth_client()
        .post(endpoint)
        .json(&request)
        .send()
        .await
        .map_err(|e| failed(e.to_string()))?;
    let status = response.status();
    let body = crate::oauth_http::read_bounded(response)
        .await
        .map_err(|e| failed(e.to_string()))?;
    if !status.is_success() {
        return Err(failed(format!("HTTP {status}")));
    }
    let parsed: RegistrationResponse =
        serde_json::from_slice(&body).map_err(|e| failed(format!("unreadable response ({e})")))?;
    Ok(parsed.client_id)
}

/// Authorizes under a ready registration and stores the generation-bound grant.
async fn authorize_with(
    target: LoginTarget<'_>,
    store: &CredentialStore,
    mut manager: rmcp::transport::auth::AuthorizationManager,
    metadata: &rmcp::transport::auth::AuthorizationMetadata,
    registration: Registration,
    pending: Box<dyn super::PendingRedirect>,
) -> Result<Grant, AuthError> {
    let server = target.server;
    let failed = |e: rmcp::transport::auth::AuthError| AuthError::Authorization {
        server: server.to_owned(),
        reason: e.to_string(),
    };
    let client_id = registration.client_id.clone().unwrap_or_default();
    let redirect_uri = pending.redirect_uri();
    manager
        .configure_client(OAuthClientConfig::new(
            client_id.clone(),
            redirect_uri.clone(),
        ))
        .map_err(failed)?;
    // `openid` only (rmcp's session builder would add offline_access).
    let url = manager
        .get_authorization_url(&["openid"])
        .await
        .map_err(failed)?;
    let auth_url = with_query(&url, "prompt", "consent");
    let session = AuthorizationSession::for_scope_upgrade(manager, auth_url.clone(), &redirect_uri);
    let resource =
        super::query_param(&auth_url, "resource").unwrap_or_else(|| target.url.to_owned());
    let (token, granted) = complete(server, &session, pending, &auth_url).await?;
    if token.refresh_token().is_some() {
        tracing::info!(
            server,
            "discarding a refresh token: direct DCR never refreshes"
        );
    }
    let grant = Grant {
        client_id,
        refresh_token: None,
        dcr_generation: Some(registration.generation),
        ..super::issued_grant(target, metadata, resource, &token, granted)
    };
    let _lock = store.lock_async(server).await?;
    // The registration may have been reset meanwhile: bind only to the current one.
    match read(store, server)? {
        Found::Present(current)
            if current.generation == registration.generation
                && current.state == RegistrationState::Ready => {}
        other => {
            return Err(AuthError::Registration {
                server: server.to_owned(),
                reason: format!(
                    "the registration changed during the login (now {})",
                    other.name()
                ),
            });
        }
    }
    store.save(server, &grant)?;
    Ok(grant)
}

fn with_query(url: &str, key: &str, value: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.query_pairs_mut().append_pair(key, value);
            u.to_string()
        }
        Err(_) => url.to_owned(),
    }
}
