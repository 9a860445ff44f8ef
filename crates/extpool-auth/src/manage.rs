//! `extpool mcp auth-status` and `extpool mcp logout`: what is stored for
//! each profile (never a token), and forgetting it. Logging out removes
//! the local records only; an upstream client is never revoked.

use serde::Serialize;

use crate::error::AuthError;
use crate::grant::{Grant, now_secs};
use crate::login::dcr::{self, Found, RegistrationState};
use crate::profile::{ClientMode, OAuthProfile};
use crate::session::AuthContext;
use crate::store::{CredentialStore, Record};

/// The state of one profile's grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum GrantState {
    /// No grant stored.
    Missing,
    /// A usable token.
    Valid,
    /// Expired, but a refresh token will renew it on the next use.
    Refreshable,
    /// Expired and not renewable: log in again.
    Expired,
    /// Obtained for another URL or DCR registration: log in again.
    Stale {
        /// Why.
        reason: String,
    },
    /// The record cannot be read.
    Unreadable {
        /// Why.
        reason: String,
    },
}

/// One row of `auth-status`.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileStatus {
    /// The server.
    pub server: String,
    /// `auto`, `dcr` or `environment`.
    pub mode: &'static str,
    /// Where the grant lives (a directory, or `env:VAR`).
    pub location: String,
    /// The grant's state.
    #[serde(flatten)]
    pub grant: GrantState,
    /// Expiry (Unix seconds), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// True when a refresh token is held.
    pub refreshable: bool,
    /// The client id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Direct DCR: the registration's state and generation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration: Option<String>,
}

/// Describes the stored state of `server`'s profile.
pub fn status(
    server: &str,
    url: &str,
    profile: &OAuthProfile,
    context: &AuthContext,
) -> Result<ProfileStatus, AuthError> {
    let mut row = ProfileStatus {
        server: server.to_owned(),
        mode: match (profile.is_environment_backed(), profile.client.mode) {
            (true, _) => "environment",
            (false, ClientMode::Dcr) => "dcr",
            (false, ClientMode::Auto) => "auto",
        },
        location: String::new(),
        grant: GrantState::Missing,
        expires_at: None,
        scopes: Vec::new(),
        refreshable: false,
        client_id: None,
        registration: None,
    };
    let grant: Result<Option<Grant>, String> = if let Some(var) = &profile.credentials_env {
        row.location = format!("env:{var}");
        match std::env::var(var) {
            Err(_) => Ok(None),
            Ok(v) => serde_json::from_str(&v)
                .map(Some)
                .map_err(|_| format!("{var} is not a grant record")),
        }
    } else {
        let store = CredentialStore::open(context.store_dir_for(profile))?;
        row.location = store.dir().display().to_string();
        if profile.is_direct_dcr() {
            row.registration = Some(match dcr::read(&store, server)? {
                Found::Absent => "absent".into(),
                Found::Corrupt(_) => "corrupt".into(),
                Found::Present(r) => format!(
                    "{} (generation {})",
                    if r.state == RegistrationState::Ready {
                        "ready"
                    } else {
                        "pending"
                    },
                    r.generation
                ),
            });
        }
        match store.load::<Grant>(server) {
            Ok(g) => Ok(g),
            Err(e) if e.is_corrupt() => Err(e.to_string()),
            Err(e) => return Err(e.into()),
        }
    };
    let grant = match grant {
        Ok(Some(g)) => g,
        Ok(None) => return Ok(row),
        Err(reason) => {
            row.grant = GrantState::Unreadable { reason };
            return Ok(row);
        }
    };
    row.expires_at = grant.expires_at;
    row.scopes = grant.scopes.clone();
    row.refreshable = grant.can_refresh();
    row.client_id = Some(grant.client_id.clone());
    row.grant = if dcr::canonical_resource(&grant.server_url) != dcr::canonical_resource(url) {
        GrantState::Stale {
            reason: format!("obtained for {}", grant.server_url),
        }
    } else if !grant.is_expired(now_secs()) {
        GrantState::Valid
    } else if grant.can_refresh() {
        GrantState::Refreshable
    } else {
        GrantState::Expired
    };
    Ok(row)
}

/// What a logout removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LogoutOutcome {
    /// Record kinds removed (`grant`, `registration`).
    pub removed: Vec<&'static str>,
}

/// Removes the profile's local records (under its lock).
pub fn logout(
    server: &str,
    profile: &OAuthProfile,
    context: &AuthContext,
) -> Result<LogoutOutcome, AuthError> {
    if let Some(var) = &profile.credentials_env {
        return Err(AuthError::ReadOnly {
            server: server.to_owned(),
            var: var.clone(),
        });
    }
    let store = CredentialStore::open(context.store_dir_for(profile))?;
    let _lock = store.lock(server)?;
    let mut outcome = LogoutOutcome::default();
    for kind in [Grant::KIND, dcr::Registration::KIND] {
        if store.remove(server, kind)? {
            outcome.removed.push(kind);
        }
    }
    tracing::info!(server, removed = ?outcome.removed, "OAuth logout");
    Ok(outcome)
}
