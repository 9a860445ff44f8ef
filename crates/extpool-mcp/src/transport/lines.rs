//! Splitting what a peer writes into lines, with a bound on a line's length.
//!
//! One buffer per connection: reads append to it, lines are handed out as
//! ranges into it (no copy), and consumed bytes are dropped before the next
//! read. A line longer than the bound is dropped with an error in the log
//! and the connection goes on, as rmcp does; the buffer never holds more
//! than the bound plus one read.

use std::ops::Range;

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
}

impl LineBuf {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scan: 0,
            max,
            discarding: false,
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
                    self.consume_all();
                } else if self.buf.len() - self.start > self.max {
                    self.oversized();
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
                continue;
            }
            let mut end = newline;
            if end > begin && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
            if end - begin > self.max {
                self.oversized();
                continue;
            }
            if end > begin {
                return Some(begin..end);
            }
        }
    }

    fn oversized(&self) {
        tracing::error!(
            max_line_length = self.max,
            "an incoming MCP message is longer than the line limit; dropped"
        );
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
