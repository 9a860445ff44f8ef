//! extpool's stdio transport for rmcp: newline-delimited JSON-RPC over
//! non-blocking pipes, used on both sides — the client to a child process
//! ([`ChildTransport`]) and a server on this process's stdin/stdout
//! ([`stdio_server`]).
//!
//! It implements rmcp's [`Transport`] trait (no fork of rmcp) and differs
//! from rmcp's own stdio transports only in cost:
//!
//! - **No blocking pool.** Pipes and sockets are read and written through
//!   tokio's reactor (`tokio::net::unix::pipe`, `UnixStream`), never through
//!   `tokio::io::stdin`/`stdout`, which hand every read and write to a
//!   blocking thread (a thread wake-up each way).
//! - **One writer per connection** (module `writer`): a message is written at
//!   once when the pipe has room, otherwise queued; the writer drains
//!   everything queued in one write. No lock held across an await, no task
//!   per message.
//! - **Reads in bulk, lines in place** (module `lines`): up to 64 KiB a read,
//!   lines decoded where they lie.
//! - **Decoding straight into the concrete message type** ([`decode`]),
//!   with rmcp's own decoder for everything the fast path is not certain of.
//!
//! What it keeps from rmcp: a line over [`MAX_LINE_LENGTH`] (16 MiB, rmcp's
//! bound; [`LineTransport::set_max_message_bytes`]) is dropped and the
//! connection goes on — on the client side the request it answered fails at
//! once, as soon as the bytes read of it pass the bound (its end may never
//! come), as does one answered by a message nested too deep to parse, or
//! by one that carries its id but is no readable response (see
//! module `limits`); a line that is not JSON,
//! and an unknown notification, is ignored; JSON that is no valid message
//! is answered with `Invalid Request`; end of input ends the connection.
//! A server may check each line itself first and answer it in its place
//! ([`LineTransport::set_screen`]). A failed read or write ends the
//! connection too, and is kept ([`Failure`]): it is never taken for the
//! end of input.

mod blocking;
mod child;
pub mod decode;
mod lines;
mod server;
pub mod whole;
mod writer;

use std::io;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::Either;
use rmcp::model::ErrorData;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::AsyncReadExt;
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

pub use child::ChildTransport;
pub use decode::{FastDecode, client_message};
pub use server::{StdioServerTransport, stdio_server};

use crate::limits::{self, Exceeded};
use decode::Decoded;
use lines::LineBuf;
pub(crate) use writer::{LineSender, Sent};
use writer::{Sink, Writer};

/// The longest message accepted, in bytes (rmcp's stdio bound).
pub const MAX_LINE_LENGTH: usize = 16 * 1024 * 1024;

/// How long a closing connection may take to write what is still queued.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Where bytes come from: a pipe or a stream socket, non-blocking, or
/// anything else (our stdin on a terminal or a file), blocking.
#[derive(Debug)]
pub(crate) enum Source {
    /// A pipe (a child's stdout, or our stdin).
    Pipe(pipe::Receiver),
    /// A socket.
    Socket(UnixStream),
    /// Read by a thread of its own ([`blocking`]).
    Blocking(blocking::BlockingSource),
}

impl Source {
    async fn read(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Self::Pipe(p) => p.read_buf(buf).await,
            Self::Socket(s) => s.read_buf(buf).await,
            Self::Blocking(b) => b.read(buf).await,
        }
    }
}

/// Checks one incoming line (without its newline) before it is decoded:
/// `Some(reply)` is the JSON text written back in its place, and the line
/// goes no further.
pub type Screen = Box<dyn Fn(&[u8]) -> Option<Vec<u8>> + Send + Sync>;

/// Amends a decoded incoming message with what its line says that rmcp's
/// types dropped (a task-augmented `tools/call`'s `task`, say).
pub type Amend<R> = Box<dyn Fn(&[u8], RxJsonRpcMessage<R>) -> RxJsonRpcMessage<R> + Send + Sync>;

/// Writes an outgoing message as other JSON text: `Some(json)` is written
/// in its place (an `initialize` answer declaring what rmcp's types cannot).
pub type Rewrite<R> = Box<dyn Fn(&TxJsonRpcMessage<R>) -> Option<Vec<u8>> + Send + Sync>;

/// The [`Amend`] and [`Rewrite`] of a transport.
struct Amending<R: rmcp::service::ServiceRole> {
    incoming: Option<Amend<R>>,
    outgoing: Option<Rewrite<R>>,
}

impl<R: rmcp::service::ServiceRole> Default for Amending<R> {
    fn default() -> Self {
        Self {
            incoming: None,
            outgoing: None,
        }
    }
}

impl<R: rmcp::service::ServiceRole> std::fmt::Debug for Amending<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Amending")
    }
}

/// A [`Screen`] in a transport.
struct Screening(Screen);

impl std::fmt::Debug for Screening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Screen")
    }
}

/// How a connection ended on an error rather than at the end of its input.
#[derive(Debug)]
pub enum IoFailure {
    /// Reading the peer's messages failed.
    Read(io::Error),
    /// Writing to the peer failed.
    Write(io::Error),
}

/// Where a transport keeps the failure that ended it, to be read once the
/// transport has been handed to rmcp (which only sees that it ended).
#[derive(Debug, Clone, Default)]
pub struct Failure(Arc<parking_lot::Mutex<Option<IoFailure>>>);

impl Failure {
    /// The failure that ended the connection, if it ended on one.
    pub fn take(&self) -> Option<IoFailure> {
        self.0.lock().take()
    }

    /// Keeps `failure`, unless an earlier one is kept.
    fn record(&self, failure: IoFailure) {
        self.0.lock().get_or_insert(failure);
    }
}

/// One newline-delimited JSON-RPC connection over a non-blocking pipe pair
/// or socket (or, for our own stdio, whatever stdin and stdout are).
#[derive(Debug)]
pub struct LineTransport<R: rmcp::service::ServiceRole> {
    source: Source,
    lines: LineBuf,
    writer: Writer,
    /// Reused for serializing each outgoing message.
    scratch: Vec<u8>,
    /// The peer's input ended (or failed).
    ended: bool,
    /// Checks each line before it is decoded.
    screen: Option<Screening>,
    /// The error that ended the connection, if one did.
    failure: Failure,
    /// The requests whose answers are kept whole ([`whole`]).
    whole: whole::Whole,
    /// What amends messages in and rewrites them out, if anything does.
    amending: Amending<R>,
    _role: PhantomData<fn() -> R>,
}

impl<R: FastDecode> LineTransport<R> {
    /// A connection reading `source` and writing `sink`; starts the writer
    /// task, so it must be called within a tokio runtime.
    pub(crate) fn new(source: Source, sink: Sink) -> io::Result<Self> {
        Ok(Self {
            source,
            lines: LineBuf::new(MAX_LINE_LENGTH),
            writer: Writer::new(sink)?,
            scratch: Vec::with_capacity(1024),
            ended: false,
            screen: None,
            failure: Failure::default(),
            whole: whole::Whole::default(),
            amending: Amending::default(),
            _role: PhantomData,
        })
    }

    /// Has `amend` amend every decoded incoming message, given its line.
    pub fn set_amend(&mut self, amend: Amend<R>) {
        self.amending.incoming = Some(amend);
    }

    /// Has `rewrite` write outgoing messages as other text where it says.
    pub fn set_rewrite(&mut self, rewrite: Rewrite<R>) {
        self.amending.outgoing = Some(rewrite);
    }

    /// Changes the longest message accepted (default [`MAX_LINE_LENGTH`]).
    pub fn set_max_message_bytes(&mut self, max: usize) {
        self.lines.set_max(max);
    }

    /// Has `screen` check every incoming line (a UTF-8 byte order mark
    /// taken off) before it is decoded, and answer it in its place.
    pub fn set_screen(&mut self, screen: Screen) {
        self.screen = Some(Screening(screen));
    }

    /// The capabilities the peer declared, as it sent them (once its
    /// `initialize` answer came).
    pub fn declared(&self) -> whole::Declared {
        self.whole.declared()
    }

    /// Keeps the capabilities the peer declares in `declared`.
    pub fn keep_declared_in(&mut self, declared: whole::Declared) {
        self.whole.keep_declared_in(declared);
    }

    /// A way in to this connection's write queue past rmcp (see
    /// [`crate::direct`]).
    pub(crate) fn sender(&self) -> LineSender {
        self.writer.sender()
    }

    /// Where the error that ends this connection, if one does, is kept.
    pub fn failure(&self) -> Failure {
        self.failure.clone()
    }

    /// A connection over a pipe pair: `from` is read, `to` is written.
    pub fn from_pipes(from: pipe::Receiver, to: pipe::Sender) -> io::Result<Self> {
        Self::new(Source::Pipe(from), Sink::Pipe(to))
    }

    /// A connection over one stream socket (read and written).
    pub fn from_socket(socket: std::os::unix::net::UnixStream) -> io::Result<Self> {
        let write = socket.try_clone()?;
        Self::new(
            Source::Socket(nonblocking(socket)?),
            Sink::Socket(nonblocking(write)?),
        )
    }

    fn encode(&mut self, item: &TxJsonRpcMessage<R>) -> io::Result<Sent> {
        self.scratch.clear();
        serde_json::to_writer(&mut self.scratch, item)?;
        self.send_scratch()
    }

    /// Writes `json` (one message's text) as a line.
    fn send_line(&mut self, json: &[u8]) -> io::Result<Sent> {
        self.scratch.clear();
        self.scratch.extend_from_slice(json);
        self.send_scratch()
    }

    /// Writes the message in `scratch`, with its newline.
    fn send_scratch(&mut self) -> io::Result<Sent> {
        self.scratch.push(b'\n');
        let sent = self.writer.send(&self.scratch);
        if self.scratch.capacity() > 64 * 1024 {
            self.scratch = Vec::with_capacity(1024);
        }
        sent
    }

    /// Flushes what is queued (bounded) and closes the write side.
    pub(crate) async fn close_writer(&mut self) {
        self.writer.close(CLOSE_GRACE).await;
    }
}

/// The error response that fails the request a message we cannot read
/// answered, when its `id` can be found (see [`crate::limits`]).
fn refusal<R: FastDecode>(head: &[u8], exceeded: Exceeded) -> Option<RxJsonRpcMessage<R>> {
    let id = limits::top_level_id(head)?;
    Some(RxJsonRpcMessage::<R>::error(
        exceeded.into_error_data(),
        Some(id),
    ))
}

pub(crate) fn nonblocking(socket: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
    socket.set_nonblocking(true)?;
    UnixStream::from_std(socket)
}

impl<R: FastDecode> Transport<R> for LineTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<R>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some((keep, id)) = R::keeps(&item) {
            self.whole.expect(keep, id);
        }
        let rewritten = self.amending.outgoing.as_ref().and_then(|r| r(&item));
        let sent = match rewritten {
            Some(json) => self.send_line(&json),
            None => self.encode(&item),
        };
        match sent {
            Ok(Sent::Done) => Either::Left(std::future::ready(Ok(()))),
            Ok(Sent::Full) => Either::Right(self.writer.room()),
            Err(error) => Either::Left(std::future::ready(Err(error))),
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<R>> {
        loop {
            while let Some(range) = self.lines.next_line() {
                let line = self.lines.get(range);
                if let Some(Screening(screen)) = &self.screen
                    && let Some(reply) = screen(line.strip_prefix(decode::BOM).unwrap_or(line))
                {
                    if let Err(error) = self.send_line(&reply) {
                        tracing::debug!(%error, "cannot answer a message");
                        self.failure.record(IoFailure::Write(error));
                        return None;
                    }
                    continue;
                }
                if self.whole.waiting()
                    && let Some((id, result)) = self
                        .whole
                        .take(line.strip_prefix(decode::BOM).unwrap_or(line))
                    && let Some(message) = R::whole_result(id, result)
                {
                    return Some(message);
                }
                match decode::decode::<R>(line) {
                    Decoded::Message(message) => {
                        return Some(match &self.amending.incoming {
                            Some(amend) => amend(line, message),
                            None => message,
                        });
                    }
                    Decoded::Skip | Decoded::Invalid
                        if R::FAILS_REQUESTS_ON_LIMITS
                            && limits::nesting_exceeds(line, limits::MAX_NESTING) =>
                    {
                        let limit = limits::MAX_NESTING;
                        tracing::warn!(limit, "an incoming MCP message is nested too deep to read");
                        if let Some(refusal) = refusal::<R>(line, Exceeded::Depth { limit }) {
                            return Some(refusal);
                        }
                    }
                    Decoded::Skip => {}
                    // An answer to one of our requests that cannot be read:
                    // that request fails now, saying why, rather than wait
                    // out its timeout (the peer is not answered back).
                    Decoded::Invalid
                        if R::FAILS_REQUESTS_ON_LIMITS
                            && let Some((id, reason)) = limits::unreadable_response(line) =>
                    {
                        tracing::warn!(%reason, "an MCP answer cannot be read");
                        return Some(RxJsonRpcMessage::<R>::error(
                            limits::unreadable_error_data(&reason),
                            Some(id),
                        ));
                    }
                    Decoded::Invalid => {
                        let reply = TxJsonRpcMessage::<R>::error(
                            ErrorData::invalid_request("Invalid request", None),
                            None,
                        );
                        if let Err(error) = self.encode(&reply) {
                            tracing::debug!(%error, "cannot answer an invalid message");
                            self.failure.record(IoFailure::Write(error));
                            return None;
                        }
                    }
                }
            }
            while let Some(dropped) = self.lines.take_oversized() {
                let exceeded = Exceeded::Size {
                    size: dropped.size.map(|size| size as u64),
                    limit: self.lines.max() as u64,
                };
                if R::FAILS_REQUESTS_ON_LIMITS
                    && let Some(refusal) = refusal::<R>(&dropped.head, exceeded)
                {
                    return Some(refusal);
                }
            }
            if self.ended {
                return None;
            }
            // Cancel-safe: a read either appends to the buffer or does nothing.
            let read = tokio::select! {
                biased;
                read = self.source.read(self.lines.spare()) => read,
                () = self.writer.failed() => {
                    let error = self.writer.error().unwrap_or_else(|| io::Error::other("the writes failed"));
                    self.failure.record(IoFailure::Write(error));
                    return None;
                }
            };
            match read {
                Ok(0) => self.ended = true,
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    tracing::debug!(%error, "reading from the MCP peer failed");
                    self.failure.record(IoFailure::Read(error));
                    self.ended = true;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.close_writer().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
