//! The `extpool` command line.
//!
//! Exit codes: 0 success, 1 failure, 2 usage error. A closed standard
//! output (`extpool list tools | head -1`) ends the program quietly.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cli;
mod cmd;
mod context;
mod invocation;
mod output;
mod progress;
mod signals;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;
use crate::output::Style;

/// jemalloc instead of glibc's malloc, whose arena locks the gateway's
/// worker threads contend on (BENCHMARKS.md, "The gateway").
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// An error in how the command was used (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A failure already reported to the user (exit code 1, nothing more printed).
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed")
    }
}

impl std::error::Error for Reported {}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The located problems of a configuration that failed to load, when that
/// is the error: they are reported as `config check` reports them, each
/// line with its own severity, not after a second `error:`.
fn config_diagnostics(e: &anyhow::Error) -> Option<&[extpool_host::config::Diagnostic]> {
    use extpool_host::{HostError, config::ConfigError};
    let config =
        e.downcast_ref::<ConfigError>()
            .or_else(|| match e.downcast_ref::<HostError>() {
                Some(HostError::Config(c)) => Some(c),
                _ => None,
            })?;
    let diagnostics = config.diagnostics();
    (!diagnostics.is_empty()).then_some(diagnostics)
}

/// One log line on its way to stderr, written whole when the line is done
/// with every secret recognisable in it masked
/// ([`extpool_host::config::secrets::mask_text`]): a library's line may
/// quote a server's URL with its query, or a token, in an error it logs;
/// and with every control character from outside escaped
/// ([`output::shown_log_line`]): a server's stderr is logged with `-vv`.
/// A JSON line (`--log-format json`) is masked the same, and not escaped
/// again: JSON escapes control characters itself.
struct MaskedLine {
    bytes: Vec<u8>,
    json: bool,
}

impl MaskedLine {
    fn text() -> Self {
        Self {
            bytes: Vec::new(),
            json: false,
        }
    }

    fn json() -> Self {
        Self {
            bytes: Vec::new(),
            json: true,
        }
    }
}

impl std::io::Write for MaskedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for MaskedLine {
    fn drop(&mut self) {
        let line = String::from_utf8_lossy(&self.bytes);
        let masked = extpool_host::config::secrets::mask_text(&line);
        let shown = if self.json {
            masked
        } else {
            output::shown_log_line(&masked).into_owned()
        };
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), shown.as_bytes());
    }
}

/// Logs to stderr at the level `verbose` asks for (`EXTPOOL_LOG` wins),
/// as `format` says, in colour only when `colour` says stderr shows it;
/// and, when an OTLP endpoint is set, exports the request and upstream-call
/// spans as traces ([`extpool_server::otel`]; those spans never show in the log).
fn init_tracing(
    verbose: u8,
    colour: Style,
    format: cli::LogFormat,
    otlp: Option<&str>,
) -> Result<Option<extpool_server::otel::Traces>, extpool_server::otel::OtelError> {
    let default = match verbose {
        0 => "off",
        1 => {
            "extpool=info,extpool_host=info,extpool_mcp=info,extpool_skills=info,extpool_catalog=info"
        }
        2 => "debug",
        _ => "trace",
    };
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("EXTPOOL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let backend_asked = std::env::var("EXTPOOL_LOG").is_ok_and(|v| v.contains(WATCH_BACKEND));
    let quiet = tracing_subscriber::filter::filter_fn(move |meta| {
        (backend_asked || !is_watch_backend_chatter(meta))
            && !extpool_host::mcp::trace::is_exported(meta.target())
    });
    let (layer, traces) = match extpool_server::otel::start(otlp)? {
        Some((layer, traces)) => (Some(layer), Some(traces)),
        None => (None, None),
    };
    let log = if format == cli::LogFormat::Json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(MaskedLine::json)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(MaskedLine::text)
            .with_ansi(colour.is_on())
            .with_target(false)
            .boxed()
    };
    let log = log.with_filter(filter).with_filter(quiet);
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(layer)
        .try_init();
    Ok(traces)
}

/// The crate behind the file watchers (configuration reload, skills).
const WATCH_BACKEND: &str = "notify";

/// A line of the file watchers' backend below info: it logs each
/// filesystem event it reads (at trace level) before extpool can tell
/// whether the event concerns a file it watches, so with the log file in a
/// watched directory each line written would be an event logged as
/// another line. Dropped unless `EXTPOOL_LOG` names the backend.
fn is_watch_backend_chatter(meta: &tracing::Metadata<'_>) -> bool {
    let target = meta.target();
    let backend = target
        .strip_prefix(WATCH_BACKEND)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"));
    backend && *meta.level() > tracing::Level::INFO
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let err_style = Style::new(cli.global.color, std::io::stderr().is_terminal());
    let traces = match init_tracing(
        cli.global.verbose,
        err_style,
        cli.global.log_format,
        cli.global.otlp_endpoint.as_deref(),
    ) {
        Ok(traces) => traces,
        Err(e) => {
            eprintln!("{}: {e}", err_style.red("error"));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.workers())
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{}: cannot start the runtime: {e}", err_style.red("error"));
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(cmd::run(cli));
    // Servers and watchers are closed by the commands; do not wait for
    // stray blocking tasks (a stdin read) beyond a moment.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    if let Some(traces) = traces {
        traces.shutdown();
    }
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<Reported>().is_some() => ExitCode::from(1),
        Err(e) if e.downcast_ref::<signals::Interrupted>().is_some() => {
            let signal = e.downcast_ref::<signals::Interrupted>().map(|i| i.0);
            ExitCode::from(signal.map_or(1, signals::Signal::exit_code))
        }
        Err(e) if config_diagnostics(&e).is_some() => {
            let diagnostics = config_diagnostics(&e).unwrap_or_default();
            eprint!("{}", context::config_error_report(err_style, diagnostics));
            ExitCode::from(1)
        }
        Err(e) => {
            let usage = e.downcast_ref::<UsageError>().is_some();
            // Each cause once: a message that quotes its cause already is
            // not followed by it again.
            let text = cmd::with_next_step(extpool_host::core::Causes(&*e).to_string(), &e);
            eprintln!("{}: {}", err_style.red("error"), output::shown(&text));
            if usage {
                eprintln!("\nFor more information, try '--help'.");
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
