//! The POST of a request whose answer is kept whole
//! ([`crate::transport::whole::keeps`]), sent here rather than by rmcp's
//! reqwest client: that client parses an answer sent as plain
//! `application/json` into rmcp's types before anyone sees it, dropping what
//! they do not name (an `initialize` answer's `capabilities.tasks`, a
//! `tools/list` answer's `execution.taskSupport`, the answers to the task
//! methods). [`post`] hands back the body it parsed as well.
//!
//! Everything else is rmcp 3.11's `post_message_with_response_limits` for
//! `reqwest::Client` (`transport/common/reqwest/streamable_http_client.rs`),
//! reproduced: the same headers, the same limits, and each response mapped
//! to the same answer or error (a 401 or 403 with a challenge, 202/204,
//! a 404 for the session, 429 and 5xx, JSON-RPC errors in error bodies, the
//! SSE stream bounded per event). Its branches for a message that awaits no
//! answer and for `server/discover` are left out: neither is ever kept
//! whole. Only the few requests that keep their answer come here; every
//! other message, `tools/call` among them, is sent by rmcp as before.

use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt, TryStreamExt};
use http::header::{ACCEPT, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_MCP_PROTOCOL_VERSION, HEADER_SESSION_ID,
    JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::SseStream;

type HttpError = StreamableHttpError<reqwest::Error>;

/// rmcp's bound on a kept `Retry-After` value.
const MAX_RETRY_AFTER_BYTES: usize = 128;
/// rmcp's bound on the body preview of an unparsable JSON answer.
const JSON_RPC_BODY_PREVIEW_LEN: usize = 256;
/// What an error body that could not be read reads as.
const BODY_READ_FAILURE: &str = "<failed to read response body>";

/// A POST's answer, and the body of a plain JSON answer as it came.
pub struct Posted {
    /// The answer as rmcp's client would have given it.
    pub response: StreamableHttpPostResponse,
    /// The `application/json` body `response` was parsed from, when the
    /// request succeeded with one.
    pub json: Option<Vec<u8>>,
}

/// A streamable HTTP client that can send a message itself and hand back
/// the body of a plain JSON answer ([`Posted::json`]).
pub trait PostsWhole {
    /// POSTs `message` as `post_message_with_response_limits` does.
    #[allow(clippy::too_many_arguments)]
    fn post_whole<'a>(
        &'a self,
        uri: &'a str,
        message: &'a ClientJsonRpcMessage,
        session_id: Option<&'a str>,
        auth_header: Option<String>,
        custom_headers: &'a HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Result<Posted, HttpError>> + Send + 'a;
}

impl PostsWhole for extpool_auth::AuthorizedClient {
    fn post_whole<'a>(
        &'a self,
        uri: &'a str,
        message: &'a ClientJsonRpcMessage,
        session_id: Option<&'a str>,
        auth_header: Option<String>,
        custom_headers: &'a HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Result<Posted, HttpError>> + Send + 'a {
        self.authorized(auth_header, move |token| {
            post(
                self.http(),
                uri,
                message,
                session_id,
                token,
                custom_headers,
                limits,
            )
        })
    }
}

/// rmcp's check of a custom header: the ones its client sets itself are
/// refused, but for `MCP-Protocol-Version`, which its worker adds.
fn reserved(name: &HeaderName) -> bool {
    let name = name.as_str();
    [ACCEPT.as_str(), HEADER_SESSION_ID, HEADER_LAST_EVENT_ID]
        .iter()
        .any(|r| name.eq_ignore_ascii_case(r))
        && !name.eq_ignore_ascii_case(HEADER_MCP_PROTOCOL_VERSION)
}

/// The `scope=` of a `WWW-Authenticate` value, quoted or not (rmcp's reading).
fn scope_of(header: &str) -> Option<String> {
    let lower = header.to_ascii_lowercase();
    let start = lower.find("scope=")? + "scope=".len();
    let value = header.get(start..)?;
    if let Some(quoted) = value.strip_prefix('"') {
        return quoted.find('"').map(|end| quoted[..end].to_owned());
    }
    let end = value
        .find(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .unwrap_or(value.len());
    (end > 0).then(|| value[..end].to_owned())
}

/// Whether a `Content-Type` value's media type is `expected` (no
/// parameters, any case).
fn media_type_is(value: &[u8], expected: &str) -> bool {
    value
        .split(|byte| *byte == b';')
        .next()
        .and_then(|essence| std::str::from_utf8(essence).ok())
        .is_some_and(|essence| {
            essence
                .trim_matches([' ', '\t'])
                .eq_ignore_ascii_case(expected)
        })
}

/// A 429 or 5xx, with its `Retry-After` when short enough.
fn http_status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = headers
        .get(RETRY_AFTER)
        .filter(|value| value.as_bytes().len() <= MAX_RETRY_AFTER_BYTES)
        .and_then(|value| std::str::from_utf8(value.as_bytes()).ok())
        .map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

/// The challenge of a 401 or 403, as rmcp's error says it.
fn challenge(headers: &HeaderMap) -> Result<Option<String>, HttpError> {
    headers
        .get(WWW_AUTHENTICATE)
        .map(|header| {
            header.to_str().map(str::to_owned).map_err(|_| {
                StreamableHttpError::UnexpectedServerResponse(Cow::from(
                    "invalid www-authenticate header value",
                ))
            })
        })
        .transpose()
}

/// The whole body, refused past `max_size` (by its length when declared).
async fn read_bounded_body(
    response: reqwest::Response,
    content_length: Option<u64>,
    max_size: usize,
) -> Result<Vec<u8>, HttpError> {
    if content_length.is_some_and(|length| length > max_size as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size });
    }
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = stream
        .try_next()
        .await
        .map_err(StreamableHttpError::Client)?
    {
        if chunk.len() > max_size - body.len() {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// At most `max_size` bytes of the body, for a diagnostic.
async fn read_truncated_body(
    response: reqwest::Response,
    max_size: usize,
) -> Result<Vec<u8>, HttpError> {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while body.len() < max_size {
        let Some(chunk) = stream
            .try_next()
            .await
            .map_err(StreamableHttpError::Client)?
        else {
            break;
        };
        let count = chunk.len().min(max_size - body.len());
        body.extend_from_slice(&chunk[..count]);
    }
    Ok(body)
}

fn truncated_read_failure(max_error_response_size: usize) -> String {
    BODY_READ_FAILURE[..BODY_READ_FAILURE.len().min(max_error_response_size)].to_owned()
}

/// An error body as text, in its declared charset.
async fn decode_error_body(
    body: Vec<u8>,
    content_type: Option<HeaderValue>,
    max_error_response_size: usize,
) -> String {
    if body.is_empty() {
        return String::new();
    }
    let mut buffered = http::Response::new(body);
    if let Some(content_type) = content_type {
        buffered.headers_mut().insert(CONTENT_TYPE, content_type);
    }
    reqwest::Response::from(buffered)
        .text()
        .await
        .unwrap_or_else(|_| truncated_read_failure(max_error_response_size))
}

fn parse_json_rpc_error(body: &str) -> Option<ServerJsonRpcMessage> {
    match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(message @ JsonRpcMessage::Error(_)) => Some(message),
        _ => None,
    }
}

fn json_rpc_parse_error_message(error: &serde_json::Error, body: &[u8]) -> String {
    let preview = if body.is_empty() {
        Cow::Borrowed("<empty>")
    } else {
        let lossy = String::from_utf8_lossy(body);
        let mut end = lossy.len().min(JSON_RPC_BODY_PREVIEW_LEN);
        while end > 0 && !lossy.is_char_boundary(end) {
            end -= 1;
        }
        Cow::Owned(lossy[..end].to_owned())
    };
    format!("could not parse JSON response as ServerJsonRpcMessage: {error}: {preview}")
}

/// POSTs `message` with rmcp's headers and reads the answer as rmcp's
/// reqwest client does, keeping a plain JSON answer's body.
async fn post(
    http: &reqwest::Client,
    uri: &str,
    message: &ClientJsonRpcMessage,
    session_id: Option<&str>,
    token: Option<String>,
    custom_headers: &HashMap<HeaderName, HeaderValue>,
    limits: StreamableHttpResponseLimits,
) -> Result<Posted, HttpError> {
    let mut request = http
        .post(uri)
        .header(ACCEPT, [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let mut typed = false;
    for (name, value) in custom_headers {
        if reserved(name) {
            return Err(StreamableHttpError::ReservedHeaderConflict(
                name.to_string(),
            ));
        }
        typed |= *name == CONTENT_TYPE;
        request = request.header(name, value);
    }
    let session_was_attached = session_id.is_some();
    if let Some(session_id) = session_id {
        request = request.header(HEADER_SESSION_ID, session_id);
    }
    if !typed {
        request = request.header(CONTENT_TYPE, JSON_MIME_TYPE);
    }
    let body = serde_json::to_vec(message)?;
    let response = request.body(body).send().await?;
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED
        && let Some(header) = challenge(response.headers())?
    {
        return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            header,
        )));
    }
    if status == StatusCode::FORBIDDEN
        && let Some(header) = challenge(response.headers())?
    {
        let scope = scope_of(&header);
        return Err(StreamableHttpError::InsufficientScope(
            InsufficientScopeError::new(header, scope),
        ));
    }
    let answer = |response| {
        Ok(Posted {
            response,
            json: None,
        })
    };
    if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
        return answer(StreamableHttpPostResponse::Accepted);
    }
    if status == StatusCode::NOT_FOUND && session_was_attached {
        return Err(StreamableHttpError::SessionExpired);
    }
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let is_json = content_type
        .as_ref()
        .is_some_and(|ct| media_type_is(ct.as_bytes(), JSON_MIME_TYPE));
    // An extpool's refusal of a loop (the request came through it
    // already, `crate::via`) says why in its body, and the server's
    // failure is that.
    if status == StatusCode::LOOP_DETECTED && !is_json {
        let max_error = limits.max_error_response_size;
        let body = match read_truncated_body(response, max_error).await {
            Ok(prefix) => decode_error_body(prefix, content_type, max_error).await,
            Err(_) => truncated_read_failure(max_error),
        };
        return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("HTTP {status}: {}", body.trim_end()),
        )));
    }
    // Rate limits and non-JSON failures end without reading the body.
    let status_error = match (http_status_error(status, response.headers()), is_json) {
        (Some(error), is_json) if !is_json || status == StatusCode::TOO_MANY_REQUESTS => {
            return Err(error.into());
        }
        (error, _) => error,
    };
    let content_length = response.content_length();
    let session_id = response
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let max_error = limits.max_error_response_size;
    if !status.is_success() {
        // A 401 or 403 without a challenge keeps its status.
        let is_auth_failure = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
        let body = if is_json && !is_auth_failure {
            match read_bounded_body(response, content_length, limits.max_json_response_size).await {
                Ok(raw) => {
                    let prefix = (raw.len() > max_error).then(|| raw[..max_error].to_vec());
                    let full = decode_error_body(raw, content_type.clone(), max_error).await;
                    if let Some(error) = parse_json_rpc_error(&full) {
                        return answer(StreamableHttpPostResponse::Json(error, session_id));
                    }
                    tracing::warn!("HTTP {status}: could not parse JSON body as a JSON-RPC error");
                    match prefix {
                        Some(prefix) => decode_error_body(prefix, content_type, max_error).await,
                        None => full,
                    }
                }
                Err(error @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                    return Err(status_error.map(StreamableHttpError::from).unwrap_or(error));
                }
                Err(StreamableHttpError::Client(_)) => truncated_read_failure(max_error),
                Err(error) => return Err(error),
            }
        } else {
            match read_truncated_body(response, max_error).await {
                Ok(prefix) => decode_error_body(prefix, content_type, max_error).await,
                Err(StreamableHttpError::Client(_)) => truncated_read_failure(max_error),
                Err(error) => return Err(error),
            }
        };
        if let Some(error) = status_error {
            return Err(error.into());
        }
        return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("HTTP {status}: {body}"),
        )));
    }
    match content_type.as_ref().map(HeaderValue::as_bytes) {
        Some(ct) if media_type_is(ct, EVENT_STREAM_MIME_TYPE) => {
            let bounded = Bounded {
                inner: response.bytes_stream().boxed(),
                limiter: EventSize::new(limits.max_sse_event_size),
                failed: false,
            };
            let events = SseStream::from_bytes_stream(bounded).boxed();
            answer(StreamableHttpPostResponse::Sse(events, session_id))
        }
        Some(ct) if media_type_is(ct, JSON_MIME_TYPE) => {
            let body =
                read_bounded_body(response, content_length, limits.max_json_response_size).await?;
            match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(parsed) => Ok(Posted {
                    response: StreamableHttpPostResponse::Json(parsed, session_id),
                    json: Some(body),
                }),
                Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    json_rpc_parse_error_message(&e, &body),
                ))),
            }
        }
        _ => {
            let content_type =
                content_type.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned());
            tracing::error!("unexpected content type: {:?}", content_type);
            Err(StreamableHttpError::UnexpectedContentType(content_type))
        }
    }
}

/// An SSE event over the size limit, worded as rmcp words it (the guard
/// recognises it by that: `is_event_too_large`).
#[derive(Debug, thiserror::Error)]
enum BoundedError {
    #[error(transparent)]
    Source(reqwest::Error),
    #[error("SSE event exceeded the maximum size of {max_size} bytes")]
    EventTooLarge { max_size: usize },
}

/// rmcp's count of an SSE event's size as its bytes pass: the data of its
/// lines (comments not counted, a newline for each joined line), reset by
/// the blank line that ends it.
#[derive(Debug)]
struct EventSize {
    max_size: usize,
    retained_size: usize,
    line_size: usize,
    line_is_comment: bool,
    previous_was_cr: bool,
}

impl EventSize {
    fn new(max_size: usize) -> Self {
        Self {
            max_size,
            retained_size: 0,
            line_size: 0,
            line_is_comment: false,
            previous_was_cr: false,
        }
    }

    /// `false` once the event is over the limit.
    fn observe(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            if self.previous_was_cr {
                self.previous_was_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            let fits = match byte {
                b'\r' => {
                    self.previous_was_cr = true;
                    self.finish_line()
                }
                b'\n' => self.finish_line(),
                _ => {
                    if self.line_size == 0 {
                        self.line_is_comment = byte == b':';
                    }
                    self.line_size = self.line_size.saturating_add(1);
                    self.fits()
                }
            };
            if !fits {
                return false;
            }
        }
        true
    }

    fn finish_line(&mut self) -> bool {
        if self.line_size == 0 {
            self.retained_size = 0;
        } else if !self.line_is_comment {
            // The SSE parser inserts a newline when joining data lines.
            self.retained_size = self
                .retained_size
                .saturating_add(self.line_size)
                .saturating_add(1);
        }
        self.line_size = 0;
        self.line_is_comment = false;
        self.fits()
    }

    fn fits(&self) -> bool {
        self.retained_size.saturating_add(self.line_size) <= self.max_size
    }
}

/// A response body that ends with [`BoundedError::EventTooLarge`] at the
/// first SSE event over the limit.
struct Bounded<B> {
    inner: futures::stream::BoxStream<'static, Result<B, reqwest::Error>>,
    limiter: EventSize,
    failed: bool,
}

impl<B: AsRef<[u8]>> Stream for Bounded<B> {
    type Item = Result<B, BoundedError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        let item = match self.inner.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        Poll::Ready(match item {
            Some(Ok(chunk)) => {
                if self.limiter.observe(chunk.as_ref()) {
                    Some(Ok(chunk))
                } else {
                    self.failed = true;
                    let max_size = self.limiter.max_size;
                    Some(Err(BoundedError::EventTooLarge { max_size }))
                }
            }
            Some(Err(error)) => {
                self.failed = true;
                Some(Err(BoundedError::Source(error)))
            }
            None => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_measured_as_rmcp_measures_it() {
        // Each line counts whole with its newline; a blank line ends the
        // event; a finished comment line is not kept.
        let mut size = EventSize::new(10);
        assert!(size.observe(b": x\n"));
        assert!(size.observe(b"data: ab\n\n"));
        assert!(size.observe(b"data: a\r\n\r\n"));
        assert!(!size.observe(b"data: abcde"));
        let mut size = EventSize::new(10);
        assert!(!size.observe(b"data: a\ndata: b\n"));
    }

    #[test]
    fn a_challenge_scope_is_read_quoted_or_not() {
        assert_eq!(
            scope_of(r#"Bearer error="insufficient_scope", scope="a b""#).as_deref(),
            Some("a b")
        );
        assert_eq!(
            scope_of("Bearer scope=read:data, x=y").as_deref(),
            Some("read:data")
        );
        assert_eq!(scope_of("Bearer realm=x"), None);
    }

    #[test]
    fn the_headers_rmcp_sets_are_reserved_but_the_protocol_version() {
        assert!(reserved(&HeaderName::from_static("accept")));
        assert!(reserved(&HeaderName::from_static("mcp-session-id")));
        assert!(reserved(&HeaderName::from_static("last-event-id")));
        assert!(!reserved(&HeaderName::from_static("mcp-protocol-version")));
        assert!(!reserved(&HeaderName::from_static("x-api-key")));
    }
}
