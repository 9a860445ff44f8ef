//! The gateway's limits, each with a clear error, and serving goes on: the
//! request body size, the number of sessions, the tool calls one session
//! has in flight. And no upstream credential reaches a client.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

use crate::support::{
    PATIENCE, Project, Served, SessionEra, eventually, modern_http_upstream, remote_yaml,
    testkit_yaml, within,
};

type Client = RunningService<RoleClient, SessionEra>;

async fn connect(url: &str) -> Result<Client, rmcp::service::ClientInitializeError> {
    within(SessionEra.serve(StreamableHttpClientTransport::from_uri(url.to_owned()))).await
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = args.as_object().cloned();
    params
}

async fn echo(client: &Client, text: &str) -> Result<String, String> {
    within(client.call_tool(call("mcp__testkit__echo", json!({"message": text}))))
        .await
        .map(|r| r.content[0].as_text().unwrap().text.clone())
        .map_err(|e| e.to_string())
}

async fn served(state: &StateDir, options: GatewayOptions) -> Served {
    let project = Project::new();
    project.config(&testkit_yaml("testkit", state));
    Served::start(project, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_request_gets_a_clear_error_and_the_gateway_keeps_serving() {
    let state = StateDir::new();
    let options = GatewayOptions {
        max_body_bytes: 64 * 1024,
        ..GatewayOptions::default()
    };
    let served = served(&state, options).await;
    let client = connect(&served.url).await.unwrap();
    let big = "x".repeat(100 * 1024);
    let error = echo(&client, &big).await.unwrap_err();
    assert!(error.contains("413"), "{error}");

    // What the client is told, over plain HTTP.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "mcp__testkit__echo", "arguments": {"message": big}}});
    let response = within(
        reqwest::Client::new()
            .post(&served.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status().as_u16(), 413);
    let message = within(response.text()).await.unwrap();
    assert!(
        message.contains("this extpool gateway accepts at most 65536")
            && message.contains("--max-request-bytes"),
        "{message}"
    );

    // The session and the gateway go on.
    assert_eq!(echo(&client, "still here").await.unwrap(), "still here");
    let other = connect(&served.url).await.unwrap();
    assert_eq!(echo(&other, "and new").await.unwrap(), "and new");
    client.cancel().await.unwrap();
    other.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_and_the_calls_of_one_session_are_bounded_with_clear_errors() {
    let state = StateDir::new();
    let options = GatewayOptions {
        max_sessions: 2,
        max_calls_per_session: 2,
        ..GatewayOptions::default()
    };
    let served = served(&state, options).await;
    let a = connect(&served.url).await.unwrap();
    let b = connect(&served.url).await.unwrap();
    let refused = connect(&served.url).await.unwrap_err().to_string();
    assert!(
        refused.contains("holds at most 2 MCP sessions at once (extpool serve --max-sessions)"),
        "{refused}"
    );

    // Two calls of session a wait at a barrier for a third party.
    let barrier = || call("mcp__testkit__barrier", json!({"key": "k", "parties": 3}));
    let waiting: Vec<_> = (0..2)
        .map(|_| {
            let peer = a.peer().clone();
            let params = barrier();
            tokio::spawn(async move { peer.call_tool(params).await })
        })
        .collect();
    state
        .until("two calls in flight", PATIENCE, |s| s.arrivals("k") == 2)
        .await;
    let error = echo(&a, "third").await.unwrap_err();
    assert!(
        error.contains("already has 2 tool calls in flight")
            && error.contains("--max-calls-per-session"),
        "{error}"
    );
    // Another session is not bounded by a's calls: its call is the third party.
    within(b.call_tool(barrier())).await.unwrap();
    for call in waiting {
        within(call).await.unwrap().unwrap();
    }
    assert_eq!(echo(&a, "after").await.unwrap(), "after");

    // A session that ends makes room for a new one.
    b.cancel().await.unwrap();
    let gateway = served.gateway.clone();
    eventually(
        || gateway.metrics().contains("extpool_sessions 1\n"),
        "session b closed",
    )
    .await;
    let c = connect(&served.url).await.unwrap();
    assert_eq!(echo(&c, "room").await.unwrap(), "room");
    a.cancel().await.unwrap();
    c.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_credential_never_reaches_a_client() {
    const SECRET: &str = "upstream-secret-4b1d";
    let state = StateDir::new();
    let upstream = modern_http_upstream(&state, &["--require-bearer", "the-right-token"]).await;
    let project = Project::new();
    let headers = format!("    headers: {{Authorization: \"Bearer {SECRET}\"}}\n");
    project.config(&remote_yaml("locked", upstream.url(), "session", &headers));
    let served = Served::start(project, GatewayOptions::default()).await;
    let client = connect(&served.url).await.unwrap();
    let mut seen = Vec::new();
    match within(client.call_tool(call("mcp__locked__echo", json!({"message": "hi"})))).await {
        Ok(result) => seen.push(serde_json::to_string(&result).unwrap()),
        Err(e) => seen.push(e.to_string()),
    }
    let sources = within(client.call_tool(call("ListMcpSources", json!({}))))
        .await
        .unwrap();
    seen.push(serde_json::to_string(&sources).unwrap());
    let all = seen.join("\n");
    assert!(
        all.contains("locked"),
        "the failure names the server: {all}"
    );
    assert!(
        all.contains("401") || all.contains("authorization"),
        "and says why: {all}"
    );
    assert!(!all.contains(SECRET), "{all}");
    client.cancel().await.unwrap();
    served.stop().await;
}
