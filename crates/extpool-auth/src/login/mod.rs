//! `extpool mcp login`: discovery, client registration, authorization code
//! with PKCE (S256) and `resource=`, issuer check (RFC 9207), and the grant
//! stored — through rmcp's OAuth implementation.
//!
//! rmcp does discovery (RFC 9728 protected-resource metadata with the
//! `WWW-Authenticate` `resource_metadata` hint, RFC 8414 and OpenID
//! metadata with path-aware variants, issuer validation), scope selection,
//! registration (DCR, client ID metadata documents, pre-registered
//! clients), the authorization URL and the code exchange. This module picks
//! the client, runs the [`Authorizer`], and turns the result into a
//! [`Grant`] that can be refreshed later without discovery. Direct DCR
//! (`client: {mode: dcr}`) has its own path in [`dcr`].

pub mod authorizer;
pub mod dcr;

use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthorizationCallback, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, OAuthTokenResponse,
};
use tracing::instrument::WithSubscriber;

pub use authorizer::{
    AuthorizeError, Authorizer, HeadlessAuthorizer, LoginPrompt, LoopbackAuthorizer, NotOpened,
    PendingRedirect, PromptSink, openable,
};

use crate::error::AuthError;
use crate::grant::{Grant, TokenAuthMethod, now_secs};
use crate::profile::OAuthProfile;
use crate::secret::Secret;
use crate::store::CredentialStore;

/// `client_name` sent at registration.
pub const CLIENT_NAME: &str = "extpool";

/// The server being logged in to.
#[derive(Debug, Clone, Copy)]
pub struct LoginTarget<'a> {
    /// Server name (the profile).
    pub server: &'a str,
    /// MCP endpoint URL.
    pub url: &'a str,
    /// Its OAuth profile.
    pub profile: &'a OAuthProfile,
}

/// What to do with a direct-DCR registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DcrAction {
    /// Reuse a ready registration, or register when there is none.
    #[default]
    Normal,
    /// `--retry-dcr-registration`: redo an interrupted registration.
    Retry,
    /// `--reset-dcr-registration`: replace a ready registration and grant.
    Reset,
}

/// Options of one login.
#[derive(Debug, Clone, Default)]
pub struct LoginOptions {
    /// Direct-DCR action.
    pub dcr: DcrAction,
    /// Scopes to add (step-up).
    pub extra_scopes: Vec<String>,
    /// The `WWW-Authenticate` challenge that prompted this login, if any.
    pub challenge: Option<String>,
}

/// Logs in and stores the grant (under the profile's lock).
pub async fn login(
    target: LoginTarget<'_>,
    store: &CredentialStore,
    authorizer: &dyn Authorizer,
    options: &LoginOptions,
) -> Result<Grant, AuthError> {
    let server = target.server;
    target
        .profile
        .validate()
        .map_err(|source| AuthError::Profile {
            server: server.to_owned(),
            error: source,
        })?;
    if let Some(var) = &target.profile.credentials_env {
        return Err(AuthError::ReadOnly {
            server: server.to_owned(),
            var: var.clone(),
        });
    }
    if target.profile.is_direct_dcr() {
        return dcr::login(target, store, authorizer, options).await;
    }
    if options.dcr != DcrAction::Normal {
        return Err(AuthError::Dcr {
            server: server.to_owned(),
            kind: crate::error::DcrError::NotDcrProfile,
        });
    }
    // A previous grant's dynamically registered client is reused.
    let record = target.profile.record_name(server);
    let previous = match store.load::<Grant>(&record) {
        Ok(previous) => previous,
        Err(e) if e.is_corrupt() => {
            tracing::warn!(server, error = %e, "replacing an unreadable grant");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let grant = authorize(target, previous.as_ref(), authorizer, options).await?;
    let _lock = store.lock_async(&record).await?;
    store.save(&record, &grant)?;
    tracing::info!(server, scopes = ?grant.scopes, "OAuth login stored");
    Ok(grant)
}

/// Discovery: metadata from the challenge's hint, the well-known
/// locations, or (2025-03-26 servers) the legacy default endpoints.
pub(crate) async fn discover(
    server: &str,
    url: &str,
    challenge: Option<&str>,
) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthError> {
    let failed = |e: rmcp::transport::auth::AuthError| AuthError::Discovery {
        server: server.to_owned(),
        reason: e.to_string(),
    };
    let mut manager = AuthorizationManager::new(url).await.map_err(failed)?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(failed)?;
    tracing::debug!(server, source = ?resolution.source, "OAuth metadata resolved");
    manager.set_metadata(resolution.metadata.clone());
    Ok((manager, resolution.metadata))
}

/// The client a login uses.
enum Client {
    Registered {
        id: String,
        secret: Option<Secret>,
        dynamic: bool,
    },
    MetadataDocument(String),
}

fn auth_methods(metadata: &AuthorizationMetadata) -> Option<Vec<String>> {
    metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

fn dedup(scopes: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scopes {
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Runs discovery, registration and the authorization; returns the grant.
pub(crate) async fn authorize(
    target: LoginTarget<'_>,
    previous: Option<&Grant>,
    authorizer: &dyn Authorizer,
    options: &LoginOptions,
) -> Result<Grant, AuthError> {
    let server = target.server;
    let profile = target.profile;
    let (mut manager, metadata) =
        discover(server, target.url, options.challenge.as_deref()).await?;
    let pending = start(server, authorizer).await?;
    let redirect_uri = pending.redirect_uri();
    let scopes = dedup(
        profile
            .scopes
            .iter()
            .chain(&options.extra_scopes)
            .chain(previous.map(|p| &p.wanted_scopes).into_iter().flatten())
            .cloned(),
    );
    let cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let client = if let Some(id) = &profile.client_id {
        Client::Registered {
            id: id.clone(),
            secret: profile.client_secret.clone().map(Secret::new),
            dynamic: false,
        }
    } else if let Some(prev) = previous.filter(|p| {
        p.registered_client && p.issuer == metadata.issuer && p.server_url == target.url
    }) {
        Client::Registered {
            id: prev.client_id.clone(),
            secret: prev.client_secret.clone(),
            dynamic: true,
        }
    } else if let (Some(url), true) = (&profile.client_metadata_url, cimd) {
        Client::MetadataDocument(url.clone())
    } else if metadata.registration_endpoint.is_some() {
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let config = manager
            .register_client(CLIENT_NAME, &redirect_uri, &scope_refs)
            .await
            .map_err(|e| AuthError::Registration {
                server: server.to_owned(),
                reason: e.to_string(),
            })?;
        tracing::info!(server, client_id = %config.client_id, "registered an OAuth client (DCR)");
        Client::Registered {
            id: config.client_id,
            secret: config.client_secret.map(Secret::new),
            dynamic: true,
        }
    } else {
        return Err(AuthError::Registration {
            server: server.to_owned(),
            reason: "the authorization server offers no client registration and no client ID metadata documents; set `oauth.client_id`".into(),
        });
    };
    let methods = auth_methods(&metadata);
    let mut request = AuthorizationRequest::new(redirect_uri.clone()).with_client_name(CLIENT_NAME);
    request = if scopes.is_empty() {
        request.with_initial_scope_selection()
    } else {
        request.with_scopes(scopes.clone())
    };
    let (client_id, secret, auth_method, dynamic) = match client {
        Client::Registered {
            id,
            secret,
            dynamic,
        } => {
            let method = TokenAuthMethod::choose(secret.is_some(), methods.as_deref());
            request = request.with_preregistered_client(id.clone());
            let secret = secret.filter(|_| method != TokenAuthMethod::None);
            if let Some(s) = &secret {
                request = request.with_client_secret(s.expose().to_owned());
            }
            (id, secret, method, dynamic)
        }
        Client::MetadataDocument(url) => {
            request = request.with_client_metadata_url(url.clone());
            (url, None, TokenAuthMethod::None, false)
        }
    };
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| AuthError::Authorization {
            server: server.to_owned(),
            reason: e.to_string(),
        })?;
    let auth_url = session.get_authorization_url().to_owned();
    let resource = query_param(&auth_url, "resource").unwrap_or_else(|| target.url.to_owned());
    let (token, granted) = complete(server, &session, pending, &auth_url).await?;
    Ok(Grant {
        client_id,
        client_secret: secret,
        auth_method,
        registered_client: dynamic,
        ..issued_grant(target, &metadata, resource, &token, granted)
    })
}

/// Prepares the authorizer's redirect.
pub(crate) async fn start(
    server: &str,
    authorizer: &dyn Authorizer,
) -> Result<Box<dyn PendingRedirect>, AuthError> {
    authorizer
        .start()
        .await
        .map_err(|e| AuthError::Authorization {
            server: server.to_owned(),
            reason: e.0,
        })
}

/// A grant for `target` from a token response, for a public client; the
/// caller sets the client fields.
pub(crate) fn issued_grant(
    target: LoginTarget<'_>,
    metadata: &AuthorizationMetadata,
    resource: String,
    token: &OAuthTokenResponse,
    scopes: Vec<String>,
) -> Grant {
    let now = now_secs();
    Grant {
        server_url: target.url.to_owned(),
        resource,
        issuer: metadata.issuer.clone(),
        token_endpoint: metadata.token_endpoint.clone(),
        client_id: String::new(),
        client_secret: None,
        auth_method: TokenAuthMethod::None,
        registered_client: false,
        access_token: Secret::new(token.access_token().secret().clone()),
        refresh_token: token
            .refresh_token()
            .map(|t| Secret::new(t.secret().clone())),
        expires_at: token.expires_in().map(|d| now.saturating_add(d.as_secs())),
        obtained_at: now,
        scopes,
        wanted_scopes: Vec::new(),
        dcr_generation: None,
    }
}

/// Sends the user to `auth_url`, checks the redirect and exchanges the code.
pub(crate) async fn complete(
    server: &str,
    session: &AuthorizationSession,
    pending: Box<dyn PendingRedirect>,
    auth_url: &str,
) -> Result<(OAuthTokenResponse, Vec<String>), AuthError> {
    let authorization = |reason: String| AuthError::Authorization {
        server: server.to_owned(),
        reason,
    };
    let redirect = pending
        .wait(auth_url)
        .await
        .map_err(|e| authorization(e.0))?;
    if let Some(error) = query_param(&redirect, "error") {
        let description = query_param(&redirect, "error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(authorization(format!(
            "the authorization server answered {error}{description}"
        )));
    }
    let callback = AuthorizationCallback::from_redirect_url(&redirect)
        .map_err(|e| authorization(e.to_string()))?;
    // rmcp logs the code and the token response at DEBUG inside the
    // exchange; nothing of this future may reach any subscriber.
    let token = session
        .handle_callback_with_issuer(
            &callback.code,
            &callback.csrf_token,
            callback.issuer.as_deref(),
        )
        .with_subscriber(tracing::subscriber::NoSubscriber::default())
        .await
        .map_err(|e| match e {
            rmcp::transport::auth::AuthError::TokenExchangeFailed(reason) => {
                AuthError::TokenExchange {
                    server: server.to_owned(),
                    reason,
                }
            }
            other => authorization(other.to_string()),
        })?;
    let granted = session.auth_manager.get_current_scopes().await;
    Ok((token, granted))
}

/// The first value of `name` in `url`'s query.
pub(crate) fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
