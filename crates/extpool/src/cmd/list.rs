//! `extpool list [tools|skills|commands|resources|sources|servers]`.

use std::process::ExitCode;

use anyhow::Result;
use extpool_config::secrets;
use serde::Serialize;

use super::open_host;
use crate::cli::{ListArgs, ListKind};
use crate::context::Ctx;
use crate::host::{CommandRow, Host, ResourceRow, SkillRow, ToolRow, transport};

#[derive(Serialize)]
struct Everything {
    tools: Vec<ToolRow>,
    skills: Vec<SkillRow>,
    commands: Vec<CommandRow>,
    resources: Vec<ResourceRow>,
}

#[derive(Serialize)]
struct ServerJson {
    name: String,
    transport: String,
    enabled: bool,
    lazy: bool,
    origin: String,
}

/// Lists what was asked for.
pub async fn run(ctx: &mut Ctx, args: ListArgs) -> Result<ExitCode> {
    if args.kind == Some(ListKind::Servers) {
        return servers(ctx);
    }
    let host = open_host(ctx, true).await?;
    let result = print(ctx, &host, args.kind);
    host.shutdown().await;
    result?;
    Ok(ExitCode::SUCCESS)
}

fn print(ctx: &mut Ctx, host: &Host, kind: Option<ListKind>) -> Result<()> {
    let json = ctx.global.json;
    match kind {
        None if json => ctx.out.json_value(&Everything {
            tools: host.tools(),
            skills: host.skill_rows(),
            commands: host.commands(),
            resources: host.resources(),
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
                table(ctx, host, k)?;
                ctx.out.line("")?;
            }
        }
        Some(k) if json => match k {
            ListKind::Tools => ctx.out.json_value(&host.tools())?,
            ListKind::Skills => ctx.out.json_value(&host.skill_rows())?,
            ListKind::Commands => ctx.out.json_value(&host.commands())?,
            ListKind::Resources => ctx.out.json_value(&host.resources())?,
            ListKind::Sources => ctx.out.json_value(&host.sources())?,
            ListKind::Servers => {}
        },
        Some(k) => table(ctx, host, k)?,
    }
    Ok(())
}

fn table(ctx: &mut Ctx, host: &Host, kind: ListKind) -> Result<()> {
    let (headers, rows, empty): (&[&str], Vec<Vec<String>>, &str) = match kind {
        ListKind::Tools => (
            &["TOOL", "DESCRIPTION"],
            host.tools()
                .into_iter()
                .map(|t| vec![t.name, t.description])
                .collect(),
            "no tools (no server is ready; see `extpool list sources`)",
        ),
        ListKind::Skills => (
            &["SKILL", "SOURCE", "DESCRIPTION"],
            host.skill_rows()
                .into_iter()
                .map(|s| vec![s.name, s.path.unwrap_or(s.source), s.description])
                .collect(),
            "no skills (looked in skills.paths, .agents/skills and .claude/skills)",
        ),
        ListKind::Commands => (
            &["COMMAND", "ARGUMENTS", "DESCRIPTION"],
            host.commands()
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
            host.resources()
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
        ListKind::Sources => {
            let (catalog, sources): (Vec<_>, Vec<_>) = host
                .sources()
                .into_iter()
                .partition(|s| s.kind == "catalog");
            let rows: Vec<Vec<String>> = sources
                .into_iter()
                .map(|s| vec![s.kind.into(), s.name, s.state, s.detail])
                .collect();
            if rows.is_empty() {
                ctx.out.line(ctx.out.style.dim("no sources configured"))?;
            } else {
                ctx.out.table(&["KIND", "NAME", "STATE", "DETAIL"], &rows)?;
            }
            for c in catalog {
                ctx.out.line(
                    ctx.out
                        .style
                        .dim(&format!("catalog: {}, {}", c.state, c.detail)),
                )?;
            }
            return Ok(());
        }
        ListKind::Servers => return Ok(()),
    };
    if rows.is_empty() {
        ctx.out.line(ctx.out.style.dim(empty))?;
    } else {
        ctx.out.table(headers, &rows)?;
    }
    Ok(())
}

/// `list servers`: the configuration only, no connection.
fn servers(ctx: &mut Ctx) -> Result<ExitCode> {
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
                .map(|s| format!("{}:{}", s.file, s.pos.line))
                .unwrap_or_default(),
        })
        .collect();
    if ctx.global.json {
        ctx.out.json_value(&rows)?;
    } else if rows.is_empty() {
        ctx.out.line(ctx.out.style.dim(
            "no servers configured (see `extpool config paths` for where configs are read)",
        ))?;
    } else {
        let table: Vec<Vec<String>> = rows
            .into_iter()
            .map(|r| {
                let state = match (r.enabled, r.lazy) {
                    (false, _) => "disabled",
                    (true, true) => "lazy",
                    (true, false) => "enabled",
                };
                vec![r.name, state.into(), r.origin, r.transport]
            })
            .collect();
        ctx.out
            .table(&["SERVER", "STATE", "DEFINED IN", "TRANSPORT"], &table)?;
    }
    Ok(ExitCode::SUCCESS)
}
