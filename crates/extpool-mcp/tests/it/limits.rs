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
    match &err {
        ClientError::MessageTooLarge { size, limit, .. } => {
            assert_eq!(*limit, 1024 * 1024);
            assert!(size.is_some_and(|s| s > 3 * 1024 * 1024), "{size:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_message_limit());
    assert_eq!(
        err.to_string(),
        "MCP server \"big\" sent a 3.0 MiB message in answer to tools/call; \
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
        "MCP server \"deep\" sent a message nested more than 128 levels deep \
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
    tokio::task::block_in_place(|| HttpServer::spawn(Vec::<String>::new()))
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
        matches!(err, ClientError::MessageTooDeep { limit: 128, .. }),
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
