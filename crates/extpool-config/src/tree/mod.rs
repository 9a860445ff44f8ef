//! A located document tree: every value and every mapping key knows the line
//! and column it came from.
//!
//! YAML, JSON (with comments) and TOML files are all parsed into this one
//! tree, and the typed model is deserialized from it (see [`crate::de`]).
//! That is what lets every error, from a syntax slip to an unknown key or a
//! server name that breaks the naming rule, point at `file:line:column`.

mod emit;
mod json;
mod toml;
mod yaml;

pub use emit::{to_yaml, yaml_string};

pub use json::{JsonDocument, parse_json, parse_json_document};
pub use toml::parse_toml;
pub use yaml::parse_yaml;

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

/// A position in a file: 1-based line and 1-based column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// Line, counting from 1.
    pub line: usize,
    /// Column, counting from 1, in characters.
    pub column: usize,
}

impl Pos {
    /// A position from 1-based line and column.
    pub fn new(line: usize, column: usize) -> Self {
        Self { line, column }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One value of the tree with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Where the value starts.
    pub pos: Pos,
    /// The value.
    pub value: Value,
}

/// A value: scalars keep the text they were written as.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or an empty YAML value.
    Null,
    /// `true` / `false`; the text as written.
    Bool(bool, String),
    /// An integer; the text as written (so `args: [--port, 8080]` stays `8080`).
    Int(i64, String),
    /// A floating-point number; the text as written (so `1.10` stays `1.10`).
    Float(f64, String),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping in document order. Keys are unique (duplicates are a parse error).
    Map(Vec<Entry>),
}

/// One key of a mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key, as a string.
    pub key: String,
    /// Where the key is written.
    pub key_pos: Pos,
    /// The value.
    pub value: Node,
}

impl Value {
    /// A word for the kind of value, for messages ("a string", "a mapping").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(..) => "a boolean",
            Value::Int(..) => "an integer",
            Value::Float(..) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// A node.
    pub fn new(pos: Pos, value: Value) -> Self {
        Self { pos, value }
    }

    /// The entries when this is a mapping.
    pub fn as_map(&self) -> Option<&[Entry]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The string when this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The entry for `key` when this is a mapping.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.as_map()?.iter().find(|e| e.key == key)
    }

    /// The entries of a mapping by key, to look many keys up in constant
    /// time each (empty when this is not a mapping).
    pub fn keys(&self) -> HashMap<&str, &Entry> {
        self.as_map()
            .unwrap_or_default()
            .iter()
            .map(|e| (e.key.as_str(), e))
            .collect()
    }

    /// The value for `key` when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    /// Follows a path of mapping keys.
    pub fn at(&self, path: &[&str]) -> Option<&Node> {
        let mut node = self;
        for key in path {
            node = node.get(key)?;
        }
        Some(node)
    }

    /// Position of the value at `path`, or of the deepest ancestor that exists.
    pub fn pos_of(&self, path: &[&str]) -> Pos {
        let mut node = self;
        for key in path {
            match node.entry(key) {
                Some(entry) => node = &entry.value,
                None => break,
            }
        }
        node.pos
    }

    /// Position of the *key* `path`'s last element (the value's position for the root).
    pub fn key_pos_of(&self, path: &[&str]) -> Pos {
        let Some((last, parents)) = path.split_last() else {
            return self.pos;
        };
        match self.at(parents).and_then(|p| p.entry(last)) {
            Some(entry) => entry.key_pos,
            None => self.pos_of(parents),
        }
    }
}

/// A syntax error found while building the tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct SyntaxError {
    /// Where the parser stopped.
    pub pos: Pos,
    /// What it expected or found.
    pub message: String,
}

impl SyntaxError {
    pub(crate) fn new(pos: Pos, message: impl Into<String>) -> Self {
        Self {
            pos,
            message: message.into(),
        }
    }
}

/// Converts byte offsets into positions.
///
/// Parsers ask for positions in increasing order, so the last answer is
/// kept and the next column is counted from there: a one-line document of
/// many values (minified JSON) costs linear time, not quadratic.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// The last offset asked about, its line and its column.
    last: Cell<(usize, usize, usize)>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self {
            text,
            starts,
            last: Cell::new((0, 1, 1)),
        }
    }

    /// The position of byte `offset` (clamped to the text).
    pub(crate) fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        let (last_offset, last_line, last_column) = self.last.get();
        let (from, column) = if last_line == line && last_offset <= offset {
            (last_offset, last_column)
        } else {
            (start, 1)
        };
        let column = column
            + self
                .text
                .get(from..offset)
                .map_or(offset - from, |s| s.chars().count());
        self.last.set((offset, line, column));
        Pos::new(line, column)
    }
}

/// The entries of a mapping being parsed, refusing a key seen before (in
/// constant time per key).
#[derive(Default)]
pub(crate) struct UniqueEntries {
    entries: Vec<Entry>,
    seen: HashMap<String, Pos>,
}

impl UniqueEntries {
    /// Adds `entry`, or fails on a key that is already there.
    pub(crate) fn push(&mut self, entry: Entry) -> Result<(), SyntaxError> {
        if let Some(first) = self.seen.get(&entry.key) {
            return Err(SyntaxError::new(
                entry.key_pos,
                format!(
                    "duplicate key {:?} (first defined at line {})",
                    entry.key, first.line
                ),
            ));
        }
        self.seen.insert(entry.key.clone(), entry.key_pos);
        self.entries.push(entry);
        Ok(())
    }

    /// The entries, in document order.
    pub(crate) fn into_entries(self) -> Vec<Entry> {
        self.entries
    }
}

/// Why a document nested deeper than [`extpool_core::json::MAX_DEPTH`]
/// levels is refused (JSON and YAML alike: both become JSON).
fn too_deep() -> String {
    format!(
        "nesting is too deep: more than {} levels of lists and mappings",
        extpool_core::json::MAX_DEPTH
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_counts_characters() {
        let idx = LineIndex::new("ab\ncé d\n");
        assert_eq!(idx.pos(0), Pos::new(1, 1));
        assert_eq!(idx.pos(3), Pos::new(2, 1));
        // "cé " is 4 bytes, 3 characters.
        assert_eq!(idx.pos(7), Pos::new(2, 4));
        assert_eq!(idx.pos(100), Pos::new(3, 1));
        // Asked out of order, the answer is the same.
        assert_eq!(idx.pos(7), Pos::new(2, 4));
        assert_eq!(idx.pos(4), Pos::new(2, 2));
        assert_eq!(idx.pos(1), Pos::new(1, 2));
    }
}
