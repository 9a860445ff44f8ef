//! [`AuthorizedClient`]: rmcp's streamable-HTTP client with OAuth.
//!
//! It wraps the shared `reqwest::Client` and, when the server has an
//! [`OAuthSession`], puts the session's access token on every request:
//!
//! - a 401 makes the session refresh (or, where a login is allowed, log in)
//!   once, and the request is sent once more; a second 401 is final;
//! - a 403 `insufficient_scope` makes the session step up (bounded by the
//!   session) and the request is sent again.
//!
//! Both replays are safe: the server refused the request before acting on
//! it. Without a session the client is the plain reqwest client, unchanged.
//! The error type stays `reqwest::Error`, so the MCP client classifies
//! transport failures exactly as before; auth failures arrive as rmcp's
//! `StreamableHttpError::Auth` carrying the session's message.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

use crate::error::AuthError;
use crate::session::OAuthSession;

type HttpError = StreamableHttpError<reqwest::Error>;

/// A streamable-HTTP client that authorizes requests through an [`OAuthSession`].
#[derive(Clone)]
pub struct AuthorizedClient {
    inner: reqwest::Client,
    session: Option<Arc<OAuthSession>>,
}

impl std::fmt::Debug for AuthorizedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizedClient")
            .field("oauth", &self.session.as_ref().map(|s| s.server()))
            .finish()
    }
}

/// An auth failure as the transport reports it (message kept whole).
pub fn transport_error(error: AuthError) -> HttpError {
    StreamableHttpError::Auth(rmcp::transport::auth::AuthError::OAuthError(
        error.to_string(),
    ))
}

impl AuthorizedClient {
    /// `inner`, authorizing through `session` when there is one.
    pub fn new(inner: reqwest::Client, session: Option<Arc<OAuthSession>>) -> Self {
        Self { inner, session }
    }

    /// The shared HTTP client requests go out on.
    pub fn http(&self) -> &reqwest::Client {
        &self.inner
    }

    /// Runs `call` with the bearer token to send: `passed` without a
    /// session; with one, the session's access token, refreshed (or logged
    /// in) once on a 401 and stepped up on a 403 `insufficient_scope`, as
    /// every request of this client is. For a request this client's
    /// `StreamableHttpClient` methods do not send themselves.
    pub async fn authorized<T, F, Fut>(
        &self,
        passed: Option<String>,
        call: F,
    ) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let Some(session) = &self.session else {
            return call(passed).await;
        };
        let mut token = session.access_token().await.map_err(transport_error)?;
        let mut refreshed = false;
        let mut stepped_up = false;
        loop {
            let result = call(token.as_ref().map(|t| t.expose().to_owned())).await;
            match result {
                Err(StreamableHttpError::AuthRequired(challenge)) if !refreshed => {
                    refreshed = true;
                    let fresh = session
                        .on_unauthorized(token.as_ref(), &challenge.www_authenticate_header)
                        .await
                        .map_err(transport_error)?;
                    token = Some(fresh);
                }
                Err(StreamableHttpError::AuthRequired(_)) => {
                    return Err(transport_error(session.rejected_after_retry()));
                }
                Err(StreamableHttpError::InsufficientScope(e)) => {
                    stepped_up = true;
                    let fresh = session
                        .on_insufficient_scope(
                            token.as_ref(),
                            &e.www_authenticate_header,
                            e.required_scope.as_deref(),
                        )
                        .await
                        .map_err(transport_error)?;
                    token = Some(fresh);
                }
                other => {
                    if stepped_up && other.is_ok() {
                        session.step_up_succeeded();
                    }
                    return other;
                }
            }
        }
    }
}

/// The lesser methods of rmcp's `StreamableHttpClient`, for a client that
/// does its work in `post_message_with_response_limits`,
/// `get_stream_with_max_sse_event_size` and `delete_session`: `post_message`
/// and `post_message_with_max_sse_event_size` are sent on to the first with
/// rmcp's default limits (the SSE limit replaced by the one given), and
/// `get_stream` to the second with rmcp's default SSE limit — as rmcp's own
/// reqwest client does. Written once here so that every wrapper client
/// (this one, the message-limit guard) maps them the same way.
#[macro_export]
macro_rules! lesser_client_methods {
    () => {
        fn post_message(
            &self,
            uri: ::std::sync::Arc<str>,
            message: $crate::transport::reexport::ClientJsonRpcMessage,
            session_id: Option<::std::sync::Arc<str>>,
            auth_header: Option<String>,
            custom_headers: $crate::transport::reexport::Headers,
        ) -> impl ::std::future::Future<Output = $crate::transport::reexport::PostResult<Self::Error>>
        + Send
        + '_ {
            self.post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                $crate::transport::reexport::StreamableHttpResponseLimits::default(),
            )
        }

        fn post_message_with_max_sse_event_size(
            &self,
            uri: ::std::sync::Arc<str>,
            message: $crate::transport::reexport::ClientJsonRpcMessage,
            session_id: Option<::std::sync::Arc<str>>,
            auth_header: Option<String>,
            custom_headers: $crate::transport::reexport::Headers,
            max_sse_event_size: usize,
        ) -> impl ::std::future::Future<Output = $crate::transport::reexport::PostResult<Self::Error>>
        + Send
        + '_ {
            let mut limits = $crate::transport::reexport::StreamableHttpResponseLimits::default();
            limits.max_sse_event_size = max_sse_event_size;
            self.post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
        }

        fn get_stream(
            &self,
            uri: ::std::sync::Arc<str>,
            session_id: Option<::std::sync::Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: $crate::transport::reexport::Headers,
        ) -> impl ::std::future::Future<Output = $crate::transport::reexport::StreamResult<Self::Error>>
        + Send
        + '_ {
            self.get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                $crate::transport::reexport::StreamableHttpResponseLimits::default()
                    .max_sse_event_size,
            )
        }
    };
}

/// The names [`lesser_client_methods!`] writes, reachable from any crate that uses it.
#[doc(hidden)]
pub mod reexport {
    pub use rmcp::model::ClientJsonRpcMessage;
    use rmcp::transport::common::client_side_sse::BoxedSseResponse;
    pub use rmcp::transport::streamable_http_client::StreamableHttpResponseLimits;
    use rmcp::transport::streamable_http_client::{
        StreamableHttpError, StreamableHttpPostResponse,
    };

    /// A request's custom headers.
    pub type Headers = std::collections::HashMap<http::HeaderName, http::HeaderValue>;
    /// What a POST answers.
    pub type PostResult<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;
    /// What a GET stream answers.
    pub type StreamResult<E> = Result<BoxedSseResponse, StreamableHttpError<E>>;
}

impl StreamableHttpClient for AuthorizedClient {
    type Error = reqwest::Error;

    crate::lesser_client_methods!();

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.authorized(auth_header, |token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.authorized(auth_header, |token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, HttpError> {
        self.authorized(auth_header, |token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
