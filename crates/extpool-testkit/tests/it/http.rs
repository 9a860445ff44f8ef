//! The test server over streamable HTTP with a real rmcp client.

use extpool_testkit::{HttpServer, peers::PeerHttpServer};
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::json;

use crate::common::{BUILTIN_TOOL_COUNT, NO_ARGS, args, call, call_text, connect_http, within};

#[tokio::test]
async fn http_announces_a_loopback_url_on_an_os_assigned_port() {
    let server = HttpServer::spawn(NO_ARGS);
    let url = server.url();
    let port: u16 = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected url {url}"))
        .parse()
        .unwrap();
    assert_ne!(port, 0);
}

#[tokio::test]
async fn http_serves_tools_resources_and_prompts() {
    let server = HttpServer::spawn(NO_ARGS);
    let (client, _) = connect_http(server.url()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), BUILTIN_TOOL_COUNT);
    assert_eq!(
        call_text(&client, "echo", json!({"message": "over http"})).await,
        "over http"
    );
    assert_eq!(
        call_text(&client, "add", json!({"a": 20, "b": 22})).await,
        "42"
    );
    assert_eq!(
        call_text(&client, "counter", json!({"key": "h"})).await,
        "1"
    );
    let structured = call(&client, "structured", json!({"count": 1}))
        .await
        .unwrap();
    assert_eq!(
        structured.structured_content,
        Some(json!({"items": [{"id": 0, "name": "item-0"}]}))
    );
    let big = call_text(&client, "large_text", json!({"bytes": 2_000_000})).await;
    assert_eq!(big.len(), 2_000_000);

    let resources = within(client.list_all_resources()).await.unwrap();
    assert_eq!(resources.len(), 4);
    let info = within(client.read_resource(ReadResourceRequestParams::new("testkit://info")))
        .await
        .unwrap();
    assert_eq!(info.contents.len(), 1);
    let prompt = within(client.get_prompt(
        GetPromptRequestParams::new("greet").with_arguments(args(json!({"name": "Bo"}))),
    ))
    .await
    .unwrap();
    assert_eq!(prompt.messages.len(), 1);
}

#[tokio::test]
async fn http_sessions_share_server_state() {
    let server = HttpServer::spawn(NO_ARGS);
    let (a, _) = connect_http(server.url()).await;
    let (b, _) = connect_http(server.url()).await;
    assert_eq!(call_text(&a, "counter", json!({})).await, "1");
    assert_eq!(call_text(&b, "counter", json!({})).await, "2");
    assert_eq!(call_text(&a, "count", json!({"key": "default"})).await, "2");
}

#[tokio::test]
async fn http_server_everything_is_reachable() {
    let server: PeerHttpServer = extpool_testkit::peers::server_everything_http();
    let (client, _) = connect_http(server.url()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    assert_eq!(
        call_text(&client, "echo", json!({"message": "hello"})).await,
        "Echo: hello"
    );
}
