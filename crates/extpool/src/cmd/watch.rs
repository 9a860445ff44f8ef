//! `extpool watch`: one line per change (tools, resources, prompts of every
//! server; skills on disk; each new catalog revision) until interrupted.
//! The events are the host's change stream; this command only renders them.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use extpool_host::HostEvent;
use futures::StreamExt;

use super::{Need, open_with};
use crate::cli::WatchArgs;
use crate::context::Ctx;

/// Streams change events until Ctrl-C (or SIGTERM, SIGHUP).
pub async fn run(ctx: &mut Ctx, _args: WatchArgs) -> Result<ExitCode> {
    let opened = open_with(ctx, Need::Servers, true).await?;
    let mut changes = Box::pin(opened.view.changes());
    let servers = opened
        .host
        .servers()
        .iter()
        .filter(|s| s.state.is_usable())
        .count();
    let roots = opened.host.skill_roots().len();
    let _ = writeln!(
        std::io::stderr().lock(),
        "watching {servers} server{} and {roots} skill root{}; press Ctrl-C to stop",
        if servers == 1 { "" } else { "s" },
        if roots == 1 { "" } else { "s" },
    );
    let mut signals = opened.signals.clone();
    let result: Result<()> = async {
        loop {
            // Any of SIGINT, SIGTERM, SIGHUP is how watch ends (exit 0).
            let event = tokio::select! {
                _ = signals.received() => break,
                Some(event) = changes.next() => event,
            };
            if ctx.global.json {
                ctx.out.json_line(&event)?;
                continue;
            }
            let line = match &event {
                HostEvent::Change(change) => {
                    let mut line = format!("{} {}", change.capability_name, change.kind);
                    if !change.source_uri.is_empty() {
                        line.push(' ');
                        line.push_str(&change.source_uri);
                    }
                    line
                }
                HostEvent::Revision {
                    number,
                    tools,
                    commands,
                    resources,
                } => format!(
                    "catalog revision_published {number} ({tools} tools, {commands} commands, {resources} resources)"
                ),
                _ => continue,
            };
            ctx.out.line(crate::output::shown(&line))?;
        }
        Ok(())
    }
    .await;
    drop(changes);
    opened.shutdown().await;
    result?;
    Ok(ExitCode::SUCCESS)
}
