//! What goes through the catalog: its built-in tools, its source status,
//! and lazy servers listed from configuration.

use crate::support::{Sandbox, testkit};

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.testkit_config("");
    sb
}

#[test]
fn call_mcp_with_query_filters_a_structured_result() {
    let sb = sandbox();
    let r = sb.run(&[
        "call",
        "CallMcpWithQuery",
        "--args",
        r#"{"server": "testkit", "tool": "structured", "args": {"count": 3}, "jq_filter": ".items | map(.name)"}"#,
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["is_error"], false, "{v}");
    let text = v.to_string();
    assert!(text.contains("item-2"), "{text}");
    assert!(
        !text.contains("\\\"id\\\""),
        "the filter dropped ids: {text}"
    );

    // A filter error names its position and exits 1.
    let r = sb.run(&[
        "call",
        "CallMcpWithQuery",
        "--args",
        r#"{"server": "testkit", "tool": "structured", "args": {"count": 1}, "jq_filter": ".items | map("}"#,
    ]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
}

#[test]
fn resource_tools_are_catalog_tools() {
    let sb = sandbox();
    let r = sb.run(&["call", "ListMcpResources", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("testkit://info"), "{}", r.stdout);
    let r = sb.run(&[
        "call",
        "ReadMcpResource",
        "server=testkit",
        "uri=testkit://info",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.trim().is_empty());
}

#[test]
fn list_sources_json_shows_the_catalog_status() {
    let sb = sandbox();
    let r = sb.run(&["list", "sources", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let rows = v.as_array().unwrap();
    let server = rows
        .iter()
        .find(|s| s["kind"] == "server" && s["name"] == "testkit")
        .unwrap();
    assert_eq!(server["state"], "ready", "{server}");
    assert_eq!(server["stale"], false, "{server}");
    assert!(server["revision"].as_u64().unwrap() >= 1, "{server}");
    let catalog = rows.iter().find(|s| s["kind"] == "catalog").unwrap();
    assert_eq!(catalog["state"], "idle", "{catalog}");
    assert_eq!(catalog["revision"], server["revision"], "{catalog}");

    let r = sb.run(&["list", "sources"]);
    assert!(
        r.stdout.contains("catalog: idle, revision "),
        "{}",
        r.stdout
    );
}
#[test]
fn a_lazy_server_is_listed_without_starting_and_starts_on_first_call() {
    let sb = Sandbox::new();
    let state = extpool_testkit::StateDir::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  lazy:\n    command: {}\n    args: [--state-dir, {}]\n    lazy: true\n    tools:\n      - name: echo\n        description: Echoes a message.\n",
            testkit().display(),
            state.path().display()
        ),
    );
    let r = sb.run(&["list", "tools", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__lazy__echo"), "{names:?}");
    assert_eq!(state.starts(), 0, "listing started the lazy server");
    let r = sb.run(&["call", "mcp__lazy__echo", "message=woken"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "woken\n"), "{}", r.stderr);
    assert_eq!(state.starts(), 1, "the call started the server once");
}

#[test]
fn local_skills_shadow_mcp_hosted_ones_of_the_same_name() {
    let sb = Sandbox::new();
    sb.write(
        "skills/testkit-skill/SKILL.md",
        "---\nname: testkit-skill\ndescription: The local one.\n---\nLocal body.\n",
    );
    sb.testkit_config("skills:\n  paths: [./skills]\n");
    let r = sb.run(&["list", "skills", "--hosted", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let rows: Vec<&serde_json::Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "testkit-skill")
        .collect();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["source"], "local", "{v}");
    let r = sb.run(&["read", "skill://testkit-skill/SKILL.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Local body."), "{}", r.stdout);
    // The hosted skill's other files stay reachable under the same first segment.
    let r = sb.run(&["read", "skill://testkit-skill/references/guide.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}
