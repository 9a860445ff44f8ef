//! The rows of `extpool list sources` / `ListMcpSources`: every configured
//! server (its start-up state, then the catalog's cached view of it), the
//! skill-embedded servers the catalog lists, the skill roots, and the
//! catalog itself. Built from caches; never contacts a server.

use std::path::PathBuf;

use extpool_catalog::{CatalogStatus, ReconcileState, SourceStatus};
use extpool_config::diagnostics::display_path;

use crate::discovery::{CONFIG_SOURCE, DiscoveryStatus};
use crate::info::SourceInfo;
use crate::servers::ServerEntry;
use crate::shared::{HostInner, SKILLS_ID};
use crate::status::{ServerInfo, ServerState};

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn listed(s: &SourceStatus) -> String {
    format!(
        "{}, {}, {}",
        plural(s.tools, "tool"),
        plural(s.resources, "resource"),
        plural(s.commands, "prompt")
    )
}

fn server_row(server: &ServerInfo, status: &CatalogStatus) -> SourceInfo {
    let mut row = SourceInfo {
        kind: "server",
        name: server.name.clone(),
        state: server.state.word().to_owned(),
        detail: server.transport.clone(),
        origin: server.origin.clone(),
        revision: None,
        stale: false,
        last_error: None,
        dropped: Vec::new(),
        last_success_ms: None,
        discovered_by: None,
        implementation: None,
        sandbox: server.sandbox.clone(),
    };
    match &server.state {
        ServerState::Failed { reason } => row.detail = reason.clone(),
        ServerState::Ready { .. } | ServerState::Lazy { .. } => {
            let (lazy, elapsed_ms) = match server.state {
                ServerState::Ready { elapsed_ms, .. } => (false, elapsed_ms),
                _ => (true, 0),
            };
            match status.source(&server.name) {
                Some(s) => {
                    row.revision = s.revision;
                    row.stale = s.stale;
                    row.last_error = s.last_error.as_ref().map(|e| e.to_string());
                    if s.stale {
                        row.state = "stale".into();
                        row.detail = row.last_error.clone().unwrap_or_default();
                    } else if lazy {
                        row.detail = format!("{} declared", plural(s.tools, "tool"));
                    } else {
                        row.detail = format!("{} ({elapsed_ms} ms)", listed(s));
                    }
                }
                None => {
                    row.state = "pending".into();
                    row.detail = "not yet reconciled".into();
                }
            }
        }
        _ => {}
    }
    row
}

/// How source `id` is named in a message: `MCP server "x"`, or the host's
/// own sources of skills and commands by what they are.
pub fn source_label(id: &str) -> String {
    match id {
        SKILLS_ID => "skills".into(),
        crate::plugins::PLUGIN_SKILLS_ID => "plugin skills".into(),
        crate::plugins::COMMANDS_ID => "command files".into(),
        server => format!("MCP server {server:?}"),
    }
}

/// Why the catalog did not publish something, as one line (the problem
/// names the name; a collision already says it is not published).
pub fn dropped_line(problem: &extpool_catalog::Problem) -> String {
    if problem.is_collision() {
        problem.to_string()
    } else {
        format!("not published: {problem}")
    }
}

/// What the catalog refused of `source`, one line each.
fn dropped_of(dropped: &[extpool_catalog::Diagnostic], source: &str) -> Vec<String> {
    dropped
        .iter()
        .filter(|d| d.source == source)
        .map(|d| dropped_line(&d.problem))
        .collect()
}

/// The entries `entry`'s server listed that could not be read (a tool
/// `{"name": 5}`), one line each: not published, as what the catalog
/// refuses is not.
fn unreadable_of(entry: &ServerEntry) -> Vec<String> {
    entry
        .cap
        .as_ref()
        .and_then(|cap| cap.client())
        .map(|client| client.skipped_entries())
        .unwrap_or_default()
}

/// What every server of `entries` listed that could not be read, by server.
pub(crate) fn unreadable(entries: &[ServerEntry]) -> Vec<(String, String)> {
    entries
        .iter()
        .flat_map(|e| {
            unreadable_of(e)
                .into_iter()
                .map(|line| (e.info.name.clone(), line))
        })
        .collect()
}

/// The servers a discovery source names that could not be started or
/// listed (so its change was not published): a `failed` row each, or, for
/// a running server whose new configuration failed, a note on its row.
fn failed_rows(rows: &mut Vec<SourceInfo>, discovery: &[DiscoveryStatus]) {
    for d in discovery {
        for f in &d.failed {
            if let Some(row) = rows
                .iter_mut()
                .find(|r| r.kind == "server" && r.name == f.name)
            {
                row.detail
                    .push_str(&format!("; its new configuration failed: {}", f.reason));
                continue;
            }
            rows.push(SourceInfo {
                kind: "server",
                name: f.name.clone(),
                state: "failed".into(),
                detail: f.reason.clone(),
                origin: f.origin.clone(),
                revision: None,
                stale: false,
                last_error: Some(f.reason.clone()),
                dropped: Vec::new(),
                last_success_ms: None,
                discovered_by: (d.source != CONFIG_SOURCE).then(|| d.source.clone()),
                implementation: None,
                sandbox: None,
            });
        }
    }
}

/// Every source of `host`: its running servers `entries`, its discovery
/// sources' statuses `discovery` (both read together, see
/// [`crate::Host::sources_report`]) and the catalog's cached state `status`.
pub(crate) fn rows(
    host: &HostInner,
    entries: &[ServerEntry],
    discovery: &[DiscoveryStatus],
    status: &CatalogStatus,
) -> Vec<SourceInfo> {
    let dropped = host.catalog.current().diagnostics().to_vec();
    let mut rows: Vec<SourceInfo> = entries
        .iter()
        .map(|e| {
            let mut row = server_row(&e.info, status);
            row.dropped = dropped_of(&dropped, &e.info.name);
            row.dropped.extend(unreadable_of(e));
            if !row.dropped.is_empty() {
                row.detail.push_str(&format!(
                    "; {} not published",
                    plural(row.dropped.len(), "advertised name")
                ));
            }
            row.discovered_by = (e.source != CONFIG_SOURCE).then(|| e.source.clone());
            row.implementation = e.implementation();
            row
        })
        .collect();
    failed_rows(&mut rows, discovery);
    // Skill-embedded servers: children the catalog lists on its own.
    for s in status.sources.iter().filter(|s| s.optional) {
        let skill = host.manager.embedding_skill(&s.id);
        rows.push(SourceInfo {
            kind: "embedded",
            name: s.id.clone(),
            state: if s.available { "ready" } else { "unavailable" }.into(),
            detail: match &s.last_error {
                Some(e) if !s.available => e.to_string(),
                _ => listed(s),
            },
            origin: skill.map(|k| format!("skill {k}")).unwrap_or_default(),
            revision: s.revision,
            stale: false,
            last_error: s.last_error.as_ref().map(|e| e.to_string()),
            dropped: dropped_of(&dropped, &s.id),
            last_success_ms: None,
            discovered_by: None,
            implementation: None,
            sandbox: None,
        });
    }
    let places = &host.places;
    let show = |p: &PathBuf| display_path(p, Some(&places.cwd), places.home.as_deref());
    for root in crate::skill_roots::reports(host) {
        if !root.exists && !root.configured {
            continue;
        }
        let mut detail = plural(root.loaded, "skill");
        if !root.skipped.is_empty() {
            // Which skills and why: `dropped`, below.
            detail.push_str(&format!(", {} not loaded", root.skipped.len()));
        }
        if !root.truncated.is_empty() {
            detail.push_str("; scan stopped at a bound");
        }
        let mut dropped: Vec<String> = root
            .skipped
            .iter()
            .map(|dir| format!("skill {}: not loaded (errors in its SKILL.md)", show(dir)))
            .collect();
        dropped.extend(root.truncated.iter().cloned());
        rows.push(SourceInfo {
            kind: "skills",
            name: show(&root.root),
            state: if root.exists { "found" } else { "missing" }.into(),
            detail,
            origin: if root.configured {
                "skills.paths".into()
            } else {
                "default root".into()
            },
            revision: None,
            stale: false,
            last_error: None,
            dropped,
            last_success_ms: None,
            discovered_by: None,
            implementation: None,
            sandbox: None,
        });
    }
    if let Some(live) = &host.plugins {
        let found = live.found();
        rows.extend(crate::plugins::source_rows(&found, places));
        let mut commands = dropped_of(&dropped, crate::plugins::COMMANDS_ID);
        commands.extend(dropped_of(&dropped, crate::plugins::PLUGIN_SKILLS_ID));
        commands.extend(crate::plugins::problems(&found));
        // Without command files or a problem there is nothing to say.
        if !found.discovery.commands.is_empty() || !commands.is_empty() {
            rows.push(SourceInfo {
                kind: "commands",
                name: "command files".into(),
                state: "found".into(),
                detail: plural(found.discovery.commands.len(), "command"),
                origin: "every host's command folders and the plugins'".into(),
                revision: None,
                stale: false,
                last_error: None,
                dropped: commands,
                last_success_ms: None,
                discovered_by: None,
                implementation: None,
                sandbox: None,
            });
        }
    }
    for d in discovery {
        let detail = match (&d.last_error, d.stale) {
            (Some(e), true) => e.clone(),
            _ => plural(d.servers.len(), "server"),
        };
        rows.push(SourceInfo {
            kind: "discovery",
            name: d.source.clone(),
            state: d.state.to_owned(),
            detail,
            origin: d.endpoint.clone(),
            revision: None,
            stale: d.stale,
            last_error: d.last_error.clone(),
            last_success_ms: d.last_success_ms,
            dropped: d.notes.clone(),
            discovered_by: None,
            implementation: None,
            sandbox: None,
        });
    }
    let skills_stale = status.source(SKILLS_ID).is_some_and(|s| s.stale);
    rows.push(SourceInfo {
        kind: "catalog",
        name: "catalog".into(),
        state: reconcile_state(&status.state),
        detail: format!(
            "revision {}, {}, {} failed",
            status.revision,
            plural(status.reconciliations as usize, "reconciliation"),
            status.failures
        ),
        origin: String::new(),
        revision: Some(status.revision),
        stale: status.any_stale() || skills_stale,
        last_error: None,
        dropped: Vec::new(),
        last_success_ms: None,
        discovered_by: None,
        implementation: None,
        sandbox: None,
    });
    rows
}

/// The loop state as one word.
fn reconcile_state(state: &ReconcileState) -> String {
    match state {
        ReconcileState::NotStarted => "not started".into(),
        ReconcileState::Idle => "idle".into(),
        ReconcileState::Pending => "pending".into(),
        ReconcileState::Reconciling => "reconciling".into(),
        ReconcileState::RetryScheduled { in_ms } => format!("retry in {in_ms} ms"),
        ReconcileState::Stopped => "stopped".into(),
        _ => "unknown".into(),
    }
}
