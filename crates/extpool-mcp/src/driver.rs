//! A stdio connection's own thread: a current-thread tokio runtime on which
//! the child is spawned and everything of the connection runs — rmcp's
//! service task, extpool's stdio transport (reader and writer), the stderr
//! reader, the flood gate's tasks.
//!
//! - **Why.** On a multi-thread runtime the caller, rmcp's service task and
//!   the transport's writer and reader land on different workers, so a call
//!   crosses threads several times (caller → service → writer, reader →
//!   service → caller). On a driver only the hand-off to and from the
//!   connection crosses threads: for a tool call, its line queued for the
//!   writer and its answer's oneshot ([`crate::direct`]); for any other
//!   request, rmcp's channels.
//! - **When.** For stdio servers, when the connection is made on a
//!   multi-thread runtime (on a current-thread runtime the connection is on
//!   one thread already), unless [`crate::ClientOptions::stdio_driver`] is off.
//! - **Lifetime.** The connection owns its driver. Finishing it (the
//!   connection's close, or its drop) lets what was spawned on the runtime
//!   end — rmcp's service closing the transport, the child being reaped —
//!   for at most [`DRAIN_GRACE`], then shuts the runtime down and ends the
//!   thread.
//! - **Logs.** The thread logs to the subscriber that was current where the
//!   connection was made.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;
use tokio::task::{JoinError, JoinHandle};

/// The name of the driver thread of server `server`: `mcp:` and the
/// server's name, cut to the 15 bytes Linux keeps of a thread's name (as
/// `top -H`, a debugger and `/proc/<pid>/task/*/comm` show it).
pub fn driver_thread_name(server: &str) -> String {
    let mut name = format!("mcp:{server}");
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.truncate(end);
    name
}

/// How long a finishing driver lets its tasks run to their end.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How often a finishing driver looks whether its tasks have ended.
const DRAIN_POLL: Duration = Duration::from_millis(1);

/// True when the current runtime has several workers: where a driver helps.
pub(crate) fn helps_here() -> bool {
    Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
}

/// One connection's thread and runtime; the thread ends once this is
/// finished or dropped.
#[derive(Debug)]
pub(crate) struct Driver {
    handle: Handle,
    /// Dropping it tells the thread to finish.
    _stop: oneshot::Sender<()>,
    /// Told once the runtime is shut down.
    done: Option<oneshot::Receiver<()>>,
}

impl Driver {
    /// Starts the thread and its runtime, named after `server`.
    pub(crate) async fn start(server: &str) -> io::Result<Self> {
        let (ready_tx, ready_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (done_tx, done_rx) = oneshot::channel();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        std::thread::Builder::new()
            .name(driver_thread_name(server))
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || drive(ready_tx, stop_rx));
                let _ = done_tx.send(());
            })?;
        let handle = ready_rx
            .await
            .map_err(|_| io::Error::other("the connection's thread ended at its start"))??;
        Ok(Self {
            handle,
            _stop: stop_tx,
            done: Some(done_rx),
        })
    }

    /// Runs `work` on the driver and returns its output; dropping the
    /// returned future cancels `work` (on the driver).
    pub(crate) async fn run<F>(&self, work: F) -> Result<F::Output, JoinError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let mut task = AbortOnDrop(self.handle.spawn(work));
        (&mut task.0).await
    }

    /// Lets the driver's tasks end (bounded), shuts its runtime down and
    /// waits until it is.
    pub(crate) async fn finish(mut self) {
        let done = self.done.take();
        drop(self);
        if let Some(done) = done {
            let _ = done.await;
        }
    }
}

/// A task aborted when its handle is dropped before it ends.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The thread: serves the runtime until told to stop, then drains it.
fn drive(ready: oneshot::Sender<io::Result<Handle>>, stop: oneshot::Receiver<()>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = ready.send(Err(error));
            return;
        }
    };
    if ready.send(Ok(runtime.handle().clone())).is_err() {
        return;
    }
    runtime.block_on(async {
        // A dropped sender is the signal too.
        let _ = stop.await;
        drain().await;
    });
}

/// Waits until every task on this runtime has ended, at most [`DRAIN_GRACE`].
async fn drain() {
    let metrics = Handle::current().metrics();
    let deadline = tokio::time::Instant::now() + DRAIN_GRACE;
    loop {
        let alive = metrics.num_alive_tasks();
        if alive == 0 {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::debug!(
                alive,
                "MCP connection's tasks still running at shutdown; dropping them"
            );
            return;
        }
        tokio::time::sleep(DRAIN_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::driver_thread_name;

    #[test]
    fn thread_names_fit_what_linux_keeps() {
        assert_eq!(driver_thread_name("kit"), "mcp:kit");
        assert_eq!(
            driver_thread_name("a_very_long_server_name"),
            "mcp:a_very_long"
        );
        assert_eq!(driver_thread_name("a_very_long_server_name").len(), 15);
    }
}
