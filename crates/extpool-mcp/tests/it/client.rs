//! The client against the testkit server, over stdio and streamable HTTP:
//! listing (all pages), typed results, resources, prompts, errors, timeouts,
//! cancellation, process cleanup.

use std::sync::Arc;
use std::time::Duration;

use extpool_mcp::{ClientError, McpClient, McpServerConfig};
use extpool_testkit::{HttpServer, StateDir};
use rmcp::model::ContentBlock;
use serde_json::json;

use crate::support::*;

async fn exercise(client: &McpClient) {
    let tools = client.list_tools().await.unwrap();
    for expected in ["echo", "add", "counter", "sleep", "crash", "structured"] {
        assert!(
            tools.iter().any(|t| t.name == expected),
            "missing {expected}"
        );
    }
    let r = client
        .call_tool("echo", args(json!({"message": "hello"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "hello");
    let r = client
        .call_tool("add", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(text(&r), "42");

    let r = client
        .call_tool("structured", args(json!({"count": 2})))
        .await
        .unwrap();
    assert_eq!(r.structured_content.unwrap()["items"][1]["name"], "item-1");

    let r = client.call_tool("mixed_content", None).await.unwrap();
    let kinds: Vec<&str> = r
        .content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            ContentBlock::Resource(_) => "resource",
            ContentBlock::ResourceLink(_) => "resource_link",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["text", "image", "audio", "resource", "resource_link"]
    );

    let r = client
        .call_tool("tool_error", args(json!({"message": "nope"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));

    let big = client
        .call_tool("large_text", args(json!({"bytes": 1_000_000})))
        .await
        .unwrap();
    assert_eq!(text(&big).len(), 1_000_000);

    let resources = client.list_resources().await.unwrap();
    assert!(resources.iter().any(|r| r.uri == "testkit://info"));
    let read = client.read_resource("testkit://info").await.unwrap();
    assert!(!read.contents.is_empty());

    let prompts = client.list_prompts().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "greet"));
    let p = client
        .get_prompt("greet", args(json!({"name": "Ada"})))
        .await
        .unwrap();
    assert!(!p.messages.is_empty());
    client.ping().await.unwrap();
}

#[tokio::test]
async fn stdio_round_trip() {
    let client = connect("kit", stdio_cfg::<&str>(&[])).await;
    exercise(&client).await;
    let info = client.server_info().unwrap();
    assert!(info.capabilities.tools.is_some());
    client.close().await;
}

#[tokio::test]
async fn http_round_trip() {
    let server = HttpServer::start();
    let client = connect("kit_http", http_cfg(server.url())).await;
    exercise(&client).await;
    client.close().await;
}

#[tokio::test]
async fn lists_follow_every_page() {
    let client = connect(
        "paged",
        stdio_cfg(&["--page-size", "7", "--extra-tools", "40"]),
    )
    .await;
    let tools = client.list_tools().await.unwrap();
    assert!(tools.len() >= 40 + 15, "got {}", tools.len());
    assert!(tools.iter().any(|t| t.name == "tool_0039"));
    let http = HttpServer::spawn(["--page-size", "3", "--extra-tools", "10"]);
    let client2 = connect("paged_http", http_cfg(http.url())).await;
    assert_eq!(client2.list_tools().await.unwrap().len(), tools.len() - 30);
    client.close().await;
    client2.close().await;
}

#[tokio::test]
async fn json_rpc_error_is_returned_as_is() {
    let client = connect("kit", stdio_cfg::<&str>(&[])).await;
    let err = client
        .call_tool("fail", args(json!({"message": "declared"})))
        .await
        .unwrap_err();
    assert!(err.is_server_declared(), "{err:?}");
    let rpc = err.rpc_error().unwrap();
    assert_eq!(rpc.code.0, -32603);
    assert!(rpc.message.contains("declared"));
    client.close().await;
}

#[tokio::test]
async fn hung_request_times_out_and_connection_stays_usable() {
    let state = StateDir::new();
    let client = connect("slow", stdio_cfg(&state.args())).await;
    let err = client
        .call_tool_with_timeout(
            "sleep",
            args(json!({"ms": 60_000})),
            Some(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(err.to_string().contains("timed out"), "{err}");
    // The server was told: it counts the cancellation.
    counted(&state, "cancelled", 1).await;
    let r = client
        .call_tool("echo", args(json!({"message": "still here"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "still here");
    assert_eq!(client.connection_count(), 1);
    client.close().await;
}

#[tokio::test]
async fn config_request_timeout_applies() {
    let mut cfg = stdio_cfg::<&str>(&[]);
    cfg.request_timeout_ms = Some(200);
    let client = connect("slow", cfg).await;
    let err = client
        .call_tool("sleep", args(json!({"ms": 10_000})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Timeout {
                timeout_ms: 200,
                operation: "tools/call",
                ..
            }
        ),
        "{err:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn dropping_a_call_cancels_it_and_keeps_the_connection() {
    let state = StateDir::new();
    let client = connect("drop", stdio_cfg(&state.args())).await;
    let c2 = client.clone();
    let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
    let call = tokio::spawn(async move {
        let call = c2.call_tool("sleep", args(json!({"ms": 60_000})));
        tokio::pin!(call);
        // The first poll hands the request to the connection.
        if let std::task::Poll::Ready(r) = futures::poll!(&mut call) {
            return r;
        }
        let _ = sent_tx.send(());
        call.await
    });
    sent_rx.await.unwrap();
    call.abort();
    let _ = call.await;
    counted(&state, "cancelled", 1).await;
    let r = client
        .call_tool("add", args(json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    assert_eq!(text(&r), "2");
    assert_eq!(client.connection_count(), 1);
    client.close().await;
}

#[tokio::test]
async fn hanging_initialize_is_a_startup_timeout_with_no_process_left() {
    let mut cfg = stdio_cfg(&["--hang-on-initialize"]);
    cfg.startup_timeout_ms = Some(500);
    let client = McpClient::new(name("hang"), cfg, Arc::new(options())).unwrap();
    let err = client.ensure_connected().await.unwrap_err();
    assert!(err.is_connect() && err.is_timeout(), "{err:?}");
    assert!(err.to_string().contains("no initialize response"), "{err}");
}

#[tokio::test]
async fn failed_start_reports_stderr() {
    let state = StateDir::new();
    let mut a = state.args();
    a.push("--die-on-start".into());
    let cfg = stdio_cfg(&a);
    let err = McpClient::connect(name("dies"), cfg, Arc::new(options()))
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    assert!(
        err.stderr_tail().iter().any(|l| l.contains("die-on-start")),
        "stderr tail: {:?}",
        err.stderr_tail()
    );
    assert_eq!(state.starts(), 1);
}

#[tokio::test]
async fn missing_binary_is_a_spawn_error() {
    let cfg = McpServerConfig::stdio("/nonexistent/mcp-server", ["x"]);
    let err = McpClient::connect(name("missing"), cfg, Arc::new(options()))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ClientError::Connect {
                failure: extpool_mcp::ConnectFailure::Spawn { .. },
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn stderr_is_captured() {
    let (client, mut lines) = connect_hearing("talker", stdio_cfg::<&str>(&[])).await;
    client
        .call_tool("stderr", args(json!({"message": "hello from stderr"})))
        .await
        .unwrap();
    heard(&mut lines, |l| l.contains("hello from stderr")).await;
    assert!(
        client
            .stderr_tail()
            .iter()
            .any(|l| l.contains("hello from stderr"))
    );
    client.close().await;
}

#[tokio::test]
async fn close_leaves_no_process_behind() {
    let client = connect("closer", stdio_cfg::<&str>(&[])).await;
    let pid = client.pid().unwrap();
    assert!(!process_gone(pid));
    client.close().await;
    gone(pid).await;
    let err = client.ping().await.unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "{err:?}");
}

#[tokio::test]
async fn environment_is_filtered() {
    let mut cfg = stdio_cfg::<&str>(&[]);
    cfg.env.insert("EXTPOOL_TEST_VAR".into(), "visible".into());
    // A withheld variable passes only when allow_env names it.
    cfg.env
        .insert("NODE_OPTIONS".into(), "--no-warnings".into());
    let err = McpClient::new(name("env"), cfg.clone(), Arc::new(options())).unwrap_err();
    assert!(err.is_config(), "{err:?}");
    cfg.allow_env = vec!["NODE_OPTIONS".into()];
    let client = connect("env", cfg).await;
    let get = |n: &str| {
        let c = client.clone();
        let n = n.to_owned();
        async move { text(&c.call_tool("env", args(json!({"name": n}))).await.unwrap()) }
    };
    assert_eq!(get("EXTPOOL_TEST_VAR").await, "visible");
    assert_eq!(get("NODE_OPTIONS").await, "--no-warnings");
    assert!(!get("PATH").await.is_empty());
    client.close().await;
}

#[tokio::test]
async fn command_allowlist_is_enforced() {
    let cfg = stdio_cfg::<&str>(&[]);
    let opts = extpool_mcp::ClientOptions {
        spawn: extpool_mcp::SpawnPolicy {
            allowed_commands: Some(vec!["node".into()]),
            ..Default::default()
        },
        ..options()
    };
    let err = McpClient::new(name("blocked"), cfg.clone(), Arc::new(opts)).unwrap_err();
    assert!(
        err.to_string().contains("not in the allowed commands"),
        "{err}"
    );
    let opts = extpool_mcp::ClientOptions {
        spawn: extpool_mcp::SpawnPolicy {
            allowed_commands: Some(vec![cfg.command.clone().unwrap()]),
            ..Default::default()
        },
        ..options()
    };
    let client = McpClient::connect(name("allowed"), cfg, Arc::new(opts))
        .await
        .unwrap();
    client.close().await;
}

#[tokio::test]
async fn close_terminates_the_whole_process_group() {
    // An npx-style launcher: the server runs alongside a grandchild that
    // ignores stdin, which only a process-group kill can reach.
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("launcher.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nsleep 300 &\necho $! > \"$PID_FILE\"\nexec \"$KIT_BIN\" --transport stdio\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let mut cfg = McpServerConfig::stdio(script.to_string_lossy(), Vec::<String>::new());
    cfg.env
        .insert("PID_FILE".into(), pid_file.to_string_lossy().into());
    cfg.env.insert(
        "KIT_BIN".into(),
        extpool_testkit::server_binary().to_string_lossy().into(),
    );
    let client = connect("launcher", cfg).await;
    client.ping().await.unwrap();
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let leader = client.pid().unwrap();
    assert!(!process_gone(grandchild));
    client.close().await;
    gone(leader).await;
    gone(grandchild).await;
}
