//! The write side of a connection: one queue and one writer.
//!
//! A message is serialized by the caller into the connection's queue. When
//! the writer is idle and the queue empty — the common case — the caller
//! writes it at once with one non-blocking `write(2)`: no task, no wake-up.
//! When the pipe is full (or a write is partial) the rest stays queued and
//! the connection's writer task takes over: it waits until the pipe is
//! writable, then drains everything queued so far in one write and
//! repeats, so a burst leaves as a few large writes instead of one write
//! (and one wake-up of the peer) per message. Senders wait while more than
//! [`QUEUE_LIMIT`] bytes are queued. A blocking sink (our stdout on a
//! terminal or a file) is only written by the writer task, each batch on
//! tokio's blocking pool.
//!
//! A write error ends the connection: every later send fails, queued bytes
//! are dropped and the read side is told to stop (`failed`).

use std::fs::File;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::net::UnixStream;
use tokio::net::unix::pipe;
use tokio::sync::Notify;

/// Bytes queued beyond which senders wait for the writer.
pub(crate) const QUEUE_LIMIT: usize = 8 * 1024 * 1024;

/// Capacity a drained batch keeps for the next one.
const RETAINED: usize = 1024 * 1024;

/// Where bytes go: a pipe or a stream socket, non-blocking, or anything
/// else (our stdout on a terminal or a file), blocking.
#[derive(Debug)]
pub(crate) enum Sink {
    /// A pipe (a child's stdin, or our stdout).
    Pipe(pipe::Sender),
    /// A socket (stdio of a process started by a client that uses socket pairs).
    Socket(UnixStream),
    /// Written off the runtime's threads ([`super::blocking`]): every
    /// message is queued for the writer task.
    Blocking(Arc<File>),
}

impl Sink {
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Self::Pipe(p) => p.try_write(bytes),
            Self::Socket(s) => s.try_write(bytes),
            Self::Blocking(_) => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    async fn writable(&self) -> io::Result<()> {
        match self {
            Self::Pipe(p) => p.writable().await,
            Self::Socket(s) => s.writable().await,
            Self::Blocking(_) => Ok(()),
        }
    }

    async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        if let Self::Blocking(file) = self {
            return super::blocking::write_all(file, bytes).await;
        }
        while !bytes.is_empty() {
            match self.try_write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable().await?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Queue {
    bytes: Vec<u8>,
    /// The writer task owns the sink until the queue is empty.
    draining: bool,
    /// No more sends; the writer exits once the queue is drained.
    closed: bool,
    /// Why the connection's writes stopped.
    failed: Option<(io::ErrorKind, String)>,
    /// For writes in the caller; `None` once closed or failed.
    sink: Option<Arc<Sink>>,
}

impl Queue {
    /// The sink, while the connection's writes go on.
    fn sink(&self) -> io::Result<Arc<Sink>> {
        if let Some((kind, why)) = &self.failed {
            return Err(io::Error::new(*kind, why.clone()));
        }
        self.sink.clone().ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotConnected, "the MCP connection is closed")
        })
    }

    /// What a sender that just queued must still wait for.
    fn sent(&self) -> Sent {
        if self.bytes.len() > QUEUE_LIMIT {
            Sent::Full
        } else {
            Sent::Done
        }
    }
}

#[derive(Debug)]
struct Shared {
    queue: Mutex<Queue>,
    /// The writes failed (as `Queue::failed`), read without the lock: the
    /// read side asks before every read it waits on, while senders and the
    /// writer take the lock for every message.
    has_failed: AtomicBool,
    /// The writer task: there is something to write (or to close).
    work: Notify,
    /// Senders waiting for room; the read side waiting for a failure.
    room: Notify,
    failed: Notify,
}

/// The sending end, owned by the transport.
#[derive(Debug)]
pub(crate) struct Writer {
    shared: Arc<Shared>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// What a send must still wait for.
pub(crate) enum Sent {
    /// Written or queued.
    Done,
    /// Queued, but the queue is over its limit: wait with [`Writer::room`].
    Full,
}

impl Writer {
    /// Starts the connection's writer task (needs a tokio runtime).
    pub(crate) fn new(sink: Sink) -> io::Result<Self> {
        let runtime = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        let sink = Arc::new(sink);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                sink: Some(sink.clone()),
                ..Queue::default()
            }),
            has_failed: AtomicBool::new(false),
            work: Notify::new(),
            room: Notify::new(),
            failed: Notify::new(),
        });
        let task = runtime.spawn(drain(shared.clone(), sink));
        Ok(Self {
            shared,
            task: Some(task),
        })
    }

    /// Writes or queues one serialized message (with its newline).
    pub(crate) fn send(&self, message: &[u8]) -> io::Result<Sent> {
        send(&self.shared, message)
    }

    /// Waits until the queue is back under its limit (or the writes failed).
    pub(crate) fn room(&self) -> impl Future<Output = io::Result<()>> + Send + 'static {
        room(self.shared.clone())
    }

    /// Another way in to this connection's queue, for whoever writes
    /// messages past the transport (see [`LineSender`]).
    pub(crate) fn sender(&self) -> LineSender {
        LineSender {
            shared: self.shared.clone(),
        }
    }

    /// Why the writes failed, once they have.
    pub(crate) fn error(&self) -> Option<io::Error> {
        let q = self.shared.queue.lock();
        q.failed
            .as_ref()
            .map(|(kind, why)| io::Error::new(*kind, why.clone()))
    }

    /// Resolves when the writes have failed; the read side stops then.
    pub(crate) async fn failed(&self) {
        loop {
            let notified = self.shared.failed.notified();
            if self.shared.has_failed.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// Stops sending: what is queued is still written, then the sink closes.
    fn shut(&self) {
        let mut q = self.shared.queue.lock();
        q.closed = true;
        q.sink = None;
        if !q.draining {
            q.draining = true;
            self.shared.work.notify_one();
        }
    }

    /// Closes after writing what is queued, waiting at most `grace`.
    pub(crate) async fn close(&mut self, grace: std::time::Duration) {
        self.shut();
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(grace, task).await.is_err() {
                tracing::debug!("the MCP peer did not read its last messages in time");
                abort.abort();
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // The writer task ends after the queue, closing the sink.
        self.shut();
    }
}

/// A second way in to a connection's write queue, for messages sent past
/// the transport ([`crate::direct`]): they are written in order with the
/// transport's own. It does not keep the connection open: once the
/// transport closes, sends fail.
#[derive(Debug, Clone)]
pub(crate) struct LineSender {
    shared: Arc<Shared>,
}

impl LineSender {
    /// Queues one serialized message (with its newline) for the writer
    /// task, which writes everything queued by then in one write: a burst
    /// of messages from several threads leaves as one write, on the
    /// connection's own thread, rather than one write (and one wake-up of
    /// the peer) each from wherever it was sent.
    pub(crate) fn queue(&self, message: &[u8]) -> io::Result<Sent> {
        let mut q = self.shared.queue.lock();
        q.sink()?;
        q.bytes.extend_from_slice(message);
        if !q.draining {
            q.draining = true;
            self.shared.work.notify_one();
        }
        Ok(q.sent())
    }

    /// Writes one serialized message (with its newline) at once, from the
    /// caller's thread, when the writer is idle, as the transport's own
    /// sends do; queues it otherwise. For a message sent alone, which no
    /// other would join in a batch: it saves the hop to the connection's
    /// thread.
    pub(crate) fn send(&self, message: &[u8]) -> io::Result<Sent> {
        send(&self.shared, message)
    }

    /// Waits until the queue is back under its limit (or the writes failed).
    pub(crate) fn room(&self) -> impl Future<Output = io::Result<()>> + Send + 'static {
        room(self.shared.clone())
    }

    /// Bytes queued for the writer and not yet taken by it.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.shared.queue.lock().bytes.len()
    }
}

/// Writes `message` at once when the writer is idle (so the queue is
/// empty), or queues what is left of it for the writer.
fn send(shared: &Shared, message: &[u8]) -> io::Result<Sent> {
    let mut q = shared.queue.lock();
    let sink = q.sink()?;
    let mut rest = message;
    if !q.draining {
        // The writer is idle, so the queue is empty: write now.
        match sink.try_write(message) {
            Ok(n) if n == message.len() => return Ok(Sent::Done),
            Ok(n) => rest = &message[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let error = io::Error::new(e.kind(), e.to_string());
                fail(shared, &mut q, e);
                return Err(error);
            }
        }
        q.draining = true;
        shared.work.notify_one();
    }
    q.bytes.extend_from_slice(rest);
    Ok(q.sent())
}

/// Waits until `shared`'s queue is back under its limit (or the writes failed).
async fn room(shared: Arc<Shared>) -> io::Result<()> {
    loop {
        let notified = shared.room.notified();
        {
            let q = shared.queue.lock();
            if let Some((kind, why)) = &q.failed {
                return Err(io::Error::new(*kind, why.clone()));
            }
            if q.bytes.len() <= QUEUE_LIMIT || q.sink.is_none() {
                return Ok(());
            }
        }
        notified.await;
    }
}

fn fail(shared: &Shared, q: &mut Queue, error: io::Error) {
    tracing::debug!(%error, "writing to the MCP peer failed; closing the connection");
    q.failed = Some((error.kind(), error.to_string()));
    shared.has_failed.store(true, Ordering::Release);
    q.bytes = Vec::new();
    q.sink = None;
    shared.room.notify_waiters();
    shared.failed.notify_waiters();
}

/// The writer task: drains the queue whenever it is not empty.
async fn drain(shared: Arc<Shared>, sink: Arc<Sink>) {
    let mut batch = Vec::new();
    loop {
        let wait = {
            let mut q = shared.queue.lock();
            if q.failed.is_some() || (q.bytes.is_empty() && q.closed) {
                return;
            }
            if q.bytes.is_empty() {
                q.draining = false;
                Some(shared.work.notified())
            } else {
                std::mem::swap(&mut q.bytes, &mut batch);
                None
            }
        };
        if let Some(work) = wait {
            work.await;
            continue;
        }
        shared.room.notify_waiters();
        if let Err(error) = sink.write_all(&batch).await {
            fail(&shared, &mut shared.queue.lock(), error);
            return;
        }
        batch.clear();
        if batch.capacity() > RETAINED {
            batch = Vec::new();
        }
    }
}
