//! The protocol era spoken to each server (`protocol:` in its config): the
//! session era by default; 2026-07-28 when asked for, or with `auto` when
//! the server offers it (a session-only server falls back); in the
//! 2026-07-28 era a server's list changes arrive through
//! `subscriptions/listen`.

use std::sync::Arc;

use extpool_core::ChangeKind;
use extpool_mcp::{McpClient, McpServerConfig, Protocol, ReconnectPolicy};
use extpool_testkit::{HttpServer, StateDir, peers};
use rmcp::model::ProtocolVersion;
use serde_json::json;

use crate::support::*;

async fn http_server(args: Vec<String>) -> HttpServer {
    tokio::task::spawn_blocking(|| HttpServer::spawn(args))
        .await
        .unwrap()
}

async fn connect(server: &str, config: McpServerConfig) -> McpClient {
    McpClient::connect(name(server), config, Arc::new(options()))
        .await
        .unwrap()
}

fn era(client: &McpClient) -> ProtocolVersion {
    client.server_info().unwrap().protocol_version.clone()
}

fn with(mut config: McpServerConfig, protocol: Protocol) -> McpServerConfig {
    config.protocol = protocol;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_server_is_spoken_to_in_the_era_its_config_asks_for() {
    let http = http_server(Vec::new()).await;
    let default = connect("plain", http_cfg(http.url())).await;
    assert_eq!(era(&default), ProtocolVersion::V_2025_11_25);
    let auto = connect("auto", with(http_cfg(http.url()), Protocol::Auto)).await;
    assert_eq!(era(&auto), ProtocolVersion::V_2026_07_28);
    let cmd = peers::server_everything();
    let everything = McpServerConfig::stdio(cmd.program.to_string_lossy(), cmd.args);
    let fallback = connect("everything", with(everything, Protocol::Auto)).await;
    assert_eq!(
        era(&fallback),
        ProtocolVersion::V_2025_11_25,
        "session only"
    );
    for client in [&default, &auto] {
        let r = client
            .call_tool("echo", args(json!({"message": "both eras"})))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text().unwrap().text, "both eras");
    }
    for client in [default, auto, fallback] {
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_servers_list_changes_arrive_through_its_subscription() {
    let state = StateDir::new();
    let http = http_server(state.args()).await;
    let client = connect("modern", with(http_cfg(http.url()), Protocol::Stateless)).await;
    assert_eq!(era(&client), ProtocolVersion::V_2026_07_28);
    // The server keeps the client's listener before a list changes.
    state
        .until("listened", std::time::Duration::from_secs(60), |s| {
            s.counter("listeners") > 0
        })
        .await;
    let mut changes = client.signals().subscribe();
    let before = client.signals().epoch(ChangeKind::ToolsChanged);
    client
        .call_tool("add_tool", args(json!({"name": "heard"})))
        .await
        .unwrap();
    let kind = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            match changes.recv().await.unwrap() {
                ChangeKind::ToolsChanged => return ChangeKind::ToolsChanged,
                _ => continue,
            }
        }
    })
    .await
    .expect("no tools/list_changed");
    assert_eq!(kind, ChangeKind::ToolsChanged);
    assert!(client.signals().epoch(ChangeKind::ToolsChanged) > before);
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "heard"));
    client.close().await;
}

/// The `tools/call`s the server received, with their headers.
fn calls_received(state: &StateDir) -> Vec<serde_json::Value> {
    state
        .requests()
        .into_iter()
        .filter(|r| r["method"] == "tools/call")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_argument_travels_in_its_header_on_a_new_connection_too() {
    let state = StateDir::new();
    let mut server_args = state.args();
    server_args.push("--modern".into());
    let mut server = http_server(server_args).await;
    let mut config = with(http_cfg(server.url()), Protocol::Stateless);
    config.reconnect = ReconnectPolicy {
        attempts: 1,
        backoff_ms: 0,
    };
    let client = connect("modern", config).await;
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "regional"), "{tools:?}");
    let region = |r: rmcp::model::CallToolResult| r.content[0].as_text().unwrap().text.clone();
    let first = client
        .call_tool("regional", args(json!({"region": "eu"})))
        .await
        .unwrap();
    assert_eq!(region(first), "region=eu");

    // The server goes away and comes back: the client's next call opens a
    // new connection, whose rmcp transport has seen no tools/list.
    tokio::task::block_in_place(|| server.kill());
    client
        .call_tool("echo", args(json!({"message": "gone"})))
        .await
        .unwrap_err();
    tokio::task::block_in_place(|| server.restart());
    let requests_before = state.requests().len();
    let again = client
        .call_tool("regional", args(json!({"region": "eu west"})))
        .await
        .unwrap();
    assert_eq!(region(again), "region=eu west");
    assert_eq!(client.connection_count(), 2);
    let after: Vec<_> = state.requests().split_off(requests_before);
    assert!(
        after.iter().all(|r| r["method"] != "tools/list"),
        "not listed again: {after:?}"
    );
    // The restarted server's rmcp checked the header against the body (a
    // call without it is refused with -32020) and logged what it got.
    let calls = calls_received(&state);
    let last = &calls.last().unwrap()["headers"];
    assert_eq!(last["mcp-param-region"], "eu west", "{calls:?}");
    client.close().await;
}
