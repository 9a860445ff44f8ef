//! An entry of a TOML file (Codex's `config.toml`) set or removed in
//! place with `toml_edit`: comments, spacing and the other tables stay as
//! they were written. An entry is written as a table of its own
//! (`[mcp_servers.extpool]`), as Codex documents it.

use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table};

use super::{EditError, Edited};

/// `text` with table `container.name` set to `value` (a JSON object of
/// strings, numbers, booleans and arrays or objects of them). Unchanged
/// when it holds that value already.
pub fn set_entry(
    text: &str,
    container: &[&str],
    name: &str,
    value: &Value,
) -> Result<Edited, EditError> {
    let mut doc = parse(text)?;
    let table = container_mut(&mut doc, container, true)?.ok_or_else(|| not_table(container))?;
    if table.get(name).map(to_json).as_ref() == Some(value) {
        return Ok(Edited::between(text, text.to_owned()));
    }
    let Value::Object(fields) = value else {
        return Err(EditError::Render("a TOML entry is a table".into()));
    };
    let mut entry = Table::new();
    for (key, v) in fields {
        entry.insert(key, Item::Value(to_toml(v)?));
    }
    table.insert(name, Item::Table(entry));
    Ok(Edited::between(text, doc.to_string()))
}

/// `text` without table `container.name`; unchanged when it has none.
pub fn remove_entry(text: &str, container: &[&str], name: &str) -> Result<Edited, EditError> {
    let mut doc = parse(text)?;
    let Some(table) = container_mut(&mut doc, container, false)? else {
        return Ok(Edited::between(text, text.to_owned()));
    };
    if table.remove(name).is_none() {
        return Ok(Edited::between(text, text.to_owned()));
    }
    Ok(Edited::between(text, doc.to_string()))
}

/// The entries of `container` (none when it is missing), as JSON values.
pub fn entries(text: &str, container: &[&str]) -> Result<Vec<(String, Value)>, EditError> {
    let doc = parse(text)?;
    let mut item: &Item = doc.as_item();
    for key in container {
        match item.get(key) {
            Some(next) => item = next,
            None => return Ok(Vec::new()),
        }
    }
    let Some(table) = item.as_table_like() else {
        return Ok(Vec::new());
    };
    Ok(table
        .iter()
        .map(|(k, v)| (k.to_owned(), to_json(v)))
        .collect())
}

fn parse(text: &str) -> Result<DocumentMut, EditError> {
    // This crate's reader first: its errors have the file's line, and it
    // bounds nesting.
    crate::tree::parse_toml(text).map_err(|e| EditError::syntax(e.pos.line, e.message))?;
    text.parse::<DocumentMut>()
        .map_err(|e| EditError::syntax(1, e.message()))
}

fn not_table(container: &[&str]) -> EditError {
    EditError::NotAMapping {
        what: container.join("."),
        line: 1,
    }
}

/// The table at `container`, made (implicit, so no empty `[mcp_servers]`
/// header is written) when `make`.
fn container_mut<'d>(
    doc: &'d mut DocumentMut,
    container: &[&str],
    make: bool,
) -> Result<Option<&'d mut Table>, EditError> {
    let mut table = doc.as_table_mut();
    for key in container {
        if !table.contains_key(key) {
            if !make {
                return Ok(None);
            }
            let mut made = Table::new();
            made.set_implicit(true);
            table.insert(key, Item::Table(made));
        }
        table = match table.get_mut(key) {
            Some(Item::Table(t)) => t,
            _ => return Err(not_table(container)),
        };
    }
    Ok(Some(table))
}

/// A JSON value as a TOML value.
fn to_toml(value: &Value) -> Result<toml_edit::Value, EditError> {
    Ok(match value {
        Value::Bool(b) => (*b).into(),
        Value::String(s) => s.as_str().into(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into(),
            (None, Some(f)) => f.into(),
            _ => return Err(EditError::Render(format!("{n} is not a TOML number"))),
        },
        Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(to_toml(item)?);
            }
            array.into()
        }
        Value::Object(map) => {
            let mut inline = toml_edit::InlineTable::new();
            for (k, v) in map {
                inline.insert(k, to_toml(v)?);
            }
            inline.into()
        }
        Value::Null => return Err(EditError::Render("TOML has no null".into())),
    })
}

/// A TOML item as a JSON value (dates as their text).
fn to_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(v) => value_json(v),
        Item::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.to_owned(), to_json(v))).collect())
        }
        Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .map(|t| Value::Object(t.iter().map(|(k, v)| (k.to_owned(), to_json(v))).collect()))
                .collect(),
        ),
    }
}

fn value_json(value: &toml_edit::Value) -> Value {
    use toml_edit::Value as V;
    match value {
        V::String(s) => Value::String(s.value().clone()),
        V::Integer(i) => Value::from(*i.value()),
        V::Float(f) => Value::from(*f.value()),
        V::Boolean(b) => Value::Bool(*b.value()),
        V::Datetime(d) => Value::String(d.value().to_string()),
        V::Array(a) => Value::Array(a.iter().map(value_json).collect()),
        V::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), value_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CODEX: &str = "# Codex settings\nmodel = \"o3\"  # the model\n\n[mcp_servers.docs]\n# the docs server\nurl = \"https://docs.example/mcp\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n";

    #[test]
    fn set_keeps_comments_and_tables_and_is_idempotent() {
        let value = json!({"url": "http://127.0.0.1:8520/mcp", "bearer_token_env_var": "EXTPOOL_GATEWAY_TOKEN"});
        let once = set_entry(CODEX, &["mcp_servers"], "extpool", &value).unwrap();
        assert!(once.changed);
        assert!(
            once.text
                .starts_with("# Codex settings\nmodel = \"o3\"  # the model\n")
        );
        assert!(once.text.contains("# the docs server"));
        assert!(
            once.text.contains("[mcp_servers.extpool]\n"),
            "{}",
            once.text
        );
        let parsed: toml::Table = once.text.parse().unwrap();
        assert_eq!(
            parsed["mcp_servers"]["extpool"]["url"].as_str(),
            Some("http://127.0.0.1:8520/mcp")
        );
        assert_eq!(
            parsed["profiles"]["fast"]["model"].as_str(),
            Some("o4-mini")
        );
        let twice = set_entry(&once.text, &["mcp_servers"], "extpool", &value).unwrap();
        assert!(!twice.changed);
        let removed = remove_entry(&once.text, &["mcp_servers"], "extpool").unwrap();
        assert_eq!(removed.text, CODEX);
        assert_eq!(entries(CODEX, &["mcp_servers"]).unwrap().len(), 1);
    }

    #[test]
    fn an_empty_file_gets_the_table_alone() {
        let value = json!({"url": "http://127.0.0.1:8520/mcp"});
        let made = set_entry("", &["mcp_servers"], "extpool", &value).unwrap();
        assert_eq!(
            made.text,
            "[mcp_servers.extpool]\nurl = \"http://127.0.0.1:8520/mcp\"\n"
        );
        let e = set_entry("mcp_servers = 3\n", &["mcp_servers"], "x", &value).unwrap_err();
        assert!(matches!(e, EditError::NotAMapping { .. }), "{e}");
        let e = set_entry("a = [\n", &["mcp_servers"], "x", &value).unwrap_err();
        assert!(matches!(e, EditError::Syntax { .. }), "{e}");
    }
}
