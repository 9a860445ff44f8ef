//! A 2026-07-28 client (`server/discover`, stateless requests,
//! `subscriptions/listen`) against the test server over HTTP and stdio.

use extpool_testkit::HttpServer;
use rmcp::{
    model::{ProtocolVersion, ServerNotification, SubscriptionFilter},
    service::{ClientLifecycleMode, ClientServiceExt},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::json;

use crate::common::{BUILTIN_TOOL_COUNT, Client, NO_ARGS, Recorder, call_text, within};

fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

async fn connect_modern_http(url: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    within(Recorder::default().serve_with_lifecycle(transport, modern()))
        .await
        .expect("server/discover over HTTP")
}

#[tokio::test]
async fn discover_client_calls_tools_and_lists_skills_over_http() {
    let server = HttpServer::spawn(NO_ARGS);
    let client = connect_modern_http(server.url()).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    assert!(info.capabilities.supports_skills());
    assert_eq!(
        within(client.list_all_tools()).await.unwrap().len(),
        BUILTIN_TOOL_COUNT
    );
    assert_eq!(
        call_text(&client, "echo", json!({"message": "modern"})).await,
        "modern"
    );
    assert_eq!(
        within(client.list_skills(None)).await.unwrap().skills.len(),
        1
    );
}

#[tokio::test]
async fn subscriptions_listen_receives_tools_list_changed() {
    let server = HttpServer::spawn(NO_ARGS);
    let client = connect_modern_http(server.url()).await;
    let mut subscription =
        within(client.listen(SubscriptionFilter::builder().tools_list_changed().build()))
            .await
            .expect("subscriptions/listen");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    call_text(&client, "add_tool", json!({"name": "modern_tool"})).await;
    let notification = within(subscription.next()).await.unwrap();
    assert!(
        matches!(
            notification,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{notification:?}"
    );
    let tools = within(client.list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "modern_tool"));
}
