//! A server whose lists cannot be taken as they are: one that paginates
//! forever or repeats a cursor fails its listing at a bound, alone, and one
//! that lists an entry nobody can read has that entry left out, said once
//! on stderr and in `list sources`, and its other entries published.

use extpool_testkit::{StateDir, raw_echo_binary};

use crate::support::{Sandbox, testkit};

#[test]
fn a_server_that_paginates_forever_fails_alone_at_the_page_bound() {
    let sb = Sandbox::new();
    let (endless, repeating) = (StateDir::new(), StateDir::new());
    let kit = testkit().display().to_string();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  endless:\n    command: {kit}\n    args: [--paging-fault, endless, --page-size, '1', --state-dir, {}]\n  repeating:\n    command: {kit}\n    args: [--paging-fault, repeat, --state-dir, {}]\n  good:\n    command: {kit}\nskills:\n  default_roots: false\n",
            endless.path().display(),
            repeating.path().display()
        ),
    );
    let r = sb.run(&["list", "tools"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    for line in [
        "endless: failed: MCP server \"endless\": tools/list was stopped: it has more than 1000 pages; extpool follows at most 1000",
        "repeating: failed: MCP server \"repeating\": tools/list was stopped: it gave the cursor \"same\" again on page 2 (first on page 1); following it would list the same pages forever",
    ] {
        assert_eq!(r.stderr.matches(line).count(), 1, "{line}\n{}", r.stderr);
    }
    assert!(!r.stderr.contains("timed out"), "{}", r.stderr);
    assert!(r.stdout.contains("mcp__good__add"), "{}", r.stdout);
    assert!(!r.stdout.contains("mcp__endless__"), "{}", r.stdout);
    // Stopped at the bound: the page that went past it was never asked for.
    assert_eq!(endless.counter("lists"), 1000);
    assert_eq!(repeating.counter("lists"), 2);

    let r = sb.run(&["call", "mcp__good__add", "a=2", "b=3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "5");
}

#[test]
fn an_entry_nobody_can_read_is_left_out_and_said_once_and_the_rest_published() {
    let sb = Sandbox::new();
    sb.write(
        "tools.json",
        r#"[
  {"name": "echo", "description": "Echo back", "inputSchema": {"type": "object"}},
  {"name": 5, "inputSchema": {"type": "object"}},
  {"name": "schemaless", "inputSchema": "none"},
  {"name": "also_fine", "inputSchema": {"type": "object"}}
]"#,
    );
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  raw:\n    command: {}\n    args: [--tools, tools.json]\n  good:\n    command: {}\nskills:\n  default_roots: false\n",
            raw_echo_binary().display(),
            testkit().display()
        ),
    );
    let name = "warning: MCP server \"raw\": tools/list: tools[1] is not published: field `name`: invalid type: integer `5`, expected a string";
    let schema = "warning: MCP server \"raw\": tools/list: tools[2] (\"schemaless\") is not published: field `inputSchema`: invalid type: string \"none\", expected a map";
    let r = sb.run(&["list", "tools"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for tool in ["mcp__raw__echo", "mcp__raw__also_fine", "mcp__good__add"] {
        assert!(r.stdout.contains(tool), "{tool}: {}", r.stdout);
    }
    for line in [name, schema] {
        assert_eq!(r.stderr.matches(line).count(), 1, "{line}\n{}", r.stderr);
    }

    let r = sb.run(&["list", "sources"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("2 advertised names not published"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("raw     tools/list: tools[1] is not published: field `name`"),
        "{}",
        r.stdout
    );
    let r = sb.run(&["list", "sources", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let raw = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "raw")
        .unwrap();
    assert_eq!(raw["dropped"].as_array().map(Vec::len), Some(2), "{raw:#}");

    let r = sb.run(&["call", "mcp__raw__echo", "message=hi"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "hi");
}
