//! `extpool plugins add|marketplace|list|enable|disable|remove|validate`:
//! extpool's own plugin manager, for people who use extpool without a
//! host, and the check of a plugin folder.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use extpool_host::plugins::{self as plugins, Prepared, Store};
use serde::Serialize;

use crate::cli::{MarketplaceCommand, PluginAddArgs, PluginsCommand};
use crate::context::Ctx;
use crate::output::shown;

/// Runs a `plugins` command.
pub fn run(ctx: &mut Ctx, cmd: PluginsCommand) -> Result<ExitCode> {
    match cmd {
        PluginsCommand::Validate { path } => validate(ctx, &path),
        PluginsCommand::Add(args) => add(ctx, args),
        PluginsCommand::Marketplace(MarketplaceCommand::Add { source }) => {
            marketplace_add(ctx, &source)
        }
        PluginsCommand::Marketplace(MarketplaceCommand::List) => marketplace_list(ctx),
        PluginsCommand::List => list(ctx),
        PluginsCommand::Enable { name } => set_enabled(ctx, &name, true),
        PluginsCommand::Disable { name } => set_enabled(ctx, &name, false),
        PluginsCommand::Remove { name } => remove(ctx, &name),
    }
}

fn store(ctx: &Ctx) -> Result<Store> {
    plugins::store(&ctx.places).context(
        "extpool's data directory is unknown: set HOME (or XDG_DATA_HOME) to install plugins",
    )
}

/// `plugins validate PATH`: the reader's report (`--json`: as is).
fn validate(ctx: &mut Ctx, path: &std::path::Path) -> Result<ExitCode> {
    let report = plugins::validate(path);
    let loaded = report.outcome == plugins::Outcome::Loaded;
    if ctx.global.json {
        ctx.out.json_value(&report)?;
    } else {
        let shown_path = ctx.show_path(path);
        match &report.name {
            Some(name) if loaded => {
                let format = report.format.map(|f| f.as_str()).unwrap_or_default();
                ctx.out.line(format!(
                    "{shown_path}: {} plugin {} ({format}{})",
                    ctx.out.style.green("loaded:"),
                    shown(name),
                    report
                        .version
                        .as_deref()
                        .map(|v| format!(", version {}", shown(v)))
                        .unwrap_or_default()
                ))?;
            }
            _ => ctx.out.line(format!(
                "{shown_path}: rejected ({})",
                report.reason.unwrap_or("not a plugin")
            ))?,
        }
        for (what, items) in [
            ("skills", &report.skills),
            ("servers", &report.servers),
            ("commands", &report.commands),
            ("agents", &report.agents),
            ("hooks (never run by extpool)", &report.hooks),
        ] {
            if !items.is_empty() {
                ctx.out
                    .line(format!("  {what}: {}", shown(&items.join(", "))))?;
            }
        }
        for d in &report.diagnostics {
            ctx.out.line(format!("  {}", shown(&d.to_string())))?;
        }
    }
    Ok(if loaded {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What `prepared` will run, confined how (`runs`; the plugin served from
/// `installed`), and what extpool never runs, for people.
fn summary(
    ctx: &Ctx,
    prepared: &Prepared,
    runs: &Runs,
    installed: &std::path::Path,
) -> Vec<String> {
    let confinement = runs.confinement();
    let p = &prepared.plugin;
    let root = p.root.display().to_string();
    let here = |s: &str| s.replace(&root, "<plugin>");
    let mut lines = vec![format!(
        "plugin {} ({}{}) from {}",
        p.name,
        p.format.as_str(),
        p.version
            .as_deref()
            .map(|v| format!(", version {v}"))
            .unwrap_or_default(),
        prepared.source
    )];
    if let Some(commit) = &prepared.commit {
        lines.push(format!("  commit {commit}"));
    }
    lines.push(format!("  files {}", prepared.digest));
    if p.servers.is_empty() {
        lines.push("  runs no MCP server".into());
    }
    for s in &p.servers {
        let what = match (&s.config.command, &s.config.url) {
            (Some(cmd), _) => {
                let mut line = here(cmd);
                for a in &s.config.args {
                    line.push(' ');
                    line.push_str(&here(a));
                }
                match runs {
                    Runs::Confined(_) => format!("runs `{line}` confined"),
                    Runs::Unconfined(setting) => {
                        format!("runs `{line}` as you, unconfined ({setting})")
                    }
                }
            }
            (None, Some(url)) => format!("connects to {url}"),
            _ => "has no transport extpool can start".into(),
        };
        lines.push(format!(
            "  MCP server {} ({}): {what}",
            s.name, s.server_name
        ));
        if let (Some(c), Some(_)) = (confinement, &s.config.command) {
            lines.extend(profile_lines(ctx, c, installed));
        }
    }
    if confinement.is_some() && p.servers.iter().any(|s| s.config.command.is_some()) {
        lines.push(format!(
            "  widen its servers' profile with plugins.sandbox.{} in extpool.yaml (network, read, write, env), or run them unconfined with `plugins.sandbox.{}: false`",
            p.name, p.name
        ));
    }
    for h in &p.hooks {
        lines.push(format!(
            "  hook {}{}: {} — listed only, never run by extpool",
            h.event,
            h.matcher
                .as_deref()
                .map(|m| format!(" [{m}]"))
                .unwrap_or_default(),
            h.command
                .as_deref()
                .map(here)
                .unwrap_or_else(|| h.kind.clone())
        ));
    }
    let asks: Vec<&str> = p
        .commands
        .iter()
        .filter(|c| c.asks_host_to_run())
        .map(|c| c.name.as_str())
        .collect();
    if !asks.is_empty() {
        lines.push(format!(
            "  commands {} ask their host to run shell lines or include files: extpool shows them as text and runs nothing",
            asks.iter().map(|c| format!("/{c}")).collect::<Vec<_>>().join(", ")
        ));
    }
    lines.push(format!(
        "  provides {} skill(s), {} command(s), {} subagent(s)",
        p.skills.len(),
        p.commands.len(),
        p.agents.len()
    ));
    lines
}

/// The profile of `confinement` in a few lines: its summary, what it
/// reads and writes (the plugin's folder, served from `installed`, shown
/// as `<plugin>`), and why this machine cannot enforce it, if it cannot.
fn profile_lines(
    ctx: &Ctx,
    confinement: &plugins::Confinement,
    installed: &std::path::Path,
) -> Vec<String> {
    let profile = confinement.profile();
    let root = installed.display().to_string();
    let show = |paths: &[String]| -> String {
        paths
            .iter()
            .map(|p| {
                let path = std::path::Path::new(p);
                if *p == root {
                    "<plugin>".to_owned()
                } else if path == ctx.places.cwd {
                    format!("{} (the project)", path.display())
                } else {
                    ctx.show_path(path)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut lines = vec![format!("    sandbox: {}", profile.summary())];
    lines.push(format!("      read: {}", show(&profile.read)));
    lines.push(format!("      write: {}", show(&profile.write)));
    lines.push(format!(
        "      network: {}; environment: PATH, a private HOME and TMPDIR{}",
        profile.network.describe(),
        if profile.env.is_empty() {
            String::new()
        } else {
            format!(", {}", profile.env.join(", "))
        }
    ));
    if let Some(why) = confinement.unenforceable() {
        lines.push(format!(
            "      this machine cannot enforce it, so the server will not start: {why}"
        ));
    }
    lines
}

/// Asks on the terminal whether to install ([`super::ask::confirm`]).
fn confirm(ctx: &Ctx, question: &str, yes: bool) -> Result<bool> {
    super::ask::confirm(ctx, question, yes, "install and enable it")
}

#[derive(Serialize)]
struct Added<'a> {
    outcome: &'static str,
    record: &'a plugins::Record,
    /// The profile each of its servers runs under (`null`: unconfined).
    sandbox: BTreeMap<String, Option<extpool_host::SandboxProfile>>,
}

/// How a plugin's stdio servers will run.
enum Runs {
    /// Confined by this profile.
    Confined(Box<plugins::Confinement>),
    /// As the user, unconfined by this setting (as the user writes it).
    Unconfined(String),
}

impl Runs {
    /// The confinement, when confined.
    fn confinement(&self) -> Option<&plugins::Confinement> {
        match self {
            Runs::Confined(c) => Some(c),
            Runs::Unconfined(_) => None,
        }
    }
}

/// How `prepared`'s stdio servers will run once served from `installed`,
/// by the configuration's `plugins:` rules.
fn runs_of(ctx: &Ctx, prepared: &Prepared, installed: &std::path::Path) -> Result<Runs> {
    let loaded = ctx.load_files()?;
    let mut plugin = prepared.plugin.clone();
    plugin.root = installed.to_path_buf();
    let (config, id) = (&loaded.config, plugin.name.as_str());
    Ok(
        match plugins::confine::confinement(config, &plugin, id, &ctx.places) {
            Some(c) => Runs::Confined(Box::new(c)),
            None => Runs::Unconfined(
                plugins::confine::unconfined_by(config, &plugin, id).unwrap_or_default(),
            ),
        },
    )
}

/// The profile of each server of `prepared` (`null`: unconfined).
fn profiles(
    prepared: &Prepared,
    confinement: Option<&plugins::Confinement>,
) -> BTreeMap<String, Option<extpool_host::SandboxProfile>> {
    prepared
        .plugin
        .servers
        .iter()
        .map(|s| {
            let profile = confinement
                .filter(|_| s.config.command.is_some())
                .map(plugins::Confinement::profile);
            (s.server_name.clone(), profile)
        })
        .collect()
}

/// `plugins add SOURCE`: fetch and read, say what it runs, ask, install.
fn add(ctx: &mut Ctx, args: PluginAddArgs) -> Result<ExitCode> {
    let source = plugins::parse_source(&args.source, &ctx.places.cwd)?;
    let store = store(ctx)?;
    let prepared = store.prepare(source, &plugins::read_options(&ctx.places))?;
    let installed = store.install_path(&prepared);
    let runs = runs_of(ctx, &prepared, &installed)?;
    let sandbox = profiles(&prepared, runs.confinement());
    if prepared.unchanged {
        let record = store.commit(prepared, true)?;
        if ctx.global.json {
            ctx.out.json_value(&Added {
                outcome: "unchanged",
                record: &record,
                sandbox,
            })?;
        } else {
            ctx.out.line(format!(
                "plugin {} is installed already from the same commit and files; nothing changed",
                shown(&record.name)
            ))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    {
        let mut err = std::io::stderr().lock();
        for line in summary(ctx, &prepared, &runs, &installed) {
            writeln!(err, "{}", shown(&line))?;
        }
        if let Some(old) = &prepared.replaces {
            writeln!(
                err,
                "  replaces the installed {} from {}",
                shown(&old.name),
                shown(&old.source.to_string())
            )?;
        }
        for d in &prepared.plugin.diagnostics {
            writeln!(err, "  {}", shown(&d.to_string()))?;
        }
    }
    let question = format!("Install and enable plugin {}?", prepared.plugin.name);
    if !confirm(ctx, &question, args.yes)? {
        writeln!(std::io::stderr().lock(), "nothing was installed")?;
        return Ok(ExitCode::from(1));
    }
    let record = store.commit(prepared, true)?;
    if ctx.global.json {
        ctx.out.json_value(&Added {
            outcome: "installed",
            record: &record,
            sandbox,
        })?;
    } else {
        ctx.out.line(format!(
            "installed and enabled plugin {} ({}); see `extpool list plugins`",
            shown(&record.name),
            shown(&record.digest)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `plugins marketplace add SOURCE`.
fn marketplace_add(ctx: &mut Ctx, spec: &str) -> Result<ExitCode> {
    let source = plugins::parse_source(spec, &ctx.places.cwd)?;
    let (market, record) = store(ctx)?.add_marketplace(source)?;
    if ctx.global.json {
        ctx.out
            .json_value(&serde_json::json!({"marketplace": record, "plugins": market.plugins}))?;
        return Ok(ExitCode::SUCCESS);
    }
    let names: Vec<&str> = market.plugins.iter().map(|p| p.name.as_str()).collect();
    ctx.out.line(format!(
        "added marketplace {} ({} plugin{}: {})",
        shown(&market.name),
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        shown(&names.join(", "))
    ))?;
    if let Some(first) = names.first() {
        ctx.out.line(ctx.out.style.dim(&format!(
            "install one with `extpool plugins add {}@{}`",
            shown(first),
            shown(&market.name)
        )))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `plugins marketplace list`.
fn marketplace_list(ctx: &mut Ctx) -> Result<ExitCode> {
    let records = store(ctx)?.marketplaces()?;
    if ctx.global.json {
        ctx.out.json_value(&records)?;
    } else if records.is_empty() {
        ctx.out.line(
            ctx.out
                .style
                .dim("no marketplace added (`extpool plugins marketplace add PATH|GIT-URL`)"),
        )?;
    } else {
        let rows: Vec<Vec<String>> = records
            .iter()
            .map(|r| vec![r.name.clone(), r.source.to_string()])
            .collect();
        ctx.out.table(&["MARKETPLACE", "SOURCE"], &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `plugins list`: extpool's own records.
fn list(ctx: &mut Ctx) -> Result<ExitCode> {
    let records = store(ctx)?.records()?;
    if ctx.global.json {
        ctx.out.json_value(&records)?;
        return Ok(ExitCode::SUCCESS);
    }
    if records.is_empty() {
        ctx.out.line(ctx.out.style.dim(
            "extpool installed no plugin (`extpool plugins add`); `extpool list plugins` shows every host's",
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.version.clone().unwrap_or_default(),
                if r.enabled { "enabled" } else { "disabled" }.into(),
                r.source.to_string(),
                r.commit
                    .as_deref()
                    .map(|c| c.chars().take(12).collect())
                    .unwrap_or_default(),
            ]
        })
        .collect();
    ctx.out
        .table(&["PLUGIN", "VERSION", "STATE", "SOURCE", "COMMIT"], &rows)?;
    Ok(ExitCode::SUCCESS)
}

/// The error for `name` that extpool did not install: which host did,
/// when one did.
fn not_ours(ctx: &Ctx, e: extpool_host::plugins::StoreError, name: &str) -> anyhow::Error {
    if !e.is_not_found() {
        return e.into();
    }
    let found = ctx.load().ok().and_then(|_| ctx.found_plugins());
    let other = found
        .map(|f| plugins::plugins(&f))
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.name == name || p.id == name);
    match other {
        Some(p) => anyhow::anyhow!(
            "plugin {} was installed by {} ({}), not by extpool: change it there",
            shown(name),
            p.host,
            shown(&p.id)
        ),
        None => anyhow::anyhow!("{e}; see `extpool plugins list`"),
    }
}

/// `plugins enable|disable NAME`.
fn set_enabled(ctx: &mut Ctx, name: &str, enabled: bool) -> Result<ExitCode> {
    let record = store(ctx)?
        .set_enabled(name, enabled)
        .map_err(|e| not_ours(ctx, e, name))?;
    ctx.out.line(format!(
        "plugin {} {}",
        shown(&record.name),
        if enabled { "enabled" } else { "disabled" }
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `plugins remove NAME`.
fn remove(ctx: &mut Ctx, name: &str) -> Result<ExitCode> {
    let record = store(ctx)?
        .remove(name)
        .map_err(|e| not_ours(ctx, e, name))?;
    ctx.out
        .line(format!("removed plugin {}", shown(&record.name)))?;
    Ok(ExitCode::SUCCESS)
}
