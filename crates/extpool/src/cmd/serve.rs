//! `extpool serve`: the gateway. Starts the host (every configured server
//! once, shared by every client), then serves it over streamable HTTP or
//! stdio until a signal, which starts the gateway's shutdown: no new
//! connection or request is taken, requests in flight get
//! `--shutdown-timeout` to finish, the rest are answered with an error and
//! cancelled, the upstreams close, and serve exits with 128 + the
//! signal's number.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use extpool_host::{
    ConfigOverrides, ConfigReload, DiscoveryOptions, Loaded, McpServerConfig, ToolHiveOptions,
};
use extpool_server::{Gateway, GatewayOptions};

use super::{Need, start_host_with};
use crate::cli::ServeArgs;
use crate::context::Ctx;

/// Open files kept for everything but client connections (servers'
/// pipes, the store, logs, upstream connections).
const OPEN_FILES_RESERVE: usize = 256;

/// The environment variable holding the gateway's bearer token.
const TOKEN_VAR: &str = "EXTPOOL_GATEWAY_TOKEN";

/// Runs `extpool serve`.
pub async fn run(ctx: &mut Ctx, args: ServeArgs) -> Result<ExitCode> {
    let chain = extpool_host::mcp::Via::new().inherited_hops();
    if chain >= extpool_host::mcp::via::MAX_HOPS {
        bail!(
            "extpool serve was started by a chain of {chain} extpool gateways ({}): a gateway that runs itself as a server would never end; remove the entry that runs `extpool serve` from the configs it reads",
            extpool_host::mcp::via::VIA_ENV
        );
    }
    let mut loaded = ctx.load_reporting()?;
    for file in loaded.skipped_files() {
        warn(
            ctx,
            &format!("serving without {file}: it was skipped for the error above"),
        );
    }
    let overrides = overrides(&args)?;
    apply_flags(ctx, &mut loaded, &args, &overrides)?;
    let discovery = discovery(ctx, &loaded, &args, overrides);
    let bearer = token(ctx, &args)?;
    let gateway_config = loaded.config.gateway.clone();
    let replica = match &args.replica_id {
        Some(id) => extpool_state::ReplicaId::new(id.as_str()).context("--replica-id")?,
        None => extpool_server::replica::default_replica_id(),
    };
    let state = open_state(args.state.as_deref(), &replica).await?;
    if !args.stdio {
        // Its token, an issuer, or API keys in its store tell callers apart.
        let guarded = bearer.is_some()
            || super::identity::configured(&args, &gateway_config)
            || state.has_api_keys().await?;
        extpool_server::http::check_listen_address(args.listen, guarded)?;
    }
    // Bind before starting servers, so a busy port fails at once.
    let listener = if args.stdio {
        None
    } else {
        Some(
            tokio::net::TcpListener::bind(args.listen)
                .await
                .map_err(|e| listen_error(args.listen, &e))?,
        )
    };
    // The issuer is read before any server starts: a wrong one fails now.
    let issuer = super::identity::for_listener(&args, &gateway_config, listener.as_ref()).await?;
    // SIGINT, SIGTERM and SIGHUP stop serving; a second one exits at once.
    let signals = crate::signals::subscribe()?;
    let watch = loaded.config.skills.watch;
    // The gateway never proxies itself: an entry of the configs it reads
    // that reaches it is left out, with a line saying why.
    let own = extpool_host::OwnEndpoints {
        listen: match &listener {
            Some(listener) => Some(
                listener
                    .local_addr()
                    .context("reading the listen address")?,
            ),
            None => None,
        },
    };
    let host = start_host_with(ctx, loaded, Need::Servers, watch, Some(own), discovery).await?;
    let mut options = gateway_options(&args, state, replica, bearer);
    options.issuer = issuer;
    options.delegation = super::identity::delegation(&gateway_config)?;
    options.rate_limits = gateway_config.rate_limits.clone();
    options.sessions_per_principal = args
        .sessions_per_principal
        .or(gateway_config.limits.sessions_per_principal.map(u64::from))
        .map_or(options.sessions_per_principal, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    let gateway = Gateway::new(host, options).await?;
    // The signal starts the gateway's one shutdown (stop taking work, let
    // requests in flight finish within --shutdown-timeout, cancel the
    // rest); the upstreams close after it; a second signal exits at once.
    let shutdown = {
        let mut signals = signals.clone();
        async move {
            signals.received().await;
        }
    };
    tell_when_stopping(&gateway, &signals, args.shutdown_timeout, args.stdio);
    tell_discovery_notes(ctx, gateway.host().clone());
    let served = match listener {
        None => gateway.serve_stdio_until(shutdown).await,
        Some(listener) => {
            let addr = listener
                .local_addr()
                .context("reading the listen address")?;
            // Best effort: a closed stdout (a supervisor that stopped
            // reading) must not stop the gateway.
            if let Err(e) = announce(ctx, &gateway, addr) {
                tracing::debug!("cannot print the endpoint: {e}");
            }
            gateway.serve_http_until(listener, shutdown).await
        }
    };
    gateway.shutdown().await;
    served?;
    match signals.arrived() {
        Some(signal) => Err(crate::signals::Interrupted(signal).into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Says on stderr, once the gateway stops on a signal, what it does before
/// it exits.
fn tell_when_stopping(
    gateway: &Gateway,
    signals: &crate::signals::Signals,
    grace: u64,
    stdio: bool,
) {
    let stopping = gateway.stopping();
    let signals = signals.clone();
    let refused = if stdio {
        "new requests"
    } else {
        "new connections"
    };
    tokio::spawn(async move {
        stopping.await;
        if let Some(signal) = signals.arrived() {
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "{}: stopping: {refused} are refused, requests in flight get up to {grace} s to finish (--shutdown-timeout), then the servers close; a second signal stops at once",
                    signal.name()
                );
            }
        }
    });
}

/// Most discovery notes remembered as said (past it, they are forgotten
/// and a note still there is said again).
const MAX_NOTES_SAID: usize = 1024;

/// Says on stderr, once each, what discovery leaves out while serving
/// (an entry that is this gateway itself, a name already taken): the
/// notes `extpool list sources` shows. Those of the start-up are said by
/// its display already.
fn tell_discovery_notes(ctx: &Ctx, host: extpool_host::Host) {
    let notes = |host: &extpool_host::Host| -> Vec<String> {
        host.discovery()
            .into_iter()
            .flat_map(|status| status.notes)
            .collect()
    };
    let mut said: std::collections::HashSet<String> = notes(&host).into_iter().collect();
    let mut updates = host.discovery_updates();
    let style = ctx.err_style;
    tokio::spawn(async move {
        while updates.changed().await.is_ok() {
            for note in notes(&host) {
                if said.len() >= MAX_NOTES_SAID {
                    said.clear();
                }
                if said.insert(note.clone()) {
                    #[allow(clippy::print_stderr)]
                    {
                        eprintln!("{}: {}", style.yellow("note"), crate::output::shown(&note));
                    }
                }
            }
        }
    });
}

/// The gateway's options from serve's flags.
fn gateway_options(
    args: &ServeArgs,
    state: extpool_state::StateStore,
    replica: extpool_state::ReplicaId,
    bearer: Option<String>,
) -> GatewayOptions {
    GatewayOptions {
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
        playground: args.playground,
        unprefixed: args.unprefixed.clone(),
        replica_id: Some(replica),
        replica_heartbeat: std::time::Duration::from_secs(args.replica_heartbeat),
        max_body_bytes: usize::try_from(args.max_request_bytes).unwrap_or(usize::MAX),
        max_sessions: usize::try_from(args.max_sessions).unwrap_or(usize::MAX),
        max_replay_bytes: usize::try_from(args.max_replay_bytes).unwrap_or(usize::MAX),
        max_page_streams: usize::try_from(args.max_page_streams).unwrap_or(usize::MAX),
        page_stream_bytes: usize::try_from(args.page_stream_bytes).unwrap_or(usize::MAX),
        session_idle_timeout: std::time::Duration::from_secs(args.session_idle_timeout),
        max_connections: extpool_server::listener::room_for_connections(
            usize::try_from(args.max_connections).unwrap_or(usize::MAX),
            OPEN_FILES_RESERVE,
        ),
        header_read_timeout: std::time::Duration::from_secs(args.header_read_timeout),
        private_session_servers: args.private_session_servers,
        max_calls_per_session: usize::try_from(args.max_calls_per_session).unwrap_or(usize::MAX),
        shutdown_timeout: std::time::Duration::from_secs(args.shutdown_timeout),
        ..GatewayOptions::default()
    }
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
/// The state store's URL: `--state` (or `EXTPOOL_STATE`), else state.db
/// in the user's data directory.
pub(super) fn store_url(url: Option<&str>) -> Result<extpool_state::StoreUrl> {
    Ok(match url {
        Some(url) => url.parse::<extpool_state::StoreUrl>()?,
        None => extpool_state::StoreUrl::default_sqlite(),
    })
}

async fn open_state(
    url: Option<&str>,
    replica: &extpool_state::ReplicaId,
) -> Result<extpool_state::StateStore> {
    let url = store_url(url)?;
    // Every StateError names the store (masked) already: no second context.
    // Serving: a second gateway on the same SQLite file is refused.
    let options = extpool_state::OpenOptions {
        serve: true,
        ..extpool_state::OpenOptions::default()
    };
    let store = extpool_state::StateStore::open(&url, options).await?;
    tracing::info!(state = %url, "state store open");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("sessions are kept in {url} (this is replica {replica})");
    }
    Ok(store)
}

/// Why `--listen ADDR` could not be bound, naming the flag, the address
/// and what to do.
fn listen_error(addr: std::net::SocketAddr, e: &std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    let hint = match e.kind() {
        ErrorKind::AddrInUse => {
            "; another program listens there: stop it, or pick another port (--listen 127.0.0.1:0 takes a free one)"
        }
        ErrorKind::AddrNotAvailable => "; no network interface of this machine has that address",
        ErrorKind::PermissionDenied => "; ports below 1024 need privileges: pick a higher port",
        _ => "",
    };
    anyhow::anyhow!("--listen {addr}: cannot listen there: {e}{hint}")
}

/// The most bytes read from `--token-file` (a token is a line).
const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// The shortest gateway token not warned about as weak.
const MIN_TOKEN_CHARS: usize = 16;

/// The bearer token from `--token-file` or the environment, if any; a
/// token file others may read and a short token are warned about.
fn token(ctx: &Ctx, args: &ServeArgs) -> Result<Option<String>> {
    if let Some(path) = &args.token_file {
        let shown = ctx.show_path(path);
        let token = read_token_file(ctx, path, &shown)?;
        warn_if_weak(ctx, &token, &format!("the token in {shown}"));
        return Ok(Some(token));
    }
    let token = std::env::var(TOKEN_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty());
    if let Some(token) = &token {
        warn_if_weak(ctx, token, &format!("the token in {TOKEN_VAR}"));
    }
    Ok(token)
}

/// Reads the token file (a regular file, bounded), warning as ssh does
/// for a private key when its mode lets others read it.
fn read_token_file(ctx: &Ctx, path: &std::path::Path, shown: &str) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .with_context(|| format!("--token-file: cannot read the token file {shown}"))?;
    let meta = file
        .metadata()
        .with_context(|| format!("--token-file: cannot read the token file {shown}"))?;
    if !meta.is_file() {
        bail!("--token-file: {shown} is not a regular file");
    }
    warn_if_readable(ctx, &meta, shown);
    let mut text = String::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("--token-file: cannot read the token file {shown}"))?;
    if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
        bail!(
            "--token-file: {shown} is larger than {MAX_TOKEN_FILE_BYTES} bytes; it should hold one token"
        );
    }
    let token = text.trim().to_owned();
    if token.is_empty() {
        bail!("--token-file: the token file {shown} is empty");
    }
    Ok(token)
}

/// Warns when the token file's mode lets its group or others in.
#[cfg(unix)]
fn warn_if_readable(ctx: &Ctx, meta: &std::fs::Metadata, shown: &str) {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        warn(
            ctx,
            &format!(
                "the token file {shown} is accessible by others (mode {mode:04o}); anyone who reads it can use the gateway: run `chmod 600 {shown}`"
            ),
        );
    }
}

#[cfg(not(unix))]
fn warn_if_readable(_ctx: &Ctx, _meta: &std::fs::Metadata, _shown: &str) {}

/// Warns when `token` is shorter than [`MIN_TOKEN_CHARS`] (its length
/// only, never the token).
fn warn_if_weak(ctx: &Ctx, token: &str, what: &str) {
    let n = token.chars().count();
    if n < MIN_TOKEN_CHARS {
        warn(
            ctx,
            &format!(
                "{what} is {n} character{} long; a token shorter than {MIN_TOKEN_CHARS} characters is weak (make one with `openssl rand -hex 32`)",
                if n == 1 { "" } else { "s" }
            ),
        );
    }
}

/// One warning line on stderr.
#[allow(clippy::print_stderr)]
fn warn(ctx: &Ctx, text: &str) {
    eprintln!(
        "{}: {}",
        ctx.err_style.yellow("warning"),
        crate::output::shown(text)
    );
}

/// Prints the endpoint, what it serves (as many tools as a client's
/// `tools/list` shows) and how to add it to the usual agents, each snippet
/// as that agent reads it.
fn announce(ctx: &mut Ctx, gateway: &Gateway, addr: std::net::SocketAddr) -> Result<()> {
    let url = format!("http://{addr}/mcp");
    let listed = gateway.listed_tools();
    let tools = listed.len();
    let counts = super::counts::ToolCounts::of(listed.iter().map(|t| t.name.as_ref()));
    let servers = gateway.host().servers().len();
    if ctx.global.json {
        let line = serde_json::json!({"url": url, "servers": servers, "tools": tools});
        ctx.out.json_line(&line)?;
        return Ok(());
    }
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    ctx.out.text(&format!(
        "extpool serves {} and {} on {url}\n",
        plural(servers, "server"),
        counts.label()
    ))?;
    ctx.out
        .text(&format!("The operator page, live: http://{addr}/\n"))?;
    ctx.out.text(&format!(
        "\nAdd it to your agent:\n  Claude Code  claude mcp add --transport http extpool {url}\n  Codex        in ~/.codex/config.toml:\n                 [mcp_servers.extpool]\n                 url = \"{url}\"\n  Cursor       in .cursor/mcp.json: {{\"mcpServers\": {{\"extpool\": {{\"url\": \"{url}\"}}}}}}\n  VS Code      code --add-mcp '{{\"name\":\"extpool\",\"type\":\"http\",\"url\":\"{url}\"}}'\n  (or run `{}` as the agent's one stdio server)\n\nOr let extpool write the agent's own config file: `{}` (or codex, cursor, vscode, gemini)\n\nStop with Ctrl-C.\n",
        crate::invocation::cmd("serve --stdio"),
        crate::invocation::cmd(&if url == super::connect::LOCAL_GATEWAY {
            "connect claude-code".to_owned()
        } else {
            format!("connect claude-code --url {url}")
        }),
    ))?;
    Ok(())
}
