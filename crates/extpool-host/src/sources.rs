//! The rows of `extpool list sources` / `ListMcpSources`: every configured
//! server (its start-up state, then the catalog's cached view of it), the
//! skill-embedded servers the catalog lists, the skill roots, and the
//! catalog itself. Built from caches; never contacts a server.

use std::collections::BTreeMap;
use std::path::PathBuf;

use extpool_catalog::{CatalogStatus, SourceStatus};
use extpool_config::diagnostics::display_path;

use crate::host::{Host, SKILLS_ID, reconcile_state};
use crate::info::SourceInfo;
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

/// Every source of `host`, with `status` as the catalog's cached state.
pub(crate) fn rows(host: &Host, status: &CatalogStatus) -> Vec<SourceInfo> {
    let mut rows: Vec<SourceInfo> = host
        .servers()
        .iter()
        .map(|s| server_row(s, status))
        .collect();
    // Skill-embedded servers: children the catalog lists on its own.
    for s in status.sources.iter().filter(|s| s.optional) {
        let skill = host.skills().embedding_skill(&s.id);
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
        });
    }
    let places = host.places();
    let show = |p: &PathBuf| display_path(p, Some(&places.cwd), places.home.as_deref());
    let configured = &host.config().skill_paths;
    let mut per_root: BTreeMap<PathBuf, usize> = BTreeMap::new();
    for skill in host.skills().local_skills() {
        *per_root.entry(skill.root.clone()).or_default() += 1;
    }
    for root in host.skill_roots() {
        let exists = root.is_dir();
        let is_configured = configured.contains(&root);
        if !exists && !is_configured {
            continue;
        }
        rows.push(SourceInfo {
            kind: "skills",
            name: show(&root),
            state: if exists { "found" } else { "missing" }.into(),
            detail: plural(per_root.get(&root).copied().unwrap_or(0), "skill"),
            origin: if is_configured {
                "skills.paths".into()
            } else {
                "default root".into()
            },
            revision: None,
            stale: false,
            last_error: None,
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
    });
    rows
}
