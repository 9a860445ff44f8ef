//! Values written as block YAML, the way `extpool.yaml` is written by
//! hand: `key: value` lines in the order the value's fields are declared,
//! nested mappings indented by two spaces, list items (`- x`) at their
//! key's indentation. A string is plain where this crate's reader (and a
//! YAML 1.1 reader) would read it back as the same string, single-quoted
//! where it holds no control character, else double-quoted with escapes.
//! What [`to_yaml`] writes, [`super::parse_yaml`] reads back as the same
//! value (the unit tests check both ways).

use serde::Serialize;

use super::{Entry, Node, Value};

/// `value` as a YAML document (no `---`; a line break at the end). The
/// value is serialized as JSON first (which keeps its fields' order) and
/// read into this crate's tree; only a value nested deeper than JSON can
/// be read fails.
pub fn to_yaml<T: Serialize + ?Sized>(value: &T) -> Result<String, String> {
    let json = serde_json::to_string(value).map_err(|e| e.to_string())?;
    let node = super::parse_json(&json).map_err(|e| e.to_string())?;
    Ok(node_to_yaml(&node))
}

/// `node` as a YAML document.
fn node_to_yaml(node: &Node) -> String {
    let mut out = String::new();
    match &node.value {
        Value::Map(entries) if !entries.is_empty() => mapping(&mut out, entries, 0),
        Value::Seq(items) if !items.is_empty() => sequence(&mut out, items, 0),
        scalar => {
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
    out
}

fn indent(out: &mut String, by: usize) {
    out.extend(std::iter::repeat_n(' ', by));
}

/// A scalar, or an empty collection, on one line.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b, _) => b.to_string(),
        Value::Int(_, text) | Value::Float(_, text) => text.clone(),
        Value::Str(s) => string(s),
        Value::Seq(_) => "[]".into(),
        Value::Map(_) => "{}".into(),
    }
}

fn mapping(out: &mut String, entries: &[Entry], at: usize) {
    for (i, entry) in entries.iter().enumerate() {
        // The first key of a list item's mapping follows its dash.
        if i > 0 || !out.ends_with("- ") {
            indent(out, at);
        }
        out.push_str(&string(&entry.key));
        out.push(':');
        match &entry.value.value {
            Value::Map(inner) if !inner.is_empty() => {
                out.push('\n');
                mapping(out, inner, at + 2);
            }
            Value::Seq(items) if !items.is_empty() => {
                out.push('\n');
                sequence(out, items, at);
            }
            scalar => {
                out.push(' ');
                out.push_str(&inline(scalar));
                out.push('\n');
            }
        }
    }
}

fn sequence(out: &mut String, items: &[Node], at: usize) {
    for item in items {
        if !out.ends_with("- ") {
            indent(out, at);
        }
        out.push_str("- ");
        match &item.value {
            Value::Map(entries) if !entries.is_empty() => mapping(out, entries, at + 2),
            Value::Seq(inner) if !inner.is_empty() => sequence(out, inner, at + 2),
            scalar => {
                out.push_str(&inline(scalar));
                out.push('\n');
            }
        }
    }
}

/// Characters a YAML reader takes as a line break or cannot read as
/// written: controls (tab included, for clarity), DEL, C1 controls, the
/// Unicode line and paragraph separators and the byte order mark.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// `s` as a YAML scalar that reads back as the string `s` (plain where
/// that is safe, else quoted): how a key or value is written.
pub fn yaml_string(s: &str) -> String {
    string(s)
}

/// `s` as a scalar that reads back as the string `s`.
fn string(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_owned()
    } else if !s.chars().any(needs_escape) {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        double_quoted(s)
    }
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Words YAML 1.1 readers take for booleans: quoted, so no reader of the
/// file sees anything but a string.
const YAML_11_WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off"];

/// Whether `s` can stand unquoted: it reads back as this very string.
fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    let second = s.chars().nth(1);
    let indicator_start = match first {
        // `-x`, `?x`, `:x` are plain; `- x`, `-` alone are not.
        '-' | '?' | ':' => second.is_none_or(|c| c == ' '),
        ',' | '[' | ']' | '{' | '}' | '#' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%'
        | '@' | '`' => true,
        _ => false,
    };
    let number_like = first.is_ascii_digit()
        || (matches!(first, '+' | '-' | '.')
            && second.is_some_and(|c| c.is_ascii_digit() || c == '.'));
    !indicator_start
        && !number_like
        && !s.starts_with("---")
        && !s.starts_with("...")
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.ends_with(':')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.chars().any(needs_escape)
        && !YAML_11_WORDS.iter().any(|w| w.eq_ignore_ascii_case(s))
        && matches!(super::yaml::resolve_plain(s), Value::Str(_))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// `text` read back, as JSON.
    fn read_back(text: &str) -> serde_json::Value {
        let node = super::super::parse_yaml(text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
        crate::de::from_node(&node).unwrap()
    }

    fn yaml(v: &serde_json::Value) -> String {
        to_yaml(v).unwrap()
    }

    #[test]
    fn written_as_by_hand_in_field_order() {
        #[derive(Serialize)]
        struct Server {
            command: &'static str,
            args: Vec<&'static str>,
            env: std::collections::BTreeMap<&'static str, &'static str>,
            url: &'static str,
            tools: Vec<serde_json::Value>,
            empty: serde_json::Value,
            none: Vec<u8>,
            n: f64,
        }
        let server = Server {
            command: "npx",
            args: vec![
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/home/user",
            ],
            env: [("KEY", "${KEY}")].into(),
            url: "https://example.com/mcp",
            tools: vec![json!({"name": "a", "lazy": true}), json!({})],
            empty: json!({}),
            none: vec![],
            n: 1.5,
        };
        let text = to_yaml(&server).unwrap();
        assert_eq!(
            text,
            "command: npx\nargs:\n- -y\n- '@modelcontextprotocol/server-filesystem'\n- /home/user\n\
             env:\n  KEY: ${KEY}\nurl: https://example.com/mcp\ntools:\n- lazy: true\n  name: a\n\
             - {}\nempty: {}\nnone: []\n'n': 1.5\n"
        );
        assert_eq!(read_back(&text), serde_json::to_value(&server).unwrap());
        assert_eq!(yaml(&json!({})), "{}\n");
        assert_eq!(yaml(&json!([[1, [2]], []])), "- - 1\n  - - 2\n- []\n");
    }

    #[test]
    fn strings_that_would_read_as_something_else_are_quoted() {
        for s in [
            "", "true", "null", "~", "123", "1.5", "-1", ".5", "0x1f", ".inf", "yes", "No", "on",
            "-", "- x", "a: b", "a #b", "key:", " lead", "trail ", "#c", "*a", "&a", "!t", "'q'",
            "\"q\"", "---", "...", "[x]", "{x}", "%x", "@x", "`x`", "|", ">",
        ] {
            let text = yaml(&json!({ "k": s }));
            assert_ne!(text, format!("k: {s}\n"), "{s:?} was written plain");
            assert_eq!(read_back(&text), json!({ "k": s }), "{text}");
        }
        assert_eq!(string("it's"), "it's");
        assert_eq!(string("'it''s'"), "'''it''''s'''");
        assert_eq!(string("a\nb\u{7f}"), "\"a\\nb\\u007F\"");
    }

    fn value() -> impl Strategy<Value = serde_json::Value> {
        let text = prop::collection::vec(any::<char>(), 0..12)
            .prop_map(|c| c.into_iter().collect::<String>());
        use serde_json::Value as J;
        let leaf = prop_oneof![
            Just(J::Null),
            any::<bool>().prop_map(J::Bool),
            any::<i64>().prop_map(J::from),
            text.clone().prop_map(J::String),
            "[ -~]{0,10}".prop_map(J::String),
        ];
        leaf.prop_recursive(4, 40, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(J::Array),
                prop::collection::btree_map("[ -~]{0,8}|\\PC{0,4}", inner, 0..5)
                    .prop_map(|m| J::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn what_is_written_reads_back_the_same(v in value()) {
            let text = yaml(&v);
            prop_assert_eq!(read_back(&text), v, "{}", text);
        }
    }
}
