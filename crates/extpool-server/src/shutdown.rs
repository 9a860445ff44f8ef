//! The gateway's one shutdown path, over HTTP and stdio alike:
//!
//! 1. **Stop taking work** (the gateway's `draining` token): the listener
//!    stops accepting and closes its socket (a new connection is refused),
//!    each open connection closes once its response in flight is done, a
//!    new request on one still open is answered HTTP 503 with a JSON-RPC
//!    error ([`refused`]), `/readyz` says so, and the streams that never end
//!    by themselves — a session's `GET` stream, `subscriptions/listen` —
//!    end now.
//! 2. **Let requests in flight finish** within the shutdown timeout
//!    ([`GatewayOptions::shutdown_timeout`], `extpool serve
//!    --shutdown-timeout`): each gets its own answer as usual.
//! 3. **Cancel the rest** (the gateway's `stop` token): each request still
//!    running is answered with a JSON-RPC error saying the gateway shut
//!    down before it finished ([`cancelled_message`]) — on its SSE stream,
//!    or as the whole HTTP answer when nothing was sent yet — and its
//!    handler is cancelled. Answers get [`ANSWER_LINGER`] to reach their
//!    clients.
//! 4. [`Gateway::shutdown`](crate::Gateway::shutdown): durable sessions
//!    close, the replica leaves the replica set, every upstream closes.
//!
//! A client's own messages that are not requests (its cancellations, its
//! answers to a server's sampling or elicitation) still pass during step
//! 2, so a call waiting on them can finish.
//!
//! [`GatewayOptions::shutdown_timeout`]: crate::GatewayOptions::shutdown_timeout

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) mod stdio;

/// How long the answers of cancelled requests get to reach their clients
/// before the connections still open are closed.
pub(crate) const ANSWER_LINGER: Duration = Duration::from_secs(2);
/// The JSON-RPC error code of both shutdown answers (a server error).
pub(crate) const SHUTTING_DOWN: i32 = -32000;

/// Why a request that arrives during a shutdown is refused.
pub(crate) const REFUSED: &str = "this extpool gateway is shutting down and takes no new requests; send it again once the gateway is back, or to another replica";

/// Why a request still running at the end of the shutdown timeout got no
/// result: what a client (a model) needs to decide whether to call again.
pub(crate) fn cancelled_message(grace: Duration) -> String {
    format!(
        "this extpool gateway shut down before the request finished and cancelled it (requests in flight get {} s, extpool serve --shutdown-timeout); whatever it had done so far is not undone",
        grace.as_secs()
    )
}

/// The shutdown's tokens and bound, as the gateway holds them.
#[derive(Debug, Clone)]
pub(crate) struct Path {
    /// Step 1: stop taking work.
    pub draining: CancellationToken,
    /// Step 3: cancel what still runs.
    pub stop: CancellationToken,
    /// How long step 2 lasts at most.
    pub grace: Duration,
}

impl Path {
    /// Step 3: cancels what still runs; each request unanswered gets the
    /// shutdown error.
    pub(crate) fn cancel(&self) {
        self.stop.cancel();
    }

    /// Steps 1 to 3 for work that is over when `done` completes
    /// (`what`, for the log): waits for it at most the grace, then
    /// cancels what still runs and gives its answers [`ANSWER_LINGER`].
    pub(crate) async fn wind_down(&self, what: &str, done: impl Future<Output = ()>) {
        self.draining.cancel();
        tracing::info!(
            "shutting down: no new work is taken; {what} in flight get {} s to finish",
            self.grace.as_secs()
        );
        tokio::pin!(done);
        if tokio::time::timeout(self.grace, &mut done).await.is_ok() {
            return;
        }
        tracing::info!(
            "{what} still running {} s after the shutdown began are cancelled",
            self.grace.as_secs()
        );
        self.cancel();
        if tokio::time::timeout(ANSWER_LINGER, done).await.is_err() {
            tracing::info!(
                "{what} still open {} s after they were cancelled are closed",
                ANSWER_LINGER.as_secs()
            );
        }
    }
}

/// A JSON-RPC error message answering request `id`.
fn error_json(id: Option<&Value>, message: &str) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {"code": SHUTTING_DOWN, "message": message},
    })
}

/// The answer to a request (or stream) that arrives during a shutdown:
/// HTTP 503 with the JSON-RPC error, so neither a client nor a load
/// balancer waits on this replica.
pub(crate) fn refused(id: Option<&Value>) -> Response {
    let mut answer = json_answer(StatusCode::SERVICE_UNAVAILABLE, &error_json(id, REFUSED));
    answer
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}

/// The whole answer to request `id`, cancelled before anything was sent:
/// HTTP 200 with its JSON-RPC error, which a client reads as the request's
/// outcome.
pub(crate) fn cancelled(id: Option<&Value>, grace: Duration) -> Response {
    json_answer(StatusCode::OK, &error_json(id, &cancelled_message(grace)))
}

fn json_answer(status: StatusCode, body: &Value) -> Response {
    let mut answer = Response::new(Body::from(body.to_string()));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    answer
}

/// What an SSE answer carries, for what a shutdown does with it.
#[derive(Debug, Clone)]
pub(crate) enum Stream {
    /// A stream that never ends by itself (a session's `GET` stream,
    /// `subscriptions/listen`): it ends when the shutdown begins.
    Open,
    /// The answer of request `id` (its JSON): it runs on while the
    /// shutdown lets requests finish; if the request is still unanswered
    /// when they are cancelled, it is answered with the error and ends.
    Request(Value),
}

/// `response` under the shutdown: an SSE body follows `stream`'s rule
/// (anything else is whole already).
pub(crate) fn follow(
    response: Response,
    stream: Stream,
    draining: &CancellationToken,
    stop: &CancellationToken,
    grace: Duration,
) -> Response {
    let is_sse = crate::wire::is_event_stream(&response);
    if !is_sse {
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = match stream {
        Stream::Open => {
            let draining = draining.clone();
            let data = body.into_data_stream();
            let ended = async move { draining.cancelled().await };
            Body::from_stream(futures::StreamExt::take_until(data, ended))
        }
        Stream::Request(id) => Body::from_stream(answered(body, &id, stop.clone(), grace)),
    };
    Response::from_parts(parts, body)
}

/// `body` (a request's SSE answer), answered with the shutdown error when
/// `stop` fires before the request's answer went by.
fn answered(
    body: Body,
    id: &Value,
    stop: CancellationToken,
    grace: Duration,
) -> impl futures::Stream<Item = Result<Bytes, axum::Error>> + Send + use<> {
    struct State {
        data: axum::body::BodyDataStream,
        seen: Answer,
        stop: CancellationToken,
        error: Option<Bytes>,
    }
    let error = format!(
        "data: {}\n\n",
        error_json(Some(id), &cancelled_message(grace))
    );
    let state = State {
        data: body.into_data_stream(),
        seen: Answer::new(id),
        stop,
        error: Some(Bytes::from(error)),
    };
    futures::stream::unfold(state, |mut s| async move {
        let error = s.error.take()?;
        let stop = s.stop.clone();
        let answered = s.seen.found;
        let chunk = tokio::select! {
            biased;
            chunk = futures::StreamExt::next(&mut s.data) => chunk,
            () = stop.cancelled(), if !answered => None,
        };
        match chunk {
            Some(Ok(bytes)) => {
                s.seen.push(&bytes);
                s.error = Some(error);
                Some((Ok(bytes), s))
            }
            Some(Err(e)) => Some((Err(e), s)),
            // Ended unanswered because the gateway stops: say so.
            None if !s.seen.found && s.stop.is_cancelled() => Some((Ok(error), s)),
            None => None,
        }
    })
}

/// Watches an SSE byte stream for the answer (a result or an error) of
/// one request: a `data:` line that begins as rmcp writes an answer to
/// it, `{"jsonrpc":"2.0","id":<id>,"result"` or `…,"error"`. Only each
/// line's first bytes are kept, so a large answer costs no memory.
#[derive(Debug)]
struct Answer {
    /// `{"jsonrpc":"2.0","id":<id>,"`.
    head: Vec<u8>,
    /// The start of the current line, up to what is compared.
    line: Vec<u8>,
    /// Whether the current line grew past what is compared.
    long: bool,
    found: bool,
}

/// What follows an answer's head.
const ANSWER_KEYS: [&[u8]; 2] = [b"result\"", b"error\""];

impl Answer {
    fn new(id: &Value) -> Self {
        Self {
            head: format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"").into_bytes(),
            line: Vec::new(),
            long: false,
            found: false,
        }
    }

    /// The most bytes of a line compared: `data: `, the head, a key.
    fn keep(&self) -> usize {
        b"data: ".len() + self.head.len() + b"result\"".len()
    }

    fn push(&mut self, bytes: &[u8]) {
        let keep = self.keep();
        for part in bytes.split_inclusive(|b| *b == b'\n') {
            let (text, ends) = match part.split_last() {
                Some((b'\n', text)) => (text, true),
                _ => (part, false),
            };
            if !self.long {
                let room = keep.saturating_sub(self.line.len());
                self.line.extend_from_slice(&text[..text.len().min(room)]);
                self.long = self.line.len() >= keep;
                if self.long {
                    self.found |= self.is_answer();
                }
            }
            if ends {
                if !self.long {
                    self.found |= self.is_answer();
                }
                self.line.clear();
                self.long = false;
            }
        }
    }

    fn is_answer(&self) -> bool {
        let Some(data) = self.line.strip_prefix(b"data:") else {
            return false;
        };
        let data = data.strip_prefix(b" ").unwrap_or(data);
        data.strip_prefix(self.head.as_slice())
            .is_some_and(|rest| ANSWER_KEYS.iter().any(|key| rest.starts_with(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(id: Value, chunks: &[&str]) -> bool {
        let mut answer = Answer::new(&id);
        for chunk in chunks {
            answer.push(chunk.as_bytes());
        }
        answer.found
    }

    #[test]
    fn an_answer_to_the_request_is_seen_whatever_the_chunks() {
        let result = "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}\n\n";
        assert!(found(Value::from(7), &[result]));
        let split: Vec<String> = result.chars().map(String::from).collect();
        let split: Vec<&str> = split.iter().map(String::as_str).collect();
        assert!(found(Value::from(7), &split), "one byte at a time");
        assert!(found(
            Value::from("a\"b"),
            &["id: 0/1\ndata:{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"error\":{\"code\":1}}\n"]
        ));
    }

    #[test]
    fn other_messages_are_no_answer() {
        for chunks in [
            // Another request's answer, a server's request with the same
            // id, a notification, a priming event.
            &["data: {\"jsonrpc\":\"2.0\",\"id\":70,\"result\":{}}\n\n"][..],
            &["data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\"}\n"],
            &["data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n"],
            &["data: \nid: 0\nretry: 3000\n\n"],
            // An answer quoted inside another message's text.
            &[
                "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"data: {\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":7,\\\"result\\\"\"}\n",
            ],
        ] {
            assert!(!found(Value::from(7), chunks), "{chunks:?}");
        }
    }

    #[test]
    fn a_long_line_keeps_only_its_start() {
        let mut answer = Answer::new(&Value::from(1));
        let long = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"method\":\"{}\"}}",
            "x".repeat(100_000)
        );
        answer.push(long.as_bytes());
        assert!(answer.line.len() <= answer.keep());
        answer.push(b"\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
        assert!(answer.found);
    }

    async fn body_text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn sse(
        stream: impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> Response {
        let mut response = Response::new(Body::from_stream(stream));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        response
    }

    /// Request 3's stream, its first event `first` already sent, as
    /// `follow` passes it on; the stop token, and the sender that keeps
    /// the source open.
    async fn request_three(
        first: &'static [u8],
    ) -> (
        Response,
        CancellationToken,
        tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    ) {
        let (draining, stop) = (CancellationToken::new(), CancellationToken::new());
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        tx.send(Ok(Bytes::from_static(first))).await.unwrap();
        let response = follow(
            sse(tokio_stream_like(rx)),
            Stream::Request(Value::from(3)),
            &draining,
            &stop,
            Duration::from_secs(10),
        );
        (response, stop, tx)
    }

    #[tokio::test]
    async fn a_request_unanswered_at_the_stop_gets_the_error_and_ends() {
        let (response, stop, tx) =
            request_three(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n").await;
        stop.cancel();
        let text = body_text(response).await;
        assert!(text.contains("\"method\":\"n\""), "{text}");
        assert!(
            text.contains("\"id\":3") && text.contains("shut down"),
            "{text}"
        );
        drop(tx);
    }

    #[tokio::test]
    async fn an_answered_request_gets_no_second_answer() {
        let (response, stop, tx) =
            request_three(b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n").await;
        let reader = tokio::spawn(body_text(response));
        stop.cancel();
        drop(tx);
        let text = reader.await.unwrap();
        assert!(!text.contains("shut down"), "{text}");
    }

    #[tokio::test]
    async fn an_open_stream_ends_when_the_shutdown_begins() {
        let (draining, stop) = (CancellationToken::new(), CancellationToken::new());
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        tx.send(Ok(Bytes::from_static(b": ping\n\n")))
            .await
            .unwrap();
        let response = follow(
            sse(tokio_stream_like(rx)),
            Stream::Open,
            &draining,
            &stop,
            Duration::ZERO,
        );
        let mut data = response.into_body().into_data_stream();
        let first = futures::StreamExt::next(&mut data).await;
        assert_eq!(
            first.and_then(Result::ok).as_deref(),
            Some(&b": ping\n\n"[..])
        );
        draining.cancel();
        assert!(
            futures::StreamExt::next(&mut data).await.is_none(),
            "ended though its source is open"
        );
        drop(tx);
    }

    /// A receiver as a stream.
    fn tokio_stream_like<T: Send + 'static>(
        rx: tokio::sync::mpsc::Receiver<T>,
    ) -> impl futures::Stream<Item = T> + Send {
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) })
    }
}
