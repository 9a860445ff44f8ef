//! The server side: this process's stdin and stdout as a transport.
//!
//! Each side is looked at before anything is changed, and served as what
//! it is: a pipe or a socket (what MCP clients hand a server they start)
//! is made non-blocking and served through tokio's reactor; anything else
//! — a terminal, a regular file, `/dev/null` — is left as it is and served
//! by blocking calls off the runtime's threads ([`super::blocking`]), which
//! wait for a descriptor someone else made non-blocking instead of taking
//! its `EAGAIN` for the end. Both go through one [`LineTransport`], so
//! stdin's end is the only end of input, and a failed read or write is
//! kept ([`StdioServerTransport::failure`]).
//!
//! (`O_NONBLOCK` belongs to the open file description, shared by every
//! duplicate of a descriptor: a side is made non-blocking only when the
//! reactor serves it, never before it is known to be, since a blocking
//! read of a descriptor made non-blocking sees `EAGAIN` whenever the
//! client pauses.)

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::sync::Arc;

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::net::unix::pipe;

use super::blocking::BlockingSource;
use super::{Failure, LineTransport, Screen, Sink, Source, nonblocking};

/// A server's stdio: each side through tokio's reactor when it is a pipe or
/// a socket, through blocking calls otherwise.
#[derive(Debug)]
pub struct StdioServerTransport {
    inner: LineTransport<RoleServer>,
    /// Both sides go through the reactor.
    nonblocking: bool,
}

/// This process's stdin and stdout as an MCP server transport, for
/// `ServerHandler::serve`. Must be called within a tokio runtime; nothing
/// else may use stdin or stdout afterwards.
pub fn stdio_server() -> io::Result<StdioServerTransport> {
    let stdin = kind(io::stdin().as_fd().try_clone_to_owned()?)?;
    let stdout = kind(io::stdout().as_fd().try_clone_to_owned()?)?;
    let nonblocking = !matches!(stdin, Kind::Other(_)) && !matches!(stdout, Kind::Other(_));
    if !nonblocking {
        tracing::debug!(
            "stdin or stdout is not a pipe or socket; serving that side through blocking calls"
        );
    }
    let inner = LineTransport::new(source(stdin)?, sink(stdout)?)?;
    Ok(StdioServerTransport { inner, nonblocking })
}

impl StdioServerTransport {
    /// True when both stdin and stdout are non-blocking pipes or sockets.
    pub fn is_nonblocking(&self) -> bool {
        self.nonblocking
    }

    /// Has `screen` check every line the client writes before it is read
    /// ([`LineTransport::set_screen`]).
    pub fn set_screen(&mut self, screen: Screen) {
        self.inner.set_screen(screen);
    }

    /// Has `amend` amend each decoded client message, given its line
    /// ([`LineTransport::set_amend`]).
    pub fn set_amend(&mut self, amend: super::Amend<RoleServer>) {
        self.inner.set_amend(amend);
    }

    /// Has `rewrite` write answers as other text where it says
    /// ([`LineTransport::set_rewrite`]).
    pub fn set_rewrite(&mut self, rewrite: super::Rewrite<RoleServer>) {
        self.inner.set_rewrite(rewrite);
    }

    /// Where the error that ends serving, if one does, is kept: anything
    /// but the end of stdin.
    pub fn failure(&self) -> Failure {
        self.inner.failure()
    }
}

/// What a descriptor is, found without changing it.
enum Kind {
    Pipe(File),
    Socket(std::os::unix::net::UnixStream),
    Other(File),
}

fn kind(fd: OwnedFd) -> io::Result<Kind> {
    let file = File::from(fd);
    let kind = file.metadata()?.file_type();
    Ok(if kind.is_fifo() {
        Kind::Pipe(file)
    } else if kind.is_socket() {
        Kind::Socket(OwnedFd::from(file).into())
    } else {
        Kind::Other(file)
    })
}

fn source(kind: Kind) -> io::Result<Source> {
    Ok(match kind {
        Kind::Pipe(file) => Source::Pipe(pipe::Receiver::from_file(file)?),
        Kind::Socket(socket) => Source::Socket(nonblocking(socket)?),
        Kind::Other(file) => Source::Blocking(BlockingSource::spawn(file)?),
    })
}

fn sink(kind: Kind) -> io::Result<Sink> {
    Ok(match kind {
        Kind::Pipe(file) => Sink::Pipe(pipe::Sender::from_file(file)?),
        Kind::Socket(socket) => Sink::Socket(nonblocking(socket)?),
        Kind::Other(file) => Sink::Blocking(Arc::new(file)),
    })
}

impl Transport<RoleServer> for StdioServerTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.inner.receive().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
