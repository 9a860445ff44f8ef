//! Whose a session id is: a caller's ids live in its own namespace, so a
//! create never harms an existing session — its own id answers 409 and
//! touches nothing, another caller's id is simply free for it — and no
//! answer tells one caller whether another made an id.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use extpool_server::GatewayOptions;
use extpool_testkit::{HttpServer, StateDir};

use crate::support::{Keyed, Project, Served, within};

/// The gateway's own token: its holder is the operator; the callers here
/// bring API keys.
const GATEWAY_TOKEN: &str = "the-gateway-token-of-the-ids-test";

/// A gateway with a store and API keys `alice` and `bob` (not operators).
async fn gateway(options: GatewayOptions) -> Keyed {
    let project = Project::new();
    project.config("");
    Keyed::start(
        project,
        GATEWAY_TOKEN,
        GatewayOptions {
            private_session_servers: true,
            ..options
        },
    )
    .await
}

/// `METHOD base+path` with bearer `token` and a JSON body: status and JSON.
async fn api(
    served: &Served,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", served.base))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = within(request.send()).await.unwrap();
    let status = response.status().as_u16();
    let text = within(response.text()).await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn create(served: &Served, token: &str, body: Value) -> (u16, Value) {
    api(
        served,
        reqwest::Method::POST,
        "/v1/sessions",
        token,
        Some(body),
    )
    .await
}

/// The ids `token`'s caller lists.
async fn listed(served: &Served, token: &str) -> Vec<String> {
    let (status, list) = api(served, reqwest::Method::GET, "/v1/sessions", token, None).await;
    assert_eq!(status, 200, "{list}");
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// An MCP client of `endpoint` (a path) with bearer `token`.
async fn client(served: &Served, endpoint: &str, token: &str) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}{endpoint}", served.base))
            .auth_header(token.to_owned()),
    );
    within(().serve(transport)).await.unwrap()
}

/// Calls `tool` with `message` and returns its text (panics on an error).
async fn echo(client: &RunningService<RoleClient, ()>, tool: &str, message: &str) -> String {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = json!({"message": message}).as_object().cloned();
    let result = within(client.peer().call_tool(params))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    result.content[0].as_text().unwrap().text.clone()
}

async fn tool_names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    within(client.peer().list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_never_harms_an_existing_session_and_ids_are_each_callers_own() {
    let g = gateway(GatewayOptions::default()).await;
    let (served, alice, bob) = (&g.served, g.alice.clone(), g.bob.clone());
    let kit = StateDir::new();
    let own = HttpServer::spawn(kit.args());
    let other_kit = StateDir::new();
    let other = HttpServer::spawn(other_kit.args());
    let (status, made) = create(
        served,
        &alice,
        json!({"id": "review", "mcp_servers": {"mine": {"url": own.url()}}}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["session"]["id"], "review", "{made}");
    assert_eq!(made["mcp"], "/sessions/review/mcp", "{made}");
    let alices = client(served, "/sessions/review/mcp", &alice).await;
    assert_eq!(echo(&alices, "mcp__mine__echo", "one").await, "one");

    // Alice's own id again — with a server of another, and without: 409,
    // and her session is as it was (its server runs, nothing added).
    for body in [
        json!({"id": "review"}),
        json!({"id": "review", "mcp_servers": {"other": {"url": other.url()}}}),
        json!({"id": "review", "auto_grant": true}),
    ] {
        let (status, refused) = create(served, &alice, body.clone()).await;
        assert_eq!(status, 409, "{body}: {refused}");
        assert_eq!(echo(&alices, "mcp__mine__echo", "still").await, "still");
        assert_eq!(
            refused["error"],
            "session \"review\" already exists; choose another id, or leave it out to have one made",
            "{refused}"
        );
    }
    assert!(
        !tool_names(&alices)
            .await
            .iter()
            .any(|t| t.contains("other")),
        "a refused create added its server"
    );
    assert_eq!(
        other_kit.requests(),
        Vec::<Value>::new(),
        "a refused create connected to its server"
    );
    let (status, got) = api(
        served,
        reqwest::Method::GET,
        "/v1/sessions/review",
        &alice,
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["server_status"][0]["state"], "ready", "{got}");

    // Bob's "review" is his own: made beside alice's, which it never
    // touches; and his own id again is refused as alice's was.
    let (status, his) = create(served, &bob, json!({"id": "review"})).await;
    assert_eq!(status, 201, "{his}");
    assert_eq!(his["session"]["id"], "review", "{his}");
    assert_eq!(his["servers"], json!([]), "{his}");
    let (status, again) = create(served, &bob, json!({"id": "review"})).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(
        echo(&alices, "mcp__mine__echo", "after bob").await,
        "after bob"
    );
    let bobs = client(served, "/sessions/review/mcp", &bob).await;
    assert!(
        !tool_names(&bobs).await.iter().any(|t| t.contains("mine")),
        "bob's review is alice's"
    );
    // Bob's CloseSession closes his, never hers.
    let closed = within(
        bobs.peer()
            .call_tool(CallToolRequestParams::new("CloseSession")),
    )
    .await
    .unwrap();
    assert_ne!(closed.is_error, Some(true), "{closed:?}");
    assert_eq!(
        echo(&alices, "mcp__mine__echo", "after close").await,
        "after close"
    );
    assert_eq!(listed(served, &alice).await, ["review"]);
    assert_eq!(listed(served, &bob).await, Vec::<String>::new());

    // The operator sees each caller's session under its whole id, and can
    // act on it by that id.
    let all = listed(served, GATEWAY_TOKEN).await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(all[0].starts_with("review~"), "{all:?}");
    let (status, got) = api(
        served,
        reqwest::Method::GET,
        &format!("/v1/sessions/{}", all[0]),
        GATEWAY_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["session"]["owner"], "api-key:alice", "{got}");

    // A whole id is never one a caller may choose (whoever's it is, made
    // or not): the same answer for alice's and for one nobody has.
    let theirs = create(served, &bob, json!({"id": all[0]})).await;
    let nobodys = create(served, &bob, json!({"id": "review~0123456789abcdef"})).await;
    assert_eq!(theirs.0, 400, "{}", theirs.1);
    assert_eq!(
        theirs.1.to_string().replace(&all[0], "ID"),
        nobodys
            .1
            .to_string()
            .replace("review~0123456789abcdef", "ID")
    );
    // To bob, alice's whole id is one nobody made.
    let (status, hidden) = api(
        served,
        reqwest::Method::GET,
        &format!("/v1/sessions/{}", all[0]),
        &bob,
        None,
    )
    .await;
    assert_eq!(status, 404, "{hidden}");
    assert_eq!(echo(&alices, "mcp__mine__echo", "last").await, "last");

    // Many creates of one new id at once: one is made, every other is
    // refused, and the one made works.
    let racing =
        futures::future::join_all((0..8).map(|_| create(served, &alice, json!({"id": "raced"}))))
            .await;
    let made: Vec<_> = racing.iter().filter(|(s, _)| *s == 201).collect();
    assert_eq!(made.len(), 1, "{racing:?}");
    assert!(
        racing.iter().all(|(s, _)| *s == 201 || *s == 409),
        "{racing:?}"
    );
    let raced = client(served, "/sessions/raced/mcp", &alice).await;
    assert!(tool_names(&raced).await.iter().any(|t| t == "CloseSession"));
    let _ = raced.cancel().await;
    let _ = alices.cancel().await;
    let _ = bobs.cancel().await;
    g.stop().await;
}
