//! The server side: this process's stdin and stdout as a transport.
//!
//! Pipes and sockets (what MCP clients hand a server they start) are made
//! non-blocking and served by [`LineTransport`]. Anything else — a
//! terminal, a file — is shared with other processes or cannot be polled,
//! so it is left blocking and served by rmcp's own stdio transport.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::net::unix::pipe;

use super::{LineTransport, Sink, Source, nonblocking};

/// A server's stdio: the fast transport on pipes and sockets, rmcp's
/// blocking one on anything else.
#[derive(Debug)]
pub struct StdioServerTransport(Inner);

enum Inner {
    Fast(LineTransport<RoleServer>),
    Blocking(Box<AsyncRwTransport<RoleServer, tokio::io::Stdin, tokio::io::Stdout>>),
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Fast(_) => "Fast",
            Self::Blocking(_) => "Blocking",
        })
    }
}

/// This process's stdin and stdout as an MCP server transport, for
/// `ServerHandler::serve`. Must be called within a tokio runtime; nothing
/// else may use stdin or stdout afterwards.
pub fn stdio_server() -> io::Result<StdioServerTransport> {
    let stdin = io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = io::stdout().as_fd().try_clone_to_owned()?;
    let inner = match (source(stdin)?, sink(stdout)?) {
        (Some(source), Some(sink)) => Inner::Fast(LineTransport::new(source, sink)?),
        _ => {
            tracing::debug!("stdio is not a pipe or socket; serving it through blocking threads");
            Inner::Blocking(Box::new(AsyncRwTransport::new_server(
                tokio::io::stdin(),
                tokio::io::stdout(),
            )))
        }
    };
    Ok(StdioServerTransport(inner))
}

impl StdioServerTransport {
    /// True when stdio is served through non-blocking pipes or sockets.
    pub fn is_nonblocking(&self) -> bool {
        matches!(self.0, Inner::Fast(_))
    }
}

enum Kind {
    Pipe(File),
    Socket(std::os::unix::net::UnixStream),
    Other,
}

fn kind(fd: OwnedFd) -> io::Result<Kind> {
    let file = File::from(fd);
    let kind = file.metadata()?.file_type();
    Ok(if kind.is_fifo() {
        Kind::Pipe(file)
    } else if kind.is_socket() {
        Kind::Socket(OwnedFd::from(file).into())
    } else {
        Kind::Other
    })
}

fn source(fd: OwnedFd) -> io::Result<Option<Source>> {
    Ok(match kind(fd)? {
        Kind::Pipe(file) => Some(Source::Pipe(pipe::Receiver::from_file(file)?)),
        Kind::Socket(socket) => Some(Source::Socket(nonblocking(socket)?)),
        Kind::Other => None,
    })
}

fn sink(fd: OwnedFd) -> io::Result<Option<Sink>> {
    Ok(match kind(fd)? {
        Kind::Pipe(file) => Some(Sink::Pipe(pipe::Sender::from_file(file)?)),
        Kind::Socket(socket) => Some(Sink::Socket(nonblocking(socket)?)),
        Kind::Other => None,
    })
}

impl Transport<RoleServer> for StdioServerTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &mut self.0 {
            Inner::Fast(t) => futures::future::Either::Left(t.send(item)),
            Inner::Blocking(t) => futures::future::Either::Right(t.send(item)),
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        match &mut self.0 {
            Inner::Fast(t) => t.receive().await,
            Inner::Blocking(t) => t.receive().await,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        match &mut self.0 {
            Inner::Fast(t) => t.close().await,
            Inner::Blocking(t) => t.close().await,
        }
    }
}
