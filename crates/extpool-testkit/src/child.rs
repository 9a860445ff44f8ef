//! Running servers as child processes for tests: the test server over HTTP
//! ([`HttpServer`]) or as a stdio command line for a client to spawn
//! ([`stdio_command`]), and the generic [`ListeningChild`] that the peers
//! module reuses for third-party HTTP servers.
//!
//! Every child is the leader of its own process group, and the whole group
//! is killed on drop, so no server (or grandchild, such as a Python worker)
//! outlives the test that started it.

use std::{
    collections::VecDeque,
    ffi::OsStr,
    io::{BufRead, BufReader, Read},
    path::PathBuf,
    process::{Command, ExitStatus, Stdio},
    sync::{Arc, Mutex, PoisonError, mpsc},
    thread,
    time::{Duration, Instant},
};

use process_wrap::std::{ChildWrapper, CommandWrap, ProcessGroup};

use crate::binary::server_binary;

/// How long a child may take to print its `LISTENING` line.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// How many stderr lines are kept for error messages and tests.
const STDERR_LINES: usize = 500;
/// The line prefix a server prints once it accepts connections.
pub(crate) const LISTENING_PREFIX: &str = "LISTENING ";

/// The last lines a child wrote to stderr.
#[derive(Debug, Clone, Default)]
struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn collect(&self, stream: impl Read + Send + 'static) {
        let tail = self.clone();
        thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                let mut lines = tail.0.lock().unwrap_or_else(PoisonError::into_inner);
                if lines.len() == STDERR_LINES {
                    lines.pop_front();
                }
                lines.push_back(line);
            }
        });
    }

    fn text(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

/// A child process that announced an HTTP URL with a `LISTENING <url>` line
/// on stdout; its process group is killed on drop.
#[derive(Debug)]
pub(crate) struct ListeningChild {
    child: Box<dyn ChildWrapper>,
    url: String,
    stderr: StderrTail,
    what: String,
}

impl ListeningChild {
    /// Spawns `command` in a new process group and waits for its
    /// `LISTENING` line. `what` names the server in panic messages.
    ///
    /// Panics when the process cannot start, exits first, or stays silent
    /// for a minute; the message carries its stderr.
    pub(crate) fn spawn(command: Command, what: &str) -> Self {
        let mut command = command;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut wrap = CommandWrap::from(command);
        wrap.wrap(ProcessGroup::leader());
        let mut child = wrap
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let stderr = StderrTail::default();
        if let Some(err) = child.stderr().take() {
            stderr.collect(err);
        }
        let (tx, rx) = mpsc::channel();
        if let Some(out) = child.stdout().take() {
            thread::spawn(move || {
                let mut tx = Some(tx);
                // Keep draining after the LISTENING line so the child never
                // blocks on a full pipe.
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if let Some(url) = line.strip_prefix(LISTENING_PREFIX)
                        && let Some(tx) = tx.take()
                    {
                        let _ = tx.send(url.trim().to_owned());
                    }
                }
            });
        }
        let mut me = Self {
            child,
            url: String::new(),
            stderr,
            what: what.to_owned(),
        };
        match rx.recv_timeout(STARTUP_TIMEOUT) {
            Ok(url) => me.url = url,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = me.child.wait().map(|s| s.to_string()).unwrap_or_default();
                // Give the stderr reader a moment to drain the pipe.
                thread::sleep(Duration::from_millis(100));
                panic!(
                    "{what} exited ({status}) before printing its LISTENING line; stderr:\n{}",
                    me.stderr.text()
                );
            }
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "{what} printed no LISTENING line within {STARTUP_TIMEOUT:?}; stderr:\n{}",
                me.stderr.text()
            ),
        }
        me
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// Kills the process group and reaps the leader.
    pub(crate) fn kill(&mut self) {
        if let Err(e) = self.child.kill() {
            tracing::debug!("killing {}: {e}", self.what);
        }
        let _ = self.child.wait();
    }

    /// Whether the leader is still running.
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `timeout` for the leader to exit on its own.
    pub(crate) fn wait_for_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }
}

impl Drop for ListeningChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The test server as a streamable HTTP server in a child process, serving
/// at [`HttpServer::url`]. Its process group is killed on drop.
#[derive(Debug)]
pub struct HttpServer {
    child: ListeningChild,
    args: Vec<String>,
}

impl HttpServer {
    /// Starts `extpool-testkit-server --transport http --bind 127.0.0.1:0`
    /// with the extra `args` (for example `--state-dir DIR`) and waits until
    /// it listens.
    ///
    /// # Panics
    ///
    /// When the binary cannot be built or the server does not come up; the
    /// message carries the server's stderr.
    pub fn spawn<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<String> = args
            .into_iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        Self::spawn_on("127.0.0.1:0", args)
    }

    /// [`HttpServer::spawn`] with no extra arguments: no state directory,
    /// so what the server counts stays in its memory and nothing is left
    /// on disk. (A `StateDir` made only for its `args()` is removed at once
    /// and then written again by the server, left behind after the test.)
    ///
    /// # Panics
    ///
    /// As [`HttpServer::spawn`].
    pub fn start() -> Self {
        Self::spawn_on("127.0.0.1:0", Vec::new())
    }

    fn spawn_on(bind: &str, args: Vec<String>) -> Self {
        let mut command = Command::new(server_binary());
        command
            .args(["--transport", "http", "--bind", bind])
            .args(&args);
        let child = ListeningChild::spawn(command, "extpool-testkit-server (HTTP)");
        Self { child, args }
    }

    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        self.child.url()
    }

    /// The server's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// What the server wrote to stderr so far (its last lines).
    pub fn stderr(&self) -> String {
        self.child.stderr()
    }

    /// Kills the server now (SIGKILL to its process group), as a crash would.
    pub fn kill(&mut self) {
        self.child.kill();
    }

    /// Whether the server process is still running (false after a `crash`).
    pub fn is_running(&mut self) -> bool {
        self.child.is_running()
    }

    /// Waits up to `timeout` for the server to exit by itself (after a
    /// `crash`, say) and returns its exit status; `None` if it is still
    /// running. Blocks the calling thread.
    pub fn wait_for_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        self.child.wait_for_exit(timeout)
    }

    /// Kills the server and starts it again on the same address with the
    /// same arguments, as a server restart would look to a client.
    ///
    /// # Panics
    ///
    /// When the new process does not come up.
    pub fn restart(&mut self) {
        self.child.kill();
        let bind = self
            .url()
            .trim_start_matches("http://")
            .trim_end_matches(crate::server::http::MCP_PATH)
            .to_owned();
        let args = std::mem::take(&mut self.args);
        *self = Self::spawn_on(&bind, args);
    }
}

/// A command line that starts the test server over stdio: what a client
/// spawns (directly, never through a shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioCommand {
    /// The server binary.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
}

impl StdioCommand {
    /// A `std::process::Command` for this command line.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        command
    }

    /// The `(program, args)` pair.
    pub fn into_parts(self) -> (PathBuf, Vec<String>) {
        (self.program, self.args)
    }

    /// A `tokio::process::Command` for this command line (what rmcp's
    /// `TokioChildProcess` takes).
    pub fn tokio_command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command.args(&self.args);
        command
    }
}

impl From<StdioCommand> for (PathBuf, Vec<String>) {
    fn from(command: StdioCommand) -> Self {
        command.into_parts()
    }
}

/// The test server over stdio with the extra `args`:
/// `extpool-testkit-server --transport stdio <args>`.
///
/// # Panics
///
/// When the binary cannot be built (see [`server_binary`]).
pub fn stdio_command<I, S>(args: I) -> StdioCommand
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut all = vec!["--transport".to_owned(), "stdio".to_owned()];
    all.extend(
        args.into_iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned()),
    );
    StdioCommand {
        program: server_binary().to_path_buf(),
        args: all,
    }
}
