//! The `redact` rules' replacement: every non-empty match of a rule's
//! pattern in text a model reads becomes `[REDACTED:<name>]` — in a
//! result's text, embedded text resources and structured content (keys
//! and string values), and in any other text a server wrote that reaches
//! a model (an error's message).
//!
//! An object whose keys a replacement makes equal keeps them apart: the
//! later one is named `<key>#2` (`#3`, …), so no value is dropped for
//! another.

use extpool_config::guardrails::Regex;
use extpool_core::{ContentPart, ResourceBody, ToolResult};
use serde_json::{Map, Value};

/// One compiled `redact` rule.
pub(super) struct RedactRule {
    /// How the rule is named in a verdict (`redact[0] (openai-key)`).
    pub shown: String,
    pub regex: Regex,
    /// `[REDACTED:<name>]`.
    pub replacement: String,
}

/// `text` with every non-empty match of `rule` replaced; how many were.
pub(super) fn redact_text(text: &mut String, rule: &RedactRule) -> usize {
    let mut out = String::new();
    let mut at = 0;
    let mut count = 0;
    for m in rule.regex.find_iter(text) {
        if m.start() == m.end() {
            continue;
        }
        out.push_str(&text[at..m.start()]);
        out.push_str(&rule.replacement);
        at = m.end();
        count += 1;
    }
    if count > 0 {
        out.push_str(&text[at..]);
        *text = out;
    }
    count
}

/// Every string in `value` (keys too) redacted; how many matches were.
pub(super) fn redact_value(value: &mut Value, rule: &RedactRule) -> usize {
    match value {
        Value::String(s) => redact_text(s, rule),
        Value::Array(items) => items.iter_mut().map(|v| redact_value(v, rule)).sum(),
        Value::Object(map) => {
            let mut count = 0;
            let mut out = Map::new();
            for (mut key, mut value) in std::mem::take(map) {
                count += redact_text(&mut key, rule);
                count += redact_value(&mut value, rule);
                out.insert(unique_key(&out, key), value);
            }
            *map = out;
            count
        }
        _ => 0,
    }
}

/// `key`, or `key#2` (`#3`, …) when `map` has it already.
fn unique_key(map: &Map<String, Value>, key: String) -> String {
    if !map.contains_key(&key) {
        return key;
    }
    (2u64..)
        .map(|n| format!("{key}#{n}"))
        .find(|k| !map.contains_key(k))
        .unwrap_or(key)
}

/// `result`'s text, embedded text resources and structured content
/// redacted by `rule`; how many matches were.
pub(super) fn redact_result(result: &mut ToolResult, rule: &RedactRule) -> usize {
    let mut count = 0;
    for part in &mut result.parts {
        count += match part {
            ContentPart::Text { text } => redact_text(text, rule),
            ContentPart::Resource { resource } => match &mut resource.body {
                ResourceBody::Text(text) => redact_text(text, rule),
                ResourceBody::Blob(_) => 0,
            },
            _ => 0,
        };
    }
    if let Some(structured) = &mut result.structured {
        count += redact_value(structured, rule);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule() -> RedactRule {
        RedactRule {
            shown: "redact[0] (key)".into(),
            regex: extpool_config::guardrails::compile_pattern("sk-[a-z]{4}").unwrap(),
            replacement: "[REDACTED:key]".into(),
        }
    }

    #[test]
    fn keys_made_equal_are_kept_apart() {
        let mut value = json!({
            "sk-aaaa": 1,
            "sk-bbbb": {"sk-cccc": 2, "sk-dddd": 3},
            "[REDACTED:key]": 4,
            "[REDACTED:key]#2": 5,
        });
        assert_eq!(redact_value(&mut value, &rule()), 4);
        let map = value.as_object().unwrap();
        assert_eq!(map.len(), 4, "{value}");
        let mut numbers: Vec<Value> = Vec::new();
        fn collect(v: &Value, out: &mut Vec<Value>) {
            match v {
                Value::Object(m) => m.values().for_each(|v| collect(v, out)),
                other => out.push(other.clone()),
            }
        }
        collect(&value, &mut numbers);
        numbers.sort_by_key(|n| n.as_i64());
        assert_eq!(numbers, [json!(1), json!(2), json!(3), json!(4), json!(5)]);
        assert!(
            map.keys().all(|k| k.starts_with("[REDACTED:key]")),
            "{value}"
        );
        let inner = value
            .as_object()
            .unwrap()
            .values()
            .find(|v| v.is_object())
            .unwrap();
        assert_eq!(inner.as_object().unwrap().len(), 2, "{value}");
    }
}
