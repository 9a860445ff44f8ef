//! Fault injection for client tests: HTTP statuses on a live session
//! (`http_status`) and bursts of `list_changed`, log messages and progress
//! (`notify`).

use extpool_testkit::{HttpServer, StateDir};
use serde_json::json;

use crate::common::{call, call_text, connect_http, connect_stdio};

#[tokio::test]
async fn http_status_answers_with_the_requested_status_once() {
    let state = StateDir::new();
    let server = HttpServer::spawn(state.args());
    let (client, _) = connect_http(server.url()).await;
    for (n, code) in [503u16, 429, 400].into_iter().enumerate() {
        let result = call(&client, "http_status", json!({"code": code})).await;
        let error = result.expect_err("an HTTP error status is no tool result");
        assert!(
            error.to_string().contains(&code.to_string()),
            "status {code} not in {error}"
        );
        assert_eq!(state.counter("http_status"), n as u64 + 1);
    }
    // The session survives an injected status.
    assert_eq!(
        call_text(&client, "echo", json!({"message": "ok"})).await,
        "ok"
    );
}

#[tokio::test]
async fn http_status_over_stdio_is_a_tool_error() {
    let (client, _) = connect_stdio(&[]).await;
    let result = call(&client, "http_status", json!({"code": 503}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
}

#[tokio::test]
async fn notify_sends_a_burst_of_list_changed() {
    let (client, recorder) = connect_stdio(&[]).await;
    assert_eq!(
        call_text(&client, "notify", json!({"count": 100})).await,
        "sent 100"
    );
    recorder.wait_for("tools", 100).await;
    call_text(&client, "notify", json!({"kind": "prompts"})).await;
    recorder.wait_for("prompts", 1).await;
    call_text(&client, "notify", json!({"kind": "resources", "count": 2})).await;
    recorder.wait_for("resources", 2).await;
    assert!(
        call(&client, "notify", json!({"kind": "bogus"}))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn notify_floods_log_messages_and_progress_to_the_caller() {
    let (client, recorder) = connect_stdio(&[]).await;
    assert_eq!(
        call_text(&client, "notify", json!({"kind": "log", "count": 500})).await,
        "sent 500"
    );
    recorder.wait_for("log", 500).await;
    // rmcp gives every request a progress token, so the call gets progress.
    assert_eq!(
        call_text(&client, "notify", json!({"kind": "progress", "count": 300})).await,
        "sent 300"
    );
    recorder.wait_for("progress", 300).await;
    assert_eq!(
        recorder.count("tools"),
        0,
        "log and progress are no list_changed"
    );
}
