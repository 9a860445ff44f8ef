//! `list_changed` notifications pushed after `add_tool`, `add_resource` and
//! `add_prompt`, to every connected client.

use extpool_testkit::HttpServer;
use serde_json::json;

use crate::common::{NO_ARGS, call_text, connect_http, connect_stdio, within};

#[tokio::test]
async fn stdio_add_tool_sends_tools_list_changed() {
    let (client, recorder) = connect_stdio(&[]).await;
    assert_eq!(
        call_text(&client, "add_tool", json!({"name": "late_tool"})).await,
        "added tool late_tool"
    );
    recorder.wait_for("tools", 1).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.last().unwrap().name, "late_tool");
    assert_eq!(
        call_text(&client, "late_tool", json!({"message": "x"})).await,
        "x"
    );
    assert_eq!(
        call_text(&client, "late_tool", json!({})).await,
        "late_tool"
    );
}

#[tokio::test]
async fn stdio_add_resource_and_prompt_send_their_list_changed() {
    let (client, recorder) = connect_stdio(&[]).await;
    call_text(
        &client,
        "add_resource",
        json!({"uri": "testkit://late", "text": "late text"}),
    )
    .await;
    recorder.wait_for("resources", 1).await;
    let resources = within(client.list_all_resources()).await.unwrap();
    assert!(resources.iter().any(|r| r.uri == "testkit://late"));

    call_text(&client, "add_prompt", json!({"name": "late_prompt"})).await;
    recorder.wait_for("prompts", 1).await;
    let prompts = within(client.list_all_prompts()).await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "late_prompt"));
    assert_eq!(recorder.count("tools"), 0);
}

#[tokio::test]
async fn http_add_tool_notifies_every_session() {
    let server = HttpServer::spawn(NO_ARGS);
    let (a, recorder_a) = connect_http(server.url()).await;
    let (b, recorder_b) = connect_http(server.url()).await;
    call_text(&a, "add_tool", json!({"name": "shared_tool"})).await;
    recorder_a.wait_for("tools", 1).await;
    recorder_b.wait_for("tools", 1).await;
    let tools = within(b.list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "shared_tool"));
}

#[tokio::test]
async fn adding_an_existing_name_is_refused() {
    let (client, recorder) = connect_stdio(&[]).await;
    let result = crate::common::call(&client, "add_tool", json!({"name": "echo"})).await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(recorder.count("tools"), 0);
}
