//! Issue 17 item 6: an answer too large or nested too deep to read fails its
//! call at once with a message that says so, instead of the call waiting
//! out its timeout; the connection goes on.

use std::time::Duration;

use extpool_mcp::{ClientError, McpClient, McpServerConfig};
use extpool_testkit::HttpServer;
use serde_json::json;

use crate::support::*;

/// Long enough that a call which waited for it would fail the test: the
/// answer must come from the limit, not from the timeout.
const PATIENT: Duration = Duration::from_secs(120);

async fn patient(server: &str, mut config: McpServerConfig) -> McpClient {
    config.request_timeout_ms = Some(PATIENT.as_millis() as u64);
    connect(server, config).await
}

async fn still_works(client: &McpClient) {
    let r = client
        .call_tool("echo", args(json!({"message": "after"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "after");
    assert_eq!(client.connection_count(), 1, "no reconnect was needed");
}

#[tokio::test]
async fn stdio_answer_over_the_limit_says_its_size() {
    let mut config = stdio_cfg::<&str>(&[]);
    config.max_message_bytes = Some(1024 * 1024);
    let client = patient("big", config).await;
    let err = client
        .call_tool("large_text", args(json!({"bytes": 3 * 1024 * 1024})))
        .await
        .unwrap_err();
    // Refused as soon as the bytes read of it pass the limit, before its
    // end (and so its size) is known.
    match &err {
        ClientError::MessageTooLarge { size, limit, .. } => {
            assert_eq!(*limit, 1024 * 1024);
            assert_eq!(*size, None);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_message_limit());
    assert_eq!(
        err.to_string(),
        "MCP server \"big\" sent a message of more than 1.0 MiB in answer to tools/call; \
         the limit is 1.0 MiB (`max_message_bytes` in the server's config)"
    );
    still_works(&client).await;
    client.close().await;
}

#[tokio::test]
async fn stdio_default_limit_is_16_mib() {
    let client = patient("big", stdio_cfg::<&str>(&[])).await;
    let ok = client
        .call_tool("large_text", args(json!({"bytes": 15 * 1024 * 1024})))
        .await
        .unwrap();
    assert_eq!(text(&ok).len(), 15 * 1024 * 1024);
    let err = client
        .call_tool("large_text", args(json!({"bytes": 17 * 1024 * 1024})))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::MessageTooLarge { limit, .. } if limit == 16 * 1024 * 1024),
        "{err:?}"
    );
    still_works(&client).await;
    client.close().await;
}

#[tokio::test]
async fn stdio_answer_nested_10000_deep_is_refused_at_once() {
    let client = patient("deep", stdio_cfg::<&str>(&[])).await;
    let err = client
        .call_tool("nested", args(json!({"depth": 10_000})))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server \"deep\" sent a message nested more than 127 levels deep \
         in answer to tools/call; it cannot be read"
    );
    // A document within the limit is read.
    let ok = client
        .call_tool("nested", args(json!({"depth": 100})))
        .await
        .unwrap();
    assert!(ok.structured_content.is_some());
    still_works(&client).await;
    client.close().await;
}

fn http_server() -> HttpServer {
    tokio::task::block_in_place(HttpServer::start)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answer_over_the_limit_is_refused_at_once() {
    let server = http_server();
    let mut config = http_cfg(server.url());
    config.max_message_bytes = Some(1024 * 1024);
    let client = patient("web", config).await;
    let err = client
        .call_tool("large_text", args(json!({"bytes": 3 * 1024 * 1024})))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server \"web\" sent a message of more than 1.0 MiB in answer to tools/call; \
         the limit is 1.0 MiB (`max_message_bytes` in the server's config)"
    );
    still_works(&client).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answer_nested_10000_deep_is_refused_at_once() {
    let server = http_server();
    let client = patient("web", http_cfg(server.url())).await;
    let err = client
        .call_tool("nested", args(json!({"depth": 10_000})))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::MessageTooDeep { limit, .. } if limit == extpool_core::json::MAX_DEPTH),
        "{err:?}"
    );
    let ok = client
        .call_tool("nested", args(json!({"depth": 100})))
        .await
        .unwrap();
    assert!(ok.structured_content.is_some());
    still_works(&client).await;
    client.close().await;
}

/// Every answer nested near the limit comes at once, read or refused as
/// too deep: none is as deep as the JSON parser refuses yet short of the
/// limit (such an answer was dropped and its call waited for its timeout).
async fn near_the_limit_every_answer_comes_at_once(client: &McpClient) {
    let max = extpool_core::json::MAX_DEPTH as u64;
    let (mut read, mut refused) = (0, 0);
    for depth in max - 8..=max + 2 {
        let call = client.call_tool("nested", args(json!({ "depth": depth })));
        match tokio::time::timeout(Duration::from_secs(30), call).await {
            Ok(Ok(_)) => read += 1,
            Ok(Err(ClientError::MessageTooDeep { .. })) => refused += 1,
            Ok(Err(other)) => panic!("depth {depth}: {other}"),
            Err(_) => panic!("depth {depth}: no answer within 30 s"),
        }
    }
    assert!(read > 0 && refused > 0, "{read} read, {refused} refused");
    still_works(client).await;
}

#[tokio::test]
async fn stdio_answers_nested_near_the_limit_come_at_once() {
    let client = patient("deep", stdio_cfg::<&str>(&[])).await;
    near_the_limit_every_answer_comes_at_once(&client).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answers_nested_near_the_limit_come_at_once() {
    let server = http_server();
    let client = patient("web", http_cfg(server.url())).await;
    near_the_limit_every_answer_comes_at_once(&client).await;
    client.close().await;
}

/// A raw echo server (`extpool-raw-echo`) given `args`.
fn raw_cfg(args: &[&str]) -> McpServerConfig {
    McpServerConfig::stdio(
        extpool_testkit::raw_echo_binary().to_string_lossy(),
        args.iter().map(|a| (*a).to_owned()),
    )
}

#[tokio::test]
async fn stdio_answer_that_never_ends_its_line_is_refused_once_past_the_limit() {
    let mut config = raw_cfg(&["--endless", "tools/call"]);
    config.max_message_bytes = Some(64 * 1024);
    let client = patient("endless", config).await;
    let err = client
        .call_tool("echo", args(json!({"message": "hi"})))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::MessageTooLarge { size: None, limit, .. } if limit == 64 * 1024),
        "{err:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn stdio_answer_with_the_id_and_a_malformed_error_fails_its_call_at_once() {
    let client = patient(
        "liar",
        raw_cfg(&[
            "--answer",
            r#"tools/call={"jsonrpc":"2.0","id":{id},"error":{"code":"x"}}"#,
        ]),
    )
    .await;
    let err = client
        .call_tool("echo", args(json!({"message": "hi"})))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server \"liar\" answered tools/call with a message that is not a JSON-RPC response: \
         its \"error\" is not a JSON-RPC error object (invalid type: string \"x\", expected i32)"
    );
    // The connection goes on.
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answer_with_the_id_and_a_malformed_error_fails_its_call_at_once() {
    let fake = crate::fake_http::FakeHttp::start(crate::fake_http::Answer::SseMalformedError).await;
    let client = patient("liar", http_cfg(&fake.url)).await;
    let err = client
        .call_tool("echo", args(json!({"message": "hi"})))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server \"liar\" answered tools/call with a message that is not a JSON-RPC response: \
         its \"error\" is not a JSON-RPC error object (invalid type: string \"x\", expected i32)"
    );
    assert_eq!(fake.calls(), 1, "not sent again");
    client.close().await;
}
