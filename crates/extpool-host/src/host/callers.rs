//! The capabilities of a caller's own servers, made from this host's pool:
//! a session's own servers, the servers whose OAuth grant is each caller's
//! (`oauth.per_user`), and those whose credential is made from each
//! caller's token (`oauth.token_exchange`, `oauth.passthrough`). Literal
//! secrets in their configuration are masked in what they print.

use std::sync::Arc;

use extpool_mcp::{McpServerCap, McpServerConfig};

use super::Host;
use crate::error::HostError;

impl Host {
    /// A capability for an MCP server of the caller's own (a per-session
    /// server, say) whose connection comes from this host's pool: shared
    /// with every other capability for the same server, and closed by
    /// [`Host::shutdown`]. Register it on a view to make it visible there.
    pub fn mcp_server(
        &self,
        name: &str,
        config: McpServerConfig,
    ) -> Result<Arc<McpServerCap>, HostError> {
        let cap = McpServerCap::new(name, masking_literals(config), self.inner.pool.clone())?;
        Ok(Arc::new(cap))
    }

    /// An MCP server capability that owns its connection: when it shuts
    /// down (its view closes, or it is unregistered) the server's
    /// connection closes and its process ends, unless another capability
    /// of the same server still uses it. For servers that belong to one
    /// session, such as a gateway session's own servers.
    pub fn owned_mcp_server(
        &self,
        name: &str,
        config: McpServerConfig,
    ) -> Result<Arc<McpServerCap>, HostError> {
        let cap = McpServerCap::new(name, masking_literals(config), self.inner.pool.clone())?;
        Ok(Arc::new(cap.closing_when_released()))
    }

    /// The servers whose OAuth grant is each caller's (`oauth.per_user`;
    /// not started for everyone on a gateway), as capabilities of the
    /// caller whose owner key is `owner` (`None`: the gateway's one caller,
    /// who uses the grant of `extpool mcp login SERVER`): each with that
    /// caller's own grant and connection, shared by all its sessions. A
    /// server whose configuration cannot be resolved is left out, said in
    /// the log.
    pub fn caller_servers(&self, owner: Option<&str>) -> Vec<Arc<McpServerCap>> {
        let loaded = &self.inner.loaded;
        let mut caps = Vec::new();
        for (name, written) in &loaded.config.mcp_servers {
            if !written.enabled || !crate::servers::is_each_callers(written) {
                continue;
            }
            let mut config = match loaded.resolve_server(name, &extpool_config::process_env) {
                Some(Ok(config)) => config,
                Some(Err(e)) => {
                    tracing::warn!(server = %name, "a per-caller server cannot be resolved: {e}");
                    continue;
                }
                None => continue,
            };
            if let (Some(owner), Some(oauth)) = (owner, config.oauth.as_ref()) {
                config.oauth = Some(oauth.for_principal(owner));
            }
            match McpServerCap::new(name, masking_literals(config), self.inner.pool.clone()) {
                Ok(cap) => caps.push(Arc::new(cap)),
                Err(e) => tracing::warn!(server = %name, "a per-caller server cannot be made: {e}"),
            }
        }
        caps
    }

    /// Whether any enabled server's grant is each caller's own
    /// (`oauth.per_user`).
    pub fn has_caller_servers(&self) -> bool {
        self.inner
            .loaded
            .config
            .mcp_servers
            .values()
            .any(|c| c.enabled && crate::servers::is_each_callers(c))
    }

    /// What a login of the caller whose owner key is `owner` to per-caller
    /// server `server` uses: the server's URL and that caller's OAuth
    /// profile (`None`: no enabled server of that name has a per-user
    /// grant, or its configuration cannot be resolved).
    pub fn caller_login(
        &self,
        server: &str,
        owner: Option<&str>,
    ) -> Option<(String, extpool_auth::OAuthProfile)> {
        let loaded = &self.inner.loaded;
        let written = loaded.config.mcp_servers.get(server)?;
        if !written.enabled || !crate::servers::is_per_user(written) {
            return None;
        }
        let config = loaded
            .resolve_server(server, &extpool_config::process_env)?
            .ok()?;
        let oauth = config.oauth.as_ref()?;
        let profile = match owner {
            Some(owner) => oauth.for_principal(owner),
            None => oauth.clone(),
        };
        Some((config.url.clone()?, profile))
    }

    /// Each caller's delegated tokens (`oauth.token_exchange`,
    /// `oauth.passthrough`): the gateway puts a caller's token for a
    /// server here, under the record name of that caller's profile
    /// ([`Host::caller_profile`]), and the server's connection of that
    /// caller sends it.
    pub fn delegated_tokens(&self) -> Arc<extpool_auth::delegated::DelegatedTokens> {
        self.inner.delegated.clone()
    }

    /// The enabled servers whose credential is made from each caller's
    /// token (`oauth.token_exchange`, `oauth.passthrough`).
    pub fn delegated_servers(&self) -> Vec<String> {
        let servers = &self.inner.loaded.config.mcp_servers;
        servers
            .iter()
            .filter(|(_, c)| {
                c.enabled && c.oauth.as_ref().is_some_and(|o| o.delegation().is_some())
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The URL and OAuth profile of server `server` for the caller whose
    /// owner key `owner` gives, when the server's credential is made from
    /// each caller's token (`oauth.token_exchange`, `oauth.passthrough`)
    /// and it is enabled. `owner` is asked only then: every call asks
    /// this of its server, and most servers are not such.
    pub fn caller_profile(
        &self,
        server: &str,
        owner: impl FnOnce() -> String,
    ) -> Option<(String, extpool_auth::OAuthProfile)> {
        let loaded = &self.inner.loaded;
        let written = loaded.config.mcp_servers.get(server)?;
        let delegated = written
            .oauth
            .as_ref()
            .is_some_and(|o| o.delegation().is_some());
        if !written.enabled || !delegated {
            return None;
        }
        let config = loaded
            .resolve_server(server, &extpool_config::process_env)?
            .ok()?;
        let profile = config.oauth.as_ref()?.for_principal(&owner());
        Some((config.url.clone()?, profile))
    }

    /// The configured server reached with a token made from each caller's
    /// (`oauth.token_exchange`, `oauth.passthrough`) whose tools are named
    /// `name`: a gateway starts it for each caller only, so before that
    /// caller's copy lists its tools only the configuration knows it.
    pub fn delegated_server_of_tool(&self, name: &str) -> Option<String> {
        let server = crate::servers::server_of(&self.inner.loaded, name)?;
        let written = self.inner.loaded.config.mcp_servers.get(&server)?;
        written
            .oauth
            .as_ref()
            .and_then(|o| o.delegation())
            .map(|_| server)
    }
}

/// `config` with its literal secrets (what `config show` masks) among the
/// values masked in what its server prints, as a loaded config has them.
fn masking_literals(mut config: McpServerConfig) -> McpServerConfig {
    let mut secrets = std::mem::take(&mut config.secrets);
    extpool_config::secrets::keep_literal_secrets(&config, &mut secrets);
    config.secrets = secrets;
    config
}
