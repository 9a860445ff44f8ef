//! JSON as the hosts read it: strict (`JSON.parse`, serde_json), parsed
//! into extpool-config's located tree so every finding has a line and
//! every object keeps its keys in document order.

use std::path::Path;

#[cfg(test)]
use extpool_config::tree::Value;
use extpool_config::tree::{Node, parse_json_document};

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx;

/// Why a text is not strict JSON, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl JsonError {
    /// As an error diagnostic of `kind` about `path`.
    pub fn diagnostic(&self, kind: DiagnosticKind, path: &Path) -> Diagnostic {
        Diagnostic::error(kind, path, format!("not valid JSON: {}", self.message)).at(self.line)
    }
}

/// Parses strict JSON: a comment or a trailing comma (which JSONC allows
/// and the hosts' parsers refuse) is an error.
pub(crate) fn parse(text: &str) -> Result<Node, JsonError> {
    let doc = parse_json_document(text).map_err(|e| JsonError {
        line: e.pos.line,
        message: e.message,
    })?;
    if let Some(pos) = doc.comment {
        return Err(JsonError {
            line: pos.line,
            message: "comments are not JSON".into(),
        });
    }
    if let Some(pos) = doc.trailing_comma {
        return Err(JsonError {
            line: pos.line,
            message: "trailing comma".into(),
        });
    }
    Ok(doc.root)
}

/// Reads and parses a JSON file of at most `limit` bytes; a failure is one
/// located diagnostic of `kind`.
pub(crate) fn read(path: &Path, limit: u64, kind: DiagnosticKind) -> Result<Node, Diagnostic> {
    let text = fsx::read_text(path, limit).map_err(|e| e.diagnostic(kind, path))?;
    parse(&text).map_err(|e| e.diagnostic(kind, path))
}

/// The string at `key` of an object node.
pub(crate) fn str_at<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.get(key).and_then(Node::as_str)
}

/// A node as serde JSON (tests compare trees with it).
#[cfg(test)]
pub(crate) fn to_json(node: &Node) -> serde_json::Value {
    match &node.value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b, _) => serde_json::Value::Bool(*b),
        Value::Int(i, _) => serde_json::Value::from(*i),
        Value::Float(f, _) => serde_json::Number::from_f64(*f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::Str(s) => serde_json::Value::String(s.clone()),
        Value::Seq(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Value::Map(entries) => serde_json::Value::Object(
            entries
                .iter()
                .map(|e| (e.key.clone(), to_json(&e.value)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_json_is_located() {
        assert!(parse(r#"{"a": [1, 2]}"#).is_ok());
        let e = parse("{\n  \"a\": 1,\n}").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
        let e = parse("{\n// x\n\"a\": 1}").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("{\n\"a\": }").unwrap_err();
        assert_eq!(e.line, 2);
    }
}
