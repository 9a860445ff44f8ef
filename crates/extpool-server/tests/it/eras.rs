//! Both protocol eras side by side on one gateway: a session-era client
//! (`initialize`, `Mcp-Session-Id`) and a 2026-07-28 client
//! (`server/discover`, stateless requests, `subscriptions/listen`), both
//! rmcp clients; skills through the SEP-2640 extension with digests that
//! verify.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, GetSkillRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ResourceContents, ServerNotification, SkillResources, SubscriptionFilter,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

use crate::support::{
    PATIENCE, Project, Served, SessionEra, modern, modern_http_upstream, next_event, raw_listen,
    remote_yaml, subscription_id, testkit_yaml, within,
};

async fn echo<S: rmcp::service::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    text: &str,
) -> String {
    let mut params = CallToolRequestParams::new("mcp__testkit__echo");
    params.arguments = json!({"message": text}).as_object().cloned();
    let result = within(client.call_tool(params)).await.unwrap();
    result.content[0].as_text().unwrap().text.clone()
}

async fn served(state: &StateDir) -> Served {
    let project = Project::new();
    project.config(&testkit_yaml("testkit", state));
    project.skill("review", "Review the change.");
    Served::start(project, GatewayOptions::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_era_and_2026_era_clients_are_served_side_by_side() {
    let state = StateDir::new();
    let served = served(&state).await;
    let old = within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
        .await
        .unwrap();
    let new = modern(&served.url).await;
    assert_eq!(
        old.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    assert_eq!(
        new.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    assert_eq!(echo(&old, "old").await, "old");
    assert_eq!(echo(&new, "new").await, "new");
    let old_tools = within(old.list_all_tools()).await.unwrap();
    let new_tools = within(new.list_all_tools()).await.unwrap();
    let names = |t: &[rmcp::model::Tool]| t.iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
    assert_eq!(
        names(&old_tools),
        names(&new_tools),
        "the same catalog in a deterministic order"
    );
    assert_eq!(state.starts(), 1, "one upstream process for both clients");
    old.cancel().await.unwrap();
    new.cancel().await.unwrap();
    served.stop().await;
}

/// A 2026-07-28 client of `served`, listening, adds a tool to `server`
/// and hears the list change; the new tool is listed.
async fn a_listener_hears_a_tool_added_to(served: &Served, server: &str) {
    let client = modern(&served.url).await;
    let mut subscription =
        within(client.listen(SubscriptionFilter::builder().tools_list_changed().build()))
            .await
            .expect("subscriptions/listen");
    let mut params = CallToolRequestParams::new(format!("mcp__{server}__add_tool"));
    params.arguments = json!({"name": "heard"}).as_object().cloned();
    within(client.call_tool(params)).await.unwrap();
    let notification = within(subscription.next()).await.unwrap();
    assert!(
        matches!(
            notification,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{notification:?}"
    );
    let tools = within(client.list_all_tools()).await.unwrap();
    let heard = format!("mcp__{server}__heard");
    assert!(tools.iter().any(|t| t.name == heard.as_str()));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_listening_hears_an_upstream_tool_list_change() {
    let state = StateDir::new();
    let served = served(&state).await;
    a_listener_hears_a_tool_added_to(&served, "testkit").await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_spoken_to_in_the_2026_era_has_its_list_changes_reach_clients() {
    let state = StateDir::new();
    let upstream = modern_http_upstream(&state, &[]).await;
    let project = Project::new();
    project.config(&remote_yaml("remote", upstream.url(), "2026-07-28", ""));
    let served = Served::start(project, GatewayOptions::default()).await;
    // The gateway listens to the upstream (the era has no other way to hear it).
    state
        .until("the gateway listens upstream", PATIENCE, |s| {
            s.counter("listeners") > 0
        })
        .await;
    a_listener_hears_a_tool_added_to(&served, "remote").await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_local_and_mcp_hosted_come_through_the_skills_extension_with_digests_that_verify() {
    let state = StateDir::new();
    let served = served(&state).await;
    let client = modern(&served.url).await;
    assert!(client.peer_info().unwrap().capabilities.supports_skills());
    let listed = within(client.list_skills(None)).await.unwrap();
    let uris: Vec<&str> = listed.skills.iter().map(|s| s.uri.as_str()).collect();
    assert!(uris.contains(&"skill://review/SKILL.md"), "{uris:?}");
    assert!(
        uris.contains(&"skill://testkit-skill/SKILL.md"),
        "MCP-hosted: {uris:?}"
    );
    let review = within(client.get_skill(GetSkillRequestParams::new("skill://review/SKILL.md")))
        .await
        .unwrap()
        .skill;
    assert_eq!(review.name(), "review");
    let SkillResources::Files(files) = &review.resources else {
        panic!("a static manifest: {:?}", review.resources);
    };
    let file_uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
    assert_eq!(
        file_uris,
        [
            "skill://review/SKILL.md",
            "skill://review/references/notes.md"
        ]
    );
    for file in files {
        let read = within(client.read_resource(ReadResourceRequestParams::new(file.uri.clone())))
            .await
            .unwrap();
        let bytes = match &read.contents[0] {
            ResourceContents::TextResourceContents { text, .. } => text.clone().into_bytes(),
            other => panic!("{other:?}"),
        };
        file.verify(&bytes).unwrap();
    }
    client.cancel().await.unwrap();
    served.stop().await;
}

/// A 2026-07-28 `tools/call` of `name` with `meta` beside the era's
/// required `_meta` members, posted to `url`.
async fn post_2026(url: &str, name: &str, meta: serde_json::Value) -> reqwest::Response {
    post_2026_with(url, name, json!({}), meta).await
}

/// [`post_2026`] with `arguments`.
async fn post_2026_with(
    url: &str,
    name: &str,
    arguments: serde_json::Value,
    meta: serde_json::Value,
) -> reqwest::Response {
    let mut meta_all = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
    });
    meta_all
        .as_object_mut()
        .unwrap()
        .extend(meta.as_object().cloned().unwrap_or_default());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta_all}});
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(body.to_string())
        .send();
    within(response).await.unwrap()
}

/// The body of [`post_2026`]'s answer (its SSE text as sent, if a stream).
async fn call_2026_text(url: &str, name: &str, meta: serde_json::Value) -> String {
    let response = post_2026(url, name, meta).await;
    assert_eq!(response.status(), 200);
    within(response.text()).await.unwrap()
}

/// A 2026-07-28 request is answered in one JSON body when nothing comes
/// before its result, and as an SSE stream when something does (the
/// upstream's log messages, at the level its `_meta` asks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_request_is_answered_as_json_unless_something_precedes_its_result() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&crate::support::conformance_testkit_yaml("conf", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let content_type = |r: &reqwest::Response| {
        r.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };

    let plain = post_2026(&served.url, "mcp__conf__test_simple_text", json!({})).await;
    assert_eq!(plain.status(), 200);
    assert_eq!(content_type(&plain), "application/json");
    let answer: serde_json::Value = within(plain.json()).await.unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "This is a simple text response for testing.",
        "{answer}"
    );

    let meta = json!({"io.modelcontextprotocol/logLevel": "info"});
    let logged = post_2026(&served.url, "mcp__conf__test_tool_with_logging", meta).await;
    assert_eq!(logged.status(), 200);
    assert_eq!(content_type(&logged), "text/event-stream");
    let text = within(logged.text()).await.unwrap();
    let first_log = text.find("notifications/message").expect("log messages");
    let result = text.find("Logging test completed").expect("the result");
    assert!(first_log < result, "the log messages come first: {text}");
    served.stop().await;
}

/// A 2026-07-28 request says the log level it wants in its `_meta`
/// (SEP-2575): an upstream's log messages reach it at that level and
/// above, and none reach a request that says no level, although the
/// upstream (spoken to in the session era) logs every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_request_gets_the_upstreams_log_messages_only_at_the_level_it_asks() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&crate::support::conformance_testkit_yaml("conf", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let tool = "mcp__conf__test_tool_with_logging";
    let logs = |text: &str| text.matches("notifications/message").count();

    let info = call_2026_text(
        &served.url,
        tool,
        json!({"io.modelcontextprotocol/logLevel": "info"}),
    )
    .await;
    assert_eq!(logs(&info), 3, "{info}");
    assert!(info.contains("Logging test completed"), "{info}");

    for meta in [
        json!({}),
        json!({"io.modelcontextprotocol/logLevel": "error"}),
    ] {
        let text = call_2026_text(&served.url, tool, meta.clone()).await;
        assert_eq!(logs(&text), 0, "{meta}: {text}");
        assert!(text.contains("Logging test completed"), "{meta}: {text}");
    }
    served.stop().await;
}

/// A 2026-07-28 request's stream cannot be resumed (it has no session):
/// when its client goes away, its call is cancelled upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_requests_call_is_cancelled_when_its_client_goes_away() {
    let state = StateDir::new();
    let served = served(&state).await;
    let args = json!({"ms": 60_000});
    let meta = json!({"progressToken": "p"});
    let mut response = post_2026_with(&served.url, "mcp__testkit__sleep", args, meta).await;
    assert_eq!(response.status(), 200);
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let chunk = within(response.chunk())
            .await
            .unwrap()
            .expect("the stream ended");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert_eq!(state.counter("cancelled"), 0);
    drop(response);
    state
        .until("the upstream saw the cancellation", PATIENCE, |s| {
            s.counter("cancelled") == 1
        })
        .await;
    served.stop().await;
}

/// A raw `subscriptions/listen`: the stream first acknowledges what it
/// will carry, under the request's id as the subscription's, then carries
/// a change of that kind under the same id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_acknowledges_then_carries_what_it_was_asked_for() {
    let state = StateDir::new();
    let served = served(&state).await;
    let tools = json!({"toolsListChanged": true});
    let (mut response, mut buffer) =
        raw_listen(&served.url, "listen-1", tools.clone(), tools).await;

    let client = modern(&served.url).await;
    let mut params = CallToolRequestParams::new("mcp__testkit__add_tool");
    params.arguments = json!({"name": "heard"}).as_object().cloned();
    within(client.call_tool(params)).await.unwrap();
    let change = next_event(&mut response, &mut buffer).await;
    assert_eq!(
        change["method"], "notifications/tools/list_changed",
        "{change}"
    );
    assert_eq!(
        subscription_id(&change),
        Some(json!("listen-1")),
        "{change}"
    );
    client.cancel().await.unwrap();
    drop(response);
    served.stop().await;
}
