//! Error messages as a user sees them: each cause once, outermost first,
//! no internal type names, and the same text whether it is printed with
//! `to_string()` (a tool error handed to a model) or as a chain (`{:#}`, what
//! the CLI prints), alone or wrapped for the resource protocols.

use std::time::Duration;

use extpool_mcp::{ClientError, McpClient, McpServerConfig};
use extpool_testkit::{HttpServer, StateDir};
use serde_json::json;

use crate::support::*;

/// The text a user sees for `err`, checked to be the same in every rendering
/// and free of internal names.
fn shown(err: &ClientError) -> String {
    let text = err.to_string();
    let chain = format!("{:#}", anyhow::Error::new(err.clone()));
    assert_eq!(chain, text, "a chain printer repeats a cause");
    let wrapped = format!("{:#}", anyhow::Error::new(err.clone().into_extension("x")));
    assert_eq!(wrapped, text, "the capability wrapper repeats a cause");
    for internal in [
        "rmcp::",
        "Transport [",
        "WorkerTransport",
        "Transport send error",
    ] {
        assert!(!text.contains(internal), "{internal:?} in {text}");
    }
    text
}

async fn http_status(code: u16) -> String {
    let state = StateDir::new();
    let server_args = state.args();
    let server = tokio::task::block_in_place(|| HttpServer::spawn(server_args));
    let client = connect("h", http_cfg(server.url())).await;
    let err = client
        .call_tool("http_status", args(json!({"code": code})))
        .await
        .unwrap_err();
    client.close().await;
    assert_eq!(
        state.counter("http_status"),
        1,
        "HTTP {code} was sent again"
    );
    shown(&err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_4xx_without_a_json_rpc_body_is_one_sentence() {
    for (code, reason) in [
        (400, "Bad Request"),
        (401, "Unauthorized"),
        (403, "Forbidden"),
        (409, "Conflict"),
    ] {
        assert_eq!(
            http_status(code).await,
            format!(
                "MCP server \"h\": tools/call failed: HTTP {code} {reason}: \
                 injected by the http_status tool"
            )
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_5xx_names_the_status_once() {
    assert_eq!(http_status(500).await, "MCP server \"h\" answered HTTP 500");
    assert_eq!(http_status(503).await, "MCP server \"h\" answered HTTP 503");
}

#[tokio::test]
async fn a_timeout_is_said_once() {
    let client = connect("m", stdio_cfg::<&str>(&[])).await;
    let err = client
        .call_tool_with_timeout(
            "sleep",
            args(json!({"ms": 10_000})),
            Some(Duration::from_millis(100)),
        )
        .await
        .unwrap_err();
    assert_eq!(
        shown(&err),
        "MCP server \"m\": tools/call timed out after 100 ms"
    );
    client.close().await;
}

#[tokio::test]
async fn a_json_rpc_error_is_said_once() {
    let client = connect("m", stdio_cfg::<&str>(&[])).await;
    let err = client
        .call_tool("fail", args(json!({"message": "no such issue"})))
        .await
        .unwrap_err();
    assert_eq!(
        shown(&err),
        "MCP server \"m\" returned error -32603: no such issue"
    );
    client.close().await;
}

#[tokio::test]
async fn a_command_that_cannot_start_is_said_once() {
    let config = McpServerConfig::stdio("/nonexistent/extpool-test-server", Vec::<String>::new());
    let err = McpClient::connect(name("m"), config, std::sync::Arc::new(options()))
        .await
        .unwrap_err();
    assert_eq!(
        shown(&err),
        "MCP server \"m\" failed to start: could not start \"/nonexistent/extpool-test-server\": \
         No such file or directory (os error 2)"
    );
}

#[tokio::test]
async fn an_unreachable_url_is_said_once_without_its_query() {
    let config = http_cfg("http://127.0.0.1:1/mcp?api_key=s3cr3t");
    let err = McpClient::connect(name("m"), config, std::sync::Arc::new(options()))
        .await
        .unwrap_err();
    let text = shown(&err);
    assert_eq!(
        text,
        "MCP server \"m\" failed to start: cannot connect to http://127.0.0.1:1/mcp: \
         Connection refused (os error 111)"
    );
    assert_eq!(
        err.start_failure().as_deref(),
        Some("cannot connect to http://127.0.0.1:1/mcp: Connection refused (os error 111)")
    );
}

#[tokio::test]
async fn a_crash_during_a_mutation_is_said_once() {
    let state = StateDir::new();
    let client = connect("gone", stdio_cfg(&state.args())).await;
    let err = client
        .call_tool("crash", args(json!({"once": false})))
        .await
        .unwrap_err();
    let text = shown(&err);
    // The crash killed the server; the reconnect started a new one (the
    // crash tool is not read-only, so the call was not sent again).
    assert!(
        text.starts_with(
            "MCP server \"gone\": the connection was lost during tools/call \"crash\"; \
             reconnected"
        ),
        "{text}"
    );
    client.close().await;
}
