//! The SSE answers made in the HTTP task by the front end, kept so a
//! client whose connection broke resumes them: each stream's events are
//! numbered (`index/i<stream>`, the first a priming event with the
//! reconnection delay), held while the call runs and for a while after,
//! and a `GET` with the `Last-Event-ID` of one replays what followed it,
//! then follows the rest. The call runs in a task of its own once its
//! answer is a stream, so it outlives its client's connection as rmcp's
//! calls do.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use rmcp::model::ServerJsonRpcMessage;
use tokio::sync::watch;

use super::kept::KeptStreams;

/// How long a client waits before it reconnects to a broken stream (the
/// priming event's `retry`, as rmcp's default).
const RETRY: Duration = Duration::from_secs(3);
/// Most events one stream keeps; later log messages and progress are
/// dropped (its answer never is).
const MAX_EVENTS: usize = 4096;
/// Finished streams a session keeps for a late resume.
const KEPT_FINISHED: usize = 16;
/// How long a stream may stay quiet before a comment is sent on it (as
/// rmcp's default keep-alive).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One stream's events so far, and whether its answer is among them.
#[derive(Default)]
struct Events {
    events: Vec<Bytes>,
    done: bool,
    /// The bytes of `events`, as counted in the gateway's budget.
    bytes: usize,
    /// Dropped for the budget ([`KeptStreams`]): its events are gone.
    dropped: bool,
    /// Its place among the finished streams of the budget, once finished.
    place: Option<u64>,
}

/// A stream being written by its call and read by its client (and by a
/// client that resumes it).
pub(crate) struct Replay {
    number: u64,
    events: Mutex<Events>,
    /// How many events there are, told to readers as it grows (and moved
    /// when the stream is dropped, so they end).
    written: watch::Sender<usize>,
    /// The gateway-wide budget its bytes count in.
    kept: Arc<KeptStreams>,
}

impl Drop for Replay {
    fn drop(&mut self) {
        let events = self.events.get_mut();
        if !events.dropped {
            self.kept.refund(events.bytes);
        }
        if let Some(place) = events.place {
            self.kept.forget(place);
        }
    }
}

impl Replay {
    fn new(number: u64, kept: Arc<KeptStreams>) -> Arc<Self> {
        let replay = Arc::new(Self {
            number,
            events: Mutex::new(Events::default()),
            written: watch::Sender::new(0),
            kept,
        });
        let priming = format!("id: 0/i{number}\nretry: {}\ndata: \n\n", RETRY.as_millis());
        replay.push(Bytes::from(priming), false);
        replay
    }

    /// Appends `event`, unless the stream is full (an answer always is) or
    /// dropped; an answer makes it one of the budget's finished streams.
    fn push(self: &Arc<Self>, event: Bytes, answer: bool) {
        let bytes = event.len();
        let (len, finished) = {
            let mut events = self.events.lock();
            if events.dropped {
                return;
            }
            if events.events.len() >= MAX_EVENTS && !answer {
                tracing::debug!("an event of a call's stream was dropped: the stream is full");
                return;
            }
            events.events.push(event);
            events.bytes += bytes;
            let finished = answer && !events.done;
            events.done |= answer;
            (events.events.len(), finished)
        };
        self.kept.charge(bytes);
        if finished {
            let place = self.kept.finished(self);
            self.events.lock().place = Some(place);
        }
        self.written.send_replace(len);
    }

    /// Appends message `message` as the next event.
    pub(crate) fn message(self: &Arc<Self>, message: &ServerJsonRpcMessage, answer: bool) {
        let data = serde_json::to_string(message).unwrap_or_default();
        let index = self.events.lock().events.len();
        let event = format!("id: {index}/i{}\ndata: {data}\n\n", self.number);
        self.push(Bytes::from(event), answer);
    }

    fn done(&self) -> bool {
        self.events.lock().done
    }

    /// Whether the budget dropped it.
    fn dropped(&self) -> bool {
        self.events.lock().dropped
    }

    /// The bytes it keeps.
    pub(super) fn kept_bytes(&self) -> usize {
        self.events.lock().bytes
    }

    /// Drops its events for the budget `kept` (its readers end); `false`
    /// when it was dropped already.
    pub(super) fn drop_events(&self, kept: &KeptStreams) -> bool {
        let freed = {
            let mut events = self.events.lock();
            if events.dropped {
                return false;
            }
            events.dropped = true;
            events.place = None;
            let freed = std::mem::take(&mut events.events);
            (std::mem::take(&mut events.bytes), freed)
        };
        kept.refund(freed.0);
        drop(freed.1);
        self.written.send_modify(|n| *n = n.wrapping_add(1));
        true
    }

    /// The stream from event `from` on, as an SSE answer that ends after
    /// the call's answer.
    pub(crate) fn answer(self: Arc<Self>, from: usize) -> Response {
        let read = self.written.subscribe();
        let body = futures::stream::unfold(
            (self, read, from, false),
            |(replay, mut read, at, ended)| async move {
                if ended {
                    return None;
                }
                loop {
                    let (chunk, next, done) = {
                        let events = replay.events.lock();
                        // Dropped for the budget: what it had is gone.
                        if events.dropped {
                            return None;
                        }
                        let next = events.events.len();
                        let chunk: Vec<u8> = events.events.get(at..).unwrap_or_default().concat();
                        (chunk, next.max(at), events.done)
                    };
                    if !chunk.is_empty() {
                        let chunk = Ok::<_, std::convert::Infallible>(Bytes::from(chunk));
                        return Some((chunk, (replay, read, next, done)));
                    }
                    if done {
                        return None;
                    }
                    match tokio::time::timeout(KEEP_ALIVE, read.changed()).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => return None,
                        // Quiet for a while: a comment, so that nothing on
                        // the way takes the stream for dead.
                        Err(_) => {
                            let comment = Ok(Bytes::from_static(b":\n\n"));
                            return Some((comment, (replay, read, at, false)));
                        }
                    }
                }
            },
        );
        event_stream(body)
    }
}

/// An SSE answer whose events are `body`'s chunks.
pub(crate) fn event_stream<S>(body: S) -> Response
where
    S: futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
{
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// An own session's `GET` stream (the front end's): each of `messages` as
/// an event, a comment when it has been quiet for [`KEEP_ALIVE`], until
/// the session ends (`closed`) or nothing more can come.
pub(crate) fn listen(
    messages: tokio::sync::mpsc::Receiver<ServerJsonRpcMessage>,
    closed: tokio_util::sync::CancellationToken,
) -> Response {
    let body = futures::stream::unfold((messages, closed), |(mut messages, closed)| async move {
        let next = tokio::select! {
            () = closed.cancelled() => return None,
            next = tokio::time::timeout(KEEP_ALIVE, messages.recv()) => next,
        };
        let chunk = match next {
            Ok(Some(message)) => {
                let data = serde_json::to_string(&message).unwrap_or_default();
                Bytes::from(format!("data: {data}\n\n"))
            }
            Ok(None) => return None,
            Err(_) => Bytes::from_static(b":\n\n"),
        };
        Some((Ok::<_, std::convert::Infallible>(chunk), (messages, closed)))
    });
    event_stream(body)
}

/// A session's streams made in the HTTP task: those running, and the last
/// few finished (while the gateway's budget keeps them).
pub(crate) struct Replays {
    streams: Mutex<VecDeque<Arc<Replay>>>,
    next: std::sync::atomic::AtomicU64,
    kept: Arc<KeptStreams>,
}

impl Replays {
    /// A session's streams, counted in the gateway's budget `kept`.
    pub(crate) fn new(kept: Arc<KeptStreams>) -> Self {
        Self {
            streams: Mutex::default(),
            next: std::sync::atomic::AtomicU64::new(0),
            kept,
        }
    }

    /// A new stream, kept for resumes; the oldest finished ones beyond
    /// [`KEPT_FINISHED`] are forgotten, and those the budget dropped.
    pub(crate) fn open(&self) -> Arc<Replay> {
        let number = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let replay = Replay::new(number, self.kept.clone());
        let mut streams = self.streams.lock();
        streams.retain(|r| !r.dropped());
        streams.push_back(replay.clone());
        let finished = streams.iter().filter(|r| r.done()).count();
        if finished > KEPT_FINISHED {
            let mut excess = finished - KEPT_FINISHED;
            streams.retain(|r| {
                let drop = excess > 0 && r.done();
                if drop {
                    excess -= 1;
                }
                !drop
            });
        }
        replay
    }

    /// The rest of the stream a `Last-Event-ID` names (`index/i<stream>`),
    /// if it is one of this session's still kept; `None` for any other id
    /// (one the budget dropped included).
    pub(crate) fn resume(&self, last_event_id: &str) -> Option<Response> {
        let (index, stream) = last_event_id.split_once("/i")?;
        let index: usize = index.parse().ok()?;
        let number: u64 = stream.parse().ok()?;
        let replay = self
            .streams
            .lock()
            .iter()
            .find(|r| r.number == number && !r.dropped())
            .cloned()?;
        // The header is the client's: an index past every event is none.
        Some(replay.answer(index.checked_add(1)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn answer(n: u64) -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::empty(()),
            rmcp::model::RequestId::Number(n as i64),
        )
    }

    #[tokio::test]
    async fn a_stream_is_primed_and_resumed_after_the_last_event_seen() {
        let replays = Replays::new(KeptStreams::new(usize::MAX));
        let replay = replays.open();
        let progress = ServerJsonRpcMessage::notification(
            rmcp::model::ServerNotification::ProgressNotification(rmcp::model::Notification::new(
                rmcp::model::ProgressNotificationParam::new(
                    rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)),
                    1.0,
                ),
            )),
        );
        replay.message(&progress, false);
        let reader = tokio::spawn(replay.clone().answer(0).into_body().collect_text());
        replay.message(&answer(7), true);
        let whole = reader.await.unwrap();
        assert!(
            whole.starts_with("id: 0/i0\nretry: 3000\ndata: \n\n"),
            "{whole}"
        );
        assert!(whole.contains("id: 1/i0\ndata: {"), "{whole}");
        assert!(
            whole.contains("id: 2/i0\ndata: {\"jsonrpc\":\"2.0\",\"id\":7"),
            "{whole}"
        );
        // Resumed after the progress: only the answer.
        let rest = text(replays.resume("1/i0").unwrap()).await;
        assert!(rest.starts_with("id: 2/i0\n"), "{rest}");
        assert!(!rest.contains("progress"), "{rest}");
        // Not one of these streams.
        assert!(replays.resume("1/i9").is_none());
        assert!(replays.resume("0/3").is_none());
        assert!(replays.resume(&format!("{}/i0", usize::MAX)).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_stream_gets_a_comment_every_keep_alive() {
        use futures::StreamExt;
        let replays = Replays::new(KeptStreams::new(usize::MAX));
        let replay = replays.open();
        let mut body = replay.clone().answer(0).into_body().into_data_stream();
        let priming = body.next().await.unwrap().unwrap();
        assert!(priming.starts_with(b"id: 0/i0\n"));
        // Paused time: the wait for the next event runs into the bound.
        let comment = body.next().await.unwrap().unwrap();
        assert_eq!(&comment[..], b":\n\n");
        replay.message(&answer(1), true);
        let last = body.next().await.unwrap().unwrap();
        assert!(last.starts_with(b"id: 1/i0\n"));
        assert!(
            body.next().await.is_none(),
            "the stream ends after its answer"
        );
    }

    #[tokio::test]
    async fn only_the_last_finished_streams_are_kept() {
        let replays = Replays::new(KeptStreams::new(usize::MAX));
        for n in 0..(KEPT_FINISHED as u64 + 4) {
            replays.open().message(&answer(n), true);
        }
        let running = replays.open();
        assert!(replays.resume("0/i0").is_none(), "the oldest went");
        assert!(
            replays
                .resume(&format!("0/i{}", KEPT_FINISHED + 3))
                .is_some()
        );
        assert!(replays.resume(&format!("0/i{}", running.number)).is_some());
    }

    #[tokio::test]
    async fn finished_streams_past_the_budget_go_oldest_first_across_sessions() {
        let kept = KeptStreams::new(3_000);
        let (a, b) = (Replays::new(kept.clone()), Replays::new(kept.clone()));
        let big = |n: u64| {
            ServerJsonRpcMessage::response(
                rmcp::model::ServerResult::empty(()),
                rmcp::model::RequestId::String("x".repeat(1_000 + n as usize).into()),
            )
        };
        let first = a.open();
        first.message(&big(0), true);
        let running = b.open();
        let reader = tokio::spawn(first.clone().answer(0).into_body().collect_text());
        for n in 1..4 {
            b.open().message(&big(n), true);
        }
        assert!(kept.used() <= 3_000, "{}", kept.used());
        assert!(a.resume("0/i0").is_none(), "the oldest went");
        assert!(b.resume("0/i1").is_none(), "the next oldest went");
        assert!(b.resume("0/i3").is_some(), "the newest stays");
        assert!(b.resume("0/i0").is_some(), "a running one stays");
        // Its reader ends with what it had read, or nothing.
        let read = reader.await.unwrap();
        assert!(read.is_empty() || read.starts_with("id: 0/i0"), "{read}");
        // Forgotten streams give their bytes back.
        drop((first, running, a, b));
        assert_eq!(kept.used(), 0);
    }

    trait CollectText {
        async fn collect_text(self) -> String;
    }

    impl CollectText for Body {
        async fn collect_text(self) -> String {
            let bytes = axum::body::to_bytes(self, usize::MAX).await.unwrap();
            String::from_utf8(bytes.to_vec()).unwrap()
        }
    }
}
