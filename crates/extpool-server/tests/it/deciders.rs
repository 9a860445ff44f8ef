//! The deciders agree through the gateway: with the same permission rules,
//! grants and unprefixed servers, what a real SDK client is listed is what
//! it may call — under its listed name and its catalog name — and what it
//! is not listed it may not call, directly or through `CallMcpWithQuery`,
//! told why (denied by a rule, not granted to the session).

use extpool_host::ToolCall;
use extpool_server::GatewayOptions;
use extpool_state::StateStore;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{PATIENCE, Project, Sdk, Served, sdk_client, testkit_yaml};

/// The probes: (catalog name, the name an unprefixed listing gives it, arguments).
const PROBES: [(&str, &str, &str); 3] = [
    ("mcp__testkit__echo", "echo", r#"{"message": "hi"}"#),
    ("mcp__testkit__add", "add", r#"{"a": 1, "b": 2}"#),
    ("mcp__testkit__later", "later", "{}"),
];

/// Each probe called by its catalog and its listed name, then through
/// `CallMcpWithQuery`, every answer kept (a JSON-RPC error included).
fn steps() -> Value {
    let mut steps = vec![json!({"op": "list_tools"})];
    for (catalog, own, args) in PROBES {
        let args: Value = serde_json::from_str(args).unwrap();
        for name in [catalog, own] {
            steps.push(json!({"op": "call", "name": name, "args": args, "expect_error": true}));
        }
        steps.push(
            json!({"op": "call", "name": "CallMcpWithQuery", "expect_error": true,
            "args": {"server": "testkit", "tool": own, "args": args, "jq_filter": "."}}),
        );
    }
    Value::Array(steps)
}

/// Whether a call's answer is a result (the tool ran), and its error text.
fn answered(step: &Value) -> (bool, String) {
    match step.get("error").and_then(Value::as_str) {
        Some(error) => (false, error.to_owned()),
        None => (step["is_error"] == false, step["text"].to_string()),
    }
}

/// What one client saw: per probe, whether it was listed, callable by
/// each name and through the built-in, and the refusal text.
fn check(out: &[Value], expect_listed: &[bool; 3], refusals: &[Option<&str>; 3]) {
    let listed: Vec<&str> = out[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for (i, (catalog, own, _)) in PROBES.iter().enumerate() {
        let is_listed = listed.contains(own) || listed.contains(catalog);
        assert_eq!(is_listed, expect_listed[i], "{catalog} in {listed:?}");
        let calls = &out[2 + i * 3..5 + i * 3];
        for (step, how) in calls.iter().zip([
            "by catalog name",
            "by its own name",
            "through CallMcpWithQuery",
        ]) {
            let (ran, text) = answered(step);
            // An unprefixed name is given only to a tool that is listed.
            let by_own_unlisted = how == "by its own name" && !is_listed;
            assert_eq!(
                ran, is_listed,
                "{catalog} {how}: listed {is_listed}, answer {step}"
            );
            if let (Some(why), false) = (refusals[i], by_own_unlisted) {
                assert!(text.contains(why), "{catalog} {how}: {text}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_client_is_listed_is_what_it_may_call_and_nothing_else() {
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&format!(
        "{}permissions:\n  deny: [\"mcp__testkit__add\"]\n",
        testkit_yaml("testkit", &kit)
    ));
    let state = StateStore::open_url(&format!(
        "sqlite:{}",
        project.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let options = GatewayOptions {
        state: Some(state),
        unprefixed: vec!["testkit".into()],
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let created = reqwest::Client::new()
        .post(format!("{}/v1/sessions", served.base))
        .header("content-type", "application/json")
        .body(json!({"id": "s1"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    // A tool arrives after the session was made: active, not granted.
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([{"op": "call", "name": "add_tool", "args": {"name": "later"}}]),
    )
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    let pool = served.gateway.host().pool();
    let mut revisions = served.gateway.host().catalog().subscribe();
    let arrived = async {
        while !pool.tools().iter().any(|t| t.name == "mcp__testkit__later") {
            revisions.changed().await.unwrap();
        }
    };
    tokio::time::timeout(PATIENCE, arrived)
        .await
        .expect("later is published");

    // The session: echo granted; add denied by the rules; later not granted.
    let session = format!("{}/sessions/s1/mcp", served.base);
    let out = sdk_client(Sdk::Python, &session, steps()).await;
    check(
        &out,
        &[true, false, false],
        &[
            None,
            Some("denied by deny rule"),
            Some("not granted to this session"),
        ],
    );
    // The gateway-wide endpoint (no grants): later too, add still denied.
    let out = sdk_client(Sdk::TypeScript, &served.url, steps()).await;
    check(
        &out,
        &[true, false, true],
        &[None, Some("denied by deny rule"), None],
    );
    served.stop().await;
}

/// A session-era client that is told each time its tool list changed.
#[derive(Clone)]
struct Changes(std::sync::Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for Changes {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::ClientHandler::get_info(&crate::support::SessionEra)
    }

    async fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.notify_one();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_granted_through_the_store_is_callable_without_a_refresh_here() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let state = StateStore::open_url(&format!(
        "sqlite:{}",
        project.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let options = GatewayOptions {
        state: Some(state.clone()),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let created = reqwest::Client::new()
        .post(format!("{}/v1/sessions", served.base))
        .header("content-type", "application/json")
        .body(json!({"id": "s1"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let host = served.gateway.host();
    let mut revisions = host.catalog().subscribe();
    host.pool()
        .call(ToolCall::new(
            "mcp__testkit__add_tool",
            json!({"name": "later"}).as_object().cloned().unwrap(),
        ))
        .await
        .outcome
        .unwrap();
    let pool = host.pool();
    let arrived = async {
        while !pool.tools().iter().any(|t| t.name == "mcp__testkit__later") {
            revisions.changed().await.unwrap();
        }
    };
    tokio::time::timeout(PATIENCE, arrived)
        .await
        .expect("later is published");
    let changed = std::sync::Arc::new(tokio::sync::Notify::new());
    let client = crate::support::within(Changes(changed.clone()).serve(
        rmcp::transport::StreamableHttpClientTransport::from_uri(format!(
            "{}/sessions/s1/mcp",
            served.base
        )),
    ))
    .await
    .unwrap();
    let call = || CallToolRequestParams::new("mcp__testkit__later");
    let refused = client.peer().call_tool(call()).await.unwrap_err();
    assert!(
        refused.to_string().contains("not granted to this session"),
        "{refused}"
    );
    // Another replica grants it: the store's change feed brings it here,
    // the session's clients are told, and the next call goes through
    // without this replica asking the store.
    let id = extpool_state::SessionId::new("s1").unwrap();
    state
        .refresh(&id, ["mcp__testkit__later"], 0)
        .await
        .unwrap();
    crate::support::within(changed.notified()).await;
    let ran = client.peer().call_tool(call()).await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    client.cancel().await.unwrap();
    served.stop().await;
}
