//! `extpool config check | show | import | paths`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use extpool_host::config::diagnostics::display_path;
use extpool_host::config::{
    ConfigError, Loaded, RenderMode, Severity, process_env, render, secrets,
};
use serde::Serialize;

use crate::Reported;
use crate::cli::{ConfigCommand, ImportArgs};
use crate::context::Ctx;
use crate::output::shown;

/// Runs a `config` subcommand.
pub fn run(ctx: &mut Ctx, cmd: ConfigCommand) -> Result<ExitCode> {
    match cmd {
        ConfigCommand::Check => check(ctx),
        ConfigCommand::Show => show(ctx),
        ConfigCommand::Import(args) => import(ctx, args),
        ConfigCommand::Paths => paths(ctx),
        ConfigCommand::Schema { markdown } => {
            use extpool_host::config::schema;
            if markdown {
                ctx.out.text(&schema::reference_markdown())?;
            } else {
                ctx.out.json_value(&schema::schema())?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[derive(Serialize)]
struct CheckReport<'a> {
    ok: bool,
    sources: Vec<SourceJson<'a>>,
    diagnostics: Vec<&'a extpool_host::config::Diagnostic>,
}

#[derive(Serialize)]
struct SourceJson<'a> {
    file: &'a str,
    program: &'static str,
    format: &'static str,
    servers: &'a [String],
}

fn sources_json(loaded: &Loaded) -> Vec<SourceJson<'_>> {
    loaded
        .sources
        .iter()
        .map(|s| SourceJson {
            file: &s.file,
            program: s.origin.label(),
            format: s.format.as_str(),
            servers: &s.servers,
        })
        .collect()
}

/// Prints a configuration error (every diagnostic) and returns `Reported`.
fn report_error(ctx: &mut Ctx, e: ConfigError) -> Result<ExitCode> {
    if e.diagnostics().is_empty() {
        return Err(e.into());
    }
    if ctx.global.json {
        let report = CheckReport {
            ok: false,
            sources: Vec::new(),
            diagnostics: e.diagnostics().iter().collect(),
        };
        ctx.out.json_value(&report)?;
    } else {
        let report = crate::context::config_error_report(ctx.err_style, e.diagnostics());
        let _ = std::io::stderr().lock().write_all(report.as_bytes());
    }
    Err(Reported.into())
}

fn check(ctx: &mut Ctx) -> Result<ExitCode> {
    let loaded = match ctx.load_files() {
        Ok(l) => l,
        Err(e) => match e.downcast::<ConfigError>() {
            Ok(ce) => return report_error(ctx, ce),
            Err(e) => return Err(e),
        },
    };
    let mut diagnostics: Vec<extpool_host::config::Diagnostic> = loaded.diagnostics.clone();
    diagnostics.extend(loaded.unresolved_variables(&process_env));
    diagnostics.extend(loaded.remote_problems(&process_env));
    // A discovered file skipped for its syntax or encoding, or an entry
    // skipped for its shape, is an error: what runs is not what the files
    // say, so the check fails although the rest still loads.
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let code = if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    if ctx.global.json {
        let report = CheckReport {
            ok: errors == 0,
            sources: sources_json(&loaded),
            diagnostics: diagnostics.iter().collect(),
        };
        ctx.out.json_value(&report)?;
        return Ok(code);
    }
    {
        let mut err = std::io::stderr().lock();
        for d in &diagnostics {
            let _ = writeln!(err, "{}", ctx.diagnostic_line(d));
        }
    }
    if loaded.sources.is_empty() && errors == 0 {
        ctx.out.line(format!(
            "ok: no configuration file found (see `{}`); skills are still discovered",
            crate::invocation::cmd("config paths")
        ))?;
        return Ok(code);
    }
    let style = ctx.out.style;
    for s in &loaded.sources {
        let n = s.servers.len();
        ctx.out.line(format!(
            "{} {}  {} ({n} server{})",
            style.green("✓"),
            shown(&s.file),
            s.origin.label(),
            if n == 1 { "" } else { "s" }
        ))?;
    }
    for file in loaded.skipped_files() {
        ctx.out.line(format!(
            "{} {}  skipped (see the error above)",
            style.red("✗"),
            shown(file)
        ))?;
    }
    let warnings = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    let servers = loaded.config.mcp_servers.len();
    let counts = format!(
        "{servers} server{}, {warnings} warning{}",
        if servers == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    );
    if errors == 0 {
        ctx.out.line(format!("ok: {counts}"))?;
    } else {
        ctx.out.line(format!(
            "{}: {errors} error{}: the files or entries named are skipped; the rest loads ({counts})",
            style.red("error"),
            if errors == 1 { "" } else { "s" },
        ))?;
    }
    Ok(code)
}

#[derive(Serialize)]
struct ShowJson<'a> {
    sources: Vec<SourceJson<'a>>,
    config: extpool_host::config::ExtpoolConfig,
}

fn show(ctx: &mut Ctx) -> Result<ExitCode> {
    let loaded = ctx.load_files()?;
    ctx.warn(&loaded.diagnostics);
    if ctx.global.json {
        let mut config = loaded.config.clone();
        for server in config.mcp_servers.values_mut() {
            *server = secrets::masked(server);
        }
        let value = ShowJson {
            sources: sources_json(&loaded),
            config,
        };
        ctx.out.json_value(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rendered = render(&loaded, &RenderMode::Show);
    ctx.out.text(&rendered.yaml)?;
    Ok(ExitCode::SUCCESS)
}

fn import(ctx: &mut Ctx, args: ImportArgs) -> Result<ExitCode> {
    if !args.files.is_empty() {
        ctx.global.config = args.files.clone();
    }
    let loaded = ctx.load_files()?;
    ctx.warn(&loaded.diagnostics);
    if loaded.sources.is_empty() {
        bail!(
            "no configuration found to import (see `{}`, or name a file)",
            crate::invocation::cmd("config paths")
        );
    }
    let out_path = args.output.as_ref().map(|p| {
        if p.is_absolute() {
            p.clone()
        } else {
            ctx.places.cwd.join(p)
        }
    });
    let out_dir = out_path
        .as_ref()
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .unwrap_or_else(|| ctx.places.cwd.clone());
    let rendered = render(
        &loaded,
        &RenderMode::Import {
            keep_secrets: args.keep_secrets,
            out_dir,
        },
    );
    let mut err = std::io::stderr().lock();
    for d in loaded
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Note)
    {
        let _ = writeln!(err, "{}", ctx.diagnostic_line(d));
    }
    match &out_path {
        Some(path) => {
            let shown = display_path(path, Some(&ctx.places.cwd), ctx.places.home.as_deref());
            if path.exists() && !args.force {
                bail!("{shown} exists; use --force to overwrite it");
            }
            std::fs::write(path, &rendered.yaml)
                .with_context(|| format!("cannot write {shown}"))?;
            let n = loaded.config.mcp_servers.len();
            let _ = writeln!(
                err,
                "wrote {shown}: {n} server{} from {}",
                if n == 1 { "" } else { "s" },
                loaded
                    .sources
                    .iter()
                    .map(|s| s.file.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        None => ctx.out.text(&rendered.yaml)?,
    }
    if !rendered.exports.is_empty() {
        let _ = writeln!(
            err,
            "{}: literal secrets were replaced by ${{VAR}} references; export these before running extpool:",
            ctx.err_style.yellow("note")
        );
        for e in &rendered.exports {
            let _ = writeln!(err, "  {e}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct PathJson {
    file: String,
    program: &'static str,
    format: &'static str,
    scope: &'static str,
    exists: bool,
}

fn paths(ctx: &mut Ctx) -> Result<ExitCode> {
    let rows: Vec<PathJson> = ctx
        .places
        .candidates()
        .into_iter()
        .map(|c| PathJson {
            file: display_path(&c.path, Some(&ctx.places.cwd), ctx.places.home.as_deref()),
            program: c.origin.label(),
            format: c.format.as_str(),
            scope: if c.project { "project" } else { "user" },
            exists: c.path.is_file(),
        })
        .collect();
    if ctx.global.json {
        ctx.out.json_value(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                if r.exists { "yes" } else { "-" }.into(),
                r.scope.into(),
                r.program.into(),
                r.file.clone(),
            ]
        })
        .collect();
    ctx.out
        .table(&["FOUND", "SCOPE", "PROGRAM", "FILE"], &table)?;
    Ok(ExitCode::SUCCESS)
}
