//! The sources table of `extpool list sources`: what the host of this
//! command reports, or (`--gateway URL`) what a running gateway's
//! `GET /v1/sources` answers — the rows its operator page shows — drawn
//! by the same function.

use std::collections::HashSet;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::context::Ctx;
use crate::output::shown;

/// One row of the sources table, from the host's `SourceInfo` or from
/// its JSON as a gateway answers it.
#[derive(Debug, Deserialize)]
pub struct SourceRow {
    /// `server`, `embedded`, `skills`, `discovery` or `catalog`.
    pub kind: String,
    /// The server's name, the skill root, or `catalog`.
    pub name: String,
    /// Its state word.
    pub state: String,
    /// Counts, the failure reason, or what the loop did.
    pub detail: String,
    /// What it offers that is not loaded, and why.
    #[serde(default)]
    pub dropped: Vec<String>,
    /// What a server said it is (its `serverInfo`, as JSON).
    #[serde(default)]
    pub implementation: Option<serde_json::Value>,
    /// The permission profile a server runs under (absent: unconfined).
    #[serde(default)]
    pub sandbox: Option<extpool_host::SandboxProfile>,
}

impl From<extpool_host::SourceInfo> for SourceRow {
    fn from(s: extpool_host::SourceInfo) -> Self {
        Self {
            kind: s.kind.to_owned(),
            name: s.name,
            state: s.state,
            detail: s.detail,
            dropped: s.dropped,
            implementation: s.implementation.and_then(|i| serde_json::to_value(i).ok()),
            sandbox: s.sandbox,
        }
    }
}

/// Longest implementation shown in a table cell (the whole is in `--json`).
const IMPLEMENTATION_WIDTH: usize = 48;

/// What the server of `source` said it is, as a table cell: `title (name
/// version)`, or `name version` when it gave no title; cut to
/// [`IMPLEMENTATION_WIDTH`] characters, and empty for any other row.
fn implementation_cell(source: &SourceRow) -> String {
    let Some(i) = &source.implementation else {
        return String::new();
    };
    let field = |key: &str| i.get(key).and_then(serde_json::Value::as_str).unwrap_or("");
    let named = format!("{} {}", field("name"), field("version"));
    let text = match Some(field("title")).filter(|t| !t.trim().is_empty()) {
        Some(title) => format!("{title} ({named})"),
        None => named,
    };
    if text.chars().count() <= IMPLEMENTATION_WIDTH {
        return text;
    }
    text.chars()
        .take(IMPLEMENTATION_WIDTH - 1)
        .chain(std::iter::once('…'))
        .collect()
}

/// Draws the sources table: one row a source (an IMPLEMENTATION column
/// when any server said what it is), then what is not loaded and why,
/// then the catalog's state; `unloaded` names skill roots whose skills
/// did not all load (their rows point to `extpool skills validate`).
pub fn sources_table(
    ctx: &mut Ctx,
    rows: Vec<SourceRow>,
    unloaded: &HashSet<String>,
) -> Result<()> {
    let (catalog, sources): (Vec<_>, Vec<_>) = rows.into_iter().partition(|s| s.kind == "catalog");
    let dropped: Vec<Vec<String>> = sources
        .iter()
        .flat_map(|s| {
            s.dropped
                .iter()
                .map(|d| vec![format!("  {}", s.name), d.clone()])
        })
        .collect();
    // What each server said it is, in a column of its own when any did.
    let said = sources.iter().any(|s| s.implementation.is_some());
    let rows: Vec<Vec<String>> = sources
        .into_iter()
        .map(|s| {
            let implementation = implementation_cell(&s);
            let mut detail = s.detail;
            if let Some(profile) = &s.sandbox {
                detail.push_str(&format!("; sandbox: {}", profile.summary()));
            }
            if s.kind == "skills" && unloaded.contains(&s.name) {
                detail.push_str(&format!(
                    "; see `{}`",
                    crate::invocation::cmd(&format!("skills validate {}", s.name))
                ));
            }
            let mut row = vec![s.kind, s.name, s.state];
            if said {
                row.push(implementation);
            }
            row.push(detail);
            row
        })
        .collect();
    let headers: &[&str] = if said {
        &["KIND", "NAME", "STATE", "IMPLEMENTATION", "DETAIL"]
    } else {
        &["KIND", "NAME", "STATE", "DETAIL"]
    };
    if rows.is_empty() {
        ctx.out.line(ctx.out.style.dim("no sources configured"))?;
    } else {
        ctx.out.table(headers, &rows)?;
    }
    if !dropped.is_empty() {
        ctx.out.line("")?;
        ctx.out.line(ctx.out.style.bold("Not loaded"))?;
        ctx.out.table(&["  SOURCE", "WHY"], &dropped)?;
    }
    for c in catalog {
        ctx.out.line(
            ctx.out
                .style
                .dim(&shown(&format!("catalog: {}, {}", c.state, c.detail))),
        )?;
    }
    Ok(())
}

/// `extpool list sources --gateway URL`: the running gateway's sources
/// (`GET /v1/sources`, with `EXTPOOL_GATEWAY_TOKEN` as the bearer token
/// when set), as the same table, or its answer whole with `--json`.
pub async fn of_gateway(ctx: &mut Ctx, gateway: &str) -> Result<ExitCode> {
    let value = super::sessions::gateway_get(gateway, "/v1/sources").await?;
    if ctx.global.json {
        ctx.out.json_value(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(rows) = value.get("sources").cloned() else {
        bail!("the gateway at {gateway} answered /v1/sources without its sources");
    };
    let rows: Vec<SourceRow> = serde_json::from_value(rows)
        .with_context(|| format!("the sources the gateway at {gateway} answered"))?;
    sources_table(ctx, rows, &HashSet::new())?;
    Ok(ExitCode::SUCCESS)
}
