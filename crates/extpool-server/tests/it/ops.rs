//! What operators rely on: health and readiness, Prometheus metrics, the
//! gateway's bearer token, and the audit log.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, Sdk, Served, sdk_client, testkit_yaml};

async fn get(url: &str, token: Option<&str>) -> (u16, String) {
    let client = reqwest::Client::new();
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics_of_calls_per_server_and_tool() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    assert_eq!(get(&format!("{}/healthz", served.base), None).await.0, 200);
    let (status, body) = get(&format!("{}/readyz", served.base), None).await;
    assert_eq!(status, 200, "{body}");
    sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "call", "name": "mcp__testkit__echo", "args": {"message": "m"}},
            {"op": "call", "name": "mcp__testkit__tool_error"},
        ]),
    )
    .await;
    let (status, metrics) = get(&format!("{}/metrics", served.base), None).await;
    assert_eq!(status, 200);
    for line in [
        "extpool_tool_calls_total{server=\"testkit\",tool=\"mcp__testkit__echo\"} 1",
        "extpool_tool_errors_total{server=\"testkit\",tool=\"mcp__testkit__echo\"} 0",
        "extpool_tool_errors_total{server=\"testkit\",tool=\"mcp__testkit__tool_error\"} 1",
        "extpool_tool_call_seconds_count{server=\"testkit\",tool=\"mcp__testkit__echo\"} 1",
        "extpool_upstream_up{server=\"testkit\",state=\"ready\"} 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "missing {line:?} in\n{metrics}"
        );
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_bearer_token_mcp_and_metrics_need_it_and_health_does_not() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let options = GatewayOptions {
        bearer: Some("gw-secret-token".into()),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    assert_eq!(get(&format!("{}/healthz", served.base), None).await.0, 200);
    let (status, body) = get(&format!("{}/metrics", served.base), None).await;
    assert_eq!(status, 401);
    assert!(!body.contains("gw-secret-token"));
    assert_eq!(
        get(&format!("{}/metrics", served.base), Some("wrong"))
            .await
            .0,
        401
    );
    assert_eq!(
        get(&format!("{}/metrics", served.base), Some("gw-secret-token"))
            .await
            .0,
        200
    );
    let response = reqwest::Client::new()
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_has_one_line_per_call_with_the_deciding_rule_and_no_arguments() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&format!(
        "{}permissions:\n  deny: [\"mcp__testkit__crash*\"]\n  default: allow\n",
        testkit_yaml("testkit", &state)
    ));
    let audit = project.path().join("audit.jsonl");
    let options = GatewayOptions {
        audit_log: Some(audit.clone()),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "call", "name": "mcp__testkit__echo", "args": {"message": "a-secret-argument"}},
            {"op": "call", "name": "mcp__testkit__crash", "expect_error": true},
        ]),
    )
    .await;
    let text = std::fs::read_to_string(&audit).unwrap();
    assert!(
        !text.contains("a-secret-argument"),
        "arguments never written: {text}"
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["name"], "mcp__testkit__echo");
    assert_eq!(lines[0]["decision"], "allow");
    assert_eq!(lines[0]["rule"], "the default policy (allow)");
    assert_eq!(lines[0]["outcome"], "ok");
    assert!(
        lines[0]["args_sha256"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(lines[1]["name"], "mcp__testkit__crash");
    assert_eq!(lines[1]["decision"], "deny");
    assert_eq!(lines[1]["rule"], "deny rule \"mcp__testkit__crash*\"");
    assert_ne!(lines[1]["outcome"], "ok");
    served.stop().await;
}
