//! A child's stderr: forwarded line by line into `tracing` under the
//! server's name, and the last lines kept for error messages.
//!
//! A server that fails to start almost always says why on stderr ("module
//! not found", "missing API key"); an error that carries those lines saves a
//! round of guessing. The buffer is bounded in lines and in bytes per line so
//! a chatty server cannot grow it.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, BufReader};

use crate::name::ServerName;
use crate::redact::Redactor;

/// How many lines are kept.
pub const STDERR_TAIL_LINES: usize = 20;
/// Longest line kept (longer lines are cut at a char boundary).
const MAX_LINE_BYTES: usize = 1024;

/// Longest part of a line read and logged; the rest of a longer line is
/// read and dropped, so a server writing without line breaks cannot grow
/// the reader's buffer.
const MAX_READ_LINE_BYTES: usize = 8 * 1024;

/// How many stderr lines a slow listener of [`StderrLines`] may fall behind
/// before it misses some (it is told how many, never blocks the reader).
const LINES_BACKLOG: usize = 64;

/// One line a server wrote to stderr (masked like the tail's lines).
#[derive(Debug, Clone)]
pub struct StderrLine {
    /// The server.
    pub server: ServerName,
    /// The line, without its line break.
    pub line: String,
}

/// Every stderr line of the servers started with one set of client options,
/// for whoever listens (a start-up display shows a server's latest line
/// while it builds or downloads). Clones share the channel; nothing is
/// kept when nobody listens, and a slow listener misses lines instead of
/// holding the reader back.
#[derive(Clone)]
pub struct StderrLines(tokio::sync::broadcast::Sender<StderrLine>);

impl Default for StderrLines {
    fn default() -> Self {
        Self(tokio::sync::broadcast::Sender::new(LINES_BACKLOG))
    }
}

impl std::fmt::Debug for StderrLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StderrLines")
            .field("listeners", &self.0.receiver_count())
            .finish()
    }
}

impl StderrLines {
    /// The lines written from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<StderrLine> {
        self.0.subscribe()
    }

    fn send(&self, server: &ServerName, line: &str) {
        if self.0.receiver_count() > 0 {
            let _ = self.0.send(StderrLine {
                server: server.clone(),
                line: line.to_owned(),
            });
        }
    }
}

/// The last lines a child wrote to stderr; shared with the reader task.
#[derive(Clone, Default)]
pub struct StderrTail {
    redactor: Redactor,
    lines_to: Option<StderrLines>,
    lines: Arc<Mutex<VecDeque<String>>>,
    closed: Arc<tokio::sync::Notify>,
    done: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for StderrTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StderrTail")
            .field("lines", &self.lines.lock().len())
            .finish()
    }
}

impl StderrTail {
    /// An empty tail whose lines are masked with `redactor`.
    pub fn redacting(redactor: Redactor) -> Self {
        Self {
            redactor,
            ..Self::default()
        }
    }

    /// The same tail, also sending every line to `lines`.
    pub fn telling(mut self, lines: StderrLines) -> Self {
        self.lines_to = Some(lines);
        self
    }

    /// A snapshot of the kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().iter().cloned().collect()
    }

    /// Waits (at most `max`) until the stream has ended, so that a failed
    /// child's last words are in [`StderrTail::lines`]; then returns them.
    pub async fn settled_lines(&self, max: std::time::Duration) -> Vec<String> {
        let notified = self.closed.notified();
        if !self.done.load(std::sync::atomic::Ordering::Acquire) {
            let _ = tokio::time::timeout(max, notified).await;
        }
        self.lines()
    }

    fn push(&self, mut line: String) {
        if line.len() > MAX_LINE_BYTES {
            let mut end = MAX_LINE_BYTES;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
            line.push('…');
        }
        let mut lines = self.lines.lock();
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Reads `stream` to its end in a background task, logging each line at
    /// `debug` under target `extpool_mcp::stderr` with the server's name.
    pub fn capture<R>(&self, server: ServerName, stream: R)
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let tail = self.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match read_line_bounded(&mut reader, &mut buf, MAX_READ_LINE_BYTES).await {
                    Ok(0) => break,
                    Ok(read) => {
                        let mut text = String::from_utf8_lossy(&buf);
                        if read > buf.len() {
                            text = format!("{text}… (cut at {MAX_READ_LINE_BYTES} bytes)").into();
                        }
                        let line = tail.redactor.redact(text.trim_end_matches(['\n', '\r']));
                        tracing::debug!(target: "extpool_mcp::stderr", server = %server, "{line}");
                        // Kept first: a listener told of the line finds it in the tail.
                        tail.push(line.to_string());
                        if let Some(lines) = &tail.lines_to {
                            lines.send(&server, &line);
                        }
                    }
                    Err(error) => {
                        tracing::debug!(target: "extpool_mcp::stderr", server = %server, %error, "stderr read failed");
                        break;
                    }
                }
            }
            tracing::trace!(target: "extpool_mcp::stderr", server = %server, "stderr closed");
            tail.done.store(true, std::sync::atomic::Ordering::Release);
            tail.closed.notify_waiters();
        });
    }
}

/// Reads one line of `reader` into `buf` (cleared by the caller), keeping
/// at most `max` bytes of it: the rest, up to and with its line break, is
/// read and dropped. Returns the bytes read, 0 at the end of the stream.
async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<usize> {
    let mut read = 0;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(read);
        }
        let (used, ended) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&available[..used.min(room)]);
        reader.consume(used);
        read += used;
        if ended {
            return Ok(read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines() {
        let tail = StderrTail::default();
        for i in 0..(STDERR_TAIL_LINES + 5) {
            tail.push(format!("line {i}"));
        }
        let lines = tail.lines();
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines[0], "line 5");
    }

    #[test]
    fn cuts_long_lines_on_char_boundaries() {
        let tail = StderrTail::default();
        tail.push("é".repeat(MAX_LINE_BYTES));
        let line = &tail.lines()[0];
        assert!(line.len() <= MAX_LINE_BYTES + '…'.len_utf8());
    }

    #[tokio::test]
    async fn masks_passed_values() {
        let mut config = crate::config::McpServerConfig::stdio("s", Vec::<String>::new());
        config.env.insert("KEY".into(), "sk-s3cr3t".into());
        let tail = StderrTail::redacting(Redactor::for_server(&config, []));
        let (mut w, r) = tokio::io::duplex(64);
        tail.capture(ServerName::new("t").unwrap(), r);
        tokio::io::AsyncWriteExt::write_all(&mut w, b"bad key sk-s3cr3t\n")
            .await
            .unwrap();
        drop(w);
        assert_eq!(
            tail.settled_lines(std::time::Duration::from_secs(20)).await,
            ["bad key ***"]
        );
    }

    #[tokio::test]
    async fn a_line_without_end_is_read_in_bounded_memory() {
        let tail = StderrTail::default();
        let (mut w, r) = tokio::io::duplex(64 * 1024);
        tail.capture(ServerName::new("t").unwrap(), r);
        let long = vec![b'x'; 4 * 1024 * 1024];
        tokio::io::AsyncWriteExt::write_all(&mut w, &long)
            .await
            .unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut w, b"\nnext\n")
            .await
            .unwrap();
        drop(w);
        let lines = tail.settled_lines(std::time::Duration::from_secs(20)).await;
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("xxx"), "{}", lines[0]);
        assert!(lines[0].len() <= MAX_LINE_BYTES + '…'.len_utf8());
        assert_eq!(lines[1], "next");
    }

    #[tokio::test]
    async fn a_long_line_keeps_its_start_and_the_next_line_follows() {
        let mut reader = tokio::io::BufReader::new(&b"abcdefgh\nij\n"[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 3).await.unwrap(),
            9
        );
        assert_eq!(buf, b"abc");
        buf.clear();
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 3).await.unwrap(),
            3
        );
        assert_eq!(buf, b"ij\n");
        buf.clear();
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 3).await.unwrap(),
            0
        );
    }

    #[tokio::test]
    async fn captures_a_stream() {
        let tail = StderrTail::default();
        let (mut w, r) = tokio::io::duplex(64);
        tail.capture(ServerName::new("t").unwrap(), r);
        tokio::io::AsyncWriteExt::write_all(&mut w, b"one\ntwo\r\nthree")
            .await
            .unwrap();
        drop(w);
        for _ in 0..100 {
            if tail.lines().len() == 3 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(tail.lines(), ["one", "two", "three"]);
    }
}
