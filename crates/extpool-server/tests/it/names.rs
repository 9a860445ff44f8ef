//! Servers listed without their `mcp__<server>__` prefix
//! (`GatewayOptions::unprefixed`): their tools and prompts go by their own
//! names where that collides with nothing, as the Python SDK client sees
//! them; calls by either name reach the same server.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, Sdk, Served, conformance_testkit_yaml, sdk_client, testkit_yaml};

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

/// Serves testkit `a` (plain) and `b` (with the conformance fixtures),
/// with `unprefixed` listed by their own names.
async fn serve_two(a: &StateDir, b: &StateDir, unprefixed: &[&str]) -> Served {
    let project = Project::new();
    project.config(&(testkit_yaml("a", a) + &conformance_testkit_yaml("b", b)));
    let options = GatewayOptions {
        unprefixed: unprefixed.iter().map(|s| (*s).to_owned()).collect(),
        ..GatewayOptions::default()
    };
    Served::start(project, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_two_unprefixed_servers_share_keeps_its_prefix_for_both() {
    let (a, b) = (StateDir::new(), StateDir::new());
    let served = serve_two(&a, &b, &["a", "b"]).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "list_tools"},
            {"op": "list_prompts"},
            {"op": "call", "name": "test_simple_text"},
            {"op": "call", "name": "mcp__b__test_simple_text"},
            {"op": "get_prompt", "name": "test_simple_prompt"},
        ]),
    )
    .await;
    let tools = names(&out[1]["tools"]);
    for listed in [
        "mcp__a__echo",
        "mcp__b__echo",
        "test_simple_text",
        "ListMcpResources",
    ] {
        assert!(
            tools.iter().any(|t| t == listed),
            "{listed} not in {tools:?}"
        );
    }
    for hidden in ["echo", "mcp__b__test_simple_text"] {
        assert!(!tools.iter().any(|t| t == hidden), "{hidden} in {tools:?}");
    }
    let prompts = names(&out[2]["prompts"]);
    for listed in ["mcp__a__greet", "mcp__b__greet", "test_simple_prompt"] {
        assert!(
            prompts.iter().any(|p| p == listed),
            "{listed} not in {prompts:?}"
        );
    }
    assert!(!prompts.iter().any(|p| p == "greet"), "{prompts:?}");
    let simple = json!(["This is a simple text response for testing."]);
    assert_eq!(out[3]["text"], simple, "{out:?}");
    assert_eq!(out[4]["text"], simple, "{out:?}");
    assert_eq!(
        out[5]["text"],
        json!(["This is a simple prompt for testing."]),
        "{out:?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_unprefixed_server_loses_its_prefix() {
    let (a, b) = (StateDir::new(), StateDir::new());
    let served = serve_two(&a, &b, &["b"]).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "counter", "args": {"key": "who"}},
            {"op": "call", "name": "mcp__a__counter", "args": {"key": "who"}},
            {"op": "call", "name": "mcp__b__counter", "args": {"key": "who"}},
        ]),
    )
    .await;
    let tools = names(&out[1]["tools"]);
    for listed in ["counter", "mcp__a__counter", "echo", "mcp__a__echo"] {
        assert!(
            tools.iter().any(|t| t == listed),
            "{listed} not in {tools:?}"
        );
    }
    assert!(!tools.iter().any(|t| t == "mcp__b__counter"), "{tools:?}");
    // `counter` is b's: b counted twice (bare and prefixed), a once.
    assert_eq!(out[2]["text"], json!(["1"]), "{out:?}");
    assert_eq!(out[3]["text"], json!(["1"]), "{out:?}");
    assert_eq!(out[4]["text"], json!(["2"]), "{out:?}");
    assert_eq!((a.counter("who"), b.counter("who")), (1, 2));
    served.stop().await;
}
