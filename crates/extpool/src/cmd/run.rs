//! `extpool run /command args…`: renders a skill's slash command or an MCP
//! prompt into the prompt text an agent would receive.

use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use extpool_host::View;

use super::{Need, local_first, open_host};
use crate::cli::RunArgs;
use crate::context::Ctx;

#[derive(Serialize)]
struct RunJson<'a> {
    command: String,
    arguments: &'a [String],
    prompt: String,
}

/// Renders the command and prints the prompt.
pub async fn run(ctx: &mut Ctx, args: RunArgs) -> Result<ExitCode> {
    let name = args.command.trim_start_matches('/').to_owned();
    let text = if extpool_host::catalog::names::is_namespaced(&name) {
        // An MCP prompt: only its own server.
        let opened = open_host(ctx, Need::Named(name.clone())).await?;
        let text = opened
            .until_signal(opened.view.run(&name, &args.args))
            .await;
        opened.shutdown().await;
        text??
    } else {
        // A skill's command: the local skills first.
        let (opened, text) =
            local_first(ctx, async |view: &View| view.run(&name, &args.args).await).await?;
        opened.shutdown().await;
        text?
    };
    if ctx.global.json {
        ctx.out.json_value(&RunJson {
            command: format!("/{name}"),
            arguments: &args.args,
            prompt: text,
        })?;
    } else {
        ctx.out.payload(&text)?;
        if !text.ends_with('\n') {
            ctx.out.line("")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
