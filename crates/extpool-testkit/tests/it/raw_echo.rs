//! The raw benchmark echo server answers a real rmcp client.

use std::process::Stdio;

use serde_json::json;

use crate::common::{call_text, connect_tokio_command, within};

#[tokio::test]
async fn raw_echo_answers_an_rmcp_client() {
    let command = tokio::process::Command::new(extpool_testkit::raw_echo_binary());
    let (client, _) = connect_tokio_command(command, Stdio::null()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "echo");
    let text = call_text(&client, "echo", json!({"message": "raw \"quoted\" ✓"})).await;
    assert_eq!(text, "raw \"quoted\" ✓");
    within(client.cancel()).await.unwrap();
}
