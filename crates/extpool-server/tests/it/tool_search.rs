//! Tool search in gateway sessions (`tool_search`): above the schema
//! budget a client lists names in the search tool, loads the schemas it
//! needs by searching (its list changes, for that connection only) and can
//! call a deferred tool by name.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, Sdk, Served, sdk_client, server_yaml};

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_the_budget_searches_loads_and_calls_deferred_tools() {
    let kit = StateDir::new();
    let mut args = kit.args();
    args.extend(["--extra-tools".to_owned(), "200".to_owned()]);
    let project = Project::new();
    project.config(&server_yaml(
        "testkit",
        extpool_testkit::stdio_command(args),
    ));
    let options = GatewayOptions {
        tool_search: Some(extpool_host::DeferralConfig {
            budget_bytes: 4_000,
            ..extpool_host::DeferralConfig::default()
        }),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "list_tools", "describe": true},
            {"op": "call", "name": "ToolSearch", "args": {"query": "sum of two numbers"}},
            {"op": "wait_tools_changed"},
            {"op": "list_tools"},
            {"op": "call", "name": "mcp__testkit__echo", "args": {"message": "by name"}},
        ]),
    )
    .await;
    // Over the budget: names in the search tool, not schemas in the list.
    let before = strings(&out[1]["tools"]);
    assert!(before.contains(&"ToolSearch".to_owned()), "{before:?}");
    assert!(before.contains(&"ListMcpSources".to_owned()), "{before:?}");
    assert!(
        !before.iter().any(|t| t.starts_with("mcp__testkit__")),
        "{before:?}"
    );
    let listing = out[1]["descriptions"]["ToolSearch"].as_str().unwrap();
    assert!(listing.contains("- mcp__testkit__add:"), "{listing}");
    assert!(listing.contains("- mcp__testkit__tool_0199"), "{listing}");
    // A search ranks the right tool first and returns its schema.
    let found: Value = serde_json::from_str(out[2]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(found["tools"][0]["name"], "mcp__testkit__add", "{found}");
    assert!(
        found["tools"][0]["input_schema"]["properties"]["a"].is_object(),
        "{found}"
    );
    // The client is told its list changed, and the found tool is listed.
    assert_eq!(out[3]["op"], "wait_tools_changed");
    let after = strings(&out[4]["tools"]);
    assert!(after.contains(&"mcp__testkit__add".to_owned()), "{after:?}");
    assert!(after.len() < 20, "only what was loaded: {after:?}");
    // A deferred tool called by name works at once.
    assert_eq!(out[5]["text"], json!(["by name"]), "{out:?}");
    // What one connection loaded is its own.
    let other = sdk_client(Sdk::TypeScript, &served.url, json!([{"op": "list_tools"}])).await;
    let theirs = strings(&other[1]["tools"]);
    assert!(
        !theirs.contains(&"mcp__testkit__add".to_owned()),
        "{theirs:?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn within_the_budget_every_tool_is_listed_and_no_search_tool() {
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&crate::support::testkit_yaml("testkit", &kit));
    let options = GatewayOptions {
        tool_search: Some(extpool_host::DeferralConfig::default()),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let out = sdk_client(Sdk::Python, &served.url, json!([{"op": "list_tools"}])).await;
    let tools = strings(&out[1]["tools"]);
    assert!(
        tools.contains(&"mcp__testkit__echo".to_owned()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"ToolSearch".to_owned()), "{tools:?}");
    served.stop().await;
}
