//! The Python and TypeScript MCP SDK clients, started for real, against
//! the gateway: what they list, call, read and render, and the
//! `list_changed` that reaches them when an upstream's tools change.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, Sdk, Served, sdk_client, testkit_yaml};

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn served(state: &StateDir) -> Served {
    let project = Project::new();
    project.config(&testkit_yaml("testkit", state));
    project.skill("review", "Review the change, then call echo.");
    Served::start(project, GatewayOptions::default()).await
}

async fn lists_calls_reads_and_renders(sdk: Sdk) {
    let state = StateDir::new();
    let served = served(&state).await;
    let out = sdk_client(
        sdk,
        &served.url,
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "mcp__testkit__echo", "args": {"message": "through the gateway"}},
            {"op": "call", "name": "mcp__testkit__no_such_tool_here", "expect_error": true},
            {"op": "list_prompts"},
            {"op": "get_prompt", "name": "mcp__testkit__greet", "args": {"name": "Ada"}},
            {"op": "get_prompt", "name": "review", "args": {"arguments": "PR 7"}},
            {"op": "list_resources"},
            {"op": "read", "uri": "skill://review/SKILL.md"},
            {"op": "read", "uri": "testkit://info"},
        ]),
    )
    .await;
    assert_eq!(out[0]["server"], "extpool", "{out:?}");
    let tools = strings(&out[1]["tools"]);
    assert!(
        tools.contains(&"mcp__testkit__echo".to_owned()),
        "{tools:?}"
    );
    assert!(
        tools.contains(&"ListMcpResources".to_owned()),
        "built-ins: {tools:?}"
    );
    assert_eq!(out[2]["text"], json!(["through the gateway"]));
    assert_eq!(out[2]["is_error"], false);
    // An unknown name is a JSON-RPC invalid-params error (as MCP says),
    // with a suggestion; the session lives on.
    let error = out[3]["error"].as_str().unwrap();
    assert!(
        error.contains("unknown tool mcp__testkit__no_such_tool_here"),
        "{error}"
    );
    let prompts = strings(&out[4]["prompts"]);
    assert!(
        prompts.contains(&"review".to_owned())
            && prompts.contains(&"mcp__testkit__greet".to_owned()),
        "{prompts:?}"
    );
    assert_eq!(out[5]["text"], json!(["Hello, Ada!"]));
    let rendered = out[6]["text"][0].as_str().unwrap();
    assert!(rendered.contains("Review the change"), "{rendered}");
    let resources = strings(&out[7]["resources"]);
    assert!(
        resources.contains(&"skill://review/SKILL.md".to_owned()),
        "{resources:?}"
    );
    assert!(
        resources.contains(&"testkit://info".to_owned()),
        "{resources:?}"
    );
    assert!(
        out[8]["text"][0]
            .as_str()
            .unwrap()
            .contains("Review the change")
    );
    assert!(out[9]["text"][0].as_str().unwrap().contains("testkit"));
    assert_eq!(state.starts(), 1);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_lists_calls_reads_and_renders() {
    lists_calls_reads_and_renders(Sdk::Python).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_lists_calls_reads_and_renders() {
    lists_calls_reads_and_renders(Sdk::TypeScript).await;
}

async fn list_changed_reaches(sdk: Sdk, tool: &str) {
    let state = StateDir::new();
    let served = served(&state).await;
    let out = sdk_client(
        sdk,
        &served.url,
        json!([
            {"op": "call", "name": "mcp__testkit__add_tool", "args": {"name": tool}},
            {"op": "wait_tools_changed"},
            {"op": "list_tools"},
        ]),
    )
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    assert_eq!(out[2]["op"], "wait_tools_changed");
    let tools = strings(&out[3]["tools"]);
    assert!(
        tools.contains(&format!("mcp__testkit__{tool}")),
        "{tools:?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_tool_list_change_reaches_the_python_client() {
    list_changed_reaches(Sdk::Python, "fresh_py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_tool_list_change_reaches_the_typescript_client() {
    list_changed_reaches(Sdk::TypeScript, "fresh_ts").await;
}
