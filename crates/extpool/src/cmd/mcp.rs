//! `extpool mcp add|remove|list` (the servers of extpool.yaml, in
//! [`super::servers`]) and `extpool mcp login|logout|auth-status`: OAuth
//! for remote MCP servers.
//!
//! Argument parsing and rendering only; discovery, the login flow, the
//! credential store and the status rows are extpool-auth's.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use extpool_auth::{
    AuthContext, CredentialStore, DcrAction, GrantState, LoginOptions, LoginPrompt, LoginTarget,
    LoopbackAuthorizer, OAuthProfile,
};
use extpool_host::config::{LoadRequest, Loaded, process_env};

use crate::UsageError;
use crate::context::Ctx;

/// `extpool mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Add a server to extpool.yaml: a URL, a command after `--`, or one the MCP Registry lists.
    #[command(after_help = "\
Examples:
  extpool mcp add docs https://docs.example/mcp --header 'Authorization: Bearer ${DOCS_TOKEN}'
  extpool mcp add files -- npx -y @modelcontextprotocol/server-filesystem .
  extpool mcp add git --env LOG_LEVEL=info -- uvx mcp-server-git
  extpool mcp add weather --from-registry io.github.user/weather --yes
  extpool mcp add docs https://docs.example/mcp --scope project

The entry is checked as `extpool config check` checks it before anything is
written, and only its lines are added: comments and the rest of the file stay
as they are. A literal secret in --header or --env is written as a ${VAR}
reference to export. A running `extpool serve` picks the server up.")]
    Add(super::servers::AddArgs),
    /// Remove a server from extpool.yaml (its lines and the comments written with it).
    Remove(super::servers::RemoveArgs),
    /// The configured servers and the file each is defined in (as `extpool list servers`).
    List,
    /// Authorize an OAuth profile: discovery, registration, browser consent; the grant is stored encrypted.
    #[command(after_help = "\
Examples:
  extpool mcp login github                 opens the browser, waits for the redirect
  extpool mcp login github --no-browser    prints the URL; paste the address the browser ends on
  extpool mcp login linear --retry-dcr-registration
  extpool mcp login github --permission-config base.yaml --permission-config team.yaml")]
    Login(LoginArgs),
    /// Forget a profile's stored grant (the upstream client is not revoked).
    Logout(ProfileArgs),
    /// Show which OAuth profiles have a grant, its expiry and scopes (never the token).
    AuthStatus(StatusArgs),
}

/// `extpool mcp login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The server (its `mcp_servers` name).
    pub server: String,
    /// Print the authorization URL instead of opening a browser; then paste
    /// the redirect URL (or let the local redirect arrive).
    #[arg(long)]
    pub no_browser: bool,
    /// Where the profile is read from.
    #[command(flatten)]
    pub source: ConfigSource,
    /// Direct DCR: redo an interrupted registration (same profile, principal, resource and issuer).
    #[arg(long, conflicts_with = "reset_dcr_registration")]
    pub retry_dcr_registration: bool,
    /// Direct DCR: replace a ready registration and its valid grant.
    #[arg(long)]
    pub reset_dcr_registration: bool,
    /// Log in through a running gateway instead, as its caller (the token
    /// in EXTPOOL_GATEWAY_TOKEN): for a server whose grant is each caller's
    /// own (`oauth: {per_user: true}`).
    #[arg(
        long,
        value_name = "URL",
        conflicts_with_all = ["file", "permission_config", "retry_dcr_registration", "reset_dcr_registration"]
    )]
    pub gateway: Option<String>,
}

/// `extpool mcp logout`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The server (its `mcp_servers` name).
    pub server: String,
    /// Where the profile is read from.
    #[command(flatten)]
    pub source: ConfigSource,
}

/// `extpool mcp auth-status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Where the profiles are read from.
    #[command(flatten)]
    pub source: ConfigSource,
}

/// The configuration an `mcp` subcommand reads its profiles from: one file,
/// the layered files a gateway serves with, or (neither given) the global
/// `--config` files or discovery.
#[derive(Debug, Args)]
pub struct ConfigSource {
    /// Read the profile from this configuration file only.
    #[arg(long, value_name = "PATH", conflicts_with = "permission_config")]
    pub file: Option<PathBuf>,
    /// Read the profile from these configuration files, layered as
    /// `extpool serve --config` layers them (the first definition of a server
    /// wins): the files a gateway serves with. Repeatable.
    #[arg(long, value_name = "PATH")]
    pub permission_config: Vec<PathBuf>,
}

/// Runs an `mcp` subcommand.
pub async fn run(ctx: &mut Ctx, command: McpCommand) -> Result<ExitCode> {
    match command {
        McpCommand::Add(args) => super::servers::add(ctx, args).await,
        McpCommand::Remove(args) => super::servers::remove(ctx, args),
        McpCommand::List => super::list::servers(ctx),
        McpCommand::Login(args) => login(ctx, args).await,
        McpCommand::Logout(args) => logout(ctx, args),
        McpCommand::AuthStatus(args) => status(ctx, args),
    }
}

fn load(ctx: &Ctx, source: &ConfigSource) -> Result<Loaded> {
    let files = match (&source.file, source.permission_config.as_slice()) {
        (Some(path), _) => vec![path.clone()],
        (None, []) => return ctx.load_reporting(),
        (None, layers) => layers.to_vec(),
    };
    let loaded = extpool_host::config::load(&LoadRequest {
        files,
        places: ctx.places.clone(),
    })?;
    ctx.warn(&loaded.diagnostics);
    Ok(loaded)
}

/// The server's URL and OAuth profile, `${VAR}` expanded.
fn profile(loaded: &Loaded, server: &str) -> Result<(String, OAuthProfile)> {
    let Some(resolved) = loaded.resolve_server(server, &process_env) else {
        let known: Vec<&String> = loaded.config.mcp_servers.keys().collect();
        return Err(UsageError(format!(
            "no MCP server named {server:?} in the configuration (configured: {known:?})"
        ))
        .into());
    };
    let config = resolved.with_context(|| format!("MCP server {server:?}"))?;
    let url = config.url.clone().ok_or_else(|| {
        UsageError(format!("MCP server {server:?} is not an HTTP server (no `url`); OAuth applies to remote servers"))
    })?;
    let profile = config.oauth.clone().ok_or_else(|| {
        UsageError(format!(
            "MCP server {server:?} has no OAuth profile; add `oauth: {{}}` under mcp_servers.{server}"
        ))
    })?;
    Ok((url, profile))
}

/// Shows a login's prompt on stderr; the URL and the reason come from
/// the authorization server, so they are shown escaped.
fn render_prompt(prompt: LoginPrompt) {
    let mut err = std::io::stderr().lock();
    let _ = match prompt {
        LoginPrompt::Visit { url, paste: true } => writeln!(
            err,
            "Open this URL in a browser to authorize:\n\n  {}\n\nThen paste the address the browser was sent to (it starts with http://127.0.0.1) and press Enter:",
            crate::output::shown(&url)
        ),
        LoginPrompt::Visit { url, paste: false } => {
            writeln!(
                err,
                "Opening the browser to authorize. If it does not open, visit:\n\n  {}\n",
                crate::output::shown(&url)
            )
        }
        LoginPrompt::BrowserFailed(reason) => writeln!(
            err,
            "Could not open a browser ({}); use the URL above.",
            crate::output::shown(&reason)
        ),
    };
}

/// Feeds lines of standard input to the login (for pasted redirect URLs).
fn stdin_lines() -> tokio::sync::mpsc::Receiver<String> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut line = String::new();
        while stdin.read_line(&mut line).is_ok_and(|n| n > 0) {
            if tx.blocking_send(std::mem::take(&mut line)).is_err() {
                break;
            }
        }
    });
    rx
}

async fn login(ctx: &mut Ctx, args: LoginArgs) -> Result<ExitCode> {
    if let Some(gateway) = &args.gateway {
        return super::gateway_login::run(ctx, gateway, &args.server, !args.no_browser).await;
    }
    let loaded = load(ctx, &args.source)?;
    let (url, profile) = profile(&loaded, &args.server)?;
    let auth = AuthContext::default();
    let store = CredentialStore::open(auth.store_dir_for(&profile))?;
    let mut authorizer = LoopbackAuthorizer::new(!args.no_browser, Arc::new(render_prompt));
    if args.no_browser {
        authorizer = authorizer.with_paste(stdin_lines());
    }
    let options = LoginOptions {
        dcr: match (args.retry_dcr_registration, args.reset_dcr_registration) {
            (true, _) => DcrAction::Retry,
            (_, true) => DcrAction::Reset,
            _ => DcrAction::Normal,
        },
        ..LoginOptions::default()
    };
    let target = LoginTarget {
        server: &args.server,
        url: &url,
        profile: &profile,
    };
    let grant = extpool_auth::login(target, &store, &authorizer, &options).await?;
    let row = extpool_auth::status(&args.server, &url, &profile, &auth)?;
    if ctx.global.json {
        ctx.out.json_value(&row)?;
    } else {
        let expiry = grant
            .expires_at
            .map(|at| format!(", expires {}", describe_expiry(at)))
            .unwrap_or_default();
        let scopes = if grant.scopes.is_empty() {
            String::new()
        } else {
            format!(", scopes {}", grant.scopes.join(" "))
        };
        ctx.out.line(format!(
            "{} logged in to {}{scopes}{expiry} (stored in {})",
            ctx.out.style.green("✓"),
            args.server,
            store.dir().display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn logout(ctx: &mut Ctx, args: ProfileArgs) -> Result<ExitCode> {
    let loaded = load(ctx, &args.source)?;
    let (_, profile) = profile(&loaded, &args.server)?;
    let outcome = extpool_auth::logout(&args.server, &profile, &AuthContext::default())?;
    if ctx.global.json {
        ctx.out.json_value(&outcome)?;
    } else if outcome.removed.is_empty() {
        ctx.out
            .line(format!("{} had no stored grant", args.server))?;
    } else {
        ctx.out.line(format!(
            "logged out of {} (removed: {})",
            args.server,
            outcome.removed.join(", ")
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn status(ctx: &mut Ctx, args: StatusArgs) -> Result<ExitCode> {
    let loaded = load(ctx, &args.source)?;
    let auth = AuthContext::default();
    let mut rows = Vec::new();
    for (name, config) in &loaded.config.mcp_servers {
        if config.oauth.is_none() {
            continue;
        }
        let (url, profile) = profile(&loaded, name)?;
        rows.push(extpool_auth::status(name, &url, &profile, &auth)?);
    }
    if ctx.global.json {
        ctx.out.json_value(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        ctx.out
            .line(ctx.out.style.dim("no MCP server has an `oauth` profile"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| {
            let state = match &r.grant {
                GrantState::Missing => "no grant".to_owned(),
                GrantState::Valid => "valid".to_owned(),
                GrantState::Refreshable => "expired, refreshable".to_owned(),
                GrantState::Expired => "expired".to_owned(),
                GrantState::Stale { reason } => format!("stale ({reason})"),
                GrantState::Unreadable { reason } => format!("unreadable ({reason})"),
            };
            let state = match &r.registration {
                Some(reg) => format!("{state}; registration {reg}"),
                None => state,
            };
            vec![
                r.server,
                r.mode.to_owned(),
                state,
                r.expires_at
                    .map(describe_expiry)
                    .unwrap_or_else(|| "-".into()),
                if r.scopes.is_empty() {
                    "-".into()
                } else {
                    r.scopes.join(" ")
                },
                r.location,
            ]
        })
        .collect();
    ctx.out.table(
        &["SERVER", "MODE", "GRANT", "EXPIRES", "SCOPES", "STORE"],
        &table,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// "in 59 min" / "12 min ago".
fn describe_expiry(at: u64) -> String {
    let now = extpool_auth::grant::now_secs();
    let (delta, future) = if at >= now {
        (at - now, true)
    } else {
        (now - at, false)
    };
    let amount = match delta {
        0..=119 => format!("{delta} s"),
        120..=7199 => format!("{} min", delta / 60),
        7200..=172_799 => format!("{} h", delta / 3600),
        _ => format!("{} days", delta / 86_400),
    };
    if future {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}
