//! Splitting what a peer writes into lines, with a bound on a line's length.
//!
//! One buffer per connection: reads append to it, lines are handed out as
//! ranges into it (no copy), and consumed bytes are dropped before the next
//! read. A line longer than the bound is dropped and the connection goes
//! on, as rmcp does; the buffer never holds more than the bound plus one
//! read. A line is dropped as soon as the bytes read of it pass the bound,
//! whether or not its end has come (a peer may never end it). What is kept
//! of a dropped line — its first [`HEAD_BYTES`], and its size when its end
//! was already read — lets the transport fail the request it answered at
//! once ([`LineBuf::take_oversized`]).

use std::collections::VecDeque;
use std::ops::Range;

use crate::limits::HEAD_BYTES;

/// Dropped lines remembered until the transport takes them.
const OVERSIZED_KEPT: usize = 8;

/// A line that was too long: its length and its first bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Oversized {
    /// The line's length in bytes; `None` when it was dropped before its
    /// end was read (it is longer than the bound, by how much is unknown).
    pub(crate) size: Option<usize>,
    /// Its first [`HEAD_BYTES`] bytes.
    pub(crate) head: Vec<u8>,
}

/// The most bytes asked of one `read(2)`.
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// Capacity kept after a large line has gone.
const RETAINED: usize = 4 * READ_CHUNK;

/// A connection's unread bytes.
#[derive(Debug)]
pub(crate) struct LineBuf {
    buf: Vec<u8>,
    /// Start of the first unconsumed line.
    start: usize,
    /// Where the search for the next newline resumes.
    scan: usize,
    /// Longest line accepted, without its newline.
    max: usize,
    /// Inside a dropped line, until its newline.
    discarding: bool,
    /// Dropped lines (boxed: rarely used, and the buffer is moved around).
    dropped: Box<Dropped>,
}

/// What is kept of dropped lines.
#[derive(Debug, Default)]
struct Dropped {
    /// Bytes of the line being skipped so far (it is reported already).
    skipped: usize,
    /// Dropped lines not yet taken, oldest first.
    done: VecDeque<Oversized>,
}

impl LineBuf {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scan: 0,
            max,
            discarding: false,
            dropped: Box::default(),
        }
    }

    /// Changes the longest line accepted.
    pub(crate) fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// The longest line accepted.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The next line dropped for its length, oldest first.
    pub(crate) fn take_oversized(&mut self) -> Option<Oversized> {
        self.dropped.done.pop_front()
    }

    fn record(&mut self, dropped: Oversized) {
        tracing::error!(
            max_line_length = self.max,
            size = ?dropped.size,
            "an incoming MCP message is longer than the line limit; dropped"
        );
        if self.dropped.done.len() < OVERSIZED_KEPT {
            self.dropped.done.push_back(dropped);
        }
    }

    /// The bytes of `range` (from [`LineBuf::next_line`]).
    pub(crate) fn get(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// The next complete, non-empty line (without `\n` or `\r\n`), if one is buffered.
    pub(crate) fn next_line(&mut self) -> Option<Range<usize>> {
        loop {
            let Some(offset) = memchr::memchr(b'\n', &self.buf[self.scan..]) else {
                self.scan = self.buf.len();
                if self.discarding {
                    self.dropped.skipped += self.buf.len() - self.start;
                    self.consume_all();
                } else if self.buf.len() - self.start > self.max + self.pending_cr() {
                    // Past the bound without an end: dropped and reported
                    // now, not when (if ever) its newline comes.
                    let head_end = self.buf.len().min(self.start + HEAD_BYTES);
                    let head = self.buf[self.start..head_end].to_vec();
                    self.dropped.skipped = self.buf.len() - self.start;
                    self.record(Oversized { size: None, head });
                    self.discarding = true;
                    self.consume_all();
                }
                return None;
            };
            let newline = self.scan + offset;
            let begin = self.start;
            self.start = newline + 1;
            self.scan = self.start;
            if std::mem::take(&mut self.discarding) {
                let size = std::mem::take(&mut self.dropped.skipped) + newline - begin;
                tracing::debug!(size, "the dropped MCP message ended");
                continue;
            }
            let mut end = newline;
            if end > begin && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
            if end - begin > self.max {
                let head = self.buf[begin..end.min(begin + HEAD_BYTES)].to_vec();
                self.record(Oversized {
                    size: Some(end - begin),
                    head,
                });
                continue;
            }
            if end > begin {
                return Some(begin..end);
            }
        }
    }

    /// 1 when the unfinished line ends with `\r`: its `\n` may come with
    /// the next read, and a line of exactly the bound must not be dropped
    /// for the `\r` it ends with.
    fn pending_cr(&self) -> usize {
        usize::from(self.buf.len() > self.start && self.buf.last() == Some(&b'\r'))
    }

    fn consume_all(&mut self) {
        self.buf.clear();
        self.start = 0;
        self.scan = 0;
    }

    /// Room for the next read: consumed bytes dropped, at least one chunk free.
    pub(crate) fn spare(&mut self) -> &mut Vec<u8> {
        if self.start == self.buf.len() {
            self.consume_all();
            if self.buf.capacity() > RETAINED {
                self.buf.shrink_to(READ_CHUNK);
            }
        } else if self.start > 0 {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.start = 0;
        }
        self.buf.reserve(READ_CHUNK);
        &mut self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &mut LineBuf, bytes: &[u8]) -> Vec<String> {
        lines.spare().extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(range) = lines.next_line() {
            out.push(String::from_utf8(lines.get(range).to_vec()).unwrap());
        }
        out
    }

    #[test]
    fn splits_lines_across_reads() {
        let mut lines = LineBuf::new(100);
        assert_eq!(feed(&mut lines, b"ab\ncd"), ["ab"]);
        assert_eq!(feed(&mut lines, b"e\r\n\n\r\nf\n"), ["cde", "f"]);
        assert_eq!(feed(&mut lines, b""), Vec::<String>::new());
    }

    #[test]
    fn drops_an_oversized_line_and_goes_on() {
        let mut lines = LineBuf::new(4);
        // Too long within one read.
        assert_eq!(feed(&mut lines, b"123456\nok\n"), ["ok"]);
        // Too long across reads: dropped up to its newline, however long.
        assert_eq!(feed(&mut lines, b"12345"), Vec::<String>::new());
        assert_eq!(feed(&mut lines, b"6789"), Vec::<String>::new());
        assert_eq!(feed(&mut lines, b"0\nnext\n"), ["next"]);
        // Exactly the bound is accepted.
        assert_eq!(feed(&mut lines, b"1234\n"), ["1234"]);
    }

    #[test]
    fn a_line_of_the_bound_ending_in_crlf_split_between_them_is_kept() {
        let mut lines = LineBuf::new(4);
        assert_eq!(feed(&mut lines, b"1234\r"), Vec::<String>::new());
        assert_eq!(feed(&mut lines, b"\n"), ["1234"]);
        assert_eq!(lines.take_oversized(), None);
        // One byte more is over the bound however it is split.
        assert_eq!(feed(&mut lines, b"12345\r"), Vec::<String>::new());
        assert_eq!(feed(&mut lines, b"\nok\n"), ["ok"]);
        assert!(lines.take_oversized().is_some());
    }

    #[test]
    fn a_dropped_line_keeps_its_size_and_head() {
        let mut lines = LineBuf::new(4);
        assert_eq!(feed(&mut lines, b"123456\nok\n"), ["ok"]);
        assert_eq!(
            lines.take_oversized(),
            Some(Oversized {
                size: Some(6),
                head: b"123456".to_vec()
            })
        );
        // Across reads, with a head cut at HEAD_BYTES: reported as soon as
        // it passes the bound, its size unknown then.
        let long = vec![b'x'; HEAD_BYTES + 10];
        assert_eq!(feed(&mut lines, &long), Vec::<String>::new());
        let dropped = lines.take_oversized().unwrap();
        assert_eq!(dropped.size, None);
        assert_eq!(dropped.head, vec![b'x'; HEAD_BYTES]);
        assert_eq!(feed(&mut lines, b"yy\nnext\n"), ["next"]);
        assert_eq!(lines.take_oversized(), None, "reported once");
    }

    #[test]
    fn a_line_that_never_ends_is_reported_once_it_passes_the_bound() {
        let mut lines = LineBuf::new(10);
        assert_eq!(feed(&mut lines, b"{\"id\":7,"), Vec::<String>::new());
        assert_eq!(lines.take_oversized(), None, "within the bound so far");
        assert_eq!(feed(&mut lines, b"\"result\""), Vec::<String>::new());
        let dropped = lines.take_oversized().unwrap();
        assert_eq!(dropped.size, None);
        assert_eq!(dropped.head, b"{\"id\":7,\"result\"".to_vec());
        for _ in 0..100 {
            assert_eq!(feed(&mut lines, &[b'x'; READ_CHUNK]), Vec::<String>::new());
            assert!(lines.buf.len() <= READ_CHUNK);
        }
        assert_eq!(lines.take_oversized(), None);
    }

    /// What a plain split says `input`'s complete lines are: accepted
    /// (non-empty, within `max` once a trailing `\r` is cut) and dropped,
    /// the unfinished last line counted as dropped once it is past `max`
    /// (and a `\r` it ends with, which may be the start of its end).
    fn model(input: &[u8], max: usize) -> (Vec<Vec<u8>>, usize) {
        let (complete, rest) = match input.iter().rposition(|&b| b == b'\n') {
            Some(last) => (Some(&input[..last]), &input[last + 1..]),
            None => (None, input),
        };
        let pending_cr = usize::from(rest.last() == Some(&b'\r'));
        let (mut accepted, mut dropped) = (Vec::new(), usize::from(rest.len() > max + pending_cr));
        for line in complete.into_iter().flat_map(|c| c.split(|&b| b == b'\n')) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.len() > max {
                dropped += 1;
            } else if !line.is_empty() {
                accepted.push(line.to_vec());
            }
        }
        (accepted, dropped)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: std::env::var("EXTPOOL_FUZZ_CASES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1000),
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// However a peer's bytes are split into reads, the lines handed
        /// out are the plain split's, the dropped ones are reported, and
        /// the buffer never holds more than the bound plus one read.
        #[test]
        fn lines_are_a_plain_split_in_bounded_memory(
            input in proptest::collection::vec(
                proptest::prop_oneof![
                    4 => proptest::prelude::any::<u8>(),
                    2 => proptest::strategy::Just(b'\n'),
                    1 => proptest::strategy::Just(b'\r'),
                ],
                0..200,
            ),
            reads in proptest::collection::vec(1usize..64, 1..40),
            max in 1usize..40,
        ) {
            let mut lines = LineBuf::new(max);
            let (mut got, mut dropped) = (Vec::new(), 0);
            let mut rest = &input[..];
            let mut sizes = reads.iter().cycle();
            while !rest.is_empty() {
                let n = (*sizes.next().unwrap()).min(rest.len());
                lines.spare().extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                while let Some(range) = lines.next_line() {
                    got.push(lines.get(range).to_vec());
                }
                while let Some(d) = lines.take_oversized() {
                    proptest::prop_assert!(d.size.is_none_or(|s| s > max), "{d:?}");
                    dropped += 1;
                }
                proptest::prop_assert!(
                    lines.buf.len() - lines.start <= max + 1 + n,
                    "{} bytes held",
                    lines.buf.len() - lines.start
                );
            }
            let (expected, expected_dropped) = model(&input, max);
            proptest::prop_assert_eq!(got, expected);
            // At most OVERSIZED_KEPT dropped lines are remembered between
            // takes (each is logged); every one of them when fewer.
            proptest::prop_assert!(dropped <= expected_dropped);
            if expected_dropped <= OVERSIZED_KEPT {
                proptest::prop_assert_eq!(dropped, expected_dropped);
            }
        }
    }

    #[test]
    fn memory_stays_bounded_while_discarding() {
        let mut lines = LineBuf::new(10);
        for _ in 0..100 {
            feed(&mut lines, &[b'x'; READ_CHUNK]);
            assert!(lines.buf.len() <= 10 + READ_CHUNK);
        }
        assert_eq!(feed(&mut lines, b"\nend\n"), ["end"]);
        assert!(lines.buf.capacity() <= RETAINED + READ_CHUNK);
    }
}
