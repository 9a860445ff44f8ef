//! `extpool watch`: one line per change (tools, resources, prompts of every
//! server; skills on disk) until interrupted.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use extpool_core::{ChangeEvent, ChangeKind};
use futures::StreamExt;
use futures::stream::select_all;
use serde::Serialize;

use super::open_host;
use crate::cli::WatchArgs;
use crate::context::Ctx;

/// A new catalog revision, shaped like a change event.
#[derive(Serialize)]
struct RevisionEvent {
    capability_name: &'static str,
    kind: &'static str,
    source_uri: &'static str,
    revision: u64,
    tools: usize,
    commands: usize,
    resources: usize,
}

/// Streams change events until Ctrl-C.
pub async fn run(ctx: &mut Ctx, _args: WatchArgs) -> Result<ExitCode> {
    let host = open_host(ctx, true).await?;
    let (tx, mut skill_rx) = tokio::sync::mpsc::unbounded_channel::<ChangeEvent>();
    let roots = host.skills.roots();
    let cwd = ctx.places.cwd.clone();
    let home = ctx.places.home.clone();
    let watcher = if host.loaded.config.skills.watch {
        Some(extpool_skills::SkillWatcher::spawn(
            roots.clone(),
            extpool_skills::watch::DEFAULT_DEBOUNCE,
            move |batch| {
                let where_ = batch
                    .paths
                    .first()
                    .map(|p| {
                        extpool_config::diagnostics::display_path(p, Some(&cwd), home.as_deref())
                    })
                    .unwrap_or_default();
                let _ = tx.send(ChangeEvent::new(
                    "skills",
                    ChangeKind::SkillsChanged,
                    where_,
                ));
            },
        )?)
    } else {
        None
    };
    // Server events come through the registry; revisions from the catalog.
    let streams: Vec<_> = host
        .catalog
        .registry
        .get_observable_capabilities(&host.catalog.scope)
        .iter()
        .filter_map(|c| c.observable().and_then(|o| o.on_change()))
        .collect();
    let mut servers = select_all(streams);
    let mut revisions = host.catalog.catalog.subscribe();
    revisions.mark_unchanged();
    let n = host.catalog.status().sources.len();
    let _ = writeln!(
        std::io::stderr().lock(),
        "watching {n} server{} and {} skill root{}; press Ctrl-C to stop",
        if n == 1 { "" } else { "s" },
        roots.len(),
        if roots.len() == 1 { "" } else { "s" },
    );
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let result: Result<()> = async {
        loop {
            let event = tokio::select! {
                _ = &mut ctrl_c => break,
                Some(ev) = skill_rx.recv() => ev,
                Ok(()) = revisions.changed() => {
                    let number = *revisions.borrow_and_update();
                    let rev = host.catalog.catalog.current();
                    let published = RevisionEvent {
                        capability_name: "catalog",
                        kind: "revision_published",
                        source_uri: "",
                        revision: number,
                        tools: rev.all_tools().count(),
                        commands: rev.all_commands().count(),
                        resources: rev.all_resources().count(),
                    };
                    if ctx.global.json {
                        ctx.out.json_line(&published)?;
                    } else {
                        ctx.out.line(format!(
                            "catalog revision_published {number} ({} tools, {} commands, {} resources)",
                            published.tools, published.commands, published.resources
                        ))?;
                    }
                    continue;
                }
                Some(item) = servers.next(), if !servers.is_empty() => match item {
                    Ok(ev) => ev,
                    Err(e) => {
                        let _ = writeln!(std::io::stderr().lock(), "{}: {e}", ctx.err_style.yellow("warning"));
                        continue;
                    }
                },
            };
            if ctx.global.json {
                ctx.out.json_line(&event)?;
            } else {
                let mut line = format!("{} {}", event.capability_name, event.kind);
                if !event.source_uri.is_empty() {
                    line.push(' ');
                    line.push_str(&event.source_uri);
                }
                ctx.out.line(line)?;
            }
        }
        Ok(())
    }
    .await;
    if let Some(w) = watcher {
        w.stop();
    }
    drop(servers);
    host.shutdown().await;
    result?;
    Ok(ExitCode::SUCCESS)
}
