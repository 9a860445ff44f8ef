//! What is sent again after a failure, and what never is.
//!
//! A request the server may already have acted on is never sent a second
//! time unless repeating it is harmless: reads, and tools the server marks
//! `readOnlyHint` or `idempotentHint`. The connection (or HTTP session) is
//! still re-established, so the next call works.

use extpool_mcp::{ClientError, ReconnectPolicy};
use extpool_testkit::{HttpServer, StateDir};
use serde_json::json;

use crate::support::*;

fn spawn_http(state: &StateDir) -> HttpServer {
    let args = state.args();
    tokio::task::block_in_place(|| HttpServer::spawn(args))
}

/// Issue 17 item 1: an HTTP 404 answer to `tools/call` was taken for an
/// expired session and the call sent again on a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_404_to_a_tool_call_is_returned_not_resent() {
    let state = StateDir::new();
    let server = spawn_http(&state);
    let client = connect("h", http_cfg(server.url())).await;
    let err = client
        .call_tool("http_status", args(json!({"code": 404})))
        .await
        .unwrap_err();
    assert_eq!(state.counter("http_status"), 1, "sent once: {err}");
    assert!(err.is_server_declared(), "{err:?}");
    assert_eq!(
        err.to_string(),
        "MCP server \"h\" answered HTTP 404 to tools/call (session not found); \
         the request was not sent again because the server may have acted on it"
    );
    // The next call runs on a new session.
    let r = client
        .call_tool("counter", args(json!({"key": "after"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "1");
    assert_eq!(state.counter("after"), 1);
    client.close().await;
}

/// A real expired session (the server restarted): a read is retried on a
/// new session; a tool call is not, and the one after it works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_http_server_reads_retry_tool_calls_do_not() {
    let state = StateDir::new();
    let mut server = spawn_http(&state);
    let client = connect("h", http_cfg(server.url())).await;
    tokio::task::block_in_place(|| server.restart());
    let err = client
        .call_tool("counter", args(json!({"key": "k"})))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::SessionExpired { .. }), "{err:?}");
    assert_eq!(state.counter("k"), 0, "the restarted server never ran it");
    let r = client
        .call_tool("counter", args(json!({"key": "k"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "1");

    tokio::task::block_in_place(|| server.restart());
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "counter"));
    assert_eq!(state.starts(), 3);
    client.close().await;
}

/// A stdio server killed while a mutation is in flight: the client
/// reconnects, but the call is not replayed (it may have run).
#[tokio::test]
async fn mutation_interrupted_by_a_crash_is_not_replayed() {
    let state = StateDir::new();
    let client = connect("crashy", stdio_cfg(&state.args())).await;
    let err = client
        .call_tool("crash", args(json!({"once": true})))
        .await
        .unwrap_err();
    assert!(err.is_interrupted(), "{err:?}");
    assert_eq!(
        err.to_string(),
        "MCP server \"crashy\": the connection was lost during tools/call \"crash\"; \
         reconnected, but the request was not sent again because the server may have acted on it"
    );
    assert!(state.crashed());
    assert_eq!(state.counter("crash"), 0, "not replayed");
    assert_eq!(state.starts(), 2, "reconnected for the next call");
    let r = client
        .call_tool("crash", args(json!({"once": true})))
        .await
        .unwrap();
    assert_eq!(text(&r), "survived");
    assert_eq!(state.starts(), 2);
    client.close().await;
}

/// A read-only tool interrupted the same way is retried once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_tool_interrupted_by_a_kill_is_retried() {
    let state = StateDir::new();
    let client = connect("kit", stdio_cfg(&state.args())).await;
    let pid = client.pid().unwrap();
    let c = client.clone();
    let call = tokio::spawn(async move { c.call_tool("sleep", args(json!({"ms": 1_000}))).await });
    counted(&state, "sleep", 1).await;
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let r = call.await.unwrap().unwrap();
    assert_eq!(text(&r), "slept 1000 ms");
    assert_eq!(state.starts(), 2);
    client.close().await;
}

/// With reconnecting off, a lost connection is reported as such.
#[tokio::test]
async fn disabled_reconnect_reports_the_drop() {
    let state = StateDir::new();
    let mut cfg = stdio_cfg(&state.args());
    cfg.reconnect = ReconnectPolicy {
        attempts: 0,
        backoff_ms: 0,
    };
    let client = connect("once", cfg).await;
    let err = client
        .call_tool("crash", args(json!({"once": true})))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Disconnected { .. }), "{err:?}");
    client.close().await;
}
