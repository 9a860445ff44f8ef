//! An entry of a JSON (or JSONC: comments, trailing commas) file set or
//! removed in place, on `jsonc-parser`'s concrete syntax tree: comments,
//! whitespace and the other keys stay as they were written.
//!
//! The text is read by this crate's own JSON reader first, so a file that
//! is not JSON, or nests deeper than JSON may, is refused with its line
//! before the tree is built.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use super::{EditError, Edited};

/// `text` with `container.name` set to `value` (the containers made when
/// missing). Unchanged when it holds that value already.
pub fn set_entry(
    text: &str,
    container: &[&str],
    name: &str,
    value: &Value,
) -> Result<Edited, EditError> {
    let root = parse(text)?;
    let mut object = root.object_value_or_set();
    for key in container {
        object = match object.get(key) {
            Some(prop) => match prop.value() {
                Some(v) if v.as_object().is_some() => prop.object_value_or_set(),
                _ => {
                    return Err(EditError::NotAMapping {
                        what: (*key).to_owned(),
                        line: 1,
                    });
                }
            },
            None => object.object_value_or_set(key),
        };
    }
    match object.get(name) {
        Some(prop) if prop.to_serde_value().as_ref() == Some(value) => {
            return Ok(Edited::between(text, text.to_owned()));
        }
        Some(prop) => prop.set_value(input(value)),
        None => {
            object.append(name, input(value));
        }
    }
    Ok(Edited::between(text, finish(text, &root)))
}

/// `text` without `container.name`; unchanged when it has none.
pub fn remove_entry(text: &str, container: &[&str], name: &str) -> Result<Edited, EditError> {
    if text.trim().is_empty() {
        return Ok(Edited::between(text, text.to_owned()));
    }
    let root = parse(text)?;
    let Some(object) = find(&root, container) else {
        return Ok(Edited::between(text, text.to_owned()));
    };
    match object.get(name) {
        Some(prop) => prop.remove(),
        None => return Ok(Edited::between(text, text.to_owned())),
    }
    Ok(Edited::between(text, finish(text, &root)))
}

/// The entries of `container` (none when it is missing), with their values.
pub fn entries(text: &str, container: &[&str]) -> Result<Vec<(String, Value)>, EditError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root = parse(text)?;
    let Some(object) = find(&root, container) else {
        return Ok(Vec::new());
    };
    Ok(object
        .properties()
        .into_iter()
        .filter_map(|p| Some((p.decoded_name()?, p.to_serde_value()?)))
        .collect())
}

fn find(root: &CstRootNode, container: &[&str]) -> Option<CstObject> {
    let mut object = root.object_value()?;
    for key in container {
        object = object.object_value(key)?;
    }
    Some(object)
}

/// The tree of `text` (an empty text is an empty object).
fn parse(text: &str) -> Result<CstRootNode, EditError> {
    if !text.trim().is_empty() {
        crate::tree::parse_json(text).map_err(|e| EditError::syntax(e.pos.line, e.message))?;
    }
    let source = if text.trim().is_empty() { "{}\n" } else { text };
    let root = CstRootNode::parse(source, &ParseOptions::default())
        .map_err(|e| EditError::syntax(e.line_display(), e.kind().to_string()))?;
    if root.value().is_some_and(|v| v.as_object().is_none()) {
        return Err(EditError::NotAMapping {
            what: "the document".into(),
            line: 1,
        });
    }
    Ok(root)
}

/// The tree as text, ending with a line break when the file did (or was
/// empty).
fn finish(old: &str, root: &CstRootNode) -> String {
    let mut text = root.to_string();
    if (old.trim().is_empty() || old.ends_with('\n')) && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// A JSON value as the tree's input.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VSCODE: &str = "// my servers\n{\n  \"servers\": {\n    // the one I use\n    \"docs\": {\"type\": \"http\", \"url\": \"https://docs.example/mcp\"},\n  },\n  \"inputs\": [],\n}\n";

    fn read(text: &str) -> Value {
        jsonc_parser::parse_to_serde_value::<Value>(text, &ParseOptions::default()).unwrap()
    }

    #[test]
    fn set_keeps_comments_and_other_keys_and_is_idempotent() {
        let value = json!({"type": "http", "url": "http://127.0.0.1:8520/mcp"});
        let once = set_entry(VSCODE, &["servers"], "extpool", &value).unwrap();
        assert!(once.changed);
        assert!(once.text.contains("// my servers") && once.text.contains("// the one I use"));
        let v = read(&once.text);
        assert_eq!(v["servers"]["extpool"], value);
        assert_eq!(v["servers"]["docs"]["url"], "https://docs.example/mcp");
        assert_eq!(v["inputs"], json!([]));
        let twice = set_entry(&once.text, &["servers"], "extpool", &value).unwrap();
        assert!(!twice.changed);
        assert_eq!(twice.text, once.text);
        let removed = remove_entry(&once.text, &["servers"], "extpool").unwrap();
        assert!(removed.changed);
        assert!(removed.text.contains("// the one I use"));
        assert!(read(&removed.text)["servers"].get("extpool").is_none());
        assert!(
            !remove_entry(&removed.text, &["servers"], "extpool")
                .unwrap()
                .changed
        );
    }

    #[test]
    fn missing_files_and_containers_are_made() {
        let value = json!({"url": "http://127.0.0.1:8520/mcp"});
        let made = set_entry("", &["mcpServers"], "extpool", &value).unwrap();
        assert_eq!(read(&made.text), json!({"mcpServers": {"extpool": value}}));
        let other = set_entry("{\"theme\": \"dark\"}", &["mcpServers"], "x", &value).unwrap();
        assert_eq!(read(&other.text)["theme"], "dark");
        assert_eq!(entries(&other.text, &["mcpServers"]).unwrap().len(), 1);
    }

    #[test]
    fn what_is_not_an_object_is_refused() {
        let e = set_entry("[]", &["mcpServers"], "x", &json!({})).unwrap_err();
        assert!(matches!(e, EditError::NotAMapping { .. }), "{e}");
        let e = set_entry("{\"mcpServers\": 3}", &["mcpServers"], "x", &json!({})).unwrap_err();
        assert!(matches!(e, EditError::NotAMapping { .. }), "{e}");
        let e = set_entry("{\n\"a\": [1,\n", &["mcpServers"], "x", &json!({})).unwrap_err();
        assert!(matches!(e, EditError::Syntax { .. }), "{e}");
        let deep = format!("{{\"a\": {}1{}}}", "[".repeat(300), "]".repeat(300));
        let e = set_entry(&deep, &["mcpServers"], "x", &json!({})).unwrap_err();
        assert!(matches!(e, EditError::Syntax { .. }), "{e}");
    }
}
