//! One module per command; [`run`] dispatches.

mod call;
mod completions;
mod config;
mod list;
pub mod mcp;
mod overview;
mod read;
mod run;
mod skills;
mod watch;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command, SkillsCommand};
use crate::context::Ctx;
use crate::host::{ConnectOptions, Host};
use crate::progress::Progress;

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> Result<ExitCode> {
    let mut ctx = Ctx::new(cli.global);
    match cli.command {
        None => overview::run(&mut ctx).await,
        Some(Command::List(args)) => list::run(&mut ctx, args).await,
        Some(Command::Call(args)) => call::run(&mut ctx, args).await,
        Some(Command::Read(args)) => read::run(&mut ctx, args).await,
        Some(Command::Run(args)) => run::run(&mut ctx, args).await,
        Some(Command::Skills(SkillsCommand::Validate(args))) => skills::validate(&mut ctx, args),
        Some(Command::Watch(args)) => watch::run(&mut ctx, args).await,
        Some(Command::Config(cmd)) => config::run(&mut ctx, cmd),
        Some(Command::Completions(args)) => completions::run(&mut ctx, args),
        Some(Command::Mcp(cmd)) => mcp::run(&mut ctx, cmd).await,
    }
}

/// Loads the configuration and opens the host; with `connect`, starts the
/// servers with the live status on stderr (silent with `--json`).
pub async fn open_host(ctx: &Ctx, connect: bool) -> Result<Host> {
    let loaded = ctx.load_reporting()?;
    let places = ctx.places.clone();
    if !connect {
        return Host::open(loaded, places, None, ConnectOptions::default()).await;
    }
    let names: Vec<String> = loaded
        .config
        .mcp_servers
        .iter()
        .filter(|(_, c)| c.enabled)
        .map(|(n, _)| n.clone())
        .collect();
    let mut progress = Progress::new(&names, ctx.err_style, ctx.global.json);
    Host::open(
        loaded,
        places,
        Some(&mut progress),
        ConnectOptions::default(),
    )
    .await
}
