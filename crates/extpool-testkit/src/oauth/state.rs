//! The authorization server's memory: clients, codes, tokens, counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use sha2::Digest;

use super::OAuthServerOptions;

/// Requests that reached the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// DCR registrations.
    pub registrations: u64,
    /// Authorization requests answered with a code.
    pub authorizations: u64,
    /// Successful code exchanges.
    pub code_exchanges: u64,
    /// Successful refreshes.
    pub refreshes: u64,
    /// Refresh attempts refused (`invalid_grant`).
    pub refresh_rejections: u64,
    /// MCP requests refused for a missing or unknown token (401).
    pub unauthorized: u64,
    /// MCP requests refused for a missing scope (403).
    pub insufficient_scope: u64,
}

/// One DCR request as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRegistration {
    /// `grant_types`.
    pub grant_types: Vec<String>,
    /// `token_endpoint_auth_method`.
    pub token_endpoint_auth_method: String,
    /// `scope`.
    pub scope: Option<String>,
    /// The issued client id.
    pub client_id: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub secret: Option<String>,
    pub auth_method: String,
    pub redirect_uris: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Code {
    pub client_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    pub scope: String,
    pub resource: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Access {
    pub scope: String,
    pub expires_at: std::time::Instant,
}

#[derive(Debug, Clone)]
pub(crate) struct Refresh {
    pub client_id: String,
    pub scope: String,
}

#[derive(Default)]
pub(crate) struct Tables {
    pub clients: HashMap<String, Client>,
    pub codes: HashMap<String, Code>,
    pub access: HashMap<String, Access>,
    pub refresh: HashMap<String, Refresh>,
    pub counts: Counts,
    pub registrations: Vec<RecordedRegistration>,
    pub authorizations: Vec<Vec<(String, String)>>,
    pub accepted: Vec<String>,
    pub issued: Vec<String>,
}

pub(crate) struct State {
    pub base: String,
    pub options: OAuthServerOptions,
    pub tables: Mutex<Tables>,
    seq: AtomicU64,
}

impl State {
    pub fn new(base: String, options: OAuthServerOptions) -> Self {
        let mut tables = Tables::default();
        for (id, secret) in &options.clients {
            tables.issued.extend(secret.clone());
            tables.clients.insert(
                id.clone(),
                Client {
                    auth_method: if secret.is_some() {
                        "client_secret_basic".into()
                    } else {
                        "none".into()
                    },
                    secret: secret.clone(),
                    redirect_uris: Vec::new(),
                },
            );
        }
        Self {
            base,
            options,
            tables: Mutex::new(tables),
            seq: AtomicU64::new(0),
        }
    }

    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn prm_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.base)
    }

    /// A fresh unguessable-enough value for a test server.
    pub fn random(&self, prefix: &str) -> String {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let digest = sha2::Sha256::new()
            .chain_update(self.base.as_bytes())
            .chain_update(seq.to_le_bytes())
            .chain_update(nanos.to_le_bytes())
            .chain_update(std::process::id().to_le_bytes())
            .finalize();
        format!("{prefix}-{}", hex::encode(&digest[..16]))
    }

    pub fn counts(&self) -> Counts {
        self.tables.lock().counts
    }

    pub fn registrations(&self) -> Vec<RecordedRegistration> {
        self.tables.lock().registrations.clone()
    }

    pub fn authorization_requests(&self) -> Vec<Vec<(String, String)>> {
        self.tables.lock().authorizations.clone()
    }

    pub fn accepted(&self) -> Vec<String> {
        self.tables.lock().accepted.clone()
    }

    pub fn issued(&self) -> Vec<String> {
        self.tables.lock().issued.clone()
    }

    pub fn revoke_access_tokens(&self) {
        self.tables.lock().access.clear();
    }

    pub fn revoke_refresh_tokens(&self) {
        self.tables.lock().refresh.clear();
    }
}
