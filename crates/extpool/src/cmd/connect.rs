//! `extpool connect AGENT`: an agent's own config file made to reach a
//! gateway — Claude Code, Codex, Cursor, VS Code, Gemini CLI, each in its
//! own file and format (extpool-config's [`Agent`]), every other byte of
//! the file kept. `--remove` takes the entry out, `--print` shows it
//! without writing, `--status` says which agent points at which gateway.
//!
//! A token is never written: when the gateway needs one, the entry names
//! the environment variable the agent reads it from.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, anyhow};
use clap::{Args, ValueEnum};
use extpool_host::config::edit::agents::{Agent, Scope};
use extpool_host::config::edit::{self, EditError};
use serde::Serialize;

use crate::UsageError;
use crate::context::Ctx;
use crate::invocation::cmd;
use crate::output::shown;

/// The local gateway's MCP endpoint (`extpool serve`'s default listen address).
pub const LOCAL_GATEWAY: &str = "http://127.0.0.1:8520/mcp";

/// The variable a gateway's token is read from (`extpool serve` reads it too).
const TOKEN_ENV: &str = "EXTPOOL_GATEWAY_TOKEN";

/// An agent on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentArg {
    /// Claude Code (~/.claude.json, or .mcp.json with --scope project).
    ClaudeCode,
    /// OpenAI Codex ($CODEX_HOME/config.toml, or .codex/config.toml).
    Codex,
    /// Cursor (~/.cursor/mcp.json, or .cursor/mcp.json).
    Cursor,
    /// VS Code (the user profile's mcp.json, or .vscode/mcp.json).
    Vscode,
    /// Gemini CLI (~/.gemini/settings.json, or .gemini/settings.json).
    Gemini,
}

impl AgentArg {
    fn agent(self) -> Agent {
        match self {
            AgentArg::ClaudeCode => Agent::ClaudeCode,
            AgentArg::Codex => Agent::Codex,
            AgentArg::Cursor => Agent::Cursor,
            AgentArg::Vscode => Agent::VsCode,
            AgentArg::Gemini => Agent::Gemini,
        }
    }
}

/// `--scope` of an agent's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    /// The user's file: every project.
    User,
    /// The working directory's project file (commit it to share it).
    Project,
}

/// `extpool connect`.
#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// The agent to connect.
    #[arg(value_enum, required_unless_present = "status")]
    pub agent: Option<AgentArg>,
    /// The gateway's MCP endpoint (default: the local gateway).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The entry's name in the agent's file.
    #[arg(long, default_value = "extpool")]
    pub name: String,
    /// Which of the agent's files.
    #[arg(long, value_enum, default_value = "user")]
    pub scope: ScopeArg,
    /// Send a bearer token read from this environment variable (default:
    /// EXTPOOL_GATEWAY_TOKEN when it is set here or the URL is not on this
    /// machine).
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// Take the entry out instead.
    #[arg(long, conflicts_with_all = ["print", "url", "token_env"])]
    pub remove: bool,
    /// Print the snippet that would be written, and write nothing.
    #[arg(long)]
    pub print: bool,
    /// Which agents point at which gateway (every agent's files).
    #[arg(long, conflicts_with_all = ["remove", "print", "token_env"])]
    pub status: bool,
}

/// The environment variable the entry names, when the gateway needs a token.
fn token_env(args: &ConnectArgs, url: &url::Url) -> Result<Option<String>> {
    if let Some(var) = &args.token_env {
        let valid = !var.is_empty()
            && !var.starts_with(|c: char| c.is_ascii_digit())
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(UsageError(format!(
                "--token-env {}: an environment variable's name is [A-Za-z0-9_]",
                shown(var)
            ))
            .into());
        }
        return Ok(Some(var.clone()));
    }
    let set_here = std::env::var_os(TOKEN_ENV).is_some_and(|v| !v.is_empty());
    Ok((set_here || !is_loopback(url)).then(|| TOKEN_ENV.to_owned()))
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The gateway's URL, checked.
fn gateway_url(given: Option<&str>) -> Result<url::Url> {
    let text = given.unwrap_or(LOCAL_GATEWAY);
    let url =
        url::Url::parse(text).map_err(|e| UsageError(format!("--url {}: {e}", shown(text))))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(UsageError(format!(
            "--url {}: a gateway's MCP endpoint is an http(s) URL, e.g. {LOCAL_GATEWAY}",
            shown(text)
        ))
        .into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UsageError(format!(
            "--url {}: no credentials in the URL; the token is sent from an environment variable (--token-env)",
            url.host_str().unwrap_or_default()
        ))
        .into());
    }
    Ok(url)
}

fn scope(arg: ScopeArg) -> Scope {
    match arg {
        ScopeArg::User => Scope::User,
        ScopeArg::Project => Scope::Project,
    }
}

/// An agent's file of a scope.
fn file_of(ctx: &Ctx, agent: Agent, scope: Scope) -> Result<PathBuf> {
    agent.file(scope, &ctx.places).ok_or_else(|| {
        anyhow!(
            "{}'s {} file has no place here: set HOME, or use --scope project",
            agent.label(),
            scope.as_str()
        )
    })
}

fn located(file: &str, e: EditError) -> anyhow::Error {
    match e {
        EditError::Syntax { line, message } => {
            anyhow!("{file}:{line}: cannot read it: {message}; nothing was written")
        }
        e => anyhow!("{file}: {e}; nothing was written"),
    }
}

#[derive(Serialize)]
struct Done {
    outcome: &'static str,
    agent: &'static str,
    scope: &'static str,
    file: String,
    name: String,
    url: Option<String>,
    token_env: Option<String>,
}

/// `extpool connect`.
pub fn run(ctx: &mut Ctx, args: ConnectArgs) -> Result<ExitCode> {
    if args.status {
        return status(ctx, &args);
    }
    let agent = args
        .agent
        .map(AgentArg::agent)
        .ok_or_else(|| UsageError("name the agent to connect".into()))?;
    if args.name.is_empty() || args.name.chars().any(|c| c.is_control()) {
        return Err(UsageError("--name: an entry needs a printable name".into()).into());
    }
    let scope = scope(args.scope);
    let path = file_of(ctx, agent, scope)?;
    let file = ctx.show_path(&path);
    if args.remove {
        let old = super::servers::read(ctx, &path)?;
        let edited = agent
            .disconnect(&old, &args.name)
            .map_err(|e| located(&file, e))?;
        if edited.changed {
            edit::write_atomic(&path, &edited.text)
                .with_context(|| format!("cannot write {file}"))?;
        }
        let outcome = if edited.changed { "removed" } else { "absent" };
        return say(ctx, &args, agent, scope, file, outcome, None, None);
    }
    let url = gateway_url(args.url.as_deref())?;
    let var = token_env(&args, &url)?;
    let entry = agent.entry(url.as_str(), var.as_deref());
    if args.print {
        let snippet = agent
            .snippet(&args.name, &entry)
            .map_err(|e| anyhow!("{e}"))?;
        ctx.out.text(&snippet)?;
        return Ok(ExitCode::SUCCESS);
    }
    let old = super::servers::read(ctx, &path)?;
    let edited = agent
        .connect(&old, &args.name, &entry)
        .map_err(|e| located(&file, e))?;
    if edited.changed {
        edit::write_atomic(&path, &edited.text).with_context(|| format!("cannot write {file}"))?;
    }
    let outcome = if edited.changed {
        "connected"
    } else {
        "unchanged"
    };
    say(
        ctx,
        &args,
        agent,
        scope,
        file,
        outcome,
        Some(url.to_string()),
        var,
    )
}

#[allow(clippy::too_many_arguments)]
fn say(
    ctx: &mut Ctx,
    args: &ConnectArgs,
    agent: Agent,
    scope: Scope,
    file: String,
    outcome: &'static str,
    url: Option<String>,
    var: Option<String>,
) -> Result<ExitCode> {
    if ctx.global.json {
        ctx.out.json_value(&Done {
            outcome,
            agent: agent.id(),
            scope: scope.as_str(),
            file,
            name: args.name.clone(),
            url,
            token_env: var,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let name = shown(&args.name);
    let line = match (outcome, &url) {
        ("connected", Some(url)) => format!(
            "{} ({} scope) now reaches the gateway at {url} as MCP server {name}: {file}",
            agent.label(),
            scope.as_str()
        ),
        ("unchanged", Some(url)) => format!(
            "{} ({} scope) already reaches {url} as {name}; {file} is unchanged",
            agent.label(),
            scope.as_str()
        ),
        ("removed", _) => format!("removed {name} from {file} ({})", agent.label()),
        _ => format!("{file} has no entry {name}; nothing to remove"),
    };
    ctx.out.line(line)?;
    if let Some(var) = var {
        ctx.out.line(ctx.out.style.dim(&format!(
            "{} sends the token from {var}: export it where {} runs",
            agent.label(),
            agent.label()
        )))?;
    }
    if outcome == "connected" {
        ctx.out.line(ctx.out.style.dim(&format!(
            "restart {} (or reload its MCP servers); `{}` serves the gateway",
            agent.label(),
            cmd("serve")
        )))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct StatusRow {
    agent: &'static str,
    scope: &'static str,
    file: String,
    name: String,
    url: String,
    token_env: Option<String>,
    /// Whether it reaches the gateway `--url` names (default: the local one).
    this_gateway: bool,
}

/// Whether an entry's URL is the gateway's: the same URL, or `localhost`
/// for `127.0.0.1`, a trailing `/` aside.
fn same_gateway(entry: &str, gateway: &url::Url) -> bool {
    let Ok(mut entry) = url::Url::parse(entry) else {
        return false;
    };
    let mut gateway = gateway.clone();
    for url in [&mut entry, &mut gateway] {
        if url.host_str() == Some("localhost") {
            let _ = url.set_host(Some("127.0.0.1"));
        }
        let path = url.path().trim_end_matches('/').to_owned();
        url.set_path(&path);
    }
    entry == gateway
}

/// `extpool connect --status`: every agent's files, their entries that
/// are extpool's (the name) or reach the gateway.
fn status(ctx: &mut Ctx, args: &ConnectArgs) -> Result<ExitCode> {
    let gateway = gateway_url(args.url.as_deref())?;
    let agents: Vec<Agent> = match args.agent {
        Some(a) => vec![a.agent()],
        None => Agent::ALL.to_vec(),
    };
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for agent in agents {
        for scope in [Scope::User, Scope::Project] {
            let Some(path) = agent.file(scope, &ctx.places) else {
                continue;
            };
            if !path.exists() {
                continue;
            }
            let file = ctx.show_path(&path);
            let entries = match super::servers::read(ctx, &path)
                .and_then(|t| agent.entries(&t).map_err(|e| located(&file, e)))
            {
                Ok(entries) => entries,
                Err(e) => {
                    problems.push(format!("{e:#}"));
                    continue;
                }
            };
            for (name, value) in entries {
                let Some(url) = agent.entry_url(&value) else {
                    continue;
                };
                let this_gateway = same_gateway(&url, &gateway);
                if name != args.name && !this_gateway {
                    continue;
                }
                rows.push(StatusRow {
                    agent: agent.id(),
                    scope: scope.as_str(),
                    file: file.clone(),
                    name,
                    url,
                    token_env: agent.entry_token_env(&value),
                    this_gateway,
                });
            }
        }
    }
    for problem in &problems {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}: {}",
            ctx.err_style.yellow("warning"),
            shown(problem)
        );
    }
    if ctx.global.json {
        ctx.out.json_value(&rows)?;
    } else if rows.is_empty() {
        ctx.out.line(format!(
            "no agent reaches a gateway named {} or at {gateway}; `{}` connects one",
            shown(&args.name),
            cmd("connect AGENT")
        ))?;
    } else {
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.agent.to_owned(),
                    r.scope.to_owned(),
                    shown(&r.name).into_owned(),
                    shown(&r.url).into_owned(),
                    r.token_env.clone().unwrap_or_else(|| "-".into()),
                    shown(&r.file).into_owned(),
                ]
            })
            .collect();
        ctx.out.table(
            &["AGENT", "SCOPE", "NAME", "GATEWAY", "TOKEN FROM", "FILE"],
            &table,
        )?;
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateways_are_the_same_across_localhost_and_a_trailing_slash() {
        let local = gateway_url(None).unwrap();
        assert!(same_gateway("http://localhost:8520/mcp/", &local));
        assert!(!same_gateway("http://127.0.0.1:8521/mcp", &local));
        assert!(gateway_url(Some("ftp://x/mcp")).is_err());
        assert!(gateway_url(Some("https://u:p@x/mcp")).is_err());
    }
}
