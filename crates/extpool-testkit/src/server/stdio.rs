//! Serving [`TestServer`] over stdin/stdout, exiting when stdin closes.
//!
//! stdio goes through extpool's transport
//! ([`extpool_mcp::transport::stdio_server`]: non-blocking pipes), the one
//! `extpool serve --stdio` uses; `--rmcp-stdio` selects rmcp's own, for
//! benchmarks that compare the two.
//!
//! rmcp ends a stdio session at end of input, except during a handshake
//! that never completes — `--hang-on-initialize` — where nobody reads stdin
//! any more. A client that gives up and closes our stdin must still see the
//! process go, or it would linger after the test. So in that mode a task of
//! its own reads stdin: at end of input the session gets a short grace
//! period, then serving stops regardless.

use std::time::Duration;

use rmcp::{ServiceExt, service::QuitReason};
use tokio_util::sync::CancellationToken;

use super::TestServer;

/// Bytes of stdin buffered between the reader task and rmcp.
const STDIN_BUFFER: usize = 1 << 20;
/// How long the session may run on after stdin closed.
const EOF_GRACE: Duration = Duration::from_secs(2);

/// Why serving over stdio failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// The MCP handshake failed (for example, stdin closed before
    /// `initialize`).
    #[error("MCP handshake over stdio failed: {0}")]
    Handshake(Box<rmcp::service::ServerInitializeError>),
    /// stdin or stdout could not be set up (shown in the message, so not
    /// a `source()`).
    #[error("cannot serve stdio: {0}")]
    Io(std::io::Error),
    /// The session ended with an error (shown in the message, so not a
    /// `source()`).
    #[error("stdio session failed: {0}")]
    Session(tokio::task::JoinError),
}

impl From<std::io::Error> for StdioError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

impl From<tokio::task::JoinError> for StdioError {
    fn from(error: tokio::task::JoinError) -> Self {
        Self::Session(error)
    }
}

/// How a stdio session ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum StdioEnd {
    /// The session loop finished (normally because stdin closed).
    Quit(QuitReason),
    /// stdin closed and the session did not finish within the grace period.
    StdinClosed,
}

/// Serves `server` on this process's stdin and stdout until the client
/// goes away.
pub async fn serve_stdio(server: TestServer) -> Result<StdioEnd, StdioError> {
    if server.options().hang_on_initialize {
        serve_watching_stdin(server).await
    } else if server.options().rmcp_stdio {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| StdioError::Handshake(Box::new(e)))?;
        Ok(StdioEnd::Quit(running.waiting().await?))
    } else {
        // The session reads stdin all along and ends at its end by itself.
        let transport = extpool_mcp::transport::stdio_server()?;
        tracing::info!(
            nonblocking = transport.is_nonblocking(),
            "stdio transport ready"
        );
        let running = server
            .serve(transport)
            .await
            .map_err(|e| StdioError::Handshake(Box::new(e)))?;
        Ok(StdioEnd::Quit(running.waiting().await?))
    }
}

/// Serves with stdin pumped by a task of its own, so its end is seen even
/// while rmcp reads nothing (a hung handshake).
async fn serve_watching_stdin(server: TestServer) -> Result<StdioEnd, StdioError> {
    let eof = CancellationToken::new();
    let (stdin, mut pipe) = tokio::io::duplex(STDIN_BUFFER);
    tokio::spawn({
        let eof = eof.clone();
        async move {
            if let Err(e) = tokio::io::copy(&mut tokio::io::stdin(), &mut pipe).await {
                tracing::debug!("reading stdin: {e}");
            }
            eof.cancel();
            // Dropping `pipe` hands the end of input on to rmcp.
        }
    });
    let session = async {
        let running = server
            .serve((stdin, tokio::io::stdout()))
            .await
            .map_err(|e| StdioError::Handshake(Box::new(e)))?;
        Ok::<_, StdioError>(StdioEnd::Quit(running.waiting().await?))
    };
    tokio::select! {
        end = session => end,
        () = async {
            eof.cancelled().await;
            tokio::time::sleep(EOF_GRACE).await;
        } => {
            tracing::info!("stdin closed; stopping");
            Ok(StdioEnd::StdinClosed)
        }
    }
}
