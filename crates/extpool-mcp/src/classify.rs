//! Sorting rmcp failures into "the connection is gone" (reconnect and
//! retry) and everything else (return as is) — by type, never by message.
//!
//! The rule comes from the behaviour doc: a dropped connection is
//! reconnected once; a failure the server itself declared — a JSON-RPC
//! error, an HTTP 4xx/5xx answer — is never replayed, because the server may
//! already have acted on the request. When unsure, this module answers "not
//! a drop": replaying is the riskier mistake. Whether an interrupted request
//! is sent again is decided by the client ([`crate::client`]): only when it
//! never left, or repeating it is harmless.

use std::sync::Arc;

use rmcp::ServiceError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
};

use crate::error::SharedError;
use crate::limits::Exceeded;

/// What a failed request means for the connection.
#[derive(Debug)]
pub enum Failure {
    /// The connection is gone (child exited, stream broke, server unreachable).
    Lost {
        /// What broke.
        cause: SharedError,
        /// False when the request certainly never reached the server (the
        /// connection could not even be opened), so sending it again is safe.
        sent: bool,
    },
    /// HTTP 404 on a request that carried a session id: the session is gone
    /// (or the server chose to answer 404). The request may have been acted on.
    SessionExpired,
    /// A JSON-RPC error response.
    Rpc(rmcp::ErrorData),
    /// An HTTP error status.
    Http {
        /// Status code.
        status: u16,
        /// `Retry-After`, if sent.
        retry_after: Option<String>,
    },
    /// HTTP 401/403.
    Auth {
        /// The `WWW-Authenticate` challenge.
        challenge: Option<String>,
    },
    /// OAuth could not authorize the request (the message says what to do).
    OAuth(String),
    /// The answer broke a size or nesting limit (see [`crate::limits`]).
    Limit(Exceeded),
    /// The answer carried the request's id but could not be read as a
    /// response; what was wrong with it ([`crate::limits::unreadable_response`]).
    Unreadable(String),
    /// rmcp's own request timeout fired.
    Timeout,
    /// Anything else; not retried.
    Other(SharedError),
}

type HttpError = StreamableHttpError<reqwest::Error>;

/// Classifies one failed request.
pub fn classify(error: ServiceError) -> Failure {
    match error {
        ServiceError::McpError(data) => match Exceeded::from_error_data(&data) {
            Some(exceeded) => Failure::Limit(exceeded),
            None => match crate::limits::unreadable_reason(&data) {
                Some(reason) => Failure::Unreadable(reason),
                None => Failure::Rpc(data),
            },
        },
        ServiceError::TransportClosed => Failure::Lost {
            cause: Arc::new(ServiceError::TransportClosed),
            sent: true,
        },
        ServiceError::Timeout { .. } => Failure::Timeout,
        ServiceError::TransportSend(send) => {
            let verdict = transport_verdict(send.error.as_ref());
            let shared: SharedError = Arc::new(ServiceError::TransportSend(send));
            match verdict {
                Verdict::Lost { sent } => Failure::Lost {
                    cause: shared,
                    sent,
                },
                Verdict::SessionExpired => Failure::SessionExpired,
                Verdict::Http {
                    status,
                    retry_after,
                } => Failure::Http {
                    status,
                    retry_after,
                },
                Verdict::Rpc(data) => Failure::Rpc(data),
                Verdict::Auth(challenge) => Failure::Auth { challenge },
                Verdict::OAuth(reason) => Failure::OAuth(reason),
                Verdict::Limit(exceeded) => Failure::Limit(exceeded),
                Verdict::Other => Failure::Other(shared),
            }
        }
        other => Failure::Other(Arc::new(other)),
    }
}

enum Verdict {
    Lost {
        sent: bool,
    },
    SessionExpired,
    Http {
        status: u16,
        retry_after: Option<String>,
    },
    Rpc(rmcp::ErrorData),
    Auth(Option<String>),
    OAuth(String),
    Limit(Exceeded),
    Other,
}

fn transport_verdict(root: &(dyn std::error::Error + Send + Sync + 'static)) -> Verdict {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(root);
    while let Some(error) = current {
        if let Some(http) = error.downcast_ref::<HttpError>() {
            return http_verdict(http);
        }
        if let Some(status) = error.downcast_ref::<HttpStatusError>() {
            return Verdict::Http {
                status: status.status,
                retry_after: status.retry_after.clone(),
            };
        }
        if let Some(auth) = error.downcast_ref::<AuthRequiredError>() {
            return Verdict::Auth(Some(auth.www_authenticate_header.clone()));
        }
        if let Some(scope) = error.downcast_ref::<InsufficientScopeError>() {
            return Verdict::Auth(Some(scope.www_authenticate_header.clone()));
        }
        if let Some(req) = error.downcast_ref::<reqwest::Error>() {
            return reqwest_verdict(req);
        }
        if error.downcast_ref::<std::io::Error>().is_some() {
            // stdio: the pipe to the child broke.
            return Verdict::Lost { sent: true };
        }
        current = error.source();
    }
    Verdict::Other
}

fn http_verdict(error: &HttpError) -> Verdict {
    match error {
        StreamableHttpError::HttpStatus(status) => Verdict::Http {
            status: status.status,
            retry_after: status.retry_after.clone(),
        },
        StreamableHttpError::AuthRequired(e) => {
            Verdict::Auth(Some(e.www_authenticate_header.clone()))
        }
        StreamableHttpError::InsufficientScope(e) => {
            Verdict::Auth(Some(e.www_authenticate_header.clone()))
        }
        // Session recovery is off (see `http`): the client decides what to re-send.
        StreamableHttpError::SessionExpired => Verdict::SessionExpired,
        StreamableHttpError::ReinitializationFailed(data) => Verdict::Rpc(data.clone()),
        StreamableHttpError::ResponseBodyTooLarge { max_size } => Verdict::Limit(Exceeded::Size {
            size: None,
            limit: *max_size as u64,
        }),
        StreamableHttpError::Auth(e) => Verdict::OAuth(oauth_text(e)),
        StreamableHttpError::Client(req) => reqwest_verdict(req),
        StreamableHttpError::Io(_)
        | StreamableHttpError::Sse(_)
        | StreamableHttpError::UnexpectedEndOfStream
        | StreamableHttpError::TransportChannelClosed => Verdict::Lost { sent: true },
        // The server answered (4xx without JSON-RPC body, bad content), or the
        // POST may have been processed (recovery timeout): not replayable.
        _ => Verdict::Other,
    }
}

/// The message of an OAuth failure (extpool-auth's text, whole).
fn oauth_text(error: &rmcp::transport::auth::AuthError) -> String {
    match error {
        rmcp::transport::auth::AuthError::OAuthError(message) => message.clone(),
        other => other.to_string(),
    }
}

/// The OAuth failure inside a transport error chain, if that is what it is.
pub fn oauth_reason(root: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current = Some(root);
    while let Some(error) = current {
        if let Some(StreamableHttpError::Auth(e)) = error.downcast_ref::<HttpError>() {
            return Some(oauth_text(e));
        }
        current = error.source();
    }
    None
}

fn reqwest_verdict(error: &reqwest::Error) -> Verdict {
    if let Some(status) = error.status() {
        return Verdict::Http {
            status: status.as_u16(),
            retry_after: None,
        };
    }
    if error.is_builder() || error.is_decode() || error.is_redirect() {
        return Verdict::Other;
    }
    // Connect failures, broken bodies, resets: the connection is gone. A
    // request whose connection could not be opened never reached the server.
    Verdict::Lost {
        sent: !error.is_connect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::DynamicTransportError;

    fn send_error(e: Box<dyn std::error::Error + Send + Sync>) -> ServiceError {
        ServiceError::TransportSend(DynamicTransportError::from_parts(
            "test",
            std::any::TypeId::of::<()>(),
            e,
        ))
    }

    #[test]
    fn json_rpc_errors_are_server_declared() {
        let f = classify(ServiceError::McpError(rmcp::ErrorData::internal_error(
            "x", None,
        )));
        assert!(matches!(f, Failure::Rpc(_)));
    }

    #[test]
    fn closed_and_broken_pipes_are_lost() {
        assert!(matches!(
            classify(ServiceError::TransportClosed),
            Failure::Lost { sent: true, .. }
        ));
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(matches!(
            classify(send_error(Box::new(io))),
            Failure::Lost { sent: true, .. }
        ));
    }

    #[test]
    fn http_statuses_are_not_replayed() {
        for status in [429u16, 502, 503, 504] {
            let e: HttpError = HttpStatusError::new(status, Some("1".into())).into();
            match classify(send_error(Box::new(e))) {
                Failure::Http {
                    status: s,
                    retry_after,
                } => {
                    assert_eq!(s, status);
                    assert_eq!(retry_after.as_deref(), Some("1"));
                }
                other => panic!("{other:?}"),
            }
        }
        let e: HttpError = StreamableHttpError::UnexpectedServerResponse("HTTP 400: bad".into());
        assert!(matches!(
            classify(send_error(Box::new(e))),
            Failure::Other(_)
        ));
        let e: HttpError = StreamableHttpError::SessionExpired;
        assert!(matches!(
            classify(send_error(Box::new(e))),
            Failure::SessionExpired
        ));
    }

    #[test]
    fn broken_streams_are_lost() {
        let e: HttpError = StreamableHttpError::UnexpectedEndOfStream;
        assert!(matches!(
            classify(send_error(Box::new(e))),
            Failure::Lost { sent: true, .. }
        ));
    }

    #[test]
    fn auth_challenges_are_kept() {
        let e: HttpError =
            StreamableHttpError::AuthRequired(AuthRequiredError::new("Bearer realm=x".into()));
        match classify(send_error(Box::new(e))) {
            Failure::Auth { challenge } => assert_eq!(challenge.as_deref(), Some("Bearer realm=x")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_errors_are_not_retried() {
        assert!(matches!(
            classify(send_error(Box::new(std::fmt::Error))),
            Failure::Other(_)
        ));
        assert!(matches!(
            classify(ServiceError::UnexpectedResponse),
            Failure::Other(_)
        ));
    }
}
