//! `extpool serve`: the gateway. Starts the host (every configured server
//! once, shared by every client), then serves it over streamable HTTP or
//! stdio until interrupted, and shuts everything down as on a normal exit.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use extpool_host::{
    ConfigOverrides, ConfigReload, DiscoveryOptions, Loaded, McpServerConfig, ToolHiveOptions,
};
use extpool_server::{Gateway, GatewayOptions};

use super::{Need, start_host_with};
use crate::cli::ServeArgs;
use crate::context::Ctx;

/// The environment variable holding the gateway's bearer token.
const TOKEN_VAR: &str = "EXTPOOL_GATEWAY_TOKEN";

/// Runs `extpool serve`.
pub async fn run(ctx: &mut Ctx, args: ServeArgs) -> Result<ExitCode> {
    let mut loaded = ctx.load_reporting()?;
    let overrides = overrides(&args)?;
    apply_flags(ctx, &mut loaded, &args, &overrides)?;
    let discovery = discovery(ctx, &loaded, &args, overrides);
    let bearer = token(&args)?;
    if !args.stdio && !args.listen.ip().is_loopback() && bearer.is_none() {
        bail!(
            "refusing to serve on {} without a bearer token: a gateway reachable from other machines needs one (set {TOKEN_VAR} or --token-file), or listen on 127.0.0.1",
            args.listen
        );
    }
    // Bind before starting servers, so a busy port fails at once.
    let listener = if args.stdio {
        None
    } else {
        Some(
            tokio::net::TcpListener::bind(args.listen)
                .await
                .with_context(|| format!("cannot listen on {}", args.listen))?,
        )
    };
    // SIGINT, SIGTERM and SIGHUP stop serving; a second one exits at once.
    let mut signals = crate::signals::subscribe()?;
    let replica = match &args.replica_id {
        Some(id) => extpool_state::ReplicaId::new(id.as_str()).context("--replica-id")?,
        None => extpool_server::replica::default_replica_id(),
    };
    let state = open_state(args.state.as_deref(), &replica).await?;
    let watch = loaded.config.skills.watch;
    let host = start_host_with(ctx, loaded, Need::Servers, watch, true, discovery).await?;
    let options = GatewayOptions {
        state: Some(state),
        session_servers: !args.no_session_servers,
        session_commands: args.session_commands,
        tool_search: args.tool_search.then(|| {
            let mut deferral = extpool_host::DeferralConfig::default();
            if let Some(budget) = args.tool_search_budget {
                deferral.budget_bytes = budget;
            }
            deferral
        }),
        bearer,
        allowed_hosts: args.allowed_hosts.clone(),
        allowed_origins: args.allowed_origins.clone(),
        audit_log: args.audit_log.clone(),
        unprefixed: args.unprefixed.clone(),
        replica_id: Some(replica),
        replica_heartbeat: std::time::Duration::from_secs(args.replica_heartbeat),
        max_body_bytes: usize::try_from(args.max_request_bytes).unwrap_or(usize::MAX),
        max_sessions: usize::try_from(args.max_sessions).unwrap_or(usize::MAX),
        max_calls_per_session: usize::try_from(args.max_calls_per_session).unwrap_or(usize::MAX),
        ..GatewayOptions::default()
    };
    let gateway = Gateway::new(host, options).await?;
    let served = match listener {
        None => {
            tokio::select! {
                r = gateway.serve_stdio() => r.map_err(anyhow::Error::from),
                _ = signals.received() => Ok(()),
            }
        }
        Some(listener) => {
            let addr = listener
                .local_addr()
                .context("reading the listen address")?;
            // Best effort: a closed stdout (a supervisor that stopped
            // reading) must not stop the gateway.
            if let Err(e) = announce(ctx, &gateway, addr) {
                tracing::debug!("cannot print the endpoint: {e}");
            }
            tokio::select! {
                r = gateway.serve_http(listener) => r.map_err(anyhow::Error::from),
                _ = signals.received() => Ok(()),
            }
        }
    };
    gateway.shutdown().await;
    served.map(|()| ExitCode::SUCCESS)
}

/// `--mcp-server`, `--mcp-server-insecure-http`, `--mcp-resource-tools`
/// and `--mcp-prompts`, as the overrides the host applies again over
/// every reload of the configuration.
fn overrides(args: &ServeArgs) -> Result<ConfigOverrides> {
    let mut servers = Vec::new();
    for spec in &args.mcp_servers {
        let Some((name, url)) = spec.split_once('=') else {
            bail!("--mcp-server {spec:?}: expected NAME=URL, e.g. docs=https://docs.example/mcp");
        };
        servers.push((name.to_owned(), McpServerConfig::http(url)));
    }
    Ok(ConfigOverrides {
        servers,
        insecure_http: args.insecure_http.clone(),
        resource_tools: args.mcp_resource_tools,
        prompts: args.mcp_prompts,
    })
}

/// The overrides applied to the loaded configuration; `--unprefixed`
/// checked against it.
fn apply_flags(
    ctx: &Ctx,
    loaded: &mut Loaded,
    args: &ServeArgs,
    overrides: &ConfigOverrides,
) -> Result<()> {
    for name in &args.insecure_http {
        let named = overrides.servers.iter().any(|(n, _)| n == name);
        if !named && !loaded.config.mcp_servers.contains_key(name) {
            bail!("--mcp-server-insecure-http {name}: no server named {name:?} is configured");
        }
    }
    overrides
        .apply(loaded, &ctx.places.cwd)
        .map_err(anyhow::Error::from)?;
    for name in &args.unprefixed {
        if !loaded.config.mcp_servers.contains_key(name) {
            bail!("--unprefixed {name}: no server named {name:?} is configured");
        }
    }
    Ok(())
}

/// What serving discovers: edits of the configuration files (unless
/// `--watch-config=false`) and ToolHive (unless `--toolhive=false`), each
/// defaulting to the configuration's `discovery` section.
fn discovery(
    ctx: &Ctx,
    loaded: &Loaded,
    args: &ServeArgs,
    overrides: ConfigOverrides,
) -> DiscoveryOptions {
    let config = &loaded.config.discovery;
    let reload = args
        .watch_config
        .unwrap_or(config.watch_config)
        .then(|| ConfigReload {
            files: ctx.global.config.clone(),
            overrides,
        });
    let toolhive = args
        .toolhive
        .unwrap_or(config.toolhive.enabled)
        .then(|| ToolHiveOptions {
            url: extpool_host::discovery::toolhive::default_url(
                args.toolhive_url
                    .as_deref()
                    .or(config.toolhive.url.as_deref()),
            ),
            group: args
                .toolhive_group
                .clone()
                .or_else(|| config.toolhive.group.clone()),
        });
    DiscoveryOptions { reload, toolhive }
}

/// Opens the state store (`--state`, else the default SQLite file), saying
/// where it is, and which replica this is, on stderr.
async fn open_state(
    url: Option<&str>,
    replica: &extpool_state::ReplicaId,
) -> Result<extpool_state::StateStore> {
    let url = match url {
        Some(url) => url.parse::<extpool_state::StoreUrl>()?,
        None => extpool_state::StoreUrl::default_sqlite(),
    };
    // Every StateError names the store (masked) already: no second context.
    let store =
        extpool_state::StateStore::open(&url, extpool_state::OpenOptions::default()).await?;
    tracing::info!(state = %url, "state store open");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("sessions are kept in {url} (this is replica {replica})");
    }
    Ok(store)
}

/// The bearer token from `--token-file` or the environment, if any.
fn token(args: &ServeArgs) -> Result<Option<String>> {
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?;
        let token = text.trim().to_owned();
        if token.is_empty() {
            bail!("the token file {} is empty", path.display());
        }
        return Ok(Some(token));
    }
    Ok(std::env::var(TOKEN_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty()))
}

/// Prints the endpoint and how to add it to the usual agents.
fn announce(ctx: &mut Ctx, gateway: &Gateway, addr: std::net::SocketAddr) -> Result<()> {
    let url = format!("http://{addr}/mcp");
    let view = gateway.host().pool();
    let tools = view.tools().len();
    let servers = gateway.host().servers().len();
    if ctx.global.json {
        let line = serde_json::json!({"url": url, "servers": servers, "tools": tools});
        ctx.out.json_line(&line)?;
        return Ok(());
    }
    ctx.out.text(&format!(
        "extpool serves {servers} server(s) and {tools} tool(s) on {url}\n"
    ))?;
    ctx.out.text(&format!(
        "\nAdd it to your agent:\n  Claude Code  claude mcp add --transport http extpool {url}\n  Codex        ~/.codex/config.toml: [mcp_servers.extpool] url = \"{url}\"\n  Cursor       .cursor/mcp.json: {{\"mcpServers\": {{\"extpool\": {{\"url\": \"{url}\"}}}}}}\n  VS Code      code --add-mcp '{{\"name\":\"extpool\",\"type\":\"http\",\"url\":\"{url}\"}}'\n  (or run `extpool serve --stdio` as the agent's one stdio server)\n\nStop with Ctrl-C.\n"
    ))?;
    Ok(())
}
