//! The JSON Schema of `extpool.yaml`, generated from the configuration's
//! own types ([`ExtpoolConfig`] and what it holds), so that what editors
//! check (`# yaml-language-server: $schema=…`) is what the loader accepts
//! and cannot drift from it.

use serde_json::Value;

use crate::model::ExtpoolConfig;

/// The schema's `$id`.
pub const SCHEMA_ID: &str = "https://extpool.dev/schema/extpool.json";

/// The JSON Schema (draft 2020-12) of an `extpool.yaml`.
pub fn schema() -> Value {
    let mut schema = schemars::schema_for!(ExtpoolConfig).to_value();
    if let Value::Object(map) = &mut schema {
        map.insert("$id".into(), Value::from(SCHEMA_ID));
        map.insert("title".into(), Value::from("extpool.yaml"));
    }
    schema
}

/// The configuration reference (Markdown) rendered from [`schema`]: every
/// key with its type, default and description, so the book's page is made
/// from the same types as the loader.
pub fn reference_markdown() -> String {
    let schema = schema();
    let mut out = String::from(
        "# Configuration reference\n\n\
<!-- Generated from extpool's configuration types; do not edit. Regenerate with\n\
     EXTPOOL_BLESS=1 cargo test -p extpool --test it config_reference -->\n\n\
Every key `extpool.yaml` accepts, generated from the types the loader reads it into.\n\
`extpool config schema` prints the same as a JSON Schema for editors:\n\
put `# yaml-language-server: $schema=extpool.schema.json` at the top of the file\n\
after `extpool config schema > extpool.schema.json`.\n\
Keys not listed here are refused, with their line and the keys accepted there.\n\
`<name>` stands for a key you choose (a server's name).\n",
    );
    let Some(props) = schema["properties"].as_object() else {
        return out;
    };
    for (key, prop) in props {
        out.push_str(&format!("\n## `{key}`\n\n"));
        let prop = resolve(&schema, prop);
        let about = description(prop);
        if !about.is_empty() {
            out.push_str(&about);
            out.push_str("\n\n");
        }
        let mut rows = Vec::new();
        rows_of(&schema, prop, key, 0, &mut rows);
        if rows.is_empty() {
            out.push_str(&format!("Type: {}.\n", type_of(&schema, prop)));
            continue;
        }
        out.push_str("| key | type | default | description |\n|---|---|---|---|\n");
        for (path, ty, default, text) in rows {
            out.push_str(&format!("| `{path}` | {ty} | {default} | {text} |\n"));
        }
    }
    out
}

/// How deep nested keys are listed.
const MAX_DEPTH: usize = 6;

type Row = (String, String, String, String);

/// The rows of the keys under `node` (an object, a map of objects, a
/// list of objects), each with its dotted path.
fn rows_of(root: &Value, node: &Value, path: &str, depth: usize, rows: &mut Vec<Row>) {
    if depth > MAX_DEPTH {
        return;
    }
    let node = object_part(root, node);
    if let Some(props) = node["properties"].as_object() {
        for (key, prop) in props {
            let child = format!("{path}.{key}");
            let resolved = resolve(root, prop);
            let default = prop
                .get("default")
                .or_else(|| resolved.get("default"))
                .filter(|d| !d.is_null())
                .map(|d| format!("`{}`", cell(&d.to_string())))
                .unwrap_or_default();
            let mut text = description(prop);
            if text.is_empty() {
                text = description(resolved);
            }
            rows.push((child.clone(), type_of(root, prop), default, cell(&text)));
            rows_of(root, resolved, &child, depth + 1, rows);
        }
    } else if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object()) {
        rows_of(
            root,
            resolve(root, values),
            &format!("{path}.<name>"),
            depth + 1,
            rows,
        );
    } else if let Some(items) = node.get("items").filter(|v| v.is_object()) {
        rows_of(
            root,
            resolve(root, items),
            &format!("{path}[]"),
            depth + 1,
            rows,
        );
    }
}

/// An optional object's object part (`anyOf: [{$ref}, {type: null}]`).
fn object_part<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    let node = resolve(root, node);
    for key in ["anyOf", "oneOf"] {
        if let Some(list) = node[key].as_array() {
            let objects: Vec<&Value> = list
                .iter()
                .map(|v| resolve(root, v))
                .filter(|v| {
                    v.get("properties").is_some()
                        || v.get("additionalProperties").is_some_and(Value::is_object)
                })
                .collect();
            if let [one] = objects.as_slice() {
                return one;
            }
        }
    }
    node
}

/// A `$ref` followed to its definition.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    let mut node = node;
    for _ in 0..8 {
        let Some(target) = node["$ref"].as_str() else {
            break;
        };
        let Some(name) = target.strip_prefix("#/$defs/") else {
            break;
        };
        node = &root["$defs"][name];
    }
    node
}

/// A type in words: `string`, `integer`, `list of string`, `map of server`, `"a" \| "b"`.
fn type_of(root: &Value, node: &Value) -> String {
    let name = node["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .map(str::to_owned);
    let node = resolve(root, node);
    if let Some(values) = node["enum"].as_array() {
        let words: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return words.join(" \\| ");
    }
    if let Some(c) = node.get("const") {
        return format!("`{c}`");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(list) = node[key].as_array() {
            let mut parts: Vec<String> = list
                .iter()
                .filter(|v| v["type"] != "null")
                .map(|v| type_of(root, v))
                .collect();
            parts.dedup();
            return parts.join(" or ");
        }
    }
    let kind = match &node["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ => String::new(),
    };
    match kind.as_str() {
        "array" => format!("list of {}", type_of(root, &node["items"])),
        "object" if node.get("properties").is_none() => match node.get("additionalProperties") {
            Some(v) if v.is_object() => format!("map of {}", type_of(root, v)),
            _ => name.unwrap_or_else(|| "object".into()),
        },
        "object" => name.unwrap_or_else(|| "object".into()),
        "" => name.unwrap_or_else(|| "any".into()),
        _ => kind,
    }
}

/// A node's description on one line.
fn description(node: &Value) -> String {
    node["description"]
        .as_str()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Text safe in a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_knows_the_top_level_sections_and_refuses_unknown_keys() {
        let schema = schema();
        let props = schema["properties"].as_object().unwrap();
        for key in ["mcp_servers", "skills", "permissions", "gateway"] {
            assert!(props.contains_key(key), "{key}");
        }
        assert_eq!(schema["additionalProperties"], false);
        let page = reference_markdown();
        assert!(page.contains("| `mcp_servers.<name>.command` |"), "{page}");
    }
}
