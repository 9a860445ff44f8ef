//! `extpool read URI`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};
use extpool_host::core::ResourceBody;

use extpool_host::View;

use super::local_first;
use crate::cli::ReadArgs;
use crate::context::Ctx;

/// Reads a skill or resource and prints it.
pub async fn run(ctx: &mut Ctx, args: ReadArgs) -> Result<ExitCode> {
    let (opened, content) =
        local_first(ctx, async |view: &View| view.read(&args.uri).await).await?;
    opened.shutdown().await;
    let content = content?;
    if ctx.global.json {
        ctx.out.json_value(&content)?;
        return Ok(ExitCode::SUCCESS);
    }
    match &content.body {
        ResourceBody::Text(text) => {
            ctx.out.payload(text)?;
            if !text.ends_with('\n') {
                ctx.out.line("")?;
            }
        }
        ResourceBody::Blob(bytes) => {
            if std::io::stdout().is_terminal() {
                bail!(
                    "{} is binary ({}, {} bytes); redirect it to a file, or use --json for base64",
                    args.uri,
                    content.mime_type.as_deref().unwrap_or("unknown type"),
                    bytes.len()
                );
            }
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
