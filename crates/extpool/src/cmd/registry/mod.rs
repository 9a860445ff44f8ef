//! `extpool search TERM` and `extpool mcp add NAME --from-registry`: the
//! servers an MCP Registry lists ([`api`], v0.1 of its API), and what one
//! of them would run as an `mcp_servers` entry ([`install`]), shown
//! before it is written.
//!
//! The registry is the official one unless `--registry URL` or
//! `EXTPOOL_REGISTRY_URL` names another (organisations run their own).

mod api;
mod install;

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use extpool_host::McpServerConfig;
use serde::Serialize;

use super::servers::AddArgs;
use crate::UsageError;
use crate::context::Ctx;
use crate::invocation::cmd;
use crate::output::shown;

/// The variable naming the registry when `--registry` does not.
const REGISTRY_ENV: &str = "EXTPOOL_REGISTRY_URL";

/// `extpool search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for in servers' names (a substring, as the registry matches).
    pub term: String,
    /// The registry (default: EXTPOOL_REGISTRY_URL, else the official one).
    #[arg(long, value_name = "URL")]
    pub registry: Option<String>,
    /// The most servers to show (at most 100).
    #[arg(long, default_value_t = 20)]
    pub limit: u32,
    /// The page after a previous search (its `next page` cursor).
    #[arg(long)]
    pub cursor: Option<String>,
}

/// The registry a command asks.
fn registry(given: Option<&str>) -> Result<api::Registry> {
    let env = std::env::var(REGISTRY_ENV).ok().filter(|v| !v.is_empty());
    let base = given
        .map(str::to_owned)
        .or(env)
        .unwrap_or_else(|| api::DEFAULT_REGISTRY.to_owned());
    api::Registry::new(&base)
}

#[derive(Serialize)]
struct Found<'a> {
    name: &'a str,
    version: &'a str,
    description: &'a str,
    status: &'a str,
    runs: Option<Vec<String>>,
    cannot_run: Option<String>,
}

#[derive(Serialize)]
struct Searched<'a> {
    registry: &'a str,
    servers: Vec<Found<'a>>,
    next_cursor: Option<&'a str>,
}

/// `extpool search`.
pub async fn search(ctx: &mut Ctx, args: SearchArgs) -> Result<ExitCode> {
    if args.term.trim().is_empty() {
        return Err(UsageError("say what to search for: `extpool search TERM`".into()).into());
    }
    let registry = registry(args.registry.as_deref())?;
    let list = registry
        .search(&args.term, args.limit, args.cursor.as_deref())
        .await?;
    let next = list
        .metadata
        .as_ref()
        .and_then(|m| m.next_cursor.as_deref())
        .filter(|c| !c.is_empty());
    let plans: Vec<_> = list
        .servers
        .iter()
        .map(|s| install::plan(&s.server, &local_name(&s.server.name)))
        .collect();
    if ctx.global.json {
        let servers = list
            .servers
            .iter()
            .zip(&plans)
            .map(|(s, plan)| Found {
                name: &s.server.name,
                version: &s.server.version,
                description: &s.server.description,
                status: s.status(),
                runs: plan.as_ref().ok().map(|p| p.shown.clone()),
                cannot_run: plan.as_ref().err().cloned(),
            })
            .collect();
        ctx.out.json_value(&Searched {
            registry: registry.base(),
            servers,
            next_cursor: next,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    if list.servers.is_empty() {
        ctx.out.line(format!(
            "no server of {} has {} in its name",
            registry.base(),
            shown(&args.term)
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list
        .servers
        .iter()
        .zip(&plans)
        .map(|(s, plan)| {
            let how = match plan {
                Ok(p) => p.shown.first().cloned().unwrap_or_default(),
                Err(_) => "(nothing extpool can run)".into(),
            };
            let mut description = s.server.description.clone();
            if s.status() != "active" {
                description = format!("[{}] {description}", s.status());
            }
            vec![
                shown(&s.server.name).into_owned(),
                shown(&s.server.version).into_owned(),
                shown(&description).into_owned(),
                shown(&how).into_owned(),
            ]
        })
        .collect();
    ctx.out
        .table(&["NAME", "VERSION", "DESCRIPTION", "HOW"], &rows)?;
    let style = ctx.out.style;
    ctx.out.line(style.dim(&format!(
        "add one: `{}`",
        cmd("mcp add NAME --from-registry")
    )))?;
    if let Some(next) = next {
        ctx.out.line(style.dim(&format!(
            "next page: `{}`",
            cmd(&format!(
                "search {} --cursor {}",
                shell_word(&args.term),
                shell_word(next)
            ))
        )))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A word quoted for a POSIX shell when it needs to be.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The `mcp_servers` name of a registry server: the last part of its
/// name, made a valid server name (`io.github.user/weather` → `weather`).
fn local_name(registry_name: &str) -> String {
    let last = registry_name.rsplit('/').next().unwrap_or(registry_name);
    extpool_host::core::name::sanitize_server_name(last)
}

/// A registry server as `(name, entry, notes)` for `mcp add
/// --from-registry`, after showing what it runs and asking; `None` when
/// the answer is no.
pub async fn entry_for(
    ctx: &mut Ctx,
    args: &AddArgs,
    server: &str,
) -> Result<Option<(String, McpServerConfig, Vec<String>)>> {
    if args.url.is_some() || !args.command.is_empty() {
        return Err(UsageError(
            "--from-registry takes what to run from the registry: give no URL or command".into(),
        )
        .into());
    }
    if !args.headers.is_empty() || !args.env.is_empty() {
        return Err(UsageError(
            "--from-registry takes headers and environment from the registry: export the variables it names instead of --header/--env".into(),
        )
        .into());
    }
    let (registry_name, name) = if server.is_empty() {
        (args.name.clone(), local_name(&args.name))
    } else {
        (server.to_owned(), args.name.clone())
    };
    let registry = registry(args.registry.as_deref())?;
    let Some(found) = registry.latest(&registry_name).await? else {
        bail!(
            "the registry at {} lists no server named {}; see `{}`",
            registry.base(),
            shown(&registry_name),
            cmd(&format!("search {}", shell_word(&registry_name)))
        );
    };
    let detail = &found.server;
    let mut notes = Vec::new();
    match found.status() {
        "deleted" => bail!(
            "{} {} is deleted from the registry at {}; it is not added",
            shown(&detail.name),
            shown(&detail.version),
            registry.base()
        ),
        "active" => {}
        status => notes.push(format!(
            "the registry marks {} as {status}{}",
            shown(&detail.name),
            found
                .meta
                .as_ref()
                .and_then(|m| m.official.as_ref())
                .and_then(|o| o.status_message.as_deref())
                .map(|m| format!(": {}", shown(m)))
                .unwrap_or_default()
        )),
    }
    let plan = install::plan(detail, &name).map_err(|why| {
        anyhow::anyhow!(
            "{} {} cannot be added: {why}",
            shown(&detail.name),
            shown(&detail.version)
        )
    })?;
    show_plan(ctx, &found, &plan, &name, registry.base())?;
    let question = format!("add {} to extpool.yaml?", shown(&name));
    if !super::ask::confirm(ctx, &question, args.yes, "add a registry server")? {
        ctx.out.line("not added")?;
        return Ok(None);
    }
    for (var, about) in &plan.inputs {
        notes.push(format!("export {var} where extpool runs: {}", shown(about)));
    }
    Ok(Some((name, plan.config, notes)))
}

/// What a registry server would run, on standard error (standard output
/// stays the command's result).
fn show_plan(
    ctx: &Ctx,
    found: &api::ServerResponse,
    plan: &install::Plan,
    name: &str,
    base: &str,
) -> Result<()> {
    use std::io::Write;
    let d = &found.server;
    let s = ctx.err_style;
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "{} {} from {base}, as MCP server {}",
        s.bold(&shown(&d.name)),
        shown(&d.version),
        shown(name)
    )?;
    if let Some(title) = d.title.as_deref().filter(|t| !t.is_empty()) {
        writeln!(err, "  {}", shown(title))?;
    }
    if !d.description.is_empty() {
        writeln!(err, "  {}", shown(&d.description))?;
    }
    if let Some(repo) = d.repository.as_ref().filter(|r| !r.url.is_empty()) {
        writeln!(err, "  source: {}", shown(&repo.url))?;
    }
    for line in &plan.shown {
        writeln!(err, "  {}", shown(line))?;
    }
    for (var, about) in &plan.inputs {
        writeln!(err, "  needs:  {var} ({})", shown(about))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_become_server_names_and_words_are_quoted() {
        assert_eq!(local_name("io.github.user/weather"), "weather");
        assert_eq!(local_name("com.example/my-server"), "my_server");
        assert_eq!(shell_word("abc=="), "abc==");
        assert_eq!(shell_word("a b'c"), r"'a b'\''c'");
    }
}
