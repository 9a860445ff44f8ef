//! What the operator page's streams share, kept by the gateway: the last
//! tool calls ([`feed`]), the event streams open ([`streams`]), when each
//! revision was published, and a signal that what the page shows changed.

pub(crate) mod feed;
pub(crate) mod streams;

use parking_lot::Mutex;
use tokio::sync::watch;

/// What the page's streams share: the last calls, when each revision was
/// published, a counter moved when sessions change through the API, and
/// the streams open with the events made for them.
#[derive(Debug)]
pub(crate) struct PageState {
    /// The last tool calls.
    pub feed: feed::Feed,
    /// The event streams open, bounded ([`streams`]).
    pub streams: streams::PageStreams,
    /// The revision last seen published and when (Unix ms).
    published: Mutex<(u64, u64)>,
    /// Moved by whatever changes what the page shows without another
    /// signal (a session made or deleted).
    changed: watch::Sender<u64>,
}

impl PageState {
    /// At most `max_streams` event streams, each reader at most
    /// `stream_bytes` behind.
    pub(crate) fn new(max_streams: usize, stream_bytes: usize) -> Self {
        Self {
            feed: feed::Feed::default(),
            streams: streams::PageStreams::new(max_streams, stream_bytes),
            published: Mutex::new((0, 0)),
            changed: watch::Sender::new(0),
        }
    }
}

impl PageState {
    /// The signal that what the page shows changed, as it moves.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Tells the page's streams to look again.
    pub(crate) fn touch(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// When `revision` was published (first seen), Unix ms; `None` for 0.
    pub(crate) fn published_ms(&self, revision: u64) -> Option<u64> {
        if revision == 0 {
            return None;
        }
        let mut published = self.published.lock();
        if published.0 != revision {
            *published = (revision, crate::audit::now_ms());
        }
        Some(published.1)
    }
}
