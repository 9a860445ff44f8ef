//! [`EnterpriseClient`]: what a gateway keeps for enterprise-managed
//! authorization — one OAuth HTTP client, and each server's resolved flow
//! (its authorization server and both token endpoints, found once).

use std::collections::HashMap;

use parking_lot::Mutex;

use super::{
    DiscoveryError, EnterpriseError, EnterpriseManaged, EnterpriseManagedSettings, IssuedToken,
    TokenEndpointClient,
};
use crate::secret::Secret;

/// Most servers whose resolution is kept (a configuration has fewer).
const MAX_RESOLVED: usize = 1024;

/// An HTTP client for both token endpoints and the resolved flows, by
/// server name and URL.
pub struct EnterpriseClient {
    http: reqwest::Client,
    resolved: Mutex<HashMap<(String, String), EnterpriseManaged>>,
}

impl Default for EnterpriseClient {
    fn default() -> Self {
        Self {
            http: crate::oauth_http::oauth_client(),
            resolved: Mutex::new(HashMap::new()),
        }
    }
}

impl std::fmt::Debug for EnterpriseClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseClient").finish_non_exhaustive()
    }
}

impl EnterpriseClient {
    /// `settings` of server `server` at `url` resolved with the enterprise
    /// IdP `idp`: kept from before, or found now (see
    /// [`EnterpriseManagedSettings::resolve`]) and kept.
    pub async fn resolve(
        &self,
        server: &str,
        url: &str,
        settings: &EnterpriseManagedSettings,
        idp: TokenEndpointClient,
        insecure_http: bool,
    ) -> Result<EnterpriseManaged, DiscoveryError> {
        let key = (server.to_owned(), url.to_owned());
        if let Some(found) = self.resolved.lock().get(&key) {
            return Ok(found.clone());
        }
        let config = settings
            .resolve(&self.http, idp, url, insecure_http)
            .await?;
        let mut resolved = self.resolved.lock();
        if resolved.len() >= MAX_RESOLVED {
            resolved.clear();
        }
        resolved.insert(key, config.clone());
        Ok(config)
    }

    /// Forgets server `server`'s resolved flow at `url` (its authorization
    /// server refused: it may have moved).
    pub fn forget(&self, server: &str, url: &str) {
        self.resolved
            .lock()
            .remove(&(server.to_owned(), url.to_owned()));
    }

    /// Exchanges `assertion` for the caller's token ([`super::exchange`]).
    pub async fn exchange(
        &self,
        config: &EnterpriseManaged,
        assertion: &Secret,
    ) -> Result<IssuedToken, EnterpriseError> {
        super::exchange(&self.http, config, assertion).await
    }
}
