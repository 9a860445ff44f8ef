//! Which per-session servers a session may bring: remote ones (local
//! commands only with `--session-commands`), checked as the
//! configuration's servers are, then against the address policy.

use extpool_host::McpServerConfig;
use extpool_host::core::address::{AddressRefused, AddressRule};

use super::SessionError;
use crate::shared::Shared;

/// A per-session server must be a remote one unless the gateway accepts
/// session commands ([`crate::GatewayOptions::session_commands`]): a
/// client of the gateway may not otherwise make it start a local command.
/// A remote one is checked as the configuration's servers are (URL,
/// headers), then against the address rule ([`rule`]).
pub(super) async fn check_server(
    shared: &Shared,
    name: &str,
    config: &McpServerConfig,
) -> Result<(), SessionError> {
    let bad = |reason: String| SessionError::BadServer {
        name: name.to_owned(),
        reason,
    };
    let server = extpool_host::mcp::ServerName::new(name).map_err(|e| bad(e.to_string()))?;
    let local = config.command.is_some() || config.url.is_none();
    if local && !shared.options.session_commands {
        return Err(bad(
            "a per-session server is a remote one (`url`, optional `headers`); a local `command` is accepted only in the gateway's configuration, or when the gateway runs with --session-commands".into(),
        ));
    }
    if shared.host.has_server(name) {
        return Err(bad(
            "a configured or discovered server already has this name".into(),
        ));
    }
    if local {
        return Ok(());
    }
    extpool_host::mcp::http::check_remote(&server, config).map_err(|e| bad(e.to_string()))?;
    if config.oauth.is_some() {
        return Err(bad(
            "a per-session server cannot have an `oauth` profile (the gateway's grants are its configuration's servers'); send its credential in `headers`".into(),
        ));
    }
    let url = config.url.as_deref().unwrap_or_default();
    check_address(url, rule(shared)).await.map_err(bad)
}

/// The address rule of this gateway's per-session servers: public
/// addresses, and loopback and private ones where the operator allows them
/// (`--private-session-servers`). Checked here when a session is made, and
/// by the MCP client at every connection ([`under_rule`]).
pub(super) fn rule(shared: &Shared) -> AddressRule {
    AddressRule {
        allow_private: shared.options.private_session_servers,
    }
}

/// `config` (a per-session server's) as it is connected to: a remote
/// one under the gateway's address rule ([`rule`]), checked at every
/// connection — the name resolved again each time (a DNS answer that
/// changed since the session was made is checked too), the connection
/// made to an address checked.
pub(super) fn under_rule(shared: &Shared, config: &McpServerConfig) -> McpServerConfig {
    let mut config = config.clone();
    if config.url.is_some() && config.command.is_none() {
        config.address_rule = Some(rule(shared));
    }
    config
}

/// Checks `url` against `rule` before a session is made: the host as
/// written (an IP literal, a metadata name), then every address it
/// resolves to now.
async fn check_address(url: &str, rule: AddressRule) -> Result<(), String> {
    let refused = |refused: AddressRefused| {
        let fix = if refused.allowable() {
            " (a gateway whose operator allows them runs with --private-session-servers)"
        } else {
            ""
        };
        format!("{refused}{fix}")
    };
    let parsed = url::Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    let Some(host) = parsed.host_str() else {
        return Err("the URL has no host".into());
    };
    if let Some(why) = rule.refuses_host(host) {
        return Err(refused(why));
    }
    if extpool_host::catalog::fetch::check_host(host).is_some() {
        // An IP literal the rule allows: nothing to resolve.
        return Ok(());
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let lookup = tokio::time::timeout(
        RESOLVE_TIMEOUT,
        tokio::net::lookup_host((host.trim_end_matches('.'), port)),
    )
    .await
    .map_err(|_| {
        format!(
            "{host} did not resolve within {} s",
            RESOLVE_TIMEOUT.as_secs()
        )
    })?
    .map_err(|e| format!("{host} does not resolve: {e}"))?;
    match rule.refuses_any(host, lookup.map(|a| a.ip())) {
        Some(why) => Err(refused(why)),
        None => Ok(()),
    }
}

/// How long a per-session server's host name may take to resolve.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
