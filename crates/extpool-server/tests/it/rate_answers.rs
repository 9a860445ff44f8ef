//! A call refused for a rate limit is answered in SEP-3304's shape on
//! every path: the JSON-RPC error `-32023` with `data.retryAfterMs`,
//! `limit` and `remaining`, and — a plain JSON answer — HTTP 429 with
//! `Retry-After` (seconds, rounded up), `RateLimit-Limit` and
//! `RateLimit-Remaining`: a session's call, a session's task-augmented
//! call, a 2026-07-28 call without a session, and what the SDK clients
//! make of it.

use extpool_host::config::RateLimitsConfig;
use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, Sdk, Served, mcp_post, post_2026, sdk_client, testkit_yaml, within};

/// A gateway over the testkit whose callers may make 1 call a minute, one
/// at once (a refused call's token is a minute away: longer than a test
/// runs, however loaded the machine).
async fn limited(state: &StateDir) -> Served {
    let project = Project::new();
    project.config(&testkit_yaml("kit", state));
    let options = GatewayOptions {
        rate_limits: RateLimitsConfig {
            calls_per_minute: Some(1),
            burst: Some(1),
            ..RateLimitsConfig::default()
        },
        ..GatewayOptions::default()
    };
    Served::start(project, options).await
}

/// Checks a plain JSON refusal: status, headers and the JSON-RPC error.
async fn assert_refused_as_sep_3304(response: reqwest::Response) {
    assert_eq!(response.status(), 429);
    let headers = response.headers().clone();
    let header = |name: &str| {
        headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header: {headers:?}"))
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(header("content-type"), "application/json");
    let seconds: u64 = header("retry-after").parse().unwrap();
    assert!(
        (50..=60).contains(&seconds),
        "a minute at most, rounded up: {seconds}"
    );
    assert_eq!(header("ratelimit-limit"), "1");
    assert_eq!(header("ratelimit-remaining"), "0");
    let body: Value = within(response.json()).await.unwrap();
    let error = &body["error"];
    assert_eq!(error["code"], -32023, "{body}");
    let wait = error["data"]["retryAfterMs"].as_u64().unwrap();
    assert!((1..=60_000).contains(&wait), "{body}");
    assert_eq!(
        seconds,
        wait.div_ceil(1000),
        "Retry-After is retryAfterMs rounded up"
    );
    assert_eq!(error["data"]["limit"], 1, "{body}");
    assert_eq!(error["data"]["remaining"], 0, "{body}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("rate limit reached: at most 1 tool calls a minute"),
        "{body}"
    );
}

fn echo_call(id: u64, meta: Option<Value>) -> Value {
    let mut params = json!({"name": "mcp__kit__echo", "arguments": {"message": "m"}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A session opened at `url` by a raw `initialize`: its id.
async fn open_session(url: &str, version: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let response = within(mcp_post(url, None, init.to_string()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    within(mcp_post(url, Some((&session, version)), initialized.to_string()).send())
        .await
        .unwrap();
    session
}

/// A task-augmented call (server-everything's task tool behind the
/// gateway) is limited as any call, and refused in the same shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_augmented_call_over_its_limit_is_http_429_with_the_headers() {
    let project = Project::new();
    project.config(&crate::support::server_yaml(
        "everything",
        extpool_testkit::peers::server_everything(),
    ));
    let options = GatewayOptions {
        rate_limits: RateLimitsConfig {
            calls_per_minute: Some(1),
            burst: Some(1),
            ..RateLimitsConfig::default()
        },
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let version = "2025-11-25";
    let session = open_session(&served.url, version).await;
    let task_call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "mcp__everything__simulate-research-query",
            "arguments": {"topic": "limits"}, "task": {"ttl": 60000}}})
        .to_string()
    };
    let session = Some((session.as_str(), version));
    let first = within(mcp_post(&served.url, session, task_call(2)).send())
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let started = within(first.text()).await.unwrap();
    assert!(started.contains("taskId"), "a task was started: {started}");
    let second = within(mcp_post(&served.url, session, task_call(3)).send())
        .await
        .unwrap();
    assert_refused_as_sep_3304(second).await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_call_over_its_limit_is_http_429_with_the_headers() {
    let state = StateDir::new();
    let served = limited(&state).await;
    let version = "2025-11-25";
    let session = open_session(&served.url, version).await;
    let session = Some((session.as_str(), version));
    let first = within(mcp_post(&served.url, session, echo_call(2, None).to_string()).send())
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("retry-after").is_none());
    let second = within(mcp_post(&served.url, session, echo_call(3, None).to_string()).send())
        .await
        .unwrap();
    assert_refused_as_sep_3304(second).await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_call_over_its_limit_is_http_429_with_the_headers() {
    let state = StateDir::new();
    let served = limited(&state).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let headers = [("mcp-method", "tools/call"), ("mcp-name", "mcp__kit__echo")];
    let first = post_2026(&served.url, &headers, &echo_call(1, Some(meta.clone()))).await;
    assert_eq!(first.status(), 200);
    let second = post_2026(&served.url, &headers, &echo_call(2, Some(meta))).await;
    assert_refused_as_sep_3304(second).await;
    served.stop().await;
}

/// The SDK clients read the refusal: the Python SDK the JSON-RPC error
/// of the 429's body, the TypeScript SDK the status and that body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_clients_read_the_refusal() {
    let state = StateDir::new();
    let served = limited(&state).await;
    let steps = json!([
        {"op": "call", "name": "mcp__kit__echo", "args": {"message": "m"}},
        {"op": "call", "name": "mcp__kit__echo", "args": {"message": "m"}, "expect_error": true},
    ]);
    let out = sdk_client(Sdk::Python, &served.url, steps.clone()).await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    assert_eq!(out[2]["code"], -32023, "{out:?}");
    assert_eq!(out[2]["data"]["limit"], 1, "{out:?}");
    assert!(
        out[2]["data"]["retryAfterMs"].as_u64().unwrap() > 0,
        "{out:?}"
    );
    // Another client of the same caller: the same bucket, empty for a
    // minute; the TypeScript SDK reports the 429 with its body.
    let either = json!({"op": "call", "name": "mcp__kit__echo", "args": {"message": "m"}, "expect_error": true});
    let out = sdk_client(Sdk::TypeScript, &served.url, json!([either, either])).await;
    let refused = out
        .iter()
        .find(|line| line.get("error").is_some())
        .unwrap_or_else(|| panic!("no call refused: {out:?}"));
    assert_eq!(refused["code"], 429, "{out:?}");
    let message = refused["error"].as_str().unwrap();
    assert!(
        message.contains("-32023") && message.contains("retryAfterMs"),
        "{message}"
    );
    served.stop().await;
}

/// What the shared counter adds to a call: two gateways on PostgreSQL
/// stores, one with a limit no call reaches (each call takes a token in
/// the store) and one without, called in turn by one HTTP client
/// (2026-07-28 calls, plain JSON). Run by hand:
/// `cargo test -p extpool-server --test it added_latency -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn a_calls_added_latency_with_the_shared_counter() {
    let pg = extpool_testkit::postgres::PgServer::shared();
    let state = StateDir::new();
    let mut gateways = Vec::new();
    for limited in [false, true] {
        let store = extpool_state::StateStore::open_url(&pg.database())
            .await
            .unwrap();
        let project = Project::new();
        project.config(&testkit_yaml("kit", &state));
        let rate_limits = RateLimitsConfig {
            calls_per_minute: limited.then_some(100_000_000),
            burst: limited.then_some(100_000_000),
            ..RateLimitsConfig::default()
        };
        let options = GatewayOptions {
            state: Some(store),
            rate_limits,
            ..GatewayOptions::default()
        };
        gateways.push(Served::start(project, options).await);
    }
    let client = reqwest::Client::new();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let n = 1000;
    let mut times = [Vec::with_capacity(n), Vec::with_capacity(n)];
    for i in 0..n + 50 {
        for (g, served) in gateways.iter().enumerate() {
            let started = std::time::Instant::now();
            let response = client
                .post(&served.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "mcp__kit__echo")
                .body(echo_call(1, Some(meta.clone())).to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            response.bytes().await.unwrap();
            if i >= 50 {
                times[g].push(started.elapsed());
            }
        }
    }
    for (label, times) in ["without a limit", "with the shared counter"]
        .iter()
        .zip(times.iter_mut())
    {
        times.sort();
        let mean = times.iter().sum::<std::time::Duration>() / n as u32;
        println!(
            "{label}: p50 {:?}, mean {mean:?}, p90 {:?} over {n} calls",
            times[n / 2],
            times[n * 9 / 10]
        );
    }
    for served in gateways {
        served.stop().await;
    }
}
