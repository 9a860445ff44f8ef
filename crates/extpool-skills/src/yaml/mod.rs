//! A small YAML tree for frontmatter, built from `saphyr-parser` events.
//!
//! Why not deserialize straight into a struct: strict mode must judge
//! frontmatter the way the reference validator (strictyaml) does — every
//! scalar is a string as written, and flow collections, anchors, aliases,
//! tags and duplicate keys are refused — while lenient mode must accept all
//! of them. So the tree keeps each scalar's source text and style, every
//! key's line, and a list of [`Quirk`]s for strict mode to turn into errors.

mod plain;
mod simple;

pub use plain::{PlainScalar, resolve_plain_scalar};

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::Value;

/// A YAML node with the line (1-based, relative to the YAML text) it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A scalar as written (no type resolution).
    Scalar {
        /// The scalar's text.
        value: String,
        /// Plain, quoted or block.
        style: ScalarStyle,
        /// Line of the scalar.
        line: usize,
    },
    /// A sequence.
    Seq {
        /// The items.
        items: Vec<Node>,
        /// Line where it starts.
        line: usize,
    },
    /// A mapping, in source order (duplicates kept; readers take the last).
    Map {
        /// The entries.
        entries: Vec<Entry>,
        /// Line where it starts.
        line: usize,
    },
}

/// One mapping entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The key's text.
    pub key: String,
    /// Line of the key.
    pub line: usize,
    /// The value.
    pub value: Node,
}

/// YAML that parses but that strictyaml refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Quirk {
    /// A `[...]` or `{...}` collection.
    Flow { line: usize },
    /// An `&anchor`.
    Anchor { line: usize },
    /// A `*alias`.
    Alias { line: usize },
    /// A `!tag`.
    Tag { line: usize },
    /// The same key twice in one mapping.
    DuplicateKey { key: String, line: usize },
    /// A mapping key that is not a scalar.
    ComplexKey { line: usize },
}

impl Quirk {
    /// The line of the quirk.
    pub fn line(&self) -> usize {
        match self {
            Self::Flow { line }
            | Self::Anchor { line }
            | Self::Alias { line }
            | Self::Tag { line }
            | Self::DuplicateKey { line, .. }
            | Self::ComplexKey { line } => *line,
        }
    }

    /// Why strictyaml refuses it.
    pub fn message(&self) -> String {
        match self {
            Self::Flow { .. } => {
                "flow style ([...] or {...}) is not allowed; use block style or quote the value"
                    .into()
            }
            Self::Anchor { .. } => "anchors (&name) are not allowed".into(),
            Self::Alias { .. } => "aliases (*name) are not allowed".into(),
            Self::Tag { .. } => "tags (!tag) are not allowed".into(),
            Self::DuplicateKey { key, .. } => format!("duplicate key '{key}'"),
            Self::ComplexKey { .. } => "mapping keys must be scalars".into(),
        }
    }
}

/// A parsed document: its root node (`None` when empty) and its quirks.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Doc {
    /// The first document's root node.
    pub root: Option<Node>,
    /// Strict-mode problems, in source order.
    pub quirks: Vec<Quirk>,
}

/// A YAML syntax error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlError {
    /// 1-based line, relative to the YAML text.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The parser's message.
    pub message: String,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (column {})", self.message, self.column)
    }
}

enum Frame {
    Seq {
        items: Vec<Node>,
        line: usize,
        anchor: usize,
    },
    Map {
        entries: Vec<Entry>,
        line: usize,
        anchor: usize,
        key: Option<(String, usize)>,
    },
}

struct Builder<'t> {
    text: &'t str,
    ascii: bool,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    quirks: Vec<Quirk>,
    root: Option<Node>,
}

impl Builder<'_> {
    fn char_at(&self, index: usize) -> Option<char> {
        if self.ascii {
            self.text.as_bytes().get(index).map(|&b| b as char)
        } else {
            self.text.chars().nth(index)
        }
    }

    fn is_flow(&self, span: Span) -> bool {
        matches!(self.char_at(span.start.index()), Some('[' | '{'))
    }

    fn complete(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => {
                    let (text, line) = match node {
                        Node::Scalar { value, line, .. } => (value, line),
                        other => {
                            let line = node_line(&other);
                            self.quirks.push(Quirk::ComplexKey { line });
                            (format!("{:?}", to_json(&other)), line)
                        }
                    };
                    *key = Some((text, line));
                }
                Some((k, line)) => {
                    if entries.iter().any(|e| e.key == k) {
                        self.quirks.push(Quirk::DuplicateKey {
                            key: k.clone(),
                            line,
                        });
                    }
                    entries.push(Entry {
                        key: k,
                        line,
                        value: node,
                    });
                }
            },
        }
    }

    fn on_event(&mut self, event: Event<'_>, span: Span) {
        let line = span.start.line();
        match event {
            Event::Scalar(value, style, anchor, tag) => {
                if anchor > 0 {
                    self.quirks.push(Quirk::Anchor { line });
                }
                if tag.is_some() {
                    self.quirks.push(Quirk::Tag { line });
                }
                self.complete(
                    Node::Scalar {
                        value: value.into_owned(),
                        style,
                        line,
                    },
                    anchor,
                );
            }
            Event::Alias(id) => {
                self.quirks.push(Quirk::Alias { line });
                let node = self.anchors.get(&id).cloned().unwrap_or(Node::Scalar {
                    value: String::new(),
                    style: ScalarStyle::Plain,
                    line,
                });
                self.complete(node, 0);
            }
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                if anchor > 0 {
                    self.quirks.push(Quirk::Anchor { line });
                }
                if tag.is_some() {
                    self.quirks.push(Quirk::Tag { line });
                }
                if self.is_flow(span) {
                    self.quirks.push(Quirk::Flow { line });
                }
                let is_seq = matches!(event, Event::SequenceStart(..));
                self.stack.push(if is_seq {
                    Frame::Seq {
                        items: Vec::new(),
                        line,
                        anchor,
                    }
                } else {
                    Frame::Map {
                        entries: Vec::new(),
                        line,
                        anchor,
                        key: None,
                    }
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Frame::Seq {
                        items,
                        line,
                        anchor,
                    }) => (Node::Seq { items, line }, anchor),
                    Some(Frame::Map {
                        entries,
                        line,
                        anchor,
                        ..
                    }) => (Node::Map { entries, line }, anchor),
                    None => return,
                };
                self.complete(node, anchor);
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd => {}
        }
    }
}

fn node_line(node: &Node) -> usize {
    match node {
        Node::Scalar { line, .. } | Node::Seq { line, .. } | Node::Map { line, .. } => *line,
    }
}

/// Parses YAML text (the first document only).
pub(crate) fn parse(text: &str) -> Result<Doc, YamlError> {
    match simple::parse(text) {
        Some(doc) => Ok(doc),
        None => parse_full(text),
    }
}

/// Parses with the full YAML parser.
fn parse_full(text: &str) -> Result<Doc, YamlError> {
    let mut b = Builder {
        text,
        ascii: text.is_ascii(),
        stack: Vec::new(),
        anchors: HashMap::new(),
        quirks: Vec::new(),
        root: None,
    };
    let mut documents = 0;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| YamlError {
            line: e.marker().line().max(1),
            column: e.marker().col() + 1,
            message: e.info().to_owned(),
        })?;
        if let Event::DocumentStart(_) = event {
            documents += 1;
        }
        if documents > 1 {
            break;
        }
        b.on_event(event, span);
    }
    Ok(Doc {
        root: b.root,
        quirks: b.quirks,
    })
}

impl Node {
    /// The line (relative to the YAML text) where the node starts.
    pub fn line(&self) -> usize {
        node_line(self)
    }

    /// The scalar text, strictyaml-style (every scalar is a string).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Scalar { value, .. } => Some(value),
            _ => None,
        }
    }

    /// The last entry with `key`, when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        match self {
            Self::Map { entries, .. } => entries.iter().rev().find(|e| e.key == key),
            _ => None,
        }
    }

    /// A plain-scalar boolean (`true`/`false` in any case).
    pub fn as_bool(&self) -> Option<bool> {
        match self.as_str()?.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    /// Converts to JSON with YAML 1.2 core-schema typing of plain scalars.
    pub fn to_json(&self) -> Value {
        to_json(self)
    }
}

fn to_json(node: &Node) -> Value {
    match node {
        Node::Scalar { value, style, .. } => {
            if *style == ScalarStyle::Plain {
                resolve_plain(value)
            } else {
                Value::String(value.clone())
            }
        }
        Node::Seq { items, .. } => Value::Array(items.iter().map(to_json).collect()),
        Node::Map { entries, .. } => {
            let mut map = serde_json::Map::new();
            for e in entries {
                map.insert(e.key.clone(), to_json(&e.value));
            }
            Value::Object(map)
        }
    }
}

/// A plain scalar as JSON, by the core schema ([`resolve_plain_scalar`]);
/// a float JSON cannot hold (`.inf`, `.nan`) stays the string it was.
fn resolve_plain(s: &str) -> Value {
    match resolve_plain_scalar(s) {
        PlainScalar::Null => Value::Null,
        PlainScalar::Bool(b) => Value::Bool(b),
        PlainScalar::Int(i) => Value::from(i),
        PlainScalar::Float(f) => serde_json::Number::from_f64(f)
            .map_or_else(|| Value::String(s.to_owned()), Value::Number),
        PlainScalar::Str => Value::String(s.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn root(text: &str) -> (Node, Vec<Quirk>) {
        let doc = parse(text).unwrap();
        (doc.root.unwrap(), doc.quirks)
    }

    #[test]
    fn scalars_keep_their_text_and_keys_their_lines() {
        let (node, quirks) = root("name: 123\ndescription: true\n\nlicense: ~\n");
        assert!(quirks.is_empty());
        assert_eq!(node.get("name").unwrap().value.as_str(), Some("123"));
        assert_eq!(
            node.get("description").unwrap().value.as_str(),
            Some("true")
        );
        assert_eq!(node.get("license").unwrap().line, 4);
        assert_eq!(
            node.to_json(),
            json!({"name": 123, "description": true, "license": null})
        );
    }

    #[test]
    fn block_scalars_and_nested_maps() {
        let (node, _) = root("description: |\n  a\n  b\nmetadata:\n  k: v\n  n:\n    d: e\n");
        assert_eq!(
            node.get("description").unwrap().value.as_str(),
            Some("a\nb\n")
        );
        assert_eq!(
            node.get("metadata").unwrap().value.to_json(),
            json!({"k": "v", "n": {"d": "e"}})
        );
    }

    #[test]
    fn strictyaml_quirks_are_reported() {
        let (_, q) = root("a: [x, y]\nb: {c: d}\n");
        assert_eq!(q, [Quirk::Flow { line: 1 }, Quirk::Flow { line: 2 }]);
        let (_, q) = root("a: &x v\nb: *x\n");
        assert_eq!(q, [Quirk::Anchor { line: 1 }, Quirk::Alias { line: 2 }]);
        let (_, q) = root("a: !!str v\n");
        assert_eq!(q, [Quirk::Tag { line: 1 }]);
        let (node, q) = root("a: 1\na: 2\n");
        assert_eq!(
            q,
            [Quirk::DuplicateKey {
                key: "a".into(),
                line: 2
            }]
        );
        assert_eq!(node.get("a").unwrap().value.as_str(), Some("2"));
        let (_, q) = root("a: '[not flow]'\nb: x[y]\n");
        assert!(q.is_empty(), "{q:?}");
    }

    #[test]
    fn syntax_errors_carry_a_line() {
        let e = parse("name: x\ndescription: a: b\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("name: x\n  bad: indent\n- item\n").unwrap_err();
        assert!(e.line >= 2, "{e:?}");
    }

    #[test]
    fn empty_and_comment_only_documents_have_no_root() {
        assert_eq!(parse("").unwrap().root, None);
        assert_eq!(parse("# only a comment\n").unwrap().root, None);
    }

    #[test]
    fn plain_scalar_resolution() {
        assert_eq!(resolve_plain("-12"), json!(-12));
        assert_eq!(resolve_plain("0x1f"), json!(31));
        assert_eq!(resolve_plain("1.5"), json!(1.5));
        assert_eq!(resolve_plain("1e3"), json!(1000.0));
        assert_eq!(resolve_plain("yes"), json!("yes"));
        assert_eq!(resolve_plain("1.2.3"), json!("1.2.3"));
        assert_eq!(resolve_plain("-"), json!("-"));
        assert_eq!(resolve_plain(".inf"), json!(".inf"));
    }
}
