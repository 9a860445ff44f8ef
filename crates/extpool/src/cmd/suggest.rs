//! A call to try: which tool the overview suggests, and the `extpool call`
//! line the overview and `describe` show, its arguments filled from the
//! tool's schema.
//!
//! A value comes from the schema when it gives one (`const`, the first of
//! `enum`, `default`, the first of `examples`), else from the type where
//! any value of it will do (`1`, `true`, a date for `format: date`, …);
//! otherwise the argument is a placeholder naming it (`path=<path>`), never
//! a word that looks like a real value. Only a tool marked read-only (and
//! not destructive) is suggested: trying a call must change nothing.

use serde_json::{Map, Value};

use extpool_host::ToolInfo;

use super::describe::{properties, required};

/// How deep a schema is followed (an argument's items, their properties…).
const MAX_DEPTH: usize = 8;

/// The `extpool call` line of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLine {
    /// `extpool call NAME k=v …`, each required argument given.
    pub command: String,
    /// True when every argument has a value (it runs as written); false
    /// when one is a placeholder such as `<path>` to fill in first.
    pub runs_as_written: bool,
}

/// True when the tool's annotations say a call changes nothing:
/// `readOnlyHint: true` and not `destructiveHint: true`.
pub fn is_safe_to_try(tool: &ToolInfo) -> bool {
    let hint = |key: &str| {
        tool.details
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    hint("readOnlyHint") == Some(true) && hint("destructiveHint") != Some(true)
}

/// The call line of `tool`: its required arguments with the values its
/// schema gives or allows ([`value_for`]) when `fill`, placeholders where it
/// gives none (every one without `fill`: a form to fill in).
pub fn call_line(tool: &ToolInfo, fill: bool) -> CallLine {
    let props = properties(tool);
    let mut command = crate::invocation::cmd(&format!("call {}", tool.name));
    let mut runs_as_written = true;
    for name in required(tool) {
        let schema = props
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(&Value::Null, |(_, v)| *v);
        let shown = match value_for(schema, 0).filter(|_| fill) {
            Some(value) => shell_word(&value),
            None => {
                runs_as_written = false;
                format!("<{name}>")
            }
        };
        command.push_str(&format!(" {name}={shown}"));
    }
    CallLine {
        command,
        runs_as_written,
    }
}

/// The call to try of `tool`, when it is safe to try ([`is_safe_to_try`]).
pub fn call_to_try(tool: &ToolInfo) -> Option<CallLine> {
    is_safe_to_try(tool).then(|| call_line(tool, true))
}

/// What the overview suggests trying among `tools`: the call of the first
/// tool safe to try that runs as written; else how to read the first safe
/// one (`extpool describe`, its arguments to fill in); none when no tool is
/// safe to try.
pub fn suggestion(tools: &[ToolInfo]) -> Option<String> {
    let mut safe = tools.iter().filter(|t| is_safe_to_try(t)).peekable();
    let first = (*safe.peek()?).clone();
    safe.filter_map(call_to_try)
        .find(|call| call.runs_as_written)
        .map(|call| call.command)
        .or_else(|| Some(crate::invocation::cmd(&format!("describe {}", first.name))))
}

/// A value for an argument of `schema`, when the schema gives one or any
/// value of its type will do; `None` when only the caller can know it.
pub fn value_for(schema: &Value, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    let given = schema
        .get("const")
        .or_else(|| schema.get("enum").and_then(|e| e.get(0)))
        .or_else(|| schema.get("default"))
        .or_else(|| schema.get("examples").and_then(|e| e.get(0)));
    if let Some(value) = given {
        return Some(value.clone());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            return options.iter().find_map(|o| value_for(o, depth + 1));
        }
    }
    match type_name(schema)? {
        "integer" | "number" => number(schema),
        "boolean" => Some(Value::Bool(true)),
        "null" => Some(Value::Null),
        "string" => formatted(schema.get("format").and_then(Value::as_str)?),
        "array" => {
            let item = value_for(schema.get("items")?, depth + 1)?;
            Some(Value::Array(vec![item]))
        }
        "object" => object(schema, depth),
        _ => None,
    }
}

/// The schema's type: its `type`, the first that is not `null` of a list,
/// `object` for a schema with `properties`.
fn type_name(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or(Some("null")),
        _ if schema.get("properties").is_some() => Some("object"),
        _ => None,
    }
}

/// `1`, or the nearest value the bounds allow.
fn number(schema: &Value) -> Option<Value> {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let integer = schema.get("type").and_then(Value::as_str) == Some("integer");
    let mut n = 1.0_f64;
    if let Some(min) = bound("minimum") {
        n = n.max(min);
    }
    if let Some(min) = bound("exclusiveMinimum")
        && n <= min
    {
        n = min + 1.0;
    }
    if let Some(max) = bound("maximum") {
        n = n.min(max);
    }
    if let Some(max) = bound("exclusiveMaximum")
        && n >= max
    {
        n = max - 1.0;
    }
    let whole = if integer { n.ceil() } else { n };
    if whole.fract() == 0.0 && whole.abs() < 1e15 {
        // Exact: a whole number this small fits an i64.
        return Some(Value::from(whole as i64));
    }
    serde_json::Number::from_f64(n).map(Value::Number)
}

/// A value any string of this format may be (an example date, the local
/// host); `None` for a format whose values only the caller knows.
fn formatted(format: &str) -> Option<Value> {
    let value = match format {
        "date" => "2025-01-01",
        "date-time" => "2025-01-01T00:00:00Z",
        "time" => "12:00:00",
        "uri" | "url" => "https://example.com",
        "email" => "someone@example.com",
        "uuid" => "00000000-0000-0000-0000-000000000000",
        "ipv4" => "127.0.0.1",
        "ipv6" => "::1",
        "hostname" => "localhost",
        _ => return None,
    };
    Some(Value::String(value.to_owned()))
}

/// An object of the required properties' values, when each has one.
fn object(schema: &Value, depth: usize) -> Option<Value> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let prop = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        out.insert(name.to_owned(), value_for(prop, depth + 1)?);
    }
    Some(Value::Object(out))
}

/// `value` as one shell word after `key=`, as `extpool call` reads it back:
/// a plain string as it is when the shell leaves it alone, anything else
/// (JSON, spaces, quotes) quoted; a string that reads as other JSON (`1`,
/// `true`) as a JSON string.
fn shell_word(value: &Value) -> String {
    let text = match value {
        Value::String(s) if serde_json::from_str::<Value>(s).is_err() => s.clone(),
        other => other.to_string(),
    };
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+,".contains(c));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(schema: Value) -> Option<Value> {
        value_for(&schema, 0)
    }

    #[test]
    fn values_come_from_the_schema_then_the_type() {
        assert_eq!(
            value(json!({"type": "string", "enum": ["UTC", "CET"]})),
            Some(json!("UTC"))
        );
        assert_eq!(
            value(json!({"type": "integer", "default": 7})),
            Some(json!(7))
        );
        assert_eq!(
            value(json!({"type": "string", "examples": ["a.txt"]})),
            Some(json!("a.txt"))
        );
        assert_eq!(value(json!({"type": "integer"})), Some(json!(1)));
        assert_eq!(
            value(json!({"type": "integer", "minimum": 5})),
            Some(json!(5))
        );
        assert_eq!(
            value(json!({"type": "number", "maximum": 0.5})),
            Some(json!(0.5))
        );
        assert_eq!(
            value(json!({"type": "integer", "exclusiveMinimum": 1})),
            Some(json!(2))
        );
        assert_eq!(
            value(json!({"type": ["boolean", "null"]})),
            Some(json!(true))
        );
        assert_eq!(
            value(json!({"type": "string", "format": "date"})),
            Some(json!("2025-01-01"))
        );
        assert_eq!(
            value(json!({"type": "array", "items": {"type": "integer"}})),
            Some(json!([1]))
        );
        assert_eq!(
            value(
                json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]})
            ),
            Some(json!({"n": 1}))
        );
    }

    #[test]
    fn a_value_only_the_caller_knows_is_none() {
        for schema in [
            json!({"type": "string"}),
            json!({"type": "string", "description": "IANA timezone, e.g. Europe/Paris"}),
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}),
            json!({}),
        ] {
            assert_eq!(value(schema.clone()), None, "{schema}");
        }
    }

    #[test]
    fn values_are_one_shell_word() {
        assert_eq!(shell_word(&json!("UTC")), "UTC");
        assert_eq!(shell_word(&json!("a b")), "'a b'");
        assert_eq!(shell_word(&json!("it's")), r"'it'\''s'");
        assert_eq!(shell_word(&json!([1])), "'[1]'");
        assert_eq!(shell_word(&json!(2)), "2");
        assert_eq!(shell_word(&json!("")), "''");
        assert_eq!(shell_word(&json!("1")), r#"'"1"'"#);
    }
}
