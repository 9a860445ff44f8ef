//! Stdio that cannot go through tokio's reactor — a terminal, a regular
//! file, `/dev/null` — read and written with ordinary blocking calls off
//! the runtime's threads, and never made non-blocking: such a descriptor is
//! shared with other processes (a terminal with the shell), or cannot be
//! polled at all (a file).
//!
//! A blocking call may still see `EAGAIN`: the descriptor's `O_NONBLOCK`
//! lives on its open file description, which any process sharing it may
//! set. That is never taken for the end of input (or a failed write): the
//! call waits with `poll(2)` until the descriptor is ready and tries again.
//! Only end of input ends reading; any other error is handed on as one.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::Arc;

use rustix::event::{PollFd, PollFlags};
use tokio::sync::mpsc;

use super::lines::READ_CHUNK;

/// Chunks read ahead of the transport, at most.
const READ_AHEAD: usize = 2;

/// Bytes read by a thread of their own from a blocking descriptor.
#[derive(Debug)]
pub(crate) struct BlockingSource {
    /// Chunks as read; closed at the end of input (after an error, if any).
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
}

impl BlockingSource {
    /// Starts reading `file` on a thread of its own. A plain thread, not
    /// tokio's blocking pool: a read that never returns (a terminal no one
    /// types into) must not hold up the runtime's shutdown. The thread ends
    /// at the end of input, on an error, or at its next read once this
    /// source is dropped.
    pub(crate) fn spawn(file: File) -> io::Result<Self> {
        let (tx, chunks) = mpsc::channel(READ_AHEAD);
        std::thread::Builder::new()
            .name("extpool-stdin".into())
            .spawn(move || read_all(file, &tx))?;
        Ok(Self { chunks })
    }

    /// Appends the next chunk to `buf`: its length, 0 at the end of input.
    /// Cancel-safe: a chunk is either appended or left for the next call.
    pub(crate) async fn read(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self.chunks.recv().await {
            Some(Ok(chunk)) => {
                buf.extend_from_slice(&chunk);
                Ok(chunk.len())
            }
            Some(Err(error)) => Err(error),
            None => Ok(0),
        }
    }
}

/// The reading thread: every chunk of `file` to `tx`, then its end (or
/// the error that ended it).
fn read_all(mut file: File, tx: &mpsc::Sender<io::Result<Vec<u8>>>) {
    let mut chunk = vec![0; READ_CHUNK];
    loop {
        let read = match file.read(&mut chunk) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => match ready(&file, PollFlags::IN) {
                Ok(()) => continue,
                Err(e) => Err(e),
            },
            read => read,
        };
        match read {
            Ok(0) => return,
            Ok(n) => {
                if tx.blocking_send(Ok(chunk[..n].to_vec())).is_err() {
                    // The transport is gone.
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        }
    }
}

/// Waits until `file` is ready for `events` (it was found non-blocking).
fn ready(file: &File, events: PollFlags) -> io::Result<()> {
    loop {
        let mut fds = [PollFd::new(file, events)];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Writes all of `bytes` to `file` on tokio's blocking pool.
pub(crate) async fn write_all(file: &Arc<File>, bytes: &[u8]) -> io::Result<()> {
    let file = file.clone();
    let bytes = bytes.to_vec();
    tokio::task::spawn_blocking(move || write_blocking(&file, &bytes))
        .await
        .map_err(io::Error::other)?
}

fn write_blocking(mut file: &File, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match file.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => ready(file, PollFlags::OUT)?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::OwnedFd;

    use super::*;

    #[tokio::test]
    async fn a_read_that_would_block_waits_for_input_instead_of_ending() {
        let (rx, mut tx) = io::pipe().unwrap();
        // As another process sharing the descriptor may make it.
        rustix::io::ioctl_fionbio(&rx, true).unwrap();
        let mut source = BlockingSource::spawn(File::from(OwnedFd::from(rx))).unwrap();
        // Each part is written once the one before has been read: the
        // reading thread, already reading again, finds nothing (EAGAIN)
        // before nearly every one.
        let mut buf = Vec::new();
        for i in 0..100 {
            let part = format!("{{\"n\":{i}}}\n");
            tx.write_all(part.as_bytes()).unwrap();
            let read = source.read(&mut buf).await;
            assert_eq!(read.unwrap(), part.len(), "part {i}");
            assert!(buf.ends_with(part.as_bytes()), "part {i}");
        }
        drop(tx);
        assert_eq!(source.read(&mut buf).await.unwrap(), 0, "the end of input");
    }

    #[tokio::test]
    async fn a_write_that_would_block_waits_for_room() {
        let (mut rx, tx) = io::pipe().unwrap();
        rustix::io::ioctl_fionbio(&tx, true).unwrap();
        let file = Arc::new(File::from(OwnedFd::from(tx)));
        // More than a pipe holds: the writes fill it before it is read.
        let bytes: Vec<u8> = (0..4 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
        let writing = {
            let bytes = bytes.clone();
            tokio::spawn(async move { write_all(&file, &bytes).await })
        };
        let reading = std::thread::spawn(move || {
            let mut read = Vec::new();
            rx.read_to_end(&mut read).map(|_| read)
        });
        writing.await.unwrap().unwrap();
        assert_eq!(reading.join().unwrap().unwrap(), bytes);
    }
}
