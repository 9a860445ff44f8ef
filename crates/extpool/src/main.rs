//! The `extpool` command line.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::Parser;

/// extpool — one scoped registry for MCP servers, Agent Skills and commands.
#[derive(Debug, Parser)]
#[command(name = "extpool", version, about, long_about = None)]
struct Cli {
    /// Configuration file (extpool.yaml, .mcp.json, …).
    #[arg(long, global = true)]
    config: Option<std::path::PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let _ = cli.config;
    println!("extpool {}", env!("CARGO_PKG_VERSION"));
    Ok(())
}
