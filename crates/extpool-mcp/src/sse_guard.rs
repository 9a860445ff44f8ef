//! The HTTP side of the message limits ([`crate::limits`]): a wrapper
//! around the HTTP client that watches each POST's response stream.
//!
//! rmcp reads a tool result sent as an SSE event; an event over the size
//! limit ends the stream with an error, and one nested too deep for the JSON
//! parser is skipped — either way the request hears nothing until its
//! timeout. [`Guarded`] sees the events before rmcp parses them and, for the
//! request the POST carried, replaces such an event with an error response
//! that says which limit was broken. An event rmcp cannot read as a message
//! at all (it skips it) that answers that request — its id, and an `error`
//! that is no error object, say — is replaced the same way, with an error
//! response that says what was wrong with it
//! ([`limits::unreadable_response`]).
//!
//! rmcp keeps the type of its "event too large" error private (its own check
//! is `pub(crate)`), so that one error is recognised by its message here, in
//! [`is_event_too_large`], and nowhere else; the integration tests send a
//! real oversized event through rmcp's client and would fail if the message
//! changed.
//!
//! A request whose answer is kept whole ([`whole::keeps`]) is POSTed by
//! [`post`] instead of rmcp's client, so that an answer sent as plain
//! `application/json` is kept whole as well, from the body it is read from.

mod post;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

use crate::limits::{self, Exceeded};
use crate::param_headers::ParamHeaders;
use crate::transport::whole::{self, Declared, Whole};
use post::PostsWhole;

/// An HTTP client whose POST response streams are checked against the
/// limits, and whose 2026-07-28 `tools/call` POSTs carry every
/// `Mcp-Param-*` header the listed schemas ask for ([`ParamHeaders`]).
#[derive(Debug, Clone)]
pub struct Guarded<C> {
    inner: C,
    params: Option<Arc<ParamHeaders>>,
    declared: Option<Declared>,
    via: Option<crate::via::Via>,
}

impl<C> Guarded<C> {
    /// Wraps `inner`.
    pub fn new(inner: C) -> Self {
        Self {
            inner,
            params: None,
            declared: None,
            via: None,
        }
    }

    /// Marks every request with `via` ([`crate::via::VIA_HEADER`]).
    pub fn with_via(mut self, via: crate::via::Via) -> Self {
        self.via = Some(via);
        self
    }

    /// Adds the pool's mark to `headers`.
    fn mark(&self, headers: &mut HashMap<HeaderName, HeaderValue>) {
        if let Some(via) = &self.via
            && let Ok(value) = HeaderValue::from_str(&via.value())
        {
            headers.insert(HeaderName::from_static(crate::via::VIA_HEADER), value);
        }
    }

    /// Keeps what rmcp's types drop of the answers that ask for it
    /// ([`crate::transport::whole::keeps`]) in `declared`: an `initialize`
    /// answer's capabilities, a `tools/list` answer's task support, and the
    /// whole answer to a request rmcp has no variant for, as their SSE
    /// events pass or from the body of an answer sent as plain JSON (such
    /// requests are POSTed by [`PostsWhole`], every other by `inner`).
    pub fn with_declared(mut self, declared: Declared) -> Self {
        self.declared = Some(declared);
        self
    }

    /// Adds the `Mcp-Param-*` headers `params` knows of to calls that lack them.
    pub fn with_param_headers(mut self, params: Arc<ParamHeaders>) -> Self {
        self.params = Some(params);
        self
    }
}

type PostResult<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;
type SseStream = BoxStream<'static, Result<Sse, SseError>>;

impl<C: StreamableHttpClient<Error = reqwest::Error> + PostsWhole + Sync> StreamableHttpClient
    for Guarded<C>
{
    type Error = C::Error;

    extpool_auth::lesser_client_methods!();

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = PostResult<Self::Error>> + Send + '_ {
        if let Some(params) = &self.params {
            params.fill(&message, &mut custom_headers);
        }
        self.mark(&mut custom_headers);
        custom_headers.extend(crate::trace::headers_of(&message));
        let id = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let limit = limits.max_sse_event_size as u64;
        let mut whole = self.declared.as_ref().and_then(|declared| {
            let (keep, id) = whole::keeps(&message)?;
            let mut whole = Whole::default();
            whole.keep_declared_in(declared.clone());
            whole.expect(keep, id);
            Some(whole)
        });
        async move {
            let response = match whole.as_mut() {
                Some(whole) => {
                    let posted = self
                        .inner
                        .post_whole(
                            &uri,
                            &message,
                            session_id.as_deref(),
                            auth_header,
                            &custom_headers,
                            limits,
                        )
                        .await?;
                    if let Some(body) = &posted.json {
                        keep_whole(whole, body);
                    }
                    posted.response
                }
                None => {
                    self.inner
                        .post_message_with_response_limits(
                            uri,
                            message,
                            session_id,
                            auth_header,
                            custom_headers,
                            limits,
                        )
                        .await?
                }
            };
            Ok(match (response, id) {
                (StreamableHttpPostResponse::Sse(stream, session), Some(id)) => {
                    let guard = Guard {
                        inner: stream,
                        id,
                        limit,
                        done: false,
                        whole,
                    };
                    StreamableHttpPostResponse::Sse(guard.boxed(), session)
                }
                (other, _) => other,
            })
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.mark(&mut custom_headers);
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<SseStream, StreamableHttpError<Self::Error>>> + Send + '_ {
        self.mark(&mut custom_headers);
        self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

/// True for rmcp's "SSE event exceeded the maximum size" stream error.
fn is_event_too_large(error: &SseError) -> bool {
    matches!(error, SseError::Body(body)
        if body.source().is_none()
            && body.to_string().starts_with("SSE event exceeded the maximum size"))
}

/// Keeps what `answer` (one JSON-RPC message) answers whole, when it
/// answers a request `whole` waits for (rmcp goes on to read it as usual).
fn keep_whole(whole: &mut Whole, answer: &[u8]) {
    if !whole.waiting() {
        return;
    }
    if let Some((id, result)) = whole.take(answer) {
        whole.declared().keep_answer(&id, result);
    }
}

/// One POST's response stream, checked event by event.
struct Guard {
    inner: SseStream,
    id: RequestId,
    limit: u64,
    done: bool,
    /// What the request's answer is to have kept, when it asks for that.
    whole: Option<Whole>,
}

impl Guard {
    /// Keeps what `sse` answers whole, when it answers the request that
    /// asked for that (rmcp goes on to read it as usual).
    fn keep_whole(&mut self, sse: &Sse) {
        if let (Some(whole), Some(data)) = (self.whole.as_mut(), sse.data.as_deref()) {
            keep_whole(whole, data.as_bytes());
        }
    }

    fn refusal(&self, exceeded: Exceeded) -> Sse {
        self.answer(exceeded.into_error_data())
    }

    /// An event that answers this POST's request with `error`.
    fn answer(&self, error: rmcp::model::ErrorData) -> Sse {
        let message = ServerJsonRpcMessage::error(error, Some(self.id.clone()));
        let data = serde_json::to_string(&message).unwrap_or_default();
        Sse::default().data(data)
    }

    /// What is wrong with `sse` when it is a message event answering this
    /// POST's request that rmcp cannot read (and would skip). Only an event
    /// with an `error` member or without `"2.0"` in it can be one, so
    /// others are not parsed twice.
    fn unreadable(&self, sse: &Sse) -> Option<String> {
        if !matches!(sse.event.as_deref(), None | Some("" | "message")) {
            return None;
        }
        let data = sse.data.as_deref()?.as_bytes();
        let finder = |needle: &[u8]| memchr::memmem::find(data, needle).is_some();
        if !finder(b"\"error\"") && finder(b"\"2.0\"") {
            return None;
        }
        if serde_json::from_slice::<ServerJsonRpcMessage>(data).is_ok() {
            return None;
        }
        let (id, reason) = limits::unreadable_response(data)?;
        (id == self.id).then_some(reason)
    }
}

impl Stream for Guard {
    type Item = Result<Sse, SseError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let item = match self.inner.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        Poll::Ready(match item {
            Some(Ok(sse)) => {
                let deep = sse.data.as_deref().is_some_and(|data| {
                    // A message nested past the limit needs twice as many bytes.
                    data.len() > 2 * limits::MAX_NESTING
                        && limits::nesting_exceeds(data.as_bytes(), limits::MAX_NESTING)
                });
                if deep {
                    tracing::warn!(
                        limit = limits::MAX_NESTING,
                        "an MCP response is nested too deep to read"
                    );
                    Some(Ok(self.refusal(Exceeded::Depth {
                        limit: limits::MAX_NESTING,
                    })))
                } else if let Some(reason) = self.unreadable(&sse) {
                    tracing::warn!(%reason, "an MCP answer cannot be read");
                    Some(Ok(self.answer(limits::unreadable_error_data(&reason))))
                } else {
                    self.keep_whole(&sse);
                    Some(Ok(sse))
                }
            }
            Some(Err(error)) if is_event_too_large(&error) => {
                tracing::warn!(
                    limit = self.limit,
                    "an MCP response is larger than the limit"
                );
                self.done = true;
                let limit = self.limit;
                Some(Ok(self.refusal(Exceeded::Size { size: None, limit })))
            }
            other => other,
        })
    }
}
