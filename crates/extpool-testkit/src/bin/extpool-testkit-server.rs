//! `extpool-testkit-server`: the example MCP server extpool's tests,
//! examples and benchmarks talk to, over stdio (default) or streamable HTTP.
//!
//! stdout carries MCP messages in stdio mode and exactly one
//! `LISTENING http://127.0.0.1:<port>/mcp` line in HTTP mode; all logging goes
//! to stderr (filter with `RUST_LOG`).

use std::{io::Write, net::SocketAddr, path::PathBuf};

use anyhow::Context;
use clap::{Parser, ValueEnum};
use extpool_testkit::{
    server::{PagingFault, ServerOptions, TestServer, http, stdio},
    state,
};
use tokio_util::sync::CancellationToken;

/// Exit code of `--die-on-start`.
const DIE_ON_START_EXIT_CODE: i32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Transport {
    /// MCP over stdin/stdout; exits when stdin closes.
    Stdio,
    /// Streamable HTTP at /mcp.
    Http,
}

/// How `--paging-fault` pages wrongly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Fault {
    /// A new next cursor on every page.
    Endless,
    /// The same next cursor on every page.
    Repeat,
}

/// An MCP server with tools, resources, prompts and skills made for tests.
#[derive(Debug, Parser)]
#[command(name = "extpool-testkit-server", version)]
struct Cli {
    /// Transport to serve.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// Address to listen on in HTTP mode (port 0: the OS picks one).
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: SocketAddr,
    /// Directory for persistent counters, the start log and the crash marker.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Record the start, then exit with code 1 before serving.
    #[arg(long)]
    die_on_start: bool,
    /// Never answer initialize (or server/discover).
    #[arg(long)]
    hang_on_initialize: bool,
    /// Add N dummy tools tool_0000, tool_0001, ...
    #[arg(long, value_name = "N", default_value_t = 0)]
    extra_tools: usize,
    /// Paginate tools/list, resources/list and prompts/list with K items a page.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    page_size: Option<u64>,
    /// Page tools/list, resources/list and prompts/list wrongly: `endless`
    /// gives a new next cursor on every page, `repeat` the same one
    /// (`same`); every page holds the first page's items.
    #[arg(long, value_enum, value_name = "FAULT")]
    paging_fault: Option<Fault>,
    /// Do not declare the SEP-2640 skills extension (skills stay readable as resources).
    #[arg(long)]
    no_skills_extension: bool,
    /// Serve a wrong digest for one skill file.
    #[arg(long)]
    bad_digest: bool,
    /// Declare `directoryRead` in the skills extension and answer
    /// `resources/directory/read` (paged by `--page-size`).
    #[arg(long)]
    directory_read: bool,
    /// Serve stdio through rmcp's own stdio transport (for benchmarks).
    #[arg(long)]
    rmcp_stdio: bool,
    /// Also serve the official conformance suite's server fixtures (tools
    /// `test_*`, resources `test://…`, prompts `test_*`, completions,
    /// logging levels, resource subscriptions).
    #[arg(long)]
    conformance: bool,
    /// Also serve the 2026-07-28 era's tools: `confirm` (answers
    /// input_required, then completes on the retry) and `regional` (its
    /// `region` argument promoted to the Mcp-Param-Region header).
    #[arg(long)]
    modern: bool,
    /// Also advertise tools no catalog may publish: a name with an ESC
    /// byte, a 300-byte name, and a second `echo`.
    #[arg(long)]
    bad_tool_names: bool,
    /// Also serve barrier_write: barrier as a mutation (not read-only), a
    /// held call a client must never send twice.
    #[arg(long)]
    write_barrier: bool,
    /// HTTP mode: accept this `Host` too (repeatable; by default only the
    /// loopback names).
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// HTTP mode: answer 401 unless requests carry `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "TOKEN")]
    require_bearer: Option<String>,
    /// Keep running after the stdio session ends (stdin closed): a server
    /// its client must end with a signal.
    #[arg(long)]
    ignore_eof: bool,
    /// Ignore SIGTERM (and SIGINT, SIGHUP): only SIGKILL ends the process.
    #[arg(long)]
    ignore_sigterm: bool,
    /// HTTP mode: leave Nagle's algorithm on (no `TCP_NODELAY`), as a plain
    /// `axum::serve` does; for benchmarks of HTTP clients.
    #[arg(long)]
    nagle: bool,
    /// Serve the tools of FILE (a JSON array of MCP tool definitions: name,
    /// inputSchema, annotations…) instead of every other; a call answers
    /// `called <name> with <arguments>`.
    #[arg(long, value_name = "FILE")]
    tools_file: Option<PathBuf>,
    /// Also list the prompts, resources and resource templates of FILE (a
    /// JSON object: `prompts`, `resources`, `resourceTemplates`, each an
    /// array of MCP definitions), after the others, as written; a read of
    /// a URI among its `contents` (MCP resource contents) answers that
    /// content as written.
    #[arg(long, value_name = "FILE")]
    lists_file: Option<PathBuf>,
    /// Declare the MCP Apps extension (`io.modelcontextprotocol/ui`) in
    /// the server's capabilities.
    #[arg(long)]
    ui_extension: bool,
    /// Also serve the URL-mode elicitation tools: `elicit_url`,
    /// `url_required` (-32042) and `complete_elicitation`.
    #[arg(long)]
    url_elicitation: bool,
    /// Also serve the tools that try what a permission profile forbids:
    /// `read_file`, `write_file`, `connect` and `parent_environ`.
    #[arg(long)]
    probe: bool,
    /// Report the implementation of FILE (a JSON MCP `Implementation`:
    /// name, version, title, icons, websiteUrl…) as the server's
    /// `serverInfo` instead of the testkit's own.
    #[arg(long, value_name = "FILE")]
    server_info: Option<PathBuf>,
    /// Write `argv: <every argument>` to stderr before anything else, as
    /// servers that log their command line do (for tests of what extpool
    /// shows of a server's stderr).
    #[arg(long)]
    echo_argv: bool,
    /// Arguments after `--`, accepted and otherwise ignored (a server's own
    /// flags, such as `--api-key=…`, for `--echo-argv` to echo).
    #[arg(last = true, value_name = "ARG")]
    passthrough: Vec<String>,
}

/// Logs to stderr. With `quiet_failures`, a log line that cannot be
/// written (the client closed our stderr) is dropped instead of reported
/// with `eprintln!`, which would panic and end the process.
fn init_tracing(quiet_failures: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .log_internal_errors(!quiet_failures)
        .init();
}

async fn shutdown_signal(ct: CancellationToken) {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            tracing::warn!("cannot listen for SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            ct.cancel();
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    ct.cancel();
}

/// Listeners for SIGTERM, SIGINT and SIGHUP that do nothing, so those
/// signals no longer end the process while they are held.
fn ignore_termination_signals() -> anyhow::Result<Vec<tokio::signal::unix::Signal>> {
    use tokio::signal::unix::{SignalKind, signal};
    [
        SignalKind::terminate(),
        SignalKind::interrupt(),
        SignalKind::hangup(),
    ]
    .into_iter()
    .map(|kind| signal(kind).context("listening for a termination signal"))
    .collect()
}

async fn serve_http(cli: &Cli, server: TestServer) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(cli.bind)
        .await
        .with_context(|| format!("binding {}", cli.bind))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let ct = CancellationToken::new();
    tokio::spawn(shutdown_signal(ct.clone()));
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "LISTENING http://{addr}{}", http::MCP_PATH)
            .and_then(|()| out.flush())
            .context("writing the LISTENING line")?;
    }
    tracing::info!(%addr, bearer = cli.require_bearer.is_some(), "serving streamable HTTP");
    http::serve(listener, server, cli.require_bearer.clone(), ct, cli.nagle)
        .await
        .context("serving HTTP")
}

async fn serve_stdio(server: TestServer) -> anyhow::Result<()> {
    tracing::info!("serving stdio");
    let end = stdio::serve_stdio(server).await?;
    tracing::info!(?end, "stdio session ended");
    Ok(())
}

/// Stack of the runtime's threads: serializing (and dropping) the `nested`
/// tool's 20,000-level documents recurses once per level.
const THREAD_STACK: usize = 256 * 1024 * 1024;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(THREAD_STACK)
        .build()
        .context("starting the runtime")?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_tracing(cli.ignore_eof);
    if cli.echo_argv {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        let _ = writeln!(std::io::stderr(), "argv: {}", argv.join(" "));
    }

    if let Some(dir) = &cli.state_dir {
        let starts = state::record_start(dir)
            .with_context(|| format!("recording the start in {}", dir.display()))?;
        tracing::info!(starts, "start recorded");
    }
    if cli.die_on_start {
        tracing::warn!("--die-on-start: exiting with code {DIE_ON_START_EXIT_CODE}");
        std::process::exit(DIE_ON_START_EXIT_CODE);
    }

    // Registering a handler replaces the default action (exit) for good.
    let _ignored = if cli.ignore_sigterm {
        Some(ignore_termination_signals()?)
    } else {
        None
    };

    let mut options = ServerOptions::default();
    options.state_dir = cli.state_dir.clone();
    options.hang_on_initialize = cli.hang_on_initialize;
    options.extra_tools = cli.extra_tools;
    options.page_size = cli
        .page_size
        .map(usize::try_from)
        .transpose()
        .context("--page-size is too large")?;
    options.skills_extension = !cli.no_skills_extension;
    options.bad_digest = cli.bad_digest;
    options.directory_read = cli.directory_read;
    options.rmcp_stdio = cli.rmcp_stdio;
    options.conformance = cli.conformance;
    options.modern = cli.modern;
    options.bad_tool_names = cli.bad_tool_names;
    options.write_barrier = cli.write_barrier;
    options.ui_extension = cli.ui_extension;
    options.url_elicitation = cli.url_elicitation;
    options.probe = cli.probe;
    options.allowed_hosts = cli.allowed_hosts.clone();
    if let Some(file) = &cli.server_info {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let info = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a JSON MCP implementation", file.display()))?;
        options.server_info = Some(info);
    }
    options.paging_fault = cli.paging_fault.map(|fault| match fault {
        Fault::Endless => PagingFault::Endless,
        Fault::Repeat => PagingFault::Repeat,
    });
    if let Some(file) = &cli.tools_file {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let tools = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a JSON array of tools", file.display()))?;
        options.tools = Some(tools);
    }
    if let Some(file) = &cli.lists_file {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        options.lists = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a JSON object of prompts, resources, resourceTemplates and contents",
                file.display()
            )
        })?;
    }
    let server = TestServer::new(options);

    let result = match cli.transport {
        Transport::Stdio => serve_stdio(server).await,
        Transport::Http => serve_http(&cli, server).await,
    };
    if let Err(e) = &result {
        tracing::error!("{e:#}");
    }
    if cli.ignore_eof && cli.transport == Transport::Stdio {
        tracing::warn!("--ignore-eof: the session ended; running on until killed");
        std::future::pending::<()>().await;
    }
    // Exit right away: nothing else may keep the process alive once the
    // client is gone (a stdio server must exit when stdin closes).
    let _ = std::io::stderr().flush();
    std::process::exit(i32::from(result.is_err()))
}
