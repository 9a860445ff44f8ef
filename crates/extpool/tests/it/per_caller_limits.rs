//! Limits per caller as `extpool serve` applies them. Across replicas:
//! two replicas on one PostgreSQL store share each caller's rate buckets
//! and count each caller's MCP sessions together, so spreading calls or
//! sessions over them gives no more than one replica would (callers are
//! API keys, alice and bob; the clients the Python SDK's and plain HTTP).
//! Over stdio: a call over the limit gets the same JSON-RPC error.

use extpool_testkit::HttpServer;
use extpool_testkit::postgres::PgServer;
use serde_json::{Value, json};

use crate::replicas::{Replica, blocking};
use crate::support::Sandbox;

/// A sandbox whose configuration serves the shared upstream `kit` at
/// `url` with the `gateway` section `gateway_yaml` (indented entries),
/// and the API keys of alice and bob in store `db`.
fn setup(db: &str, url: &str, gateway_yaml: &str) -> (Sandbox, String, String) {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  kit:\n    url: {url}\nskills:\n  default_roots: false\ngateway:\n{gateway_yaml}"
        ),
    );
    let key = |name: &str| {
        let made = sb.run(&["api-keys", "create", name, "--state", db]);
        assert_eq!(made.code, 0, "{}", made.stderr);
        made.stdout.trim().to_owned()
    };
    let (alice, bob) = (key("alice"), key("bob"));
    (sb, alice, bob)
}

/// Runs the Python SDK client as `key` at `url` with `steps`.
async fn python_as(key: &str, url: &str, steps: Value) -> Vec<Value> {
    let (key, url) = (key.to_owned(), format!("{url}/mcp"));
    blocking(move || crate::serve::python_as(Some(&key), &["--url", &url], steps)).await
}

fn echo(expect_error: bool) -> Value {
    json!({"op": "call", "name": "mcp__kit__echo", "args": {"message": "m"},
           "expect_error": expect_error})
}

/// Alice may make 1 call a minute in a burst of 3 (the next token a minute
/// away, longer than the test runs): 2 on replica A and 1 on B are all she
/// gets; her 4th is refused
/// on whichever replica it lands, in SEP-3304's shape — through the
/// Python SDK (`-32023`, `retryAfterMs`) and, as a plain JSON answer of
/// the 2026-07-28 era, HTTP 429 with its headers. Bob is not affected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_rate_limit_holds_across_two_replicas() {
    let pg = PgServer::shared();
    let db = pg.database();
    let kit = HttpServer::start();
    let limits = "  rate_limits:\n    calls_per_minute: 1\n    burst: 3\n";
    let (sb, alice, bob) = setup(&db, kit.url(), limits);
    let replicas = Replica::start_together(&sb, &db, &["rate-a", "rate-b"], &[]);
    let (a, b) = (replicas[0].base.clone(), replicas[1].base.clone());

    let out = python_as(&alice, &a, json!([echo(false), echo(false)])).await;
    assert_eq!(
        (out[1]["is_error"].clone(), out[2]["is_error"].clone()),
        (json!(false), json!(false)),
        "{out:?}"
    );
    let out = python_as(&alice, &b, json!([echo(false), echo(true)])).await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    let refused = &out[2];
    assert_eq!(refused["code"], -32023, "{out:?}");
    let wait = refused["data"]["retryAfterMs"].as_u64().unwrap();
    assert!((1..=60_000).contains(&wait), "{out:?}");
    assert_eq!(refused["data"]["limit"], 1, "{out:?}");
    assert_eq!(refused["data"]["remaining"], 0, "{out:?}");
    // Back on A: refused there too.
    let out = python_as(&alice, &a, json!([echo(true)])).await;
    assert_eq!(out[1]["code"], -32023, "{out:?}");

    // A 2026-07-28 call on B: a plain JSON answer, HTTP 429.
    let response = modern_echo(&b, &alice).await;
    assert_eq!(response.status(), 429);
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
    let seconds: u64 = header("retry-after").parse().unwrap();
    assert!((1..=60).contains(&seconds), "Retry-After {seconds}");
    assert_eq!(header("ratelimit-limit"), "1");
    assert_eq!(header("ratelimit-remaining"), "0");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32023, "{body}");

    // Bob has his own bucket, on either replica.
    let out = python_as(&bob, &b, json!([echo(false), echo(false)])).await;
    assert_eq!(out[2]["is_error"], false, "{out:?}");
    let response = modern_echo(&a, &bob).await;
    assert_eq!(response.status(), 200);
    drop(replicas);
}

/// A 2026-07-28 `tools/call` of the kit's echo at replica `base` as `key`.
async fn modern_echo(base: &str, key: &str) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "mcp__kit__echo", "arguments": {"message": "m"},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "mcp__kit__echo")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// An `initialize` at replica `base` as `key`: the status, the session id
/// given, and the body.
async fn initialize(base: &str, key: &str) -> (u16, Option<String>, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let response = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, id, response.text().await.unwrap())
}

/// Alice may hold 2 MCP sessions: one on A and one on B are all she gets —
/// a third is refused (HTTP 429) on either replica, Bob is still served
/// (the Python SDK's session on B), and once Alice ends one of hers she
/// may open another, on the other replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_session_quota_holds_across_two_replicas() {
    let pg = PgServer::shared();
    let db = pg.database();
    let kit = HttpServer::start();
    let limits = "  limits:\n    sessions_per_principal: 2\n";
    let (sb, alice, bob) = setup(&db, kit.url(), limits);
    let replicas = Replica::start_together(&sb, &db, &["quota-a", "quota-b"], &[]);
    let (a, b) = (replicas[0].base.clone(), replicas[1].base.clone());

    let (status, on_a, _) = initialize(&a, &alice).await;
    assert_eq!(status, 200);
    let (status, _, _) = initialize(&b, &alice).await;
    assert_eq!(status, 200);
    for base in [&a, &b] {
        let (status, id, body) = initialize(base, &alice).await;
        assert_eq!((status, id), (429, None), "{body}");
        assert!(body.contains("you hold 2 MCP sessions"), "{body}");
    }
    let out = python_as(&bob, &b, json!([echo(false)])).await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");

    // Alice ends the one on A (through B: any replica ends any session).
    let ended = reqwest::Client::new()
        .delete(format!("{b}/mcp"))
        .bearer_auth(&alice)
        .header("mcp-session-id", on_a.unwrap())
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{ended:?}");
    let out = python_as(&alice, &b, json!([echo(false)])).await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    drop(replicas);
}

/// Over stdio (no HTTP status to set) the refusal is the JSON-RPC error
/// alone, in the same shape.
#[test]
fn over_stdio_a_call_over_the_limit_gets_the_same_error() {
    let sb = Sandbox::new();
    let config = sb.testkit_config(
        "skills:\n  default_roots: false\ngateway:\n  rate_limits:\n    calls_per_minute: 1\n    burst: 1\n",
    );
    let exe = env!("CARGO_BIN_EXE_extpool");
    let config = config.display().to_string();
    let add = |expect_error: bool| {
        json!({"op": "call", "name": "mcp__testkit__add", "args": {"a": 2, "b": 40},
               "expect_error": expect_error})
    };
    let out = crate::serve::python(
        &["--stdio", exe, "--config", &config, "serve", "--stdio"],
        json!([add(false), add(true)]),
    );
    assert_eq!(out[1]["text"], json!(["42"]), "{out:?}");
    assert_eq!(out[2]["code"], -32023, "{out:?}");
    let wait = out[2]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!((1..=60_000).contains(&wait), "{out:?}");
    assert_eq!(out[2]["data"]["limit"], 1, "{out:?}");
    assert_eq!(out[2]["data"]["remaining"], 0, "{out:?}");
}
