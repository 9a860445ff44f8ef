//! The client side: a child process's stdin and stdout as a [`LineTransport`].
//!
//! Lifecycle as rmcp's `TokioChildProcess` (the MCP stdio shutdown
//! sequence): closing writes what is queued, closes the child's stdin,
//! waits for it to exit, then sends SIGTERM, waits again, then kills it;
//! dropping the transport kills the child.

use std::io;
use std::process::Stdio;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::net::unix::pipe;
use tokio::process::ChildStderr;

use super::LineTransport;

/// How long a closing child gets after stdin closes, and again after SIGTERM.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// An MCP server child process, spoken to over its stdin and stdout.
pub struct ChildTransport {
    child: Option<Box<dyn ChildWrapper>>,
    inner: LineTransport<RoleClient>,
    /// A confined child's forwarders, ended with the transport.
    _confinement: Option<extpool_sandbox::Running>,
}

impl std::fmt::Debug for ChildTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildTransport")
            .field("pid", &self.id())
            .finish_non_exhaustive()
    }
}

impl ChildTransport {
    /// Spawns `command` with piped stdin and stdout and `stderr` as given,
    /// tied to this process's life (it dies with it, on Linux even when
    /// this process is killed with SIGKILL); returns the transport and the
    /// child's stderr when piped. Must be called within a tokio runtime.
    pub fn spawn(command: CommandWrap, stderr: Stdio) -> io::Result<(Self, Option<ChildStderr>)> {
        Self::spawn_confined(command, stderr, None)
    }

    /// [`ChildTransport::spawn`], confined as `confinement` prepares (see
    /// `extpool_sandbox`); a failure of a confinement step in the child is
    /// the error, naming the step.
    pub fn spawn_confined(
        mut command: CommandWrap,
        stderr: Stdio,
        confinement: Option<extpool_sandbox::Prepared>,
    ) -> io::Result<(Self, Option<ChildStderr>)> {
        command
            .command_mut()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let (steps, parent) = match confinement {
            Some(prepared) => (Some(prepared.child), Some(prepared.parent)),
            None => (None, None),
        };
        let spawned = crate::spawner::spawn(command, steps);
        let (mut child, running) = match (spawned, parent) {
            (Ok(child), None) => (child, None),
            (Ok(mut child), Some(parent)) => match parent.started() {
                Ok(running) => (child, Some(running)),
                Err(error) => {
                    let _ = child.start_kill();
                    return Err(io::Error::other(error));
                }
            },
            (Err(error), None) => return Err(error),
            (Err(error), Some(parent)) => return Err(parent.failed(error)),
        };
        let inner = child.inner_mut();
        let (Some(stdin), Some(stdout)) = (inner.stdin().take(), inner.stdout().take()) else {
            return Err(io::Error::other("the child's stdin or stdout is not piped"));
        };
        let stderr = inner.stderr().take();
        let to = pipe::Sender::from_owned_fd(stdin.into_owned_fd()?)?;
        let from = pipe::Receiver::from_owned_fd(stdout.into_owned_fd()?)?;
        let inner = LineTransport::from_pipes(from, to)?;
        Ok((
            Self {
                child: Some(child),
                inner,
                _confinement: running,
            },
            stderr,
        ))
    }

    /// Changes the longest message accepted from the child.
    pub fn with_max_message_bytes(mut self, max: usize) -> Self {
        self.inner.set_max_message_bytes(max);
        self
    }

    /// Keeps the capabilities the server declares, as it sends them, in
    /// `declared` (see [`super::whole`]).
    pub fn with_declared(mut self, declared: super::whole::Declared) -> Self {
        self.inner.keep_declared_in(declared);
        self
    }

    /// A way in to the child's stdin past rmcp (see [`crate::direct`]).
    pub(crate) fn sender(&self) -> super::LineSender {
        self.inner.sender()
    }

    /// The child's process id, while it has not been reaped.
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }

    /// Closes stdin and waits for the child; SIGTERM, then SIGKILL, if it stays.
    async fn shutdown(&mut self) -> io::Result<()> {
        self.inner.close_writer().await;
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if exited(child).await? {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        {
            let term = nix::sys::signal::Signal::SIGTERM as i32;
            match child.signal(term) {
                Ok(()) => {
                    if exited(child).await? {
                        self.child = None;
                        return Ok(());
                    }
                }
                Err(error) => tracing::debug!(%error, "cannot send SIGTERM to the MCP server"),
            }
        }
        Box::into_pin(child.kill()).await?;
        self.child = None;
        Ok(())
    }
}

async fn exited(child: &mut Box<dyn ChildWrapper>) -> io::Result<bool> {
    match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
        Ok(status) => status.map(|_| true),
        Err(_) => Ok(false),
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // kill() also reaps the child, so no zombie is left.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = Box::into_pin(child.kill()).await {
                        tracing::debug!(%error, "killing the MCP server failed");
                    }
                });
            }
            Err(_) => {
                let _ = child.start_kill();
            }
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shutdown()
    }
}
