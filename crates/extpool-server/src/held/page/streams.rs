//! The operator page's event streams as the gateway keeps them: each
//! stream open and how far behind its reader is, the newest event of each
//! kind every stream sends, and the bounds (most streams at once, most
//! bytes a reader may fall behind before its connection is cut). The
//! page's producer and its streams' bodies (the page's `events` module)
//! fill and read it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use axum::body::Bytes;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// One event as the producer made it, numbered so a stream knows whether
/// it sent it.
#[derive(Clone)]
pub(crate) struct Made {
    /// Its number among the events made.
    pub(crate) number: u64,
    /// The SSE event, whole.
    pub(crate) bytes: Bytes,
}

/// The newest event of each kind.
#[derive(Clone, Default)]
pub(crate) struct Frame {
    /// The newest `tools` event.
    pub(crate) tools: Option<Made>,
    /// The newest `snapshot` event.
    pub(crate) snapshot: Option<Made>,
}

/// One open stream: what its connection holds unwritten, how far behind
/// its reader is, and how to drop it.
pub(crate) struct Reader {
    /// Bytes handed to its connection and not yet written.
    pub(crate) outstanding: AtomicUsize,
    /// Bytes of events made since it last wrote all it was given.
    pub(crate) behind: AtomicUsize,
    /// Closes its connection (none: one that cannot be cut).
    pub(crate) cut: Option<CancellationToken>,
}

/// Every page stream, the newest events, and the bounds.
pub(crate) struct PageStreams {
    /// Most streams open at once.
    pub(crate) max_streams: usize,
    /// Most bytes a reader may fall behind.
    pub(crate) max_behind: usize,
    /// The streams open, by their number.
    pub(crate) open: Mutex<HashMap<u64, Arc<Reader>>>,
    /// The next stream's number.
    pub(crate) next: AtomicU64,
    /// The newest events, which every stream sends.
    pub(crate) latest: watch::Sender<Frame>,
    /// A stream opened (the producer wakes when nothing is rendered).
    pub(crate) opened: Notify,
    /// Streams dropped for falling behind, ever.
    pub(crate) dropped: AtomicU64,
    /// Streams refused past the most at once, ever.
    pub(crate) refused: AtomicU64,
}

impl std::fmt::Debug for PageStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageStreams")
            .field("open", &self.open.lock().len())
            .finish_non_exhaustive()
    }
}

impl PageStreams {
    /// At most `max_streams` streams, each reader at most `max_behind`
    /// bytes behind.
    pub(crate) fn new(max_streams: usize, max_behind: usize) -> Self {
        Self {
            max_streams,
            max_behind,
            open: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            latest: watch::Sender::new(Frame::default()),
            opened: Notify::new(),
            dropped: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Registers a stream whose connection `cut` closes; `None` past the
    /// limit.
    pub(crate) fn register(&self, cut: Option<CancellationToken>) -> Option<(u64, Arc<Reader>)> {
        let reader = Arc::new(Reader {
            outstanding: AtomicUsize::new(0),
            behind: AtomicUsize::new(0),
            cut,
        });
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        {
            let mut open = self.open.lock();
            if open.len() >= self.max_streams {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            open.insert(id, reader.clone());
        }
        self.opened.notify_one();
        Some((id, reader))
    }

    /// Counts `bytes` of new events against every reader that has not
    /// written all it was given; drops those past the bound.
    pub(crate) fn made(&self, bytes: usize) {
        let mut open = self.open.lock();
        open.retain(|_, reader| {
            if reader.outstanding.load(Ordering::Acquire) == 0 {
                return true;
            }
            let behind = reader.behind.fetch_add(bytes, Ordering::AcqRel) + bytes;
            if behind <= self.max_behind {
                return true;
            }
            let Some(cut) = &reader.cut else {
                return true;
            };
            cut.cancel();
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::info!(
                behind,
                limit = self.max_behind,
                "an operator page stream was dropped: its reader fell behind (--page-stream-bytes)"
            );
            false
        });
    }

    /// Whether no stream is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.open.lock().is_empty()
    }

    /// Its gauge and counters, in Prometheus' text format (`/metrics`).
    pub(crate) fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = write!(
            out,
            "# HELP extpool_page_streams Operator page event streams open.\n\
             # TYPE extpool_page_streams gauge\n\
             extpool_page_streams {}\n\
             # HELP extpool_page_streams_dropped_total Operator page streams dropped because their reader fell behind.\n\
             # TYPE extpool_page_streams_dropped_total counter\n\
             extpool_page_streams_dropped_total {}\n\
             # HELP extpool_page_streams_refused_total Operator page streams refused past --max-page-streams.\n\
             # TYPE extpool_page_streams_refused_total counter\n\
             extpool_page_streams_refused_total {}\n",
            self.open.lock().len(),
            self.dropped.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        );
    }
}

/// Bytes of an event handed to a stream's connection: counted as its
/// reader's until the connection has written them (and drops them).
pub(crate) struct Handed {
    bytes: Bytes,
    reader: Arc<Reader>,
}

impl Handed {
    /// `bytes` handed to `reader`'s connection, counted as its until
    /// written.
    pub(crate) fn hand(bytes: Bytes, reader: &Arc<Reader>) -> Bytes {
        reader.outstanding.fetch_add(bytes.len(), Ordering::AcqRel);
        Bytes::from_owner(Handed {
            bytes,
            reader: reader.clone(),
        })
    }
}

impl AsRef<[u8]> for Handed {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        let len = self.bytes.len();
        if self.reader.outstanding.fetch_sub(len, Ordering::AcqRel) == len {
            // Everything given was written: the reader keeps up.
            self.reader.behind.store(0, Ordering::Release);
        }
    }
}
