//! A fast path for the frontmatter most skills have: `key: value` lines and
//! one level of `key:` + indented `key: value` lines (`metadata`), with plain
//! or escape-free quoted scalars.
//!
//! Anything else — lists, block scalars, multi-line values, flow style,
//! anchors, tags, comments after values, tabs, duplicate keys, odd keys or
//! values — returns `None` and the full parser decides. Within the subset
//! the result is exactly what the full parser builds (the unit tests check
//! both on the same inputs), so this only saves time: discovery parses ten
//! thousand of these at startup.

use saphyr_parser::ScalarStyle;

use super::{Doc, Entry, Node};

/// Characters that may not start a plain scalar in this subset (YAML
/// indicators, quotes handled separately).
const INDICATORS: &[u8] = b"-?:,[]{}#&*!|>%@`";

fn is_key(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
}

/// `key:` or `key: value` (value with its leading spaces removed).
fn split_key(content: &str) -> Option<(&str, Option<&str>)> {
    let colon = content.find(':')?;
    let key = &content[..colon];
    if !is_key(key) {
        return None;
    }
    let rest = &content[colon + 1..];
    if rest.is_empty() {
        return Some((key, None));
    }
    let value = rest.strip_prefix(' ')?.trim_start_matches(' ');
    Some((key, (!value.is_empty()).then_some(value)))
}

fn scalar(v: &str, line: usize) -> Option<Node> {
    let node = |value: &str, style| Node::Scalar {
        value: value.to_owned(),
        style,
        line,
    };
    if let Some(inner) = v.strip_prefix('"') {
        let inner = inner.strip_suffix('"')?;
        return (!inner.contains(['"', '\\'])).then(|| node(inner, ScalarStyle::DoubleQuoted));
    }
    if let Some(inner) = v.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'')?;
        return (!inner.contains('\'')).then(|| node(inner, ScalarStyle::SingleQuoted));
    }
    let first = *v.as_bytes().first()?;
    if INDICATORS.contains(&first) || v.contains(": ") || v.contains(" #") || v.ends_with(':') {
        return None;
    }
    Some(node(v, ScalarStyle::Plain))
}

fn empty(line: usize) -> Node {
    Node::Scalar {
        value: String::new(),
        style: ScalarStyle::Plain,
        line,
    }
}

/// A key waiting for its indented entries.
struct Open {
    index: usize,
    indent: usize,
    entries: Vec<Entry>,
}

fn close(entries: &mut [Entry], open: Option<Open>) {
    if let Some(open) = open {
        let key_line = entries[open.index].line;
        entries[open.index].value = match open.entries.first() {
            Some(first) => Node::Map {
                line: first.line,
                entries: open.entries,
            },
            None => empty(key_line),
        };
    }
}

/// Parses the subset, or `None` when the text is outside it.
pub(super) fn parse(text: &str) -> Option<Doc> {
    if text.contains(['\t', '\r']) {
        return None;
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut open: Option<Open> = None;
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        let trimmed = raw.trim_end_matches(' ');
        let content = trimmed.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = trimmed.len() - content.len();
        let (key, value) = split_key(content)?;
        if indent == 0 {
            close(&mut entries, open.take());
            if entries.iter().any(|e| e.key == key) {
                return None;
            }
            let value = match value {
                Some(v) => scalar(v, line)?,
                None => {
                    open = Some(Open {
                        index: entries.len(),
                        indent: 0,
                        entries: Vec::new(),
                    });
                    empty(line)
                }
            };
            entries.push(Entry {
                key: key.to_owned(),
                line,
                value,
            });
        } else {
            let o = open.as_mut()?;
            if o.indent == 0 {
                o.indent = indent;
            } else if o.indent != indent {
                return None;
            }
            if o.entries.iter().any(|e| e.key == key) {
                return None;
            }
            let value = scalar(value?, line)?;
            o.entries.push(Entry {
                key: key.to_owned(),
                line,
                value,
            });
        }
    }
    close(&mut entries, open.take());
    let first = entries.first()?.line;
    Some(Doc {
        root: Some(Node::Map {
            entries,
            line: first,
        }),
        quirks: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse_full;
    use super::*;

    /// Every input the fast path accepts gives the full parser's result.
    #[test]
    fn fast_path_agrees_with_the_full_parser() {
        let inputs = [
            "name: x\ndescription: Does things, well. Use it (often)!\n",
            "name: x\n\n# comment\ndescription: d\nlicense:\n",
            "name: 'single'\ndescription: \"double: quoted\"\n",
            "metadata:\n  author: me\n  version: \"1.0\"\nname: y\n",
            "metadata:\n    a: b\n    c: d\n",
            "name: 123\nflag: true\nnothing: ~\nurl: http://x/y\n",
            "name: C#\ndescription: a-b [c] {d} e,f\n",
            "key.with-dots_and: v\n",
            "name: x   \ndescription:    spaced\n",
            "empty:\nnext: v\n",
            "trailing:\n",
            "name: ünïcode — ok\n",
        ];
        for input in inputs {
            let fast = parse(input).unwrap_or_else(|| panic!("fast path refused {input:?}"));
            let full = parse_full(input).unwrap();
            assert_eq!(
                fast.root.as_ref().map(Node::to_json),
                full.root.as_ref().map(Node::to_json),
                "{input:?}"
            );
            assert_eq!(fast, full, "{input:?}");
        }
        let refused = [
            "a: [x]\n",
            "a: &x v\n",
            "a: *x\n",
            "a: !t v\n",
            "a: 1\na: 2\n",
            "a: |\n  x\n",
            "a: b\n  c\n",
            "- a\n",
            "a: x # c\n",
            "a: x: y\n",
            "a:\n  - b\n",
            "a:\n  b:\n    c: d\n",
            "a:\tb\n",
            "\"a\": b\n",
            "a: \"x\\\"y\"\n",
            "  a: b\n",
            "a: -x\n",
            "a: 'it''s'\n",
            "a: b:\n",
            "",
            "# only\n",
            "a:b\n",
            "a: @x\n",
        ];
        for input in refused {
            assert!(parse(input).is_none(), "fast path accepted {input:?}");
        }
    }

    /// Same check over the frontmatter of every fixture.
    #[test]
    fn fast_path_agrees_on_the_fixture_corpus() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus");
        let mut accepted = 0;
        for dir in std::fs::read_dir(corpus).unwrap() {
            let Ok(bytes) = std::fs::read(dir.unwrap().path().join("SKILL.md")) else {
                continue;
            };
            let Ok(located) = crate::frontmatter::locate(&bytes) else {
                continue;
            };
            let Ok(text) = located.yaml_text(&bytes) else {
                continue;
            };
            if let Some(fast) = parse(&text) {
                accepted += 1;
                assert_eq!(Ok(fast), parse_full(&text), "{text:?}");
            }
        }
        assert!(accepted >= 20, "{accepted}");
    }
}
