//! The peers: the Python `mcp` SDK server of this crate (HTTP and stdio)
//! and server-everything over stdio, driven by an rmcp client.

use extpool_testkit::peers::{self, FastMcpServer};
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::json;

use crate::common::{Client, args, call, call_text, connect_command, connect_http, within};

async fn exercise_python_server(client: &Client) {
    let tools = within(client.list_all_tools()).await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "echo", "structured"]);
    assert_eq!(
        call_text(client, "echo", json!({"message": "py"})).await,
        "py"
    );
    assert_eq!(
        call_text(client, "add", json!({"a": 2, "b": 40})).await,
        "42"
    );
    let structured = call(client, "structured", json!({"count": 2}))
        .await
        .unwrap();
    assert_eq!(
        structured.structured_content,
        Some(json!({"items": [{"id": 0, "name": "item-0"}, {"id": 1, "name": "item-1"}]}))
    );
    let info = within(client.read_resource(ReadResourceRequestParams::new("testkit://py/info")))
        .await
        .unwrap();
    assert_eq!(info.contents.len(), 1);
    let prompt = within(client.get_prompt(
        GetPromptRequestParams::new("greet").with_arguments(args(json!({"name": "Py"}))),
    ))
    .await
    .unwrap();
    assert_eq!(prompt.messages.len(), 1);
}

#[tokio::test]
async fn fastmcp_server_over_http_with_an_rmcp_client() {
    let server = FastMcpServer::spawn_http();
    assert!(server.url().starts_with("http://127.0.0.1:"));
    let (client, _) = connect_http(server.url()).await;
    exercise_python_server(&client).await;
}

#[tokio::test]
async fn fastmcp_server_over_stdio_with_an_rmcp_client() {
    let (client, _) = connect_command(FastMcpServer::stdio()).await;
    exercise_python_server(&client).await;
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let (client, _) = connect_command(peers::server_everything()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "get-sum"), "{tools:?}");
    assert_eq!(
        call_text(&client, "get-sum", json!({"a": 2, "b": 40})).await,
        "The sum of 2 and 40 is 42."
    );
}
