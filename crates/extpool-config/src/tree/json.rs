//! JSON → located tree. Accepts what editors write in their MCP configs:
//! `//` and `/* */` comments and trailing commas (VS Code's `mcp.json` is
//! JSONC), and a UTF-8 byte-order mark.

use super::{Entry, LineIndex, Node, Pos, SyntaxError, UniqueEntries, Value};

/// Parses a JSON (or JSONC) document.
pub fn parse_json(text: &str) -> Result<Node, SyntaxError> {
    parse_json_document(text).map(|doc| doc.root)
}

/// A JSON document, and where it departs from strict JSON (what JSONC
/// allows but `JSON.parse` refuses).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonDocument {
    /// The document.
    pub root: Node,
    /// The first trailing comma (`[1,]`, `{"a": 1,}`), if any.
    pub trailing_comma: Option<Pos>,
    /// The first comment, if any.
    pub comment: Option<Pos>,
}

/// Parses a JSON (or JSONC) document and notes its JSONC extensions.
pub fn parse_json_document(text: &str) -> Result<JsonDocument, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut p = JsonParser {
        bytes: text.as_bytes(),
        text,
        at: 0,
        index: LineIndex::new(text),
        trailing_comma: None,
        comment: None,
    };
    p.skip_ws()?;
    let root = p.value(0)?;
    p.skip_ws()?;
    if p.at < p.bytes.len() {
        return Err(p.error("unexpected text after the JSON value"));
    }
    Ok(JsonDocument {
        root,
        trailing_comma: p.trailing_comma,
        comment: p.comment,
    })
}

struct JsonParser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
    index: LineIndex<'a>,
    trailing_comma: Option<Pos>,
    comment: Option<Pos>,
}

impl JsonParser<'_> {
    fn pos(&self) -> Pos {
        self.index.pos(self.at)
    }

    fn error(&self, message: impl Into<String>) -> SyntaxError {
        SyntaxError::new(self.pos(), message)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn found(&self) -> String {
        match self.text.get(self.at..).and_then(|s| s.chars().next()) {
            Some(c) => format!("found {c:?}"),
            None => "found end of file".into(),
        }
    }

    fn skip_ws(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                    if self.comment.is_none() {
                        self.comment = Some(self.pos());
                    }
                    while let Some(b) = self.peek() {
                        if b == b'\n' {
                            break;
                        }
                        self.at += 1;
                    }
                }
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'*') => {
                    let start = self.pos();
                    self.comment.get_or_insert(start);
                    self.at += 2;
                    loop {
                        match self.peek() {
                            None => {
                                return Err(SyntaxError::new(start, "unterminated /* comment"));
                            }
                            Some(b'*') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                                self.at += 2;
                                break;
                            }
                            Some(_) => self.at += 1,
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        let pos = self.pos();
        // `depth` containers hold this value; one more when it is one.
        if matches!(self.peek(), Some(b'{' | b'[')) && extpool_core::json::too_deep(depth + 1) {
            return Err(self.error(super::too_deep()));
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Node::new(pos, Value::Str(self.string()?))),
            Some(b't') => self.word("true", Value::Bool(true, "true".into())),
            Some(b'f') => self.word("false", Value::Bool(false, "false".into())),
            Some(b'n') => self.word("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error(format!("expected a JSON value, {}", self.found()))),
        }
    }

    fn word(&mut self, word: &str, value: Value) -> Result<Node, SyntaxError> {
        let pos = self.pos();
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(Node::new(pos, value))
        } else {
            Err(self.error(format!("expected a JSON value, {}", self.found())))
        }
    }

    fn number(&mut self) -> Result<Node, SyntaxError> {
        let pos = self.pos();
        let start = self.at;
        while let Some(b) = self.peek() {
            if b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E') {
                self.at += 1;
            } else {
                break;
            }
        }
        let raw = &self.text[start..self.at];
        if let Ok(n) = raw.parse::<i64>() {
            return Ok(Node::new(pos, Value::Int(n, raw.to_owned())));
        }
        match raw.parse::<f64>() {
            Ok(f) if raw != "-" => Ok(Node::new(pos, Value::Float(f, raw.to_owned()))),
            _ => Err(SyntaxError::new(pos, format!("invalid number {raw:?}"))),
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.pos();
        self.at += 1; // opening quote
        let mut out = String::new();
        loop {
            let Some(b) = self.peek() else {
                return Err(SyntaxError::new(start, "unterminated string"));
            };
            match b {
                b'"' => {
                    self.at += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.at += 1;
                    let Some(esc) = self.peek() else {
                        return Err(SyntaxError::new(start, "unterminated string"));
                    };
                    self.at += 1;
                    match esc {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        _ => {
                            self.at -= 1;
                            return Err(self.error("invalid escape sequence in string"));
                        }
                    }
                }
                b'\n' => return Err(self.error("line break inside a string")),
                _ => {
                    // Copy one whole UTF-8 character.
                    let rest = &self.text[self.at..];
                    if let Some(c) = rest.chars().next() {
                        out.push(c);
                        self.at += c.len_utf8();
                    }
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .ok_or_else(|| self.error("expected 4 hex digits after \\u"))?;
        let n = u32::from_str_radix(digits, 16)
            .map_err(|_| self.error("expected 4 hex digits after \\u"))?;
        self.at += 4;
        Ok(n)
    }

    fn unicode_escape(&mut self) -> Result<char, SyntaxError> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if !self.bytes[self.at..].starts_with(b"\\u") {
                return Err(self.error("unpaired surrogate in \\u escape"));
            }
            self.at += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(self.error("unpaired surrogate in \\u escape"));
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))
    }

    fn array(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        let pos = self.pos();
        self.at += 1;
        let mut items = Vec::new();
        let mut comma = None;
        loop {
            self.skip_ws()?;
            if self.peek() == Some(b']') {
                if let Some(comma) = comma {
                    self.trailing_comma.get_or_insert(comma);
                }
                self.at += 1;
                return Ok(Node::new(pos, Value::Seq(items)));
            }
            items.push(self.value(depth + 1)?);
            self.skip_ws()?;
            comma = None;
            match self.peek() {
                Some(b',') => {
                    comma = Some(self.pos());
                    self.at += 1;
                }
                Some(b']') => {}
                _ => return Err(self.error(format!("expected `,` or `]`, {}", self.found()))),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        let pos = self.pos();
        self.at += 1;
        let mut entries = UniqueEntries::default();
        let mut comma = None;
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b'}') => {
                    if let Some(comma) = comma {
                        self.trailing_comma.get_or_insert(comma);
                    }
                    self.at += 1;
                    return Ok(Node::new(pos, Value::Map(entries.into_entries())));
                }
                Some(b'"') => {}
                _ => {
                    return Err(
                        self.error(format!("expected a quoted key or `}}`, {}", self.found()))
                    );
                }
            }
            let key_pos = self.pos();
            let key = self.string()?;
            self.skip_ws()?;
            if self.peek() != Some(b':') {
                return Err(self.error(format!("expected `:` after the key, {}", self.found())));
            }
            self.at += 1;
            self.skip_ws()?;
            let value = self.value(depth + 1)?;
            entries.push(Entry {
                key,
                key_pos,
                value,
            })?;
            self.skip_ws()?;
            comma = None;
            match self.peek() {
                Some(b',') => {
                    comma = Some(self.pos());
                    self.at += 1;
                }
                Some(b'}') => {}
                _ => return Err(self.error(format!("expected `,` or `}}`, {}", self.found()))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn jsonc_extensions_are_located() {
        let doc = super::parse_json_document("{\"a\": [1,],\n // c\n \"b\": 2,\n}").unwrap();
        assert_eq!(doc.trailing_comma, Some(super::Pos::new(1, 9)));
        assert_eq!(doc.comment, Some(super::Pos::new(2, 2)));
        let doc = super::parse_json_document("{\"a\": [1, 2], \"b\": {}}").unwrap();
        assert_eq!((doc.trailing_comma, doc.comment), (None, None));
    }

    use super::*;

    #[test]
    fn parses_jsonc_with_positions() {
        let text = "{\n  // servers\n  \"servers\": {\n    \"a\": {\"args\": [\"x\", 1,],}, /* c */\n  },\n}\n";
        let doc = parse_json(text).unwrap();
        let servers = doc.entry("servers").unwrap();
        assert_eq!(servers.key_pos, Pos::new(3, 3));
        let args = doc.at(&["servers", "a", "args"]).unwrap();
        assert_eq!(args.pos, Pos::new(4, 19));
        let Value::Seq(items) = &args.value else {
            panic!()
        };
        assert_eq!(items[1].value, Value::Int(1, "1".into()));
    }

    #[test]
    fn as_deep_as_json_can_be_read_and_no_deeper() {
        let max = extpool_core::json::MAX_DEPTH;
        let nested = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(parse_json(&nested(max)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&nested(max)).is_ok());
        let e = parse_json(&nested(max + 1)).unwrap_err();
        assert_eq!(e.pos, Pos::new(1, max + 1), "{e}");
        assert!(e.message.contains("more than 127 levels"), "{e}");
        assert!(
            parse_json(&format!(
                "{}{}",
                "{\"a\":".repeat(max + 1),
                "}".repeat(max + 1)
            ))
            .is_err()
        );
    }

    #[test]
    fn strings_and_escapes() {
        let doc = parse_json(r#"{"a": "x\"y\u00e9\ud83d\ude00\n", "b": "é"}"#).unwrap();
        assert_eq!(doc.get("a").unwrap().as_str(), Some("x\"yé😀\n"));
        assert_eq!(doc.get("b").unwrap().as_str(), Some("é"));
    }

    #[test]
    fn errors_name_the_position_and_expectation() {
        let e = parse_json("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!(e.pos, Pos::new(3, 3));
        assert!(e.message.contains("expected `,` or `}`"), "{e}");
        let e = parse_json("{\"a\": tru}").unwrap_err();
        assert_eq!(e.pos, Pos::new(1, 7));
        let e = parse_json("{\"a\": 1, \"a\": 2}").unwrap_err();
        assert!(e.message.contains("duplicate key"), "{e}");
        let e = parse_json("{\"a\": \"x").unwrap_err();
        assert!(e.message.contains("unterminated"), "{e}");
        let e = parse_json(&"[".repeat(1000)).unwrap_err();
        assert!(e.message.contains("deep"), "{e}");
        assert!(parse_json("").is_err());
        assert!(parse_json("{} x").is_err());
        assert!(parse_json("-").is_err());
    }
}
