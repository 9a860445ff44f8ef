//! The JSON a `CallMcpWithQuery` filter runs on, read from a tool's
//! result: its `structuredContent`, else its text parts read as JSON (one
//! value, or an array of them), else the text itself. Text that reads as
//! JSON only by taking one of two equal keys (`{"a": 1, "a": 2}`, which a
//! redaction can make of two different keys) is given as the text it is:
//! no value is dropped unseen.

use std::collections::HashSet;
use std::fmt;

use extpool_core::{ContentPart, ToolResult};
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The JSON a filter runs on: `structuredContent`, else the text parts
/// read as JSON (one value, or an array of them), else the text itself.
pub(crate) fn query_input(result: &ToolResult) -> Value {
    if let Some(v) = &result.structured {
        return v.clone();
    }
    let texts: Vec<&str> = result
        .parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let parsed: Option<Vec<Value>> = texts.iter().map(|t| json_without_repeats(t)).collect();
    match parsed {
        Some(mut values) if values.len() == 1 => values.remove(0),
        Some(values) if !values.is_empty() => Value::Array(values),
        _ => Value::String(result.joined_text()),
    }
}

/// `text` as JSON, unless it is not JSON or an object in it names a key
/// twice (reading it would drop a value).
fn json_without_repeats(text: &str) -> Option<Value> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = Unrepeated.deserialize(&mut reader).ok()?;
    reader.end().ok()?;
    Some(value)
}

/// Reads a JSON value, refusing an object that names a key twice.
#[derive(Clone, Copy)]
struct Unrepeated;

impl<'de> DeserializeSeed<'de> for Unrepeated {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unrepeated {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value whose objects name each key once")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Unrepeated)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Unrepeated)?;
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(format!("key {key:?} named twice")));
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_input_prefers_structured_then_json_text() {
        let r = ToolResult {
            parts: vec![ContentPart::Text {
                text: "{\"a\":1}".into(),
            }],
            structured: Some(json!({"b": 2})),
            is_error: false,
            as_sent: None,
        };
        assert_eq!(query_input(&r), json!({"b": 2}));
        assert_eq!(query_input(&ToolResult::text("[1,2]")), json!([1, 2]));
        assert_eq!(query_input(&ToolResult::text("plain")), json!("plain"));
        let two = ToolResult {
            parts: vec![
                ContentPart::Text { text: "1".into() },
                ContentPart::Text { text: "2".into() },
            ],
            structured: None,
            is_error: false,
            as_sent: None,
        };
        assert_eq!(query_input(&two), json!([1, 2]));
    }

    #[test]
    fn text_whose_object_names_a_key_twice_is_read_as_text() {
        let text = r#"{"k": 1, "nested": {"x": [1, {"y": 2, "y": 3}]}}"#;
        assert_eq!(query_input(&ToolResult::text(text)), json!(text));
        let text = r#"{"k": 1, "k": 2}"#;
        assert_eq!(query_input(&ToolResult::text(text)), json!(text));
        // Each key once, as deep and as varied as JSON goes: read as JSON.
        let text = r#"{"a": [1, -2, 3.5, true, null, "s"], "b": {"a": {}}}"#;
        assert_eq!(
            query_input(&ToolResult::text(text)),
            serde_json::from_str::<Value>(text).unwrap()
        );
        // Trailing text is not JSON.
        assert_eq!(query_input(&ToolResult::text("1 2")), json!("1 2"));
    }
}
