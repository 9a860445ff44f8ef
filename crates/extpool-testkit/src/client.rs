//! Plain rmcp clients for the test server and the peers, for tests and
//! benchmarks that need a baseline client without extpool in between.
//!
//! The stdio child runs in its own process group and is killed
//! synchronously when the client is dropped (rmcp's own cleanup runs in a
//! task that never runs once a test's runtime has shut down).

use std::process::Stdio;

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    service::{ClientInitializeError, RunningService},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

use crate::child::StdioCommand;

/// An rmcp client without a handler of its own.
pub type RawClient = RunningService<RoleClient, ()>;

/// Why a client could not connect.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server process could not be started.
    #[error("cannot start {program}: {error}")]
    Spawn {
        /// The program.
        program: String,
        /// The underlying error (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
    /// The MCP handshake failed (shown in the message with its causes, so
    /// not a `source()`).
    #[error("MCP handshake failed: {}", extpool_core::Causes(.0.as_ref()))]
    Handshake(Box<ClientInitializeError>),
}

impl From<ClientInitializeError> for ConnectError {
    fn from(e: ClientInitializeError) -> Self {
        Self::Handshake(Box::new(e))
    }
}

/// The child-process transport for `command`: own process group, killed
/// on drop, stderr discarded.
pub fn stdio_transport(command: &StdioCommand) -> Result<TokioChildProcess, ConnectError> {
    let mut wrap = process_wrap::tokio::CommandWrap::from(command.tokio_command());
    wrap.wrap(process_wrap::tokio::ProcessGroup::leader())
        .wrap(process_wrap::tokio::KillOnDrop);
    let (transport, _) = TokioChildProcess::builder(wrap)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| ConnectError::Spawn {
            program: command.program.display().to_string(),
            error: source,
        })?;
    Ok(transport)
}

/// Connects `handler` to the stdio server `command` (legacy `initialize`).
/// The handshake has no timeout: wrap the call in one when the server may
/// hang.
pub async fn connect_stdio_with<H: ClientHandler>(
    handler: H,
    command: &StdioCommand,
) -> Result<RunningService<RoleClient, H>, ConnectError> {
    Ok(handler.serve(stdio_transport(command)?).await?)
}

/// Connects a plain client to the stdio server `command`.
pub async fn connect_stdio(command: &StdioCommand) -> Result<RawClient, ConnectError> {
    connect_stdio_with((), command).await
}

/// Connects `handler` to the streamable HTTP server at `url` with rmcp's
/// default transport configuration.
pub async fn connect_http_with<H: ClientHandler>(
    handler: H,
    url: &str,
) -> Result<RunningService<RoleClient, H>, ConnectError> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    Ok(handler.serve(transport).await?)
}

/// Connects a plain client to the streamable HTTP server at `url`.
pub async fn connect_http(url: &str) -> Result<RawClient, ConnectError> {
    connect_http_with((), url).await
}
