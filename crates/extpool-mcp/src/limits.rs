//! Messages a client refuses to read — too large, or nested too deep — and
//! how the refusal reaches the caller at once.
//!
//! Both transports bound a message (a stdio line, an HTTP body or SSE
//! event) and cannot parse JSON nested deeper than the parser's limit.
//! Such a message used to be dropped with a line in the log, so the call it
//! answered waited out its whole timeout and then said "timed out". Now the
//! transport answers the request itself with an error response carrying a
//! marker ([`Exceeded::into_error_data`]), and the client turns it into
//! [`crate::ClientError::MessageTooLarge`] or
//! [`crate::ClientError::MessageTooDeep`] — the way rmcp itself fails a
//! request whose response stream closed.
//!
//! The request is found by the `id` member at the top of the message; a
//! message whose `id` does not come before its `result` within the first
//! [`HEAD_BYTES`] (no SDK writes it later) can only be dropped.
//!
//! The same way, an answer that carries a request's id but cannot be read
//! as a JSON-RPC response ([`unreadable_response`]: an `error` that is no
//! error object, say) fails that request at once, saying what was wrong
//! with it, instead of being dropped.

use rmcp::model::{ErrorData, NumberOrString, RequestId};
use serde_json::{Value, json};

/// Default limit on one message from a server (rmcp's own bound on both
/// transports); `max_message_bytes` in a server's config changes it.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 16 * 1024 * 1024;

/// Deepest nesting of arrays and objects that can be read: the one limit
/// of every extpool reader, [`extpool_core::json::MAX_DEPTH`].
pub const MAX_NESTING: usize = extpool_core::json::MAX_DEPTH;

/// How much of an oversized message is kept to find its `id`.
pub const HEAD_BYTES: usize = 4096;

/// The marker key in the `data` of a refusal.
const MARKER: &str = "extpool.limit";

/// Which limit a message broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// Longer than `limit` bytes (`size`, when the whole message was seen).
    Size {
        /// The message's size in bytes, when known.
        size: Option<u64>,
        /// The limit in bytes.
        limit: u64,
    },
    /// Nested deeper than `limit` levels.
    Depth {
        /// The nesting limit.
        limit: usize,
    },
}

impl Exceeded {
    /// The error response that fails the request (code -32603 with a marker).
    pub(crate) fn into_error_data(self) -> ErrorData {
        let (message, detail) = match self {
            Self::Size { size, limit } => (
                format!(
                    "message of {} bytes over the limit of {limit}",
                    size.unwrap_or(0)
                ),
                json!({"kind": "size", "size": size, "limit": limit}),
            ),
            Self::Depth { limit } => (
                format!("message nested deeper than {limit} levels"),
                json!({"kind": "depth", "limit": limit}),
            ),
        };
        ErrorData::internal_error(message, Some(json!({ MARKER: detail })))
    }

    /// The refusal a transport put in `data`, if that is what it is.
    pub(crate) fn from_error_data(data: &ErrorData) -> Option<Self> {
        let detail = data.data.as_ref()?.get(MARKER)?;
        let limit = detail.get("limit")?;
        match detail.get("kind")?.as_str()? {
            "size" => Some(Self::Size {
                size: detail.get("size").and_then(Value::as_u64),
                limit: limit.as_u64()?,
            }),
            "depth" => Some(Self::Depth {
                limit: usize::try_from(limit.as_u64()?).ok()?,
            }),
            _ => None,
        }
    }
}

/// The marker key in the `data` of a refusal of an answer that cannot be
/// read ([`unreadable_response`]).
const UNREADABLE_MARKER: &str = "extpool.unreadable";

/// Most characters of what is wrong with an unreadable answer kept in its
/// refusal: serde quotes the values it was given, which may be large.
const MAX_REASON_CHARS: usize = 300;

/// A message that answers a request — an object with a request `id` and no
/// `method` — but cannot be read as a JSON-RPC response (an `error` that
/// is no error object, a missing `jsonrpc`, …): its id and what is wrong
/// with it, in words. `None` for anything else: a request or notification
/// of the peer, a message without a usable id, a line that is not JSON.
pub fn unreadable_response(line: &[u8]) -> Option<(RequestId, String)> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
        return None;
    };
    if message.contains_key("method") {
        return None;
    }
    let id = serde_json::from_value::<RequestId>(message.get("id")?.clone()).ok()?;
    let reason = match (message.get("result"), message.get("error")) {
        _ if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") => {
            r#"its "jsonrpc" member is not "2.0""#.to_owned()
        }
        (Some(_), Some(_)) => r#"it has both a "result" and an "error""#.to_owned(),
        (None, None) => r#"it has neither a "result" nor an "error""#.to_owned(),
        (None, Some(error)) => match serde_json::from_value::<ErrorData>(error.clone()) {
            Err(e) => format!(r#"its "error" is not a JSON-RPC error object ({e})"#),
            Ok(_) => "it cannot be read".to_owned(),
        },
        (Some(_), None) => r#"its "result" cannot be read"#.to_owned(),
    };
    let reason = extpool_core::text::cut(&reason, MAX_REASON_CHARS).into_owned();
    Some((id, reason))
}

/// The error response that fails the request an unreadable answer
/// carried the id of, saying what was wrong with it.
pub(crate) fn unreadable_error_data(reason: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("unreadable answer: {reason}"),
        Some(json!({ UNREADABLE_MARKER: { "reason": reason } })),
    )
}

/// What was wrong with an answer, when `data` is a transport's refusal
/// of one that could not be read ([`unreadable_error_data`]).
pub(crate) fn unreadable_reason(data: &ErrorData) -> Option<String> {
    let detail = data.data.as_ref()?.get(UNREADABLE_MARKER)?;
    Some(detail.get("reason")?.as_str()?.to_owned())
}

/// True when arrays and objects in `bytes` nest deeper than `limit` (brackets
/// inside strings do not count). Linear, no allocation; stops early.
pub fn nesting_exceeds(bytes: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The `id` of a JSON-RPC message from its first bytes: the value of the
/// top-level member `"id"`, if it is a number or a short string and appears
/// within `head` (which may be cut anywhere).
pub fn top_level_id(head: &[u8]) -> Option<RequestId> {
    let mut scan = Scanner { bytes: head, at: 0 };
    scan.skip_ws();
    scan.eat(b'{')?;
    loop {
        scan.skip_ws();
        let key = scan.string()?;
        scan.skip_ws();
        scan.eat(b':')?;
        scan.skip_ws();
        if key == b"id" {
            return scan.id();
        }
        scan.skip_value()?;
        scan.skip_ws();
        scan.eat(b',')?;
    }
}

/// A tiny forward scanner over a JSON prefix; `None` means "cannot tell".
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.at += 1)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    /// A string's raw bytes (escapes left as they are).
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        let mut escaped = false;
        loop {
            let b = self.peek()?;
            self.at += 1;
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => return Some(&self.bytes[start..self.at - 1]),
                _ => {}
            }
        }
    }

    fn id(&mut self) -> Option<RequestId> {
        if self.peek()? == b'"' {
            let raw = self.string()?;
            if raw.contains(&b'\\') {
                return None;
            }
            let text = std::str::from_utf8(raw).ok()?;
            return Some(NumberOrString::String(text.into()));
        }
        let start = self.at;
        while matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
            self.at += 1;
        }
        // The number must be complete: followed by a delimiter we can see.
        if !matches!(
            self.peek(),
            Some(b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
        ) {
            return None;
        }
        let text = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
        text.parse().ok().map(NumberOrString::Number)
    }

    /// Skips one value; `None` when it does not end within the prefix.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while !matches!(self.peek()?, b',' | b'}') {
                    self.at += 1;
                }
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_strings() {
        let deep = "[".repeat(129);
        assert!(nesting_exceeds(deep.as_bytes(), 128));
        assert!(!nesting_exceeds("[".repeat(128).as_bytes(), 128));
        let quoted = format!("{{\"a\":\"{}\"}}", "[".repeat(500));
        assert!(!nesting_exceeds(quoted.as_bytes(), 128));
        assert!(!nesting_exceeds(br#"{"a":"\"[[["}"#, 2));
        // The limit is where the JSON parser stops: what it cannot read is
        // refused, what it reads is not.
        for levels in [MAX_NESTING, MAX_NESTING + 1] {
            let text = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
            let unreadable = serde_json::from_str::<Value>(&text).is_err();
            assert_eq!(nesting_exceeds(text.as_bytes(), MAX_NESTING), unreadable);
        }
    }

    #[test]
    fn the_top_level_id_is_found_in_a_prefix() {
        let id = |s: &str| top_level_id(s.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxxx"#),
            Some(NumberOrString::Number(7))
        );
        assert_eq!(
            id(r#"{ "jsonrpc" : "2.0" , "id" : "req-1" , "result":"#),
            Some(NumberOrString::String("req-1".into()))
        );
        // An "id" inside the result is not the message's.
        assert_eq!(
            id(r#"{"result":{"id":3,"items":[{"id":4}]},"jsonrpc":"2.0""#),
            None
        );
        assert_eq!(
            id(r#"{"result":{"a":[1,2]},"id":9}"#),
            Some(NumberOrString::Number(9))
        );
        // Cut inside the number: cannot tell.
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":12"#), None);
        assert_eq!(id("not json"), None);
        assert_eq!(id(""), None);
    }

    #[test]
    fn an_answer_that_cannot_be_read_is_told_by_its_id() {
        let unreadable = |s: &str| unreadable_response(s.as_bytes());
        let (id, reason) = unreadable(r#"{"jsonrpc":"2.0","id":3,"error":{"code":"x"}}"#).unwrap();
        assert_eq!(id, NumberOrString::Number(3));
        assert!(
            reason.starts_with(
                r#"its "error" is not a JSON-RPC error object (invalid type: string "x""#
            ),
            "{reason}"
        );
        assert_eq!(
            unreadable(r#"{"id":"a","result":{}}"#)
                .map(|(_, r)| r)
                .as_deref(),
            Some(r#"its "jsonrpc" member is not "2.0""#)
        );
        assert_eq!(
            unreadable(r#"{"jsonrpc":"2.0","id":1}"#)
                .map(|(_, r)| r)
                .as_deref(),
            Some(r#"it has neither a "result" nor an "error""#)
        );
        // A request of the peer, no usable id, or no JSON: not an answer.
        for other in [
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":5}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":"x"}}"#,
            r#"{"jsonrpc":"2.0","error":{"code":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"#,
            "[1]",
        ] {
            assert_eq!(unreadable(other), None, "{other}");
        }
        // A huge value quoted by the parser is cut.
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":"{}"}}}}"#,
            "x".repeat(100_000)
        );
        let (_, reason) = unreadable(&long).unwrap();
        assert!(reason.len() < 1000, "{}", reason.len());
        let data = unreadable_error_data(&reason);
        assert_eq!(unreadable_reason(&data).as_deref(), Some(reason.as_str()));
        assert_eq!(
            unreadable_reason(&ErrorData::internal_error("x", None)),
            None
        );
    }

    #[test]
    fn a_refusal_round_trips_through_error_data() {
        for e in [
            Exceeded::Size {
                size: Some(50_000_000),
                limit: 16,
            },
            Exceeded::Size {
                size: None,
                limit: 16,
            },
            Exceeded::Depth { limit: 128 },
        ] {
            assert_eq!(Exceeded::from_error_data(&e.into_error_data()), Some(e));
        }
        assert_eq!(
            Exceeded::from_error_data(&ErrorData::internal_error("x", None)),
            None
        );
    }
}
