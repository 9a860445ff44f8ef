//! The calls extpool suggests — the overview's "Try next" and `describe`'s
//! "Try" — against a server with a filesystem's kind of tools (the testkit
//! serving tools from a file): values come from each schema, a placeholder
//! names an argument only the user can give, and only a tool marked
//! read-only is suggested, never one that creates or deletes.

use serde_json::{Value, json};

use crate::support::{Sandbox, testkit};

fn tool(name: &str, properties: Value, required: &[&str], annotations: Value) -> Value {
    json!({
        "name": name,
        "description": format!("The {name} tool."),
        "inputSchema": {"type": "object", "properties": properties, "required": required},
        "annotations": annotations,
    })
}

fn path() -> Value {
    json!({"path": {"type": "string", "description": "A path."}})
}

/// Creates, then deletes, before anything read-only: what the overview
/// used to suggest first.
fn writes() -> Vec<Value> {
    vec![
        tool(
            "create_directory",
            path(),
            &["path"],
            json!({"readOnlyHint": false, "destructiveHint": false}),
        ),
        tool(
            "delete_file",
            path(),
            &["path"],
            json!({"destructiveHint": true}),
        ),
        json!({"name": "move_file", "inputSchema": {"type": "object"}}),
    ]
}

fn read_only() -> Value {
    json!({"readOnlyHint": true})
}

/// A sandbox whose server `fs` serves `tools`.
fn serving(tools: &[Value]) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("tools.json", &Value::Array(tools.to_vec()).to_string());
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  fs:\n    command: {}\n    args: [--tools-file, tools.json]\nskills:\n  default_roots: false\n",
            testkit().display()
        ),
    );
    sb
}

/// The overview's "Try next" lines.
fn try_next(sb: &Sandbox) -> Vec<String> {
    let r = sb.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.stdout
        .lines()
        .skip_while(|l| *l != "Try next")
        .skip(1)
        .map(|l| l.trim().to_owned())
        .collect()
}

#[test]
fn the_overview_suggests_a_read_only_call_that_runs_as_written() {
    let mut tools = writes();
    tools.extend([
        tool("read_file", path(), &["path"], read_only()),
        tool(
            "get_current_time",
            json!({
                "timezone": {"type": "string", "enum": ["UTC", "Europe/Paris"]},
                "format": {"type": "string", "default": "iso"},
            }),
            &["timezone", "format"],
            read_only(),
        ),
    ]);
    let sb = serving(&tools);
    let next = try_next(&sb);
    let call = "extpool call mcp__fs__get_current_time timezone=UTC format=iso";
    assert!(next.contains(&call.to_owned()), "{next:?}");
    for line in &next {
        for never in ["create_directory", "delete_file", "move_file", "hello"] {
            assert!(!line.contains(never), "{line}");
        }
    }
    // It runs as written, and calls what it says.
    let words: Vec<&str> = call.split(' ').skip(1).collect();
    let r = sb.run(&words);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout.trim(),
        r#"called get_current_time with {"format":"iso","timezone":"UTC"}"#
    );
}

#[test]
fn a_read_only_tool_that_needs_a_value_only_the_user_knows_is_described_instead() {
    let mut tools = writes();
    tools.push(tool(
        "get_time",
        json!({"timezone": {"type": "string", "description": "IANA timezone, e.g. Europe/Paris"}}),
        &["timezone"],
        read_only(),
    ));
    let next = try_next(&serving(&tools));
    assert!(
        next.contains(&"extpool describe mcp__fs__get_time".to_owned()),
        "{next:?}"
    );
    assert!(
        !next.iter().any(|l| l.starts_with("extpool call")),
        "{next:?}"
    );
}

#[test]
fn no_call_is_suggested_when_no_tool_is_marked_read_only() {
    let next = try_next(&serving(&writes()));
    assert!(next.contains(&"extpool list tools".to_owned()), "{next:?}");
    assert!(
        !next
            .iter()
            .any(|l| l.starts_with("extpool call") || l.starts_with("extpool describe")),
        "{next:?}"
    );
}

#[test]
fn describe_fills_each_argument_from_its_schema_or_names_it() {
    let search = tool(
        "search",
        json!({
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 5},
            "since": {"type": "string", "format": "date"},
            "sort": {"enum": ["asc", "desc"]},
            "tags": {"type": "array", "items": {"type": "integer"}},
            "exact": {"type": "boolean"},
            "region": {"type": "string", "examples": ["eu-west-1"]},
            "note": {"type": "string", "default": "two words"},
        }),
        &[
            "query", "limit", "since", "sort", "tags", "exact", "region", "note",
        ],
        read_only(),
    );
    let mut tools = writes();
    tools.push(search);
    let sb = serving(&tools);
    let r = sb.run(&["describe", "mcp__fs__search"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("describe_search", r.stdout);
    let r = sb.run(&["describe", "mcp__fs__delete_file"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("describe_delete_file", r.stdout);
    let r = sb.run(&["describe", "mcp__fs__delete_file", "--json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v.get("example"), None, "{v}");
    assert_eq!(v["usage"], "extpool call mcp__fs__delete_file path=<path>");
}
