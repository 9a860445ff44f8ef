//! TOML → located tree, on the `toml` crate's spanned document parser.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Entry, LineIndex, Node, Pos, SyntaxError, Value};

/// Parses a TOML document.
pub fn parse_toml(text: &str) -> Result<Node, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let index = LineIndex::new(text);
    match DeTable::parse(text) {
        Ok(table) => {
            let pos = index.pos(table.span().start);
            Ok(Node::new(pos, table_value(table.get_ref(), &index)))
        }
        Err(e) => {
            let pos = e.span().map_or(Pos::new(1, 1), |s| index.pos(s.start));
            Err(SyntaxError::new(pos, e.message().trim().to_owned()))
        }
    }
}

fn table_value(table: &DeTable<'_>, index: &LineIndex<'_>) -> Value {
    let mut entries: Vec<Entry> = table
        .iter()
        .map(|(key, value)| Entry {
            key: key.get_ref().to_string(),
            key_pos: index.pos(key.span().start),
            value: node(value, index),
        })
        .collect();
    // The parser sorts keys; restore document order.
    entries.sort_by_key(|e| e.key_pos);
    Value::Map(entries)
}

fn node(value: &Spanned<DeValue<'_>>, index: &LineIndex<'_>) -> Node {
    let pos = index.pos(value.span().start);
    let v = match value.get_ref() {
        DeValue::String(s) => Value::Str(s.to_string()),
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            match i64::from_str_radix(&digits, i.radix()) {
                Ok(n) => Value::Int(n, n.to_string()),
                Err(_) => Value::Str(i.as_str().to_owned()),
            }
        }
        DeValue::Float(f) => {
            let raw = f.as_str().replace('_', "");
            match raw.parse::<f64>() {
                Ok(x) => Value::Float(x, raw),
                Err(_) => Value::Str(raw),
            }
        }
        DeValue::Boolean(b) => Value::Bool(*b, b.to_string()),
        DeValue::Datetime(d) => Value::Str(d.to_string()),
        DeValue::Array(items) => Value::Seq(items.iter().map(|v| node(v, index)).collect()),
        DeValue::Table(t) => table_value(t, index),
    };
    Node::new(pos, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_keep_positions_and_order() {
        let text = "model = \"x\"\n\n[mcp_servers.zeta]\ncommand = \"z\"\n\n[mcp_servers.alpha]\nurl = \"https://a\"\nstartup_timeout_sec = 1_0\n";
        let doc = parse_toml(text).unwrap();
        let servers = doc.get("mcp_servers").unwrap().as_map().unwrap();
        assert_eq!(servers[0].key, "zeta");
        assert_eq!(servers[0].key_pos, Pos::new(3, 14));
        let url = doc.at(&["mcp_servers", "alpha", "url"]).unwrap();
        assert_eq!(url.pos, Pos::new(7, 7));
        let t = doc
            .at(&["mcp_servers", "alpha", "startup_timeout_sec"])
            .unwrap();
        assert_eq!(t.value, Value::Int(10, "10".into()));
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse_toml("a = 1\nb = \n").unwrap_err();
        assert_eq!(e.pos.line, 2, "{e:?}");
        let e = parse_toml("[x]\na = 1\n[x]\n").unwrap_err();
        assert_eq!(e.pos.line, 3, "{e:?}");
    }
}
