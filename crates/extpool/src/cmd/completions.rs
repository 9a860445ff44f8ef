//! `extpool completions SHELL`.

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::context::Ctx;

/// Prints the completion script for a shell.
pub fn run(ctx: &mut Ctx, args: CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "extpool", &mut buf);
    ctx.out.text(&String::from_utf8_lossy(&buf))?;
    Ok(ExitCode::SUCCESS)
}
