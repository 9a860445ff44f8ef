//! The errors of this crate, typed so callers decide by kind, never by text.
//!
//! [`ClientError`] is `Clone` (its sources sit behind `Arc`) because one
//! failure is often handed to many callers at once: every caller waiting on
//! the same connection attempt or the same shared reconnect gets the same
//! error. Nothing here ever holds a bearer token: HTTP errors keep only
//! status codes, and configuration errors name the environment variable, not
//! its value.

use std::sync::Arc;

use rmcp::ErrorData;

use crate::describe::describe;
use crate::limits::Exceeded;
use crate::name::ServerName;

/// A boxed error that can be shared between callers.
pub type SharedError = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A server configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The server name breaks the rule of `extpool_core::name`.
    #[error("invalid MCP server name: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What the rule says about it.
        reason: extpool_core::ServerNameError,
    },
    /// Two server names differ only by case.
    #[error("MCP server names {first:?} and {second:?} differ only by case")]
    DuplicateName {
        /// The first name.
        first: String,
        /// The second name.
        second: String,
    },
    /// Neither or both of `command` and `url`.
    #[error("MCP server {server:?} {problem}")]
    Transport {
        /// The server.
        server: String,
        /// What is wrong (shown in the message, so not a `source()`).
        problem: crate::config::TransportError,
    },
    /// The URL does not parse or is not `http(s)`.
    #[error("MCP server {server:?}: invalid URL: {reason}")]
    InvalidUrl {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// A token-bearing URL over plain HTTP to a host that is not loopback.
    #[error(
        "MCP server {server:?}: a bearer token may only be sent over HTTPS (or plain HTTP to a loopback host); \
         set `insecure_http: true` for this server to allow off-host HTTP"
    )]
    InsecureHttp {
        /// The server.
        server: String,
    },
    /// A configured HTTP header is malformed or reserved.
    #[error("MCP server {server:?}: invalid header {header:?}: {reason}")]
    InvalidHeader {
        /// The server.
        server: String,
        /// The header name (never its value).
        header: String,
        /// Why.
        reason: &'static str,
    },
    /// More configured HTTP headers than a server may have.
    #[error("MCP server {server:?}: {count} headers; at most {max} are accepted")]
    TooManyHeaders {
        /// The server.
        server: String,
        /// How many were given.
        count: usize,
        /// The most accepted ([`crate::http::MAX_HEADERS`]).
        max: usize,
    },
    /// The command is not on the host's allowlist.
    #[error("MCP server {server:?}: command {command:?} is not in the allowed commands")]
    CommandNotAllowed {
        /// The server.
        server: String,
        /// The command.
        command: String,
    },
    /// `env` sets a variable on the deny-list without `allow_env` naming it.
    #[error(
        "MCP server {server:?}: environment variable {key} is withheld from servers; \
         list it in `allow_env` to pass it"
    )]
    DeniedEnv {
        /// The server.
        server: String,
        /// The variable name.
        key: String,
    },
    /// The server is disabled in configuration.
    #[error("MCP server {server:?} is disabled")]
    Disabled {
        /// The server.
        server: String,
    },
    /// The `sandbox` profile breaks a rule, or this kernel cannot enforce
    /// it: the server is refused rather than run with less confinement.
    #[error("MCP server {server:?}: {reason}")]
    Sandbox {
        /// The server.
        server: String,
        /// Why (the field at fault, or what this kernel lacks).
        reason: String,
    },
    /// The `oauth` profile cannot be used.
    #[error("MCP server {server:?}: oauth: {reason}")]
    OAuth {
        /// The server.
        server: String,
        /// Why (never a secret).
        reason: String,
    },
}

/// What failed while a connection was being established.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// The child process could not be started.
    #[error("could not start {command:?}: {error}")]
    Spawn {
        /// The command.
        command: String,
        /// The OS error (shown in the message, so not a `source()`).
        error: Arc<std::io::Error>,
    },
    /// The MCP handshake failed (the child exited, the server refused, …);
    /// a server that cannot be reached at all reads `cannot connect to URL:
    /// cause`.
    #[error("{}", crate::describe::initialize_failure(error.as_ref()))]
    Initialize {
        /// rmcp's error (shown in the message, so not a `source()`).
        error: Arc<rmcp::service::ClientInitializeError>,
    },
    /// OAuth could not authorize the connection (the reason says what to do).
    #[error("{reason}")]
    OAuth {
        /// extpool-auth's message (never a token).
        reason: String,
    },
    /// Its URL's host is on an address its rule refuses
    /// ([`crate::config::McpServerConfig::address_rule`]).
    #[error("{refused}")]
    Address {
        /// The host, its address and why.
        refused: extpool_core::address::AddressRefused,
    },
    /// The server's `initialize` answered a protocol version extpool does
    /// not speak ([`crate::versions`]); it was disconnected.
    #[error(
        "it answered protocolVersion {answered}, which extpool does not speak (extpool speaks {})",
        crate::versions::spoken_list()
    )]
    UnsupportedVersion {
        /// The version it answered, quoted (control characters escaped,
        /// cut short).
        answered: String,
    },
    /// The server did not finish the handshake in time.
    #[error("no initialize response within {timeout_ms} ms")]
    Timeout {
        /// The startup timeout.
        timeout_ms: u64,
    },
}

/// A failed operation on one MCP server.
///
/// Every variant names the server. Server-declared failures
/// ([`ClientError::is_server_declared`]) are returned exactly as the server
/// sent them and are never replayed. Each message is complete (it includes
/// its cause, each cause once, with no internal type names), so no variant
/// returns a `source()`: `to_string()` and a chain printer show the same text.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The configuration cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The first connection could not be established.
    #[error(
        "MCP server \"{server}\" failed to start: {failure}{}",
        stderr_suffix(stderr)
    )]
    Connect {
        /// The server.
        server: ServerName,
        /// What failed.
        failure: ConnectFailure,
        /// The last lines the child wrote to stderr, oldest first.
        stderr: Vec<String>,
    },
    /// The connection dropped, and reconnecting (or the retried operation) failed.
    #[error(
        "MCP server \"{server}\" unavailable after reconnect: {}{}",
        describe(cause.as_ref()),
        stderr_suffix(stderr)
    )]
    UnavailableAfterReconnect {
        /// The server.
        server: ServerName,
        /// Why the reconnect or retry failed.
        cause: SharedError,
        /// The last lines the child wrote to stderr, oldest first.
        stderr: Vec<String>,
    },
    /// The connection dropped and reconnecting is disabled (`reconnect.attempts: 0`).
    #[error("MCP server \"{server}\" disconnected: {}", describe(cause.as_ref()))]
    Disconnected {
        /// The server.
        server: ServerName,
        /// The transport error.
        cause: SharedError,
    },
    /// OAuth could not authorize the request (the reason says what to do,
    /// e.g. `run: extpool mcp login <server>`).
    #[error("{reason}")]
    OAuth {
        /// The server.
        server: ServerName,
        /// extpool-auth's message (never a token).
        reason: String,
    },
    /// The connection dropped while a request that is not safe to repeat
    /// was in flight: the client reconnected, but did not send it again.
    #[error(
        "MCP server \"{server}\": the connection was lost during {operation}{}; \
         reconnected, but the request was not sent again because the server may have acted on it",
        quoted_target(target)
    )]
    Interrupted {
        /// The server.
        server: ServerName,
        /// The MCP method.
        operation: &'static str,
        /// The tool (or other target) of the request, if it has one.
        target: Option<String>,
    },
    /// The server answered HTTP 404 for the session (it expired, or the
    /// server restarted or chose to answer so): a new session is used from
    /// the next request, and this one was not sent again.
    #[error(
        "MCP server \"{server}\" answered HTTP 404 to {operation} (session not found); \
         the request was not sent again because the server may have acted on it"
    )]
    SessionExpired {
        /// The server.
        server: ServerName,
        /// The MCP method.
        operation: &'static str,
    },
    /// The server's answer was larger than the client accepts (not read).
    #[error(
        "MCP server \"{server}\" {}",
        refused(Exceeded::Size { size: *size, limit: *limit }, operation)
    )]
    MessageTooLarge {
        /// The server.
        server: ServerName,
        /// The MCP method.
        operation: &'static str,
        /// The message's size in bytes, when the whole message was seen.
        size: Option<u64>,
        /// The limit in bytes.
        limit: u64,
    },
    /// The server's answer nested arrays and objects deeper than can be read.
    #[error(
        "MCP server \"{server}\" {}",
        refused(Exceeded::Depth { limit: *limit }, operation)
    )]
    MessageTooDeep {
        /// The server.
        server: ServerName,
        /// The MCP method.
        operation: &'static str,
        /// The nesting limit.
        limit: usize,
    },
    /// The server answered with a message that carried the request's id
    /// but could not be read as a JSON-RPC response (an `error` that is no
    /// error object, say): the request fails at once, saying what was wrong.
    #[error(
        "MCP server \"{server}\" answered {operation} with a message that is not \
         a JSON-RPC response: {reason}"
    )]
    UnreadableAnswer {
        /// The server.
        server: ServerName,
        /// The MCP method.
        operation: &'static str,
        /// What was wrong with the answer (cut, masked).
        reason: String,
    },
    /// A listing broke one of its bounds (a repeated cursor, too many
    /// pages, entries or bytes: see [`crate::ListingProblem`]) and was stopped.
    #[error("MCP server \"{server}\": {operation} was stopped: it {problem}")]
    Listing {
        /// The server.
        server: ServerName,
        /// The list method.
        operation: &'static str,
        /// The bound it broke (shown in the message, so not a `source()`).
        problem: crate::listing::ListingProblem,
    },
    /// The request did not complete in time; the server was sent `notifications/cancelled`.
    #[error("MCP server \"{server}\": {operation} timed out after {timeout_ms} ms")]
    Timeout {
        /// The server.
        server: ServerName,
        /// The MCP method, e.g. `tools/call`.
        operation: &'static str,
        /// The limit.
        timeout_ms: u64,
    },
    /// The server answered with a JSON-RPC error (server-declared; never replayed).
    #[error("MCP server \"{server}\" returned error {}: {}", error.code.0, error.message)]
    Rpc {
        /// The server.
        server: ServerName,
        /// The error exactly as sent.
        error: ErrorData,
    },
    /// The server answered with an HTTP error status (server-declared; never replayed).
    #[error(
        "MCP server \"{server}\" answered HTTP {status}{}",
        retry_after_suffix(retry_after)
    )]
    HttpStatus {
        /// The server.
        server: ServerName,
        /// The status code.
        status: u16,
        /// `Retry-After`, if the server sent one.
        retry_after: Option<String>,
    },
    /// The server requires (other) authorization (HTTP 401/403).
    #[error("MCP server \"{server}\" requires authorization")]
    AuthRequired {
        /// The server.
        server: ServerName,
        /// The `WWW-Authenticate` challenge, if any.
        challenge: Option<String>,
    },
    /// Another protocol or transport failure, not a dropped connection.
    #[error("MCP server \"{server}\": {operation} failed: {}", describe(error.as_ref()))]
    Protocol {
        /// The server.
        server: ServerName,
        /// The MCP method.
        operation: &'static str,
        /// The underlying error (shown in the message, so not a `source()`).
        error: SharedError,
    },
    /// The client was closed (pool shut down).
    #[error("MCP server \"{server}\": client is closed")]
    Closed {
        /// The server.
        server: ServerName,
    },
    /// The pool's bound on live clients stayed full for the whole wait.
    #[error(
        "MCP connection pool is full ({limit} live clients); waited {waited_ms} ms for \"{server}\""
    )]
    PoolExhausted {
        /// The server that could not get a client.
        server: ServerName,
        /// The bound.
        limit: usize,
        /// How long the request waited.
        waited_ms: u64,
    },
    /// A skill file did not match its manifest, or broke the SEP-2640 limits.
    #[error("MCP server \"{server}\": skill {uri}: {reason}")]
    SkillIntegrity {
        /// The server.
        server: ServerName,
        /// The file URI.
        uri: String,
        /// What did not match.
        reason: String,
    },
}

fn stderr_suffix(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", lines.join(" | "))
    }
}

/// `n` bytes for people: "812 bytes", "3.5 KiB", "47.7 MiB".
pub(crate) fn human_bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f >= KIB * KIB {
        format!("{:.1} MiB", f / (KIB * KIB))
    } else if f >= KIB {
        format!("{:.1} KiB", f / KIB)
    } else {
        format!("{n} bytes")
    }
}

fn describe_size(size: Option<u64>, limit: u64) -> String {
    match size {
        Some(size) => format!("a {} message", human_bytes(size)),
        None => format!("a message of more than {}", human_bytes(limit)),
    }
}

/// What a server did that broke a message limit, in answer to
/// `operation`: the one wording of a call's error and of a failed start.
pub(crate) fn refused(exceeded: Exceeded, operation: &str) -> String {
    match exceeded {
        Exceeded::Size { size, limit } => format!(
            "sent {} in answer to {operation}; the limit is {} \
             (`max_message_bytes` in the server's config)",
            describe_size(size, limit),
            human_bytes(limit)
        ),
        Exceeded::Depth { limit } => format!(
            "sent a message nested more than {limit} levels deep in answer to {operation}; \
             it cannot be read"
        ),
    }
}

fn quoted_target(target: &Option<String>) -> String {
    target
        .as_deref()
        .map(|t| format!(" {t:?}"))
        .unwrap_or_default()
}

fn retry_after_suffix(retry_after: &Option<String>) -> String {
    retry_after
        .as_deref()
        .map(|r| format!(" (Retry-After: {r})"))
        .unwrap_or_default()
}

impl ClientError {
    /// The server this error is about, when it names one.
    pub fn server(&self) -> Option<&ServerName> {
        match self {
            Self::Config(_) => None,
            Self::Connect { server, .. }
            | Self::UnavailableAfterReconnect { server, .. }
            | Self::Disconnected { server, .. }
            | Self::Interrupted { server, .. }
            | Self::SessionExpired { server, .. }
            | Self::MessageTooLarge { server, .. }
            | Self::MessageTooDeep { server, .. }
            | Self::UnreadableAnswer { server, .. }
            | Self::Listing { server, .. }
            | Self::Timeout { server, .. }
            | Self::Rpc { server, .. }
            | Self::HttpStatus { server, .. }
            | Self::AuthRequired { server, .. }
            | Self::OAuth { server, .. }
            | Self::Protocol { server, .. }
            | Self::Closed { server }
            | Self::PoolExhausted { server, .. }
            | Self::SkillIntegrity { server, .. } => Some(server),
        }
    }

    /// True for a failure the server itself declared (JSON-RPC error, HTTP
    /// status): such operations are never replayed.
    pub fn is_server_declared(&self) -> bool {
        matches!(
            self,
            Self::Rpc { .. } | Self::HttpStatus { .. } | Self::SessionExpired { .. }
        )
    }

    /// True when the connection dropped during a request that was not sent
    /// again (it may have run); the client has reconnected.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Self::Interrupted { .. })
    }

    /// True when the server's answer broke a size or nesting limit.
    pub fn is_message_limit(&self) -> bool {
        matches!(
            self,
            Self::MessageTooLarge { .. } | Self::MessageTooDeep { .. }
        )
    }

    /// True when the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
            || matches!(
                self,
                Self::Connect {
                    failure: ConnectFailure::Timeout { .. },
                    ..
                }
            )
    }

    /// True when the server is unreachable after a dropped connection.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Self::UnavailableAfterReconnect { .. } | Self::Disconnected { .. }
        )
    }

    /// True when the first connection could not be established.
    pub fn is_connect(&self) -> bool {
        matches!(self, Self::Connect { .. })
    }

    /// True when the configuration is at fault.
    pub fn is_config(&self) -> bool {
        matches!(self, Self::Config(_))
    }

    /// True when the pool stayed full for the whole wait.
    pub fn is_pool_exhausted(&self) -> bool {
        matches!(self, Self::PoolExhausted { .. })
    }

    /// True when the server wants (other) credentials.
    pub fn is_auth_required(&self) -> bool {
        matches!(self, Self::AuthRequired { .. })
    }

    /// True when a skill file failed verification.
    pub fn is_skill_integrity(&self) -> bool {
        matches!(self, Self::SkillIntegrity { .. })
    }

    /// The JSON-RPC error the server sent, if that is what this is.
    pub fn rpc_error(&self) -> Option<&ErrorData> {
        match self {
            Self::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }

    /// For a first connection that failed: what failed, and the server's
    /// last stderr lines, without the server's name — for a place that
    /// names the server and says it failed to start already (a status row).
    pub fn start_failure(&self) -> Option<String> {
        match self {
            Self::Connect {
                failure, stderr, ..
            } => Some(format!("{failure}{}", stderr_suffix(stderr))),
            _ => None,
        }
    }

    /// The child's last stderr lines captured with this error (may be empty).
    pub fn stderr_tail(&self) -> &[String] {
        match self {
            Self::Connect { stderr, .. } | Self::UnavailableAfterReconnect { stderr, .. } => stderr,
            _ => &[],
        }
    }

    /// Calls `text` on each text in this error that its server wrote (a
    /// JSON-RPC error's message, the stderr lines kept, the reason an
    /// answer could not be read) and `json` on a JSON-RPC error's `data`:
    /// what a host's guardrails redact before the error reaches a model.
    /// The error's kind and its other fields stay as they are.
    pub fn rewrite_server_text(
        &mut self,
        text: &mut dyn FnMut(&mut String),
        json: &mut dyn FnMut(&mut serde_json::Value),
    ) {
        match self {
            Self::Rpc { error, .. } => {
                let mut message = error.message.to_string();
                text(&mut message);
                error.message = message.into();
                if let Some(data) = &mut error.data {
                    json(data);
                }
            }
            Self::Connect { stderr, .. } | Self::UnavailableAfterReconnect { stderr, .. } => {
                stderr.iter_mut().for_each(text);
            }
            Self::UnreadableAnswer { reason, .. } => text(reason),
            _ => {}
        }
    }

    /// Wraps this error for the resource protocols of extpool-core; callers
    /// get it back with `ExtensionError::downcast_source::<ClientError>()`.
    pub fn into_extension(self, capability: &str) -> extpool_core::ExtensionError {
        extpool_core::ExtensionError::source(capability, self)
    }
}

/// Whether `error`, returned by an MCP capability, means its server is down
/// (unreachable, could not connect, timed out) rather than that one request
/// failing: the one classification every caller that degrades a server uses.
pub fn is_server_down(error: &extpool_core::ExtensionError) -> bool {
    match error.downcast_source::<ClientError>() {
        Some(e) => e.is_unavailable() || e.is_connect() || e.is_timeout(),
        None => matches!(
            error,
            extpool_core::ExtensionError::Unavailable { .. }
                | extpool_core::ExtensionError::Timeout { .. }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> ServerName {
        ServerName::new("gh").unwrap()
    }

    #[test]
    fn unavailable_message_is_exact() {
        let e = ClientError::UnavailableAfterReconnect {
            server: name(),
            cause: Arc::new(std::io::Error::other("boom")),
            stderr: vec![],
        };
        assert_eq!(
            e.to_string(),
            "MCP server \"gh\" unavailable after reconnect: boom"
        );
        assert!(e.is_unavailable());
        assert!(!e.is_server_declared());
    }

    #[test]
    fn rpc_errors_are_server_declared() {
        let e = ClientError::Rpc {
            server: name(),
            error: ErrorData::invalid_params("bad", None),
        };
        assert!(e.is_server_declared());
        assert_eq!(e.rpc_error().unwrap().message, "bad");
        let e = ClientError::HttpStatus {
            server: name(),
            status: 503,
            retry_after: None,
        };
        assert!(e.is_server_declared());
    }

    #[test]
    fn connect_error_carries_stderr() {
        let e = ClientError::Connect {
            server: name(),
            failure: ConnectFailure::Timeout { timeout_ms: 5 },
            stderr: vec!["a".into(), "b".into()],
        };
        assert!(e.to_string().ends_with("stderr: a | b"));
        assert!(e.is_timeout());
        assert_eq!(e.stderr_tail().len(), 2);
    }
}
