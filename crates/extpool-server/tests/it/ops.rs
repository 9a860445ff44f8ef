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

/// A 2026-07-28 `server/discover` POST to `url` with `headers` added: the
/// status and body.
async fn discover_with(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "rebinding-test", "version": "1"},
    }}});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_or_origin_is_refused_and_the_configured_ones_are_served() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let options = GatewayOptions {
        allowed_hosts: vec!["gateway.example".into()],
        allowed_origins: vec!["https://app.example:443".into()],
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let url = &served.url;
    // DNS rebinding: a page on another name that resolves here.
    for host in ["evil.example", "evil.example:80", "127.0.0.1.evil.example"] {
        let (status, body) = discover_with(url, &[("host", host)]).await;
        assert_eq!(status, 403, "{host}: {body}");
        assert!(
            body.contains("does not answer to the host") && body.contains("--allowed-host"),
            "{host}: {body}"
        );
    }
    // A browser page of another origin.
    for origin in ["http://evil.example", "https://app.example:8443", "null"] {
        let (status, body) = discover_with(url, &[("origin", origin)]).await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert!(body.contains("Origin"), "{origin}: {body}");
    }
    // Loopback, the configured host and origins are served.
    let port = url.rsplit(':').next().unwrap().trim_end_matches("/mcp");
    let served_host = format!("gateway.example:{port}");
    for headers in [
        vec![],
        vec![("host", served_host.as_str())],
        vec![("host", "localhost")],
        vec![("origin", "https://app.example")],
        vec![("origin", "http://localhost:3000")],
    ] {
        let (status, body) = discover_with(url, &headers).await;
        assert_eq!(status, 200, "{headers:?}: {body}");
        assert!(body.contains("\"result\""), "{headers:?}: {body}");
    }
    served.stop().await;
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone)]
struct LogBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_lines_of_a_call_name_its_session_upstream_and_tool() {
    let logs = LogBuffer(std::sync::Arc::default());
    let writer = logs.clone();
    // The test binary's one subscriber (the only test here that sets one).
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter("extpool_mcp=info,extpool_host=info,extpool_server=info")
        .try_init()
        .expect("the only subscriber of this process");
    let state = StateDir::new();
    let mut remote = extpool_testkit::HttpServer::spawn(state.args());
    let url = remote.url().to_string();
    let project = Project::new();
    project.config(&format!("  remote:\n    url: {url}\n"));
    let served = Served::start(project, GatewayOptions::default()).await;
    remote.kill();
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([{"op": "call", "name": "mcp__remote__echo", "args": {"message": "gone"}}]),
    )
    .await;
    assert_eq!(out[1]["is_error"], true, "{out:?}");
    served.stop().await;
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    // Every line about the upstream names it; those logged on the call's
    // way (the lost connection, the failed reconnect, the degraded
    // server) name the session and the tool too. A reconnect the pool
    // tries later on its own belongs to no session. (Under `cargo test`
    // the other tests of this binary log here too: the lines about this
    // upstream are those that give its URL.)
    let upstream: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&url))
        .filter(|l| l.contains("MCP connect") || l.contains("capability degraded"))
        .collect();
    assert!(upstream.iter().all(|l| l.contains("=remote")), "{text}");
    let span = "server=remote tool=mcp__remote__echo}";
    for what in [
        "MCP connection lost",
        "MCP connect failed",
        "capability degraded",
    ] {
        let line = upstream
            .iter()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no {what:?} line in:\n{text}"));
        assert!(
            line.contains("tool_call{principal=local session=gw-") && line.contains(span),
            "{line}\nin:\n{text}"
        );
    }
}
