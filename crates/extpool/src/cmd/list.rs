//! `extpool list [tools|skills|commands|resources|sources|servers|plugins|agents]`.

use std::process::ExitCode;

use anyhow::Result;
use extpool_host::config::secrets;
use serde::Serialize;

use super::sources::{SourceRow, sources_table};
use super::{Need, Opened, open_host};
use crate::cli::{ListArgs, ListKind};
use crate::context::Ctx;
use crate::output::shown;
use extpool_host::servers::transport;
use extpool_host::{CommandInfo, ResourceInfo, SkillInfo, TemplateInfo, ToolInfo};

#[derive(Serialize)]
struct Everything {
    tools: Vec<ToolInfo>,
    skills: Vec<SkillInfo>,
    commands: Vec<CommandInfo>,
    resources: Vec<ResourceInfo>,
    templates: Vec<TemplateInfo>,
}

#[derive(Serialize)]
struct ServerJson {
    name: String,
    transport: String,
    enabled: bool,
    lazy: bool,
    origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    plugin: Option<String>,
    /// The permission profile it runs under (`null`: unconfined).
    sandbox: Option<extpool_host::SandboxProfile>,
}

/// Lists what was asked for.
pub async fn run(ctx: &mut Ctx, args: ListArgs) -> Result<ExitCode> {
    if let Some(gateway) = &args.gateway {
        if args.kind != Some(ListKind::Sources) {
            return Err(crate::UsageError(format!(
                "--gateway lists a running gateway's sources: `{}`",
                crate::invocation::cmd("list sources --gateway URL")
            ))
            .into());
        }
        return super::sources::of_gateway(ctx, gateway).await;
    }
    match args.kind {
        Some(ListKind::Servers) => return servers(ctx),
        Some(ListKind::Plugins) => return super::plugin_list::plugins(ctx),
        Some(ListKind::Agents) => return super::plugin_list::agents(ctx),
        _ => {}
    }
    // Local skills need no server; the skills MCP servers host do.
    let local_skills = args.kind == Some(ListKind::Skills) && !args.hosted;
    let need = if local_skills {
        Need::Nothing
    } else {
        Need::Servers
    };
    let opened = open_host(ctx, need).await?;
    let skills = ctx.shown_skills(opened.view.skills());
    let templates = match args.kind {
        None | Some(ListKind::Resources | ListKind::Templates) => {
            opened.view.resource_templates().await
        }
        _ => Vec::new(),
    };
    let listed = Listed {
        skills: &skills,
        templates: &templates,
    };
    let mut result = print(ctx, &opened, &listed, args.kind);
    if result.is_ok() && local_skills && opened.configured_servers > 0 && !ctx.global.json {
        let hint = ctx.out.style.dim(&format!(
            "skills MCP servers host are not listed: `{}` starts the servers",
            crate::invocation::cmd("list skills --hosted")
        ));
        result = ctx.out.line(hint).map_err(anyhow::Error::from);
    }
    let code = opened.listing_code();
    opened.shutdown().await;
    result?;
    Ok(code)
}

/// What the listing asked the host for beyond its view's cached lists.
struct Listed<'a> {
    skills: &'a [SkillInfo],
    templates: &'a [TemplateInfo],
}

fn print(ctx: &mut Ctx, host: &Opened, listed: &Listed, kind: Option<ListKind>) -> Result<()> {
    let json = ctx.global.json;
    let view = &host.view;
    let skills = listed.skills;
    match kind {
        None if json => ctx.out.json_value(&Everything {
            tools: view.tools(),
            skills: skills.to_vec(),
            commands: view.commands(),
            resources: view.resources(),
            templates: listed.templates.to_vec(),
        })?,
        None => {
            for k in [
                ListKind::Tools,
                ListKind::Skills,
                ListKind::Commands,
                ListKind::Resources,
            ] {
                let title = format!("{k:?}").to_ascii_uppercase();
                ctx.out.line(ctx.out.style.bold(&title))?;
                table(ctx, host, listed, k)?;
                ctx.out.line("")?;
            }
        }
        Some(k) if json => match k {
            ListKind::Tools => ctx.out.json_value(&view.tools())?,
            ListKind::Skills => ctx.out.json_value(&skills)?,
            ListKind::Commands => ctx.out.json_value(&view.commands())?,
            ListKind::Resources => ctx.out.json_value(&view.resources())?,
            ListKind::Templates => ctx.out.json_value(&listed.templates)?,
            ListKind::Sources => ctx.out.json_value(&host.host.sources())?,
            ListKind::Servers | ListKind::Plugins | ListKind::Agents => {}
        },
        Some(k) => table(ctx, host, listed, k)?,
    }
    Ok(())
}

fn table(ctx: &mut Ctx, host: &Opened, listed: &Listed, kind: ListKind) -> Result<()> {
    let view = &host.view;
    let skills = listed.skills;
    let no_tools = no_tools_line(host);
    let (headers, rows, empty): (&[&str], Vec<Vec<String>>, &str) = match kind {
        ListKind::Tools => (
            &["TOOL", "DESCRIPTION"],
            view.tools()
                .into_iter()
                .map(|t| vec![t.name, t.description])
                .collect(),
            &no_tools,
        ),
        ListKind::Skills => (
            &["SKILL", "SOURCE", "DESCRIPTION"],
            skills
                .iter()
                .map(|s| {
                    let source = match &s.path {
                        Some(p) => p.display().to_string(),
                        None => s.source.clone(),
                    };
                    vec![s.name.clone(), source, s.description.clone()]
                })
                .collect(),
            "no skills (looked in skills.paths and every host's skill folders: .agents, .claude, .codex, .gemini, .github/.copilot, .cursor)",
        ),
        ListKind::Commands => (
            &["COMMAND", "ARGUMENTS", "DESCRIPTION"],
            view.commands()
                .into_iter()
                .map(|c| {
                    let args: Vec<String> = c
                        .arguments
                        .iter()
                        .map(|a| {
                            if a.required {
                                format!("<{}>", a.name)
                            } else {
                                format!("[{}]", a.name)
                            }
                        })
                        .collect();
                    vec![c.name, args.join(" "), c.description]
                })
                .collect(),
            "no commands",
        ),
        ListKind::Resources => (
            &["URI", "SERVER", "DESCRIPTION"],
            view.resources()
                .into_iter()
                .map(|r| {
                    let d = if r.description.is_empty() {
                        r.name
                    } else {
                        r.description
                    };
                    vec![r.uri, r.server, d]
                })
                .collect(),
            "no resources",
        ),
        ListKind::Templates => (
            &["URI TEMPLATE", "SERVER", "DESCRIPTION"],
            template_rows(listed.templates),
            "no resource templates",
        ),
        ListKind::Sources => {
            // The command that shows why a root's skills are not loaded:
            // the CLI's to say, not the rows' (a gateway's model reads them).
            let unloaded: std::collections::HashSet<String> = host
                .host
                .skill_root_reports()
                .iter()
                .filter(|r| !r.skipped.is_empty())
                .map(|r| ctx.show_path(&r.root))
                .collect();
            let rows = host.host.sources().into_iter().map(SourceRow::from);
            return sources_table(ctx, rows.collect(), &unloaded);
        }
        ListKind::Servers | ListKind::Plugins | ListKind::Agents => return Ok(()),
    };
    if rows.is_empty() {
        ctx.out.line(ctx.out.style.dim(empty))?;
    } else {
        ctx.out.table(headers, &rows)?;
    }
    // Templates are resources a server makes on demand: shown with them.
    if kind == ListKind::Resources && !listed.templates.is_empty() {
        ctx.out.line("")?;
        ctx.out.table(
            &["URI TEMPLATE", "SERVER", "DESCRIPTION"],
            &template_rows(listed.templates),
        )?;
    }
    Ok(())
}

/// What an empty tool list says: that no server is ready, or, when none
/// is configured because a file was skipped, which file.
fn no_tools_line(host: &Opened) -> String {
    let skipped = host.host.config().skipped_files();
    if host.configured_servers == 0 && !skipped.is_empty() {
        return format!(
            "no tools: no server is configured ({} skipped for the error above; see `{}`)",
            shown(&skipped.join(", ")),
            crate::invocation::cmd("config check")
        );
    }
    format!(
        "no tools (no server is ready; see `{}`)",
        crate::invocation::cmd("list sources")
    )
}

fn template_rows(templates: &[TemplateInfo]) -> Vec<Vec<String>> {
    templates
        .iter()
        .map(|t| {
            let d = if t.description.is_empty() {
                &t.name
            } else {
                &t.description
            };
            vec![t.uri_template.clone(), t.server.clone(), d.clone()]
        })
        .collect()
}

/// `list servers`: the configuration only, no connection.
pub(super) fn servers(ctx: &mut Ctx) -> Result<ExitCode> {
    let loaded = ctx.load_reporting()?;
    let rows: Vec<ServerJson> = loaded
        .config
        .mcp_servers
        .iter()
        .map(|(name, config)| ServerJson {
            name: name.clone(),
            transport: transport(&secrets::masked(config)),
            enabled: config.enabled,
            lazy: config.lazy,
            origin: loaded
                .server_sources
                .get(name)
                .map(extpool_host::servers::origin_of)
                .unwrap_or_default(),
            plugin: loaded
                .server_sources
                .get(name)
                .and_then(|s| s.plugin.clone()),
            sandbox: config.sandbox.clone(),
        })
        .collect();
    let skipped = loaded.skipped_files();
    if ctx.global.json {
        ctx.out.json_value(&rows)?;
    } else if rows.is_empty() && !skipped.is_empty() {
        ctx.out.line(ctx.out.style.dim(&format!(
            "no servers configured: {} skipped for the error above (see `{}`)",
            shown(&skipped.join(", ")),
            crate::invocation::cmd("config check")
        )))?;
    } else if rows.is_empty() {
        ctx.out.line(ctx.out.style.dim(&format!(
            "no servers configured (see `{}` for where configs are read; `{}` adds one)",
            crate::invocation::cmd("config paths"),
            crate::invocation::cmd("mcp add")
        )))?;
    } else {
        let table: Vec<Vec<String>> = rows
            .into_iter()
            .map(|r| {
                let state = match (r.enabled, r.lazy) {
                    (false, _) => "disabled",
                    (true, true) => "lazy",
                    (true, false) => "enabled",
                };
                let sandbox = r
                    .sandbox
                    .as_ref()
                    .map_or_else(|| "unconfined".to_owned(), |p| p.summary());
                vec![r.name, state.into(), r.origin, r.transport, sandbox]
            })
            .collect();
        ctx.out.table(
            &["SERVER", "STATE", "DEFINED IN", "TRANSPORT", "SANDBOX"],
            &table,
        )?;
    }
    // A skipped file or entry fails the listing, as it fails `config check`.
    Ok(if loaded.errors().next().is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
