//! A call's arguments checked against its tool's input schema before the
//! call: a missing required argument or one of the wrong JSON type is said
//! in extpool's words, with the argument's type and where to read about
//! the tool, instead of the server's own validation text. The schema is
//! read as `describe` reads it.

use extpool_host::ToolInfo;
use serde_json::{Map, Value};

use super::describe::{properties, required, type_of};

/// The JSON type of `v`, in JSON Schema's words (`integer` for a whole
/// number).
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The types a property's schema allows (`type`, a string or a list);
/// empty when it says none, so anything goes.
fn allowed(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// True when `v` is of one of the `allowed` types (an integer is a number
/// too; a number with no fraction is an integer).
fn fits(allowed: &[&str], v: &Value) -> bool {
    let is = json_type(v);
    let whole = v.as_f64().is_some_and(|x| x.fract() == 0.0);
    allowed.is_empty()
        || allowed
            .iter()
            .any(|&t| t == is || (t == "number" && is == "integer") || (t == "integer" && whole))
}

/// `key=value` values given where the schema wants only a string, taken
/// as the text typed (`zip=1234`, `version=1.10`): a value of a pair is
/// JSON only when the argument may be something other than a string.
pub fn strings_as_typed(tool: &ToolInfo, args: &mut Map<String, Value>, pairs: &[(&str, &str)]) {
    let props = properties(tool);
    for (key, text) in pairs {
        let Some((_, schema)) = props.iter().find(|(n, _)| n == key) else {
            continue;
        };
        if allowed(schema) == ["string"]
            && let Some(v) = args.get_mut(*key)
            && !v.is_string()
        {
            *v = Value::String((*text).to_owned());
        }
    }
}

/// What is wrong with `args` for `tool` — required arguments missing (with
/// their types), given ones of a type the schema does not allow — as one
/// message naming the tool and `extpool describe`; `None` when nothing is.
pub fn problems(tool: &ToolInfo, args: &Map<String, Value>) -> Option<String> {
    let props = properties(tool);
    let type_named = |name: &str| {
        props
            .iter()
            .find(|(n, _)| *n == name)
            .map_or_else(|| "any".to_owned(), |(_, schema)| type_of(schema))
    };
    let missing: Vec<String> = required(tool)
        .into_iter()
        .filter(|name| !args.contains_key(*name))
        .map(|name| format!("{name} ({})", type_named(name)))
        .collect();
    let mut said = Vec::new();
    if !missing.is_empty() {
        said.push(format!(
            "missing required argument{} {}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        ));
    }
    for (name, schema) in &props {
        let Some(v) = args.get(*name) else { continue };
        let allowed = allowed(schema);
        if !fits(&allowed, v) {
            let takes: Vec<String> = allowed.iter().map(|t| a(t)).collect();
            said.push(format!(
                "argument {name} is {}, the tool takes {}",
                a(json_type(v)),
                takes.join(" or ")
            ));
        }
    }
    (!said.is_empty()).then(|| {
        format!(
            "{}: {}; see `{}`",
            tool.name,
            said.join("; "),
            crate::invocation::cmd(&format!("describe {}", tool.name))
        )
    })
}

/// A JSON type with its article (`an integer`, `a string`, `null`).
fn a(kind: &str) -> String {
    if kind == "null" {
        return kind.into();
    }
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(schema: Value) -> ToolInfo {
        ToolInfo {
            name: "mcp__kit__add".into(),
            alias: "mcp__kit__add".into(),
            server: "kit".into(),
            tool: "add".into(),
            description: String::new(),
            input_schema: schema,
            builtin: false,
            plugin: None,
            details: Default::default(),
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn missing_and_mistyped_arguments_are_named_with_their_types() {
        let t = tool(
            json!({"type": "object", "required": ["a", "b"], "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}, "c": {"type": ["string", "null"]}}}),
        );
        assert_eq!(
            problems(&t, &args(json!({}))).unwrap(),
            format!(
                "mcp__kit__add: missing required arguments a (number), b (number); see `{}`",
                crate::invocation::cmd("describe mcp__kit__add")
            )
        );
        assert_eq!(
            problems(&t, &args(json!({"a": "two", "b": 2, "c": 7}))).unwrap(),
            format!(
                "mcp__kit__add: argument a is a string, the tool takes a number; argument c is an integer, the tool takes a string or null; see `{}`",
                crate::invocation::cmd("describe mcp__kit__add")
            )
        );
        assert_eq!(
            problems(&t, &args(json!({"a": 2.5, "b": 2, "c": null}))),
            None
        );
        let whole = tool(json!({"properties": {"n": {"type": "integer"}}}));
        assert_eq!(problems(&whole, &args(json!({"n": 2.0}))), None);
        assert!(problems(&whole, &args(json!({"n": 2.5}))).is_some());
        // No schema type: anything goes; unknown arguments are the server's to judge.
        let open = tool(json!({"properties": {"x": {}}}));
        assert_eq!(problems(&open, &args(json!({"x": [1], "y": 1}))), None);
    }

    #[test]
    fn a_pair_is_taken_as_typed_where_only_a_string_is_allowed() {
        let t = tool(json!({"properties": {"zip": {"type": "string"}, "n": {"type": "number"}}}));
        let mut a = args(json!({"zip": 1234, "n": 5}));
        strings_as_typed(&t, &mut a, &[("zip", "1234"), ("n", "5")]);
        assert_eq!(Value::Object(a), json!({"zip": "1234", "n": 5}));
    }
}
