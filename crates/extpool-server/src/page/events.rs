//! The operator page's event streams (`GET /v1/page/events`), bounded by
//! the gateway whatever their readers do.
//!
//! One producer renders what the page shows, once for every stream: a
//! `tools` event when the catalog's revision changes, a `snapshot` when
//! what the page shows differs from the last one. Each stream sends the
//! newest of each, the very bytes the producer made (no stream holds a
//! copy of its own), skipping any it was too slow to send before a newer
//! came. Nothing is rendered while no stream is open.
//!
//! - **Streams**: at most [`GatewayOptions::max_page_streams`] at once;
//!   one more is refused at once (503, `Retry-After`, naming the limit).
//! - **Each reader**: from the moment its connection has not written all
//!   it was given, every event made since counts as bytes it is behind;
//!   past [`GatewayOptions::page_stream_bytes`] it is dropped (its
//!   connection closed, [`crate::listener::Cut`]), so a slow reader holds
//!   at most the event it was given, never a backlog. One that takes
//!   everything is never behind, however large an event.
//!
//! [`GatewayOptions::max_page_streams`]: crate::GatewayOptions::max_page_streams
//! [`GatewayOptions::page_stream_bytes`]: crate::GatewayOptions::page_stream_bytes

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::held::page::streams::{Frame, Handed, Made, Reader};
use crate::shared::Shared;

/// How long a stream may stay quiet before a comment is sent on it.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An SSE event `kind` whose data is `value` as JSON.
fn event(kind: &str, value: &serde_json::Value) -> Bytes {
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    if serde_json::to_writer(&mut out, value).is_err() {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// Renders what the page shows while any stream is open, as long as the
/// gateway runs.
pub(crate) async fn produce(shared: Arc<Shared>) {
    let streams = &shared.ops.page.streams;
    let mut signals = super::Signals::new(&shared);
    let mut number = 0u64;
    let mut revision = None;
    loop {
        let opened = streams.opened.notified();
        tokio::pin!(opened);
        opened.as_mut().enable();
        if streams.is_empty() {
            // Nobody watches: what was made is let go, nothing is made.
            streams.latest.send_replace(Frame::default());
            revision = None;
            opened.await;
            signals.skip_pause();
        }
        let mut made = 0;
        let now = shared.host.catalog().current().number();
        if revision != Some(now) {
            revision = Some(now);
            number += 1;
            let bytes = event("tools", &super::snapshot::tools(&shared));
            made += bytes.len();
            streams
                .latest
                .send_modify(|f| f.tools = Some(Made { number, bytes }));
        }
        let bytes = event("snapshot", &super::snapshot::snapshot(&shared).await);
        let differs = streams
            .latest
            .borrow()
            .snapshot
            .as_ref()
            .is_none_or(|last| last.bytes != bytes);
        if differs {
            number += 1;
            made += bytes.len();
            streams
                .latest
                .send_modify(|f| f.snapshot = Some(Made { number, bytes }));
        }
        if made > 0 {
            streams.made(made);
        }
        tokio::select! {
            () = signals.next() => {}
            () = shared.front.draining.cancelled() => return,
        }
    }
}

/// What one stream sent last, what it is to send next, and where it is
/// registered.
struct Stream {
    shared: Arc<Shared>,
    id: u64,
    reader: Arc<Reader>,
    frames: watch::Receiver<Frame>,
    tools: u64,
    snapshot: u64,
    queue: std::collections::VecDeque<Bytes>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.shared.ops.page.streams.open.lock().remove(&self.id);
    }
}

impl Stream {
    /// The next chunk to send: the newest events not yet sent, or a
    /// comment after [`KEEP_ALIVE`] of quiet; `None` once the gateway
    /// drains or the stream was dropped.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(bytes) = self.queue.pop_front() {
                return Some(Handed::hand(bytes, &self.reader));
            }
            {
                let frame = self.frames.borrow_and_update();
                for (made, sent) in [
                    (&frame.tools, &mut self.tools),
                    (&frame.snapshot, &mut self.snapshot),
                ] {
                    if let Some(made) = made
                        && made.number != *sent
                    {
                        *sent = made.number;
                        self.queue.push_back(made.bytes.clone());
                    }
                }
            }
            if !self.queue.is_empty() {
                continue;
            }
            let draining = self.shared.front.draining.clone();
            tokio::select! {
                changed = tokio::time::timeout(KEEP_ALIVE, self.frames.changed()) => match changed {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return None,
                    Err(_) => return Some(Bytes::from_static(b":\n\n")),
                },
                () = draining.cancelled() => return None,
            }
        }
    }
}

/// `GET /v1/page/events` of a caller already let in: a stream, or a
/// refusal past the limit. `cut` closes its connection.
pub(crate) fn open(shared: Arc<Shared>, cut: Option<CancellationToken>) -> Response {
    let streams = &shared.ops.page.streams;
    let Some((id, reader)) = streams.register(cut) else {
        let body = format!(
            "the operator page has {} event streams open, its limit (extpool serve --max-page-streams); close a page, or retry shortly\n",
            streams.max_streams
        );
        shared
            .ops
            .metrics
            .refused(crate::metrics::Refusal::PageStreams);
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, HeaderValue::from_static("5"))],
            body,
        )
            .into_response();
    };
    let frames = streams.latest.subscribe();
    let stream = Stream {
        shared: shared.clone(),
        id,
        reader,
        frames,
        tools: 0,
        snapshot: 0,
        queue: std::collections::VecDeque::new(),
    };
    let body = futures::stream::unfold(stream, |mut stream| async move {
        let chunk = stream.next().await?;
        Some((Ok::<_, Infallible>(chunk), stream))
    });
    crate::front::event_stream(body)
}
