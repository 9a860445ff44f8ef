//! YAML → located tree, on `saphyr-parser`'s event stream (YAML 1.2).
//!
//! Plain scalars are resolved with the YAML 1.2 core schema (null, booleans,
//! integers, floats); quoted scalars are always strings. Anchors and aliases
//! work; the total number of nodes and the nesting depth are bounded so a
//! hostile file cannot exhaust memory or the stack.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};

use super::{Entry, Node, Pos, SyntaxError, UniqueEntries, Value};

const MAX_NODES: usize = 1_000_000;

/// Parses one YAML document. An empty document is [`Value::Null`].
pub fn parse_yaml(text: &str) -> Result<Node, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut builder = Builder {
        parser: Parser::new_from_str(text),
        anchors: HashMap::new(),
        nodes: 0,
    };
    builder.document()
}

struct Builder<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
}

fn pos_of(span: &Span) -> Pos {
    Pos::new(span.start.line(), span.start.col() + 1)
}

fn scan_error(e: &ScanError) -> SyntaxError {
    let m = e.marker();
    SyntaxError::new(Pos::new(m.line(), m.col() + 1), e.info().to_owned())
}

impl<'a> Builder<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Span), SyntaxError> {
        match self.parser.next_event() {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => Err(scan_error(&e)),
            None => Err(SyntaxError::new(Pos::new(1, 1), "unexpected end of input")),
        }
    }

    fn document(&mut self) -> Result<Node, SyntaxError> {
        // StreamStart, then DocumentStart or StreamEnd.
        loop {
            let (ev, span) = self.next()?;
            match ev {
                Event::StreamStart | Event::Nothing => continue,
                Event::StreamEnd => return Ok(Node::new(Pos::new(1, 1), Value::Null)),
                Event::DocumentStart(_) => break,
                _ => return Err(SyntaxError::new(pos_of(&span), "expected a YAML document")),
            }
        }
        let (ev, span) = self.next()?;
        let root = match ev {
            Event::DocumentEnd => Node::new(pos_of(&span), Value::Null),
            ev => {
                let node = self.node(ev, span, 0)?;
                let (end, span) = self.next()?;
                if !matches!(end, Event::DocumentEnd) {
                    return Err(SyntaxError::new(pos_of(&span), "expected end of document"));
                }
                node
            }
        };
        let (ev, span) = self.next()?;
        match ev {
            Event::StreamEnd => Ok(root),
            _ => Err(SyntaxError::new(
                pos_of(&span),
                "only one YAML document is allowed per file (found a second `---`)",
            )),
        }
    }

    fn count(&mut self, pos: Pos, n: usize) -> Result<(), SyntaxError> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            return Err(SyntaxError::new(
                pos,
                "document too large (too many values)",
            ));
        }
        Ok(())
    }

    fn node(&mut self, ev: Event<'a>, span: Span, depth: usize) -> Result<Node, SyntaxError> {
        let pos = pos_of(&span);
        // `depth` collections hold this node; one more when it is one.
        let collection = matches!(ev, Event::SequenceStart(..) | Event::MappingStart(..));
        if collection && extpool_core::json::too_deep(depth + 1) {
            return Err(SyntaxError::new(pos, super::too_deep()));
        }
        self.count(pos, 1)?;
        let (node, anchor) = match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let forced_str = tag.as_ref().is_some_and(|t| t.suffix == "str");
                let value = if style == ScalarStyle::Plain && !forced_str {
                    resolve_plain(&text)
                } else {
                    Value::Str(text.into_owned())
                };
                (Node::new(pos, value), anchor)
            }
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(ev, span, depth + 1)?);
                }
                (Node::new(pos, Value::Seq(items)), anchor)
            }
            Event::MappingStart(anchor, _) => {
                let mut entries = UniqueEntries::default();
                loop {
                    let (ev, key_span) = self.next()?;
                    if matches!(ev, Event::MappingEnd) {
                        break;
                    }
                    let key_pos = pos_of(&key_span);
                    let key_node = self.node(ev, key_span, depth + 1)?;
                    let key = match key_node.value {
                        Value::Str(s) => s,
                        Value::Null => String::new(),
                        Value::Bool(_, raw) | Value::Int(_, raw) | Value::Float(_, raw) => raw,
                        Value::Seq(_) | Value::Map(_) => {
                            return Err(SyntaxError::new(
                                key_pos,
                                "mapping keys must be plain strings, not collections",
                            ));
                        }
                    };
                    let (ev, span) = self.next()?;
                    let value = self.node(ev, span, depth + 1)?;
                    entries.push(Entry {
                        key,
                        key_pos,
                        value,
                    })?;
                }
                (Node::new(pos, Value::Map(entries.into_entries())), anchor)
            }
            Event::Alias(id) => {
                let Some(target) = self.anchors.get(&id).cloned() else {
                    return Err(SyntaxError::new(pos, "alias to an unknown anchor"));
                };
                let size = count_nodes(&target);
                self.count(pos, size)?;
                return Ok(Node::new(pos, target.value));
            }
            _ => return Err(SyntaxError::new(pos, "unexpected YAML event")),
        };
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        Ok(node)
    }
}

fn count_nodes(node: &Node) -> usize {
    match &node.value {
        Value::Seq(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        Value::Map(entries) => 1 + entries.iter().map(|e| count_nodes(&e.value)).sum::<usize>(),
        _ => 1,
    }
}

/// A plain scalar by YAML 1.2's core schema, the one rule of every YAML
/// reader ([`extpool_skills::resolve_plain_scalar`]), keeping its text.
pub(super) fn resolve_plain(text: &str) -> Value {
    use extpool_skills::PlainScalar;
    match extpool_skills::resolve_plain_scalar(text) {
        PlainScalar::Null => Value::Null,
        PlainScalar::Bool(b) => Value::Bool(b, text.to_owned()),
        PlainScalar::Int(n) => Value::Int(n, text.to_owned()),
        PlainScalar::Float(f) => Value::Float(f, text.to_owned()),
        PlainScalar::Str => Value::Str(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_of_keys_and_values() {
        let doc = parse_yaml("a: 1\nb:\n  c: [x, 'y']\n").unwrap();
        let b = doc.entry("b").unwrap();
        assert_eq!(b.key_pos, Pos::new(2, 1));
        let c = b.value.entry("c").unwrap();
        assert_eq!(c.key_pos, Pos::new(3, 3));
        let Value::Seq(items) = &c.value.value else {
            panic!("not a seq")
        };
        assert_eq!(items[1].pos, Pos::new(3, 10));
        assert_eq!(items[1].value, Value::Str("y".into()));
    }

    #[test]
    fn core_schema_resolution() {
        let doc =
            parse_yaml("a: 8080\nb: '8080'\nc: 1.10\nd: ~\ne: true\nf: 0x1F\ng: 1e3\nh: v1.2")
                .unwrap();
        assert_eq!(doc.get("a").unwrap().value, Value::Int(8080, "8080".into()));
        assert_eq!(doc.get("b").unwrap().value, Value::Str("8080".into()));
        assert!(matches!(doc.get("c").unwrap().value, Value::Float(_, ref r) if r == "1.10"));
        assert_eq!(doc.get("d").unwrap().value, Value::Null);
        assert!(matches!(doc.get("e").unwrap().value, Value::Bool(true, _)));
        assert!(matches!(doc.get("f").unwrap().value, Value::Int(31, _)));
        assert!(matches!(doc.get("g").unwrap().value, Value::Float(..)));
        assert_eq!(doc.get("h").unwrap().value, Value::Str("v1.2".into()));
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let e = parse_yaml("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.pos, Pos::new(3, 1));
        assert!(e.message.contains("duplicate key \"a\""), "{e}");
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse_yaml("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.pos.line >= 1, "{e:?}");
        let e = parse_yaml("a: 1\n  b: 2\n").unwrap_err();
        assert_eq!(e.pos.line, 2, "{e:?}");
    }

    #[test]
    fn aliases_are_expanded_and_bounded() {
        let doc = parse_yaml("base: &b {x: 1}\nother: *b\n").unwrap();
        assert_eq!(
            doc.at(&["other", "x"]).unwrap().value,
            Value::Int(1, "1".into())
        );
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n",
                p = i - 1
            ));
        }
        let e = parse_yaml(&bomb).unwrap_err();
        assert!(e.message.contains("too large"), "{e}");
    }

    #[test]
    fn empty_and_multi_documents() {
        assert_eq!(parse_yaml("").unwrap().value, Value::Null);
        assert_eq!(parse_yaml("# only a comment\n").unwrap().value, Value::Null);
        let e = parse_yaml("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(e.message.contains("one YAML document"), "{e}");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = "[".repeat(500) + &"]".repeat(500);
        let e = parse_yaml(&text).unwrap_err();
        assert!(
            e.message.contains("deep") || e.message.contains("recursion limit"),
            "{e}"
        );
        // As deep as JSON can be read, and not one level more.
        let max = extpool_core::json::MAX_DEPTH;
        let nested = |n: usize| format!("a: {}1{}", "[".repeat(n - 1), "]".repeat(n - 1));
        assert!(parse_yaml(&nested(max)).is_ok());
        let e = parse_yaml(&nested(max + 1)).unwrap_err();
        assert!(e.message.contains("more than 127 levels"), "{e}");
        assert_eq!(e.pos, Pos::new(1, 3 + max), "{e}");
    }
}
