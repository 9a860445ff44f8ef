//! `extpool` with no command: what extpool finds here (configs, plugins,
//! servers, skills, commands) and the next commands to try, built from
//! real names.

use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use extpool_host::plugins::PluginInfo;
use extpool_host::{SkillInfo, SourceInfo, ToolInfo};

use super::{Need, Opened, open_host};
use crate::context::Ctx;
use crate::invocation::cmd;
use crate::output::shown;

#[derive(Serialize)]
struct Overview<'a> {
    version: &'static str,
    configs: Vec<ConfigJson<'a>>,
    /// Files found but skipped for an error (reported on stderr).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<&'a str>,
    plugins: Vec<PluginInfo>,
    servers: Vec<SourceInfo>,
    tools: usize,
    skills: Vec<SkillInfo>,
    commands: Vec<String>,
    next: Vec<String>,
}

#[derive(Serialize)]
struct ConfigJson<'a> {
    file: &'a str,
    program: &'static str,
    servers: usize,
}

fn next_steps(
    host: &Opened,
    tools: &[ToolInfo],
    skills: &[SkillInfo],
    commands: &[String],
) -> Vec<String> {
    let mut next = Vec::new();
    let loaded = host.host.config();
    if loaded.errors().next().is_some() {
        next.push(format!(
            "{:<31} every problem of the configuration, located",
            cmd("config check")
        ));
    } else if loaded.sources.is_empty() {
        next.push(format!(
            "{:<31} where extpool looks for .mcp.json, ~/.claude.json, …",
            cmd("config paths")
        ));
    }
    if !tools.is_empty() {
        next.push(cmd("list tools"));
        next.extend(super::suggest::suggestion(tools));
    }
    if let Some(skill) = skills
        .iter()
        .find(|s| s.name == "release-notes")
        .or(skills.first())
    {
        next.push(cmd(&format!("read {}", skill.uri)));
    }
    if let Some(command) = commands.iter().find(|c| c.as_str() == "/release-notes") {
        next.push(cmd(&format!("run {command} v1.2.0")));
    } else if let Some(command) = commands.first() {
        next.push(cmd(&format!("run {command}")));
    }
    if !loaded.sources.is_empty() {
        next.push(cmd("config show"));
        if loaded
            .sources
            .iter()
            .any(|s| s.format != extpool_host::config::ConfigFormat::Extpool)
        {
            next.push(cmd("config import -o extpool.yaml"));
        }
    }
    next.push(cmd("--help"));
    next
}

/// Prints the overview.
pub async fn run(ctx: &mut Ctx) -> Result<ExitCode> {
    let host = open_host(ctx, Need::Servers).await?;
    let tools = host.view.tools();
    let skills = ctx.shown_skills(host.view.skills());
    let commands: Vec<String> = host.view.commands().into_iter().map(|c| c.name).collect();
    let servers: Vec<SourceInfo> = host
        .host
        .sources()
        .into_iter()
        .filter(|s| s.kind == "server")
        .collect();
    let mut next = next_steps(&host, &tools, &skills, &commands);
    let plugins = host.host.plugins();
    if !plugins.is_empty() {
        next.insert(next.len() - 1, cmd("list plugins"));
    }
    let listed = Listed {
        plugins: &plugins,
        servers: &servers,
        tools: &tools,
        skills: &skills,
        commands: &commands,
        next: &next,
    };
    let result = print(ctx, &host, &listed);
    let code = host.listing_code();
    host.shutdown().await;
    result?;
    Ok(code)
}

/// The characters of a server's detail shown in the overview (the whole
/// text is in `extpool list sources`).
const DETAIL_CHARS: usize = 110;

/// What the overview shows beside the configuration.
struct Listed<'a> {
    plugins: &'a [PluginInfo],
    servers: &'a [SourceInfo],
    tools: &'a [ToolInfo],
    skills: &'a [SkillInfo],
    commands: &'a [String],
    next: &'a [String],
}

/// The plugins, one line each: enabled or not, host, what it provides.
fn plugin_lines(out: &mut crate::output::Out, plugins: &[PluginInfo]) -> Result<()> {
    let s = out.style;
    out.line(s.bold(&format!("Plugins ({})", plugins.len())))?;
    if plugins.is_empty() {
        out.line(
            "  none installed (extpool reads its own, Claude Code's, Codex's and Gemini CLI's)",
        )?;
    }
    let w = plugins
        .iter()
        .map(|p| shown(&p.name).chars().count())
        .max()
        .unwrap_or(0);
    for p in plugins {
        let (mark, state) = match (p.loaded, p.enabled) {
            (false, _) => (s.red("✗"), "not loaded"),
            (true, true) => (s.green("✓"), "enabled"),
            (true, false) => (s.dim("·"), "disabled"),
        };
        let provides = [
            (p.skills.len(), "skill"),
            (p.commands.len(), "command"),
            (p.servers.len(), "server"),
            (p.agents.len(), "agent"),
            (p.hooks.len(), "hook"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}{}", if *n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join(", ");
        out.line(format!(
            "  {mark} {:<w$}  {} {state}{}",
            shown(&p.name),
            p.host,
            if provides.is_empty() {
                String::new()
            } else {
                format!(": {provides}")
            }
        ))?;
    }
    if plugins.iter().any(|p| !p.hooks.is_empty()) {
        out.line(s.dim("  hooks are listed, never run by extpool"))?;
    }
    Ok(())
}

fn print(ctx: &mut Ctx, host: &Opened, listed: &Listed) -> Result<()> {
    let Listed {
        plugins,
        servers,
        tools,
        skills,
        commands,
        next,
    } = *listed;
    if ctx.global.json {
        ctx.out.json_value(&Overview {
            version: env!("CARGO_PKG_VERSION"),
            configs: host
                .host
                .config()
                .sources
                .iter()
                .map(|s| ConfigJson {
                    file: &s.file,
                    program: s.origin.label(),
                    servers: s.servers.len(),
                })
                .collect(),
            skipped: host.host.config().skipped_files(),
            plugins: plugins.to_vec(),
            servers: servers.to_vec(),
            tools: tools.len(),
            skills: skills.to_vec(),
            commands: commands.to_vec(),
            next: next.to_vec(),
        })?;
        return Ok(());
    }
    let s = ctx.out.style;
    let out = &mut ctx.out;
    out.line(format!(
        "{} {} — MCP servers, Agent Skills and commands behind one registry",
        s.bold("extpool"),
        env!("CARGO_PKG_VERSION")
    ))?;
    out.line("")?;
    out.line(s.bold("Configuration"))?;
    let skipped = host.host.config().skipped_files();
    if host.host.config().sources.is_empty() && skipped.is_empty() {
        out.line(
            "  no configuration file found (extpool reads extpool.yaml, .mcp.json, ~/.claude.json,",
        )?;
        out.line(format!(
            "  Cursor, Claude Desktop, VS Code and Codex configs; see `{}`)",
            cmd("config paths")
        ))?;
    } else {
        let mut rows: Vec<Vec<String>> = host
            .host
            .config()
            .sources
            .iter()
            .map(|src| {
                let n = src.servers.len();
                vec![
                    format!("  {}", shown(&src.file)),
                    src.origin.label().into(),
                    format!("{n} server{}", if n == 1 { "" } else { "s" }),
                ]
            })
            .collect();
        rows.extend(skipped.iter().map(|file| {
            vec![
                format!("  {}", shown(file)),
                "skipped".into(),
                "for the error above (extpool config check)".into(),
            ]
        }));
        out.text(
            &crate::output::render_table(&["", "", ""], &rows, None, s)
                .lines()
                .skip(1)
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
        )?;
    }
    out.line("")?;
    plugin_lines(out, plugins)?;
    out.line("")?;
    out.line(s.bold(&format!("Servers ({})", servers.len())))?;
    if servers.is_empty() {
        out.line("  none configured")?;
    }
    let w = servers
        .iter()
        .map(|x| shown(&x.name).chars().count())
        .max()
        .unwrap_or(0);
    for srv in servers {
        let mark = match srv.state.as_str() {
            "ready" | "lazy" => s.green("✓"),
            "failed" => s.red("✗"),
            _ => s.dim("·"),
        };
        let first = srv.detail.lines().next().unwrap_or("");
        let mut detail: String = first.chars().take(DETAIL_CHARS).collect();
        if detail.len() < srv.detail.len() {
            detail.push('…');
        }
        out.line(format!(
            "  {mark} {:<w$}  {}: {}",
            shown(&srv.name),
            shown(&srv.state),
            shown(&detail)
        ))?;
    }
    if servers.iter().any(|x| x.state == "failed") {
        out.line(s.dim(&format!("  the whole errors: {}", cmd("list sources"))))?;
    }
    out.line("")?;
    let counts = super::counts::ToolCounts::of(tools.iter().map(|t| t.name.as_str()));
    out.line(s.bold(&format!("Tools: {}", counts.label())))?;
    let first: Vec<&str> = tools.iter().take(6).map(|t| t.name.as_str()).collect();
    if !first.is_empty() {
        let more = if tools.len() > first.len() {
            ", …"
        } else {
            ""
        };
        out.line(format!("  {}{more}", shown(&first.join(", "))))?;
    }
    out.line("")?;
    out.line(s.bold(&format!(
        "Skills: {}",
        super::counts::skills_label(skills.iter().map(|k| k.source.as_str()))
    )))?;
    if skills.is_empty() {
        out.line("  none found in skills.paths or a host's skill folder (.agents, .claude, .codex, .gemini, .github, .cursor /skills; project and ~)")?;
    }
    let w = skills
        .iter()
        .take(8)
        .map(|x| shown(&x.name).chars().count())
        .max()
        .unwrap_or(0);
    for sk in skills.iter().take(8) {
        let description = shown(&sk.description);
        let mut desc: String = description.chars().take(70).collect();
        if description.chars().count() > 70 {
            desc.push('…');
        }
        out.line(format!("  {:<w$}  {}", shown(&sk.name), s.dim(&desc)))?;
    }
    if skills.len() > 8 {
        out.line(format!(
            "  … and {} more ({})",
            skills.len() - 8,
            cmd("list skills --hosted")
        ))?;
    }
    out.line("")?;
    out.line(s.bold(&format!("Commands ({})", commands.len())))?;
    if !commands.is_empty() {
        let first: Vec<&str> = commands.iter().take(6).map(String::as_str).collect();
        let more = if commands.len() > first.len() {
            ", …"
        } else {
            ""
        };
        out.line(format!("  {}{more}", shown(&first.join(", "))))?;
    }
    out.line("")?;
    out.line(s.bold("Try next"))?;
    for n in next {
        out.line(format!("  {}", shown(n)))?;
    }
    Ok(())
}
