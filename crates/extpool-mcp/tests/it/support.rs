//! Helpers shared by the integration tests: configs for the testkit server,
//! pools with test-sized timeouts, argument builders, log capture.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use extpool_mcp::{
    ClientOptions, ElicitationHandler, McpClient, McpServerConfig, PoolConfig, ServerName,
    SessionConnectionPool,
};
use rmcp::ErrorData;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject};
use tokio::sync::Notify;

/// A stdio config running the testkit server with `args`.
pub fn stdio_cfg<S: AsRef<str>>(args: &[S]) -> McpServerConfig {
    let cmd = extpool_testkit::stdio_command(args.iter().map(|a| a.as_ref()));
    McpServerConfig::stdio(cmd.program.to_string_lossy(), cmd.args)
}

/// A streamable HTTP config for `url`.
pub fn http_cfg(url: &str) -> McpServerConfig {
    McpServerConfig::http(url)
}

/// A checked server name.
pub fn name(s: &str) -> ServerName {
    ServerName::new(s).unwrap()
}

/// Client options with timeouts sized for tests.
pub fn options() -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(30),
        ..ClientOptions::default()
    }
}

/// A pool with test-sized timeouts.
pub fn pool() -> SessionConnectionPool {
    SessionConnectionPool::new(PoolConfig {
        client: options(),
        ..PoolConfig::default()
    })
}

/// Connects a client directly (no pool).
pub async fn connect(server: &str, config: McpServerConfig) -> McpClient {
    McpClient::connect(name(server), config, Arc::new(options()))
        .await
        .unwrap()
}

/// [`connect`], hearing the server's stderr lines from the start.
pub async fn connect_hearing(
    server: &str,
    config: McpServerConfig,
) -> (
    McpClient,
    tokio::sync::broadcast::Receiver<extpool_mcp::stderr::StderrLine>,
) {
    let options = options();
    let lines = options.stderr_lines.subscribe();
    let client = McpClient::connect(name(server), config, Arc::new(options))
        .await
        .unwrap();
    (client, lines)
}

/// Waits until the server writes a stderr line that `wanted` accepts,
/// failing after [`PATIENCE`].
pub async fn heard(
    lines: &mut tokio::sync::broadcast::Receiver<extpool_mcp::stderr::StderrLine>,
    wanted: impl Fn(&str) -> bool,
) {
    let wait = async {
        loop {
            match lines.recv().await {
                Ok(l) if wanted(&l.line) => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    panic!("no more stderr lines")
                }
            }
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("the server never wrote the line"));
}

/// `serde_json::json!` object → tool arguments.
pub fn args(value: serde_json::Value) -> Option<JsonObject> {
    match value {
        serde_json::Value::Object(map) => Some(map),
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// The text of a call result's first text block.
pub fn text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default()
}

/// Everything logged (all targets, TRACE) while the returned guard lives,
/// on the current thread; use with a current-thread runtime.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs a TRACE subscriber writing into a [`Captured`] buffer.
///
/// One global subscriber serves the whole test binary and writes into the
/// buffer of the calling thread only: a per-test `set_default` races with
/// the callsite interest cache when tests run in parallel (a callsite first
/// seen by a thread without a subscriber can stay disabled), which made log
/// assertions flaky. Use it from a `current_thread` runtime so every task of
/// the test logs on the test's thread.
pub fn capture_logs() -> (Captured, CaptureGuard) {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(|| ThreadSink)
            .try_init();
    });
    let captured = Captured::default();
    SINK.with(|s| *s.borrow_mut() = Some(captured.clone()));
    (captured, CaptureGuard)
}

thread_local! {
    static SINK: std::cell::RefCell<Option<Captured>> = const { std::cell::RefCell::new(None) };
}

/// Stops capturing on this thread when dropped.
pub struct CaptureGuard;

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        SINK.with(|s| *s.borrow_mut() = None);
    }
}

/// Writes into the calling thread's capture buffer, if any.
struct ThreadSink;

impl Write for ThreadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        SINK.with(|s| {
            if let Some(c) = s.borrow_mut().as_mut() {
                let _ = c.write(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How long a test waits for what a server records before failing.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Waits until process `pid` has exited and been reaped, on the kernel's
/// word (its pidfd), failing after the testkit's patience.
pub async fn gone(pid: u32) {
    extpool_testkit::procs::reaped(pid).await;
}

/// Waits until the counter `key` of `state` is `n` (the server recorded
/// it), failing after [`PATIENCE`].
pub async fn counted(state: &extpool_testkit::StateDir, key: &str, n: u64) {
    state
        .until(&format!("counter {key} = {n}"), PATIENCE, |s| {
            s.counter(key) == n
        })
        .await;
}

/// Waits until `check` holds, looking again at each change `events`
/// reports (a lagging receiver looks again too), failing after
/// [`PATIENCE`] with `what`.
pub async fn on_each<T: Clone>(
    what: &str,
    events: &mut tokio::sync::broadcast::Receiver<T>,
    mut check: impl FnMut() -> bool,
) {
    let wait = async {
        while !check() {
            if let Err(tokio::sync::broadcast::error::RecvError::Closed) = events.recv().await {
                panic!("the events ended before: {what}");
            }
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("never happened: {what}"));
}

/// True once a process has exited *and* been reaped (no zombie left).
pub fn process_gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// An elicitation handler that holds every question until released,
/// counting those waiting (a client slow to answer the server).
#[derive(Default)]
pub struct Held {
    /// How many questions reached the handler.
    pub waiting: tokio::sync::watch::Sender<usize>,
    /// Releases every question waiting (each answered `accept`).
    pub release: Notify,
}

#[async_trait::async_trait]
impl ElicitationHandler for Held {
    async fn elicit(
        &self,
        _: &ServerName,
        _: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let released = self.release.notified();
        self.waiting.send_modify(|n| *n += 1);
        released.await;
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}
