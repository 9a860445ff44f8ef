//! One caller cannot lock out another: each principal holds at most
//! `sessions_per_principal` sessions of each kind — MCP sessions on the
//! replica, durable sessions in the store — told so with HTTP 429 and what
//! to do, while every other caller is served; and one upstream with more
//! tools than a session may be granted never stops a create.

use serde_json::{Value, json};

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;

use extpool_testkit::stdio_command;

use crate::support::{Keyed, Project, server_yaml, testkit_yaml, within};

/// The gateway's own token (its holder: the gateway's one caller, an
/// operator); alice and bob bring API keys.
const GATEWAY_TOKEN: &str = "the-gateway-token-of-the-quota-test";

type Gateway = Keyed;

async fn gateway(project: Project, options: GatewayOptions) -> Gateway {
    Keyed::start(project, GATEWAY_TOKEN, options).await
}

/// `METHOD base+path` with bearer `token` and a JSON body: status, the
/// `Retry-After` header, and the body as JSON.
async fn api(
    g: &Gateway,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", g.served.base))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = within(request.send()).await.unwrap();
    let status = response.status().as_u16();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = within(response.text()).await.unwrap();
    (
        status,
        retry,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn create(g: &Gateway, token: &str, id: &str) -> (u16, Value) {
    let (status, _, body) = api(
        g,
        reqwest::Method::POST,
        "/v1/sessions",
        token,
        Some(json!({"id": id})),
    )
    .await;
    (status, body)
}

/// An MCP `initialize` on `/mcp` as `token`: the status, `Retry-After`,
/// the session id given (if any) and the body.
async fn initialize(g: &Gateway, token: &str) -> (u16, Option<String>, Option<String>, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "quota-test", "version": "1"}}});
    let response = within(
        reqwest::Client::new()
            .post(&g.served.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
            .send(),
    )
    .await
    .unwrap();
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (retry, session) = (header("retry-after"), header("mcp-session-id"));
    (
        status,
        retry,
        session,
        within(response.text()).await.unwrap(),
    )
}

/// Ends MCP session `id` of `/mcp` as `token`.
async fn end(g: &Gateway, token: &str, id: &str) {
    let response = within(
        reqwest::Client::new()
            .delete(&g.served.url)
            .bearer_auth(token)
            .header("mcp-session-id", id)
            .send(),
    )
    .await
    .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_holds_at_most_its_share_of_sessions_of_each_kind() {
    let project = Project::new();
    project.config("");
    let g = gateway(
        project,
        GatewayOptions {
            sessions_per_principal: 3,
            ..GatewayOptions::default()
        },
    )
    .await;

    // Durable sessions: alice makes her three, the fourth is refused and
    // nothing of it is made; bob and the gateway's one caller are served.
    for i in 0..3 {
        let (status, made) = create(&g, &g.alice, &format!("a{i}")).await;
        assert_eq!(status, 201, "{made}");
    }
    let (status, refused) = create(&g, &g.alice, "a3").await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(
        refused["error"],
        "you hold 3 durable sessions on this extpool gateway, the most one caller may (gateway.limits.sessions_per_principal, extpool serve --sessions-per-principal 3): delete sessions you no longer need (DELETE /v1/sessions/{id}, or CloseSession on a session's endpoint)"
    );
    let (status, _, none) = api(&g, reqwest::Method::GET, "/v1/sessions/a3", &g.alice, None).await;
    assert_eq!(status, 404, "{none}");
    // A made id is refused alike.
    let (status, _, made) = api(&g, reqwest::Method::POST, "/v1/sessions", &g.alice, None).await;
    assert_eq!(status, 429, "{made}");
    for token in [&g.bob, GATEWAY_TOKEN] {
        let (status, made) = create(&g, token, "theirs").await;
        assert_eq!(status, 201, "{made}");
    }
    // One deleted, one more may be made.
    let (status, _, gone) = api(
        &g,
        reqwest::Method::DELETE,
        "/v1/sessions/a0",
        &g.alice,
        None,
    )
    .await;
    assert_eq!(status, 200, "{gone}");
    let (status, made) = create(&g, &g.alice, "a3").await;
    assert_eq!(status, 201, "{made}");

    // MCP sessions on /mcp: the same bound, apart from the durable ones.
    let mut held = Vec::new();
    for _ in 0..3 {
        let (status, _, id, body) = initialize(&g, &g.alice).await;
        assert_eq!(status, 200, "{body}");
        held.push(id.unwrap());
    }
    let (status, retry, id, body) = initialize(&g, &g.alice).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(id, None, "a refused initialize made a session");
    assert!(
        body.contains("you hold 3 MCP sessions on this extpool gateway, the most one caller may (gateway.limits.sessions_per_principal, extpool serve --sessions-per-principal)")
            && body.contains("end one you no longer use"),
        "{body}"
    );
    // Its sessions are idle: it is told when the first of them expires.
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=1800).contains(&retry), "{retry}");
    // Bob is not held back by her.
    let (status, _, bobs, body) = initialize(&g, &g.bob).await;
    assert_eq!(status, 200, "{body}");
    // One ended, she may open another.
    end(&g, &g.alice, &held.pop().unwrap()).await;
    let (status, _, _, body) = initialize(&g, &g.alice).await;
    assert_eq!(status, 200, "{body}");
    end(&g, &g.bob, &bobs.unwrap()).await;
    g.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_upstream_with_more_tools_than_a_session_holds_never_stops_a_create() {
    let (big, small) = (StateDir::new(), StateDir::new());
    let mut big_args = big.args();
    big_args.extend(["--extra-tools".to_owned(), "10500".to_owned()]);
    let project = Project::new();
    project.config(&format!(
        "{}{}",
        testkit_yaml("small", &small),
        server_yaml("big", stdio_command(big_args))
    ));
    let g = gateway(project, GatewayOptions::default()).await;
    let (status, made) = create(&g, &g.alice, "wide").await;
    assert_eq!(status, 201, "{made}");
    let granted = |session: &Value| -> Vec<String> {
        session["granted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_owned())
            .collect()
    };
    let names = granted(&made);
    assert_eq!(names.len(), 10_000, "{}", made["session"]);
    // Every name of the small server is granted; the big one has the rest.
    let small_names = names
        .iter()
        .filter(|n| n.starts_with("mcp__small__"))
        .count();
    assert!(names.iter().any(|n| n == "mcp__small__echo"), "{names:?}");
    let big_listed = 10_500 + small_names;
    assert_eq!(
        made["not_granted"],
        json!(small_names + big_listed - 10_000),
        "{}",
        made["session"]
    );
    // A refresh grants nothing more and says why, without an error.
    let (status, _, refreshed) = api(
        &g,
        reqwest::Method::POST,
        "/v1/sessions/wide/mcp-refresh",
        &g.alice,
        None,
    )
    .await;
    assert_eq!(status, 200, "{refreshed}");
    assert_eq!(refreshed["granted"], 10_000, "{refreshed}");
    assert_eq!(refreshed["not_granted"], made["not_granted"], "{refreshed}");
    g.stop().await;
}
