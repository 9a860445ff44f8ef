//! `extpool list plugins` and `extpool list agents`: every plugin found
//! (extpool's own, then those Claude Code, Codex and Gemini CLI
//! installed), enabled or not, with what it provides; the subagents of the
//! enabled ones. Read from the hosts' records only: no server starts.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use extpool_host::plugins::{self as plugins, PluginInfo};

use crate::context::Ctx;
use crate::output::shown;

/// What loading found: the configuration's warnings and the plugins.
fn found(ctx: &Ctx) -> Result<plugins::Found> {
    ctx.load_reporting()?;
    Ok(ctx.found_plugins().unwrap_or_else(plugins::Found::none))
}

/// Says on stderr what plugin discovery found wrong.
fn warn(ctx: &Ctx, found: &plugins::Found) {
    let mut err = std::io::stderr().lock();
    for line in plugins::problems(found) {
        let _ = writeln!(err, "{}: {}", ctx.err_style.yellow("warning"), shown(&line));
    }
}

fn count(n: usize, one: &str) -> Option<String> {
    (n > 0).then(|| format!("{n} {one}{}", if n == 1 { "" } else { "s" }))
}

/// What a plugin provides, in a few words.
fn provides(p: &PluginInfo) -> String {
    let parts: Vec<String> = [
        count(p.skills.len(), "skill"),
        count(p.commands.len(), "command"),
        count(p.servers.len(), "server"),
        count(p.agents.len(), "agent"),
        count(p.hooks.len(), "hook").map(|h| format!("{h} (not run)")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join(", ")
    }
}

/// The profile a plugin's servers run under, in a few words: its summary,
/// `unconfined`, or nothing for a plugin without a server.
fn sandbox_cell(p: &PluginInfo) -> String {
    let mut profiles = p.sandbox.values();
    match profiles.clone().flatten().next() {
        Some(profile) => profile.summary(),
        None if profiles.next().is_some() => "unconfined".into(),
        None => String::new(),
    }
}

/// `list plugins`.
pub fn plugins(ctx: &mut Ctx) -> Result<ExitCode> {
    let found = found(ctx)?;
    warn(ctx, &found);
    let mut rows = plugins::plugins(&found);
    if ctx.global.json {
        ctx.out.json_value(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        ctx.out.line(ctx.out.style.dim(
            "no plugins (looked in extpool's own, ~/.claude/plugins, ~/.codex/config.toml and ~/.gemini/extensions)",
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<Vec<String>> = rows
        .iter_mut()
        .map(|p| {
            let state = match (p.loaded, p.enabled) {
                (false, _) => "not loaded",
                (true, true) => "enabled",
                (true, false) => "disabled",
            };
            vec![
                p.name.clone(),
                p.host.to_owned(),
                state.to_owned(),
                provides(p),
                sandbox_cell(p),
                ctx.show_path(&p.path),
            ]
        })
        .collect();
    ctx.out.table(
        &["PLUGIN", "HOST", "STATE", "PROVIDES", "SANDBOX", "PATH"],
        &table,
    )?;
    for p in rows.iter().filter(|p| !p.diagnostics.is_empty()) {
        let mut err = std::io::stderr().lock();
        for d in &p.diagnostics {
            let _ = writeln!(err, "{}", shown(d));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `list agents`.
pub fn agents(ctx: &mut Ctx) -> Result<ExitCode> {
    let found = found(ctx)?;
    warn(ctx, &found);
    let rows = plugins::agents(&found);
    if ctx.global.json {
        ctx.out.json_value(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        ctx.out.line(
            ctx.out
                .style
                .dim("no subagents (none of the enabled plugins defines one)"),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<Vec<String>> = rows
        .into_iter()
        .map(|a| {
            vec![
                a.name,
                a.model.unwrap_or_default(),
                a.tools
                    .map(|t| t.join(", "))
                    .unwrap_or_else(|| "every tool".into()),
                a.description,
            ]
        })
        .collect();
    ctx.out
        .table(&["AGENT", "MODEL", "TOOLS", "DESCRIPTION"], &table)?;
    Ok(ExitCode::SUCCESS)
}
