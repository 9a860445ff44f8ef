//! Where the parts of a YAML document are, by line: the outline an edit
//! needs to insert or remove an entry's lines and leave every other byte
//! as it was (comments, blank lines, quoting, key order).
//!
//! Built on `saphyr-parser`'s event stream and its spans, like the reader
//! of [`crate::tree`]; only what an edit needs is kept: each mapping's
//! entries with the line and column of their key and the last line their
//! value takes.

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use super::EditError;

/// One node of the outline.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// Line (1-based) and column (0-based, in characters) where it starts.
    pub line: usize,
    /// See [`Located::line`].
    pub col: usize,
    /// The last line holding any of its text.
    pub last_line: usize,
    /// What it is.
    pub kind: Kind,
}

/// The kinds of node an edit tells apart.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// An empty value (`key:` and nothing after it) or `null`/`~`.
    Null {
        /// Written out (`null`, `~`) rather than left empty.
        written: bool,
    },
    /// Any other scalar.
    Scalar,
    /// A sequence.
    Seq {
        /// Written in flow style (`[…]`).
        flow: bool,
        /// Its items in document order.
        items: Vec<SeqItem>,
        /// For a flow sequence: the line and column of its closing `]`.
        close: Option<(usize, usize)>,
    },
    /// A mapping.
    Map {
        /// Written in flow style (`{…}`).
        flow: bool,
        /// Its entries in document order.
        entries: Vec<OutlineEntry>,
        /// For a flow mapping: the line and column of its closing `}`.
        close: Option<(usize, usize)>,
    },
}

/// One item of a sequence.
#[derive(Debug, Clone)]
pub(crate) struct SeqItem {
    /// Its text, when it is a scalar.
    pub text: Option<String>,
    /// Where it is.
    pub node: Located,
}

/// One entry of a mapping.
#[derive(Debug, Clone)]
pub(crate) struct OutlineEntry {
    /// The key, as text.
    pub key: String,
    /// Line of the key.
    pub line: usize,
    /// Column (0-based, characters) of the key.
    pub col: usize,
    /// Column just after the key's text.
    pub key_end_col: usize,
    /// The value.
    pub value: Located,
}

#[cfg(test)]
impl Located {
    /// The entries, when this is a mapping.
    pub fn entries(&self) -> Option<&[OutlineEntry]> {
        match &self.kind {
            Kind::Map { entries, .. } => Some(entries),
            _ => None,
        }
    }
}

/// The outline of a one-document YAML text: `None` when the document is
/// empty (comments only).
pub(crate) fn outline(text: &str) -> Result<Option<Located>, EditError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut builder = Builder {
        parser: Parser::new_from_str(text),
        lines: &lines,
    };
    loop {
        let (ev, _) = builder.next()?;
        match ev {
            Event::StreamStart | Event::Nothing => continue,
            Event::StreamEnd => return Ok(None),
            Event::DocumentStart(_) => break,
            _ => return Err(EditError::syntax(1, "expected a YAML document")),
        }
    }
    let (ev, span) = builder.next()?;
    if matches!(ev, Event::DocumentEnd) {
        return Ok(None);
    }
    builder.node(ev, span, 0).map(Some)
}

/// Deeper than this an outline does not go (the reader refuses such a
/// file anyway).
const MAX_DEPTH: usize = 128;

struct Builder<'a, 'l> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    lines: &'l [&'a str],
}

impl<'a> Builder<'a, '_> {
    fn next(&mut self) -> Result<(Event<'a>, Span), EditError> {
        match self.parser.next_event() {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => Err(EditError::syntax(e.marker().line(), e.info())),
            None => Err(EditError::syntax(
                self.lines.len().max(1),
                "unexpected end of input",
            )),
        }
    }

    fn node(&mut self, ev: Event<'a>, span: Span, depth: usize) -> Result<Located, EditError> {
        let (line, col) = (span.start.line(), span.start.col());
        if depth > MAX_DEPTH {
            return Err(EditError::syntax(line, "nesting is too deep to edit"));
        }
        let located = |last_line, kind| Located {
            line,
            col,
            last_line,
            kind,
        };
        match ev {
            Event::Scalar(text, style, _, _) => {
                let empty = text.is_empty() && style == ScalarStyle::Plain;
                let null = style == ScalarStyle::Plain
                    && matches!(text.as_ref(), "~" | "null" | "Null" | "NULL");
                let kind = if empty || null {
                    Kind::Null { written: null }
                } else {
                    Kind::Scalar
                };
                let last = if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
                    self.block_scalar_end(&span)
                } else {
                    span.end.line().max(line)
                };
                Ok(located(last, kind))
            }
            Event::Alias(_) => Ok(located(span.end.line().max(line), Kind::Scalar)),
            Event::SequenceStart(..) => {
                let flow = span.end.index() > span.start.index();
                let mut last = line;
                let mut items = Vec::new();
                let close = loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::SequenceEnd) {
                        if flow {
                            last = last.max(span.start.line());
                            break Some((span.start.line(), span.start.col()));
                        }
                        break None;
                    }
                    let text = match &ev {
                        Event::Scalar(text, ..) => Some(text.to_string()),
                        _ => None,
                    };
                    let node = self.node(ev, span, depth + 1)?;
                    last = last.max(node.last_line);
                    items.push(SeqItem { text, node });
                };
                Ok(located(last, Kind::Seq { flow, items, close }))
            }
            Event::MappingStart(..) => {
                let flow = span.end.index() > span.start.index();
                let mut last = line;
                let mut entries = Vec::new();
                let close = loop {
                    let (ev, key_span) = self.next()?;
                    if matches!(ev, Event::MappingEnd) {
                        if flow {
                            last = last.max(key_span.start.line());
                            break Some((key_span.start.line(), key_span.start.col()));
                        }
                        break None;
                    }
                    let key = match &ev {
                        Event::Scalar(text, ..) => text.to_string(),
                        _ => String::new(),
                    };
                    let key_node = self.node(ev, key_span, depth + 1)?;
                    let (ev, span) = self.next()?;
                    let value = self.node(ev, span, depth + 1)?;
                    last = last.max(value.last_line).max(key_node.last_line);
                    entries.push(OutlineEntry {
                        key,
                        line: key_span.start.line(),
                        col: key_span.start.col(),
                        key_end_col: key_span.end.col(),
                        value,
                    });
                };
                Ok(located(
                    last,
                    Kind::Map {
                        flow,
                        entries,
                        close,
                    },
                ))
            }
            _ => Err(EditError::syntax(line, "unexpected YAML event")),
        }
    }

    /// The last line of a literal or folded block scalar: its span ends
    /// where the next token starts, past the blank lines (and comments)
    /// that follow it, so its content's lines are counted instead: those
    /// indented at least as far as its first one, and blank ones between.
    fn block_scalar_end(&self, span: &Span) -> usize {
        let first = span.start.line();
        let indent = span.start.col();
        let mut last = first;
        for n in first..=span.end.line().max(first) {
            let Some(text) = self.lines.get(n - 1) else {
                break;
            };
            if text.trim().is_empty() {
                continue;
            }
            let own = text.chars().take_while(|c| *c == ' ').count();
            if own < indent && n > first {
                break;
            }
            last = n;
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_know_their_lines() {
        let text = "# head\nmcp_servers:\n  a:\n    command: x   # c\n    args: [1,\n      2]\n    # inner\n  b: {url: \"http://x\"}\n  c:\n    env:\n      K: |\n        one\n        two\n\n    # after c\nskills: {}\n";
        let root = outline(text).unwrap().unwrap();
        let top = root.entries().unwrap();
        assert_eq!(top[0].key, "mcp_servers");
        let servers = top[0].value.entries().unwrap();
        let lines: Vec<_> = servers
            .iter()
            .map(|e| (e.key.as_str(), e.line, e.col, e.value.last_line))
            .collect();
        assert_eq!(lines, [("a", 3, 2, 6), ("b", 8, 2, 8), ("c", 9, 2, 13)]);
        assert!(matches!(
            top[1].value.kind,
            Kind::Map {
                flow: true,
                close: Some((16, 9)),
                ..
            }
        ));
    }

    #[test]
    fn empty_and_null_values() {
        let root = outline("a:\nb: ~\n").unwrap().unwrap();
        let e = root.entries().unwrap();
        assert!(matches!(e[0].value.kind, Kind::Null { written: false }));
        assert!(matches!(e[1].value.kind, Kind::Null { written: true }));
        assert!(outline("# only a comment\n").unwrap().is_none());
        assert!(outline("").unwrap().is_none());
    }

    #[test]
    fn syntax_errors_name_their_line() {
        let e = outline("a:\n  b: [1\nc: 2\n").unwrap_err();
        assert!(matches!(e, EditError::Syntax { .. }), "{e}");
    }
}
