//! Which per-session servers a session may bring: remote ones (local
//! commands only with `--session-commands`), checked as the
//! configuration's servers are, then against the address policy.

use extpool_host::McpServerConfig;

use super::SessionError;
use crate::gateway::Shared;

/// A per-session server must be a remote one unless the gateway accepts
/// session commands ([`crate::GatewayOptions::session_commands`]): a
/// client of the gateway may not otherwise make it start a local command.
/// A remote one is checked as the configuration's servers are (URL,
/// headers), then against the address policy ([`check_address`]).
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
    let url = config.url.as_deref().unwrap_or_default();
    check_address(url, shared.options.private_session_servers)
        .await
        .map_err(bad)
}

/// The address rule of per-session servers (the one `FetchMcpResource`
/// applies): no link-local, cloud metadata, unspecified, multicast or
/// reserved address ever, and no loopback or private one unless the
/// operator allows them (`--private-session-servers`). A host name is
/// resolved and every address it has is checked.
async fn check_address(url: &str, allow_private: bool) -> Result<(), String> {
    use extpool_host::catalog::fetch::{BlockedAddress, check_address, check_host};
    let allowed = |reason: BlockedAddress| {
        allow_private
            && matches!(
                reason,
                BlockedAddress::Loopback | BlockedAddress::Private | BlockedAddress::Shared
            )
    };
    let refused = |host: &str, address: std::net::IpAddr, reason: BlockedAddress| {
        let fix = if matches!(
            reason,
            BlockedAddress::Loopback | BlockedAddress::Private | BlockedAddress::Shared
        ) {
            " (a gateway whose operator allows them runs with --private-session-servers)"
        } else {
            ""
        };
        let word = reason.to_string();
        let article = if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        // A metadata host refused by its name has no address to show.
        let shown = if address.is_unspecified() && reason == BlockedAddress::Metadata {
            String::new()
        } else {
            format!(" ({address})")
        };
        format!(
            "{host} is {article} {word} address{shown}; a per-session server must be on a public address{fix}"
        )
    };
    let parsed = url::Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    let Some(host) = parsed.host_str() else {
        return Err("the URL has no host".into());
    };
    if let Some((address, reason)) = check_host(host) {
        return if allowed(reason) {
            Ok(())
        } else {
            Err(refused(host, address, reason))
        };
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
    for addr in lookup {
        if let Some(reason) = check_address(addr.ip())
            && !allowed(reason)
        {
            return Err(refused(host, addr.ip(), reason));
        }
    }
    Ok(())
}

/// How long a per-session server's host name may take to resolve.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
