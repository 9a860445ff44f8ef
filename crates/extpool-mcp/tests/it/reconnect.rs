//! Reconnect and replay rules (behaviour doc): a dropped connection is
//! reconnected once and the interrupted operation retried when that is safe
//! (see `replay.rs`); concurrent operations share that reconnect;
//! server-declared failures are never replayed.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use extpool_mcp::{ClientError, Elicitation, McpClient, McpServerConfig, ReconnectPolicy};
use extpool_testkit::procs::kill_one;
use extpool_testkit::{HttpServer, StateDir};
use serde_json::json;

use crate::fake_http::{Answer, FakeHttp};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_calls_share_one_reconnect() {
    let state = StateDir::new();
    let client = connect("shared", stdio_cfg(&state.args())).await;
    let mut calls = Vec::new();
    for i in 0..50 {
        let c = client.clone();
        calls.push(tokio::spawn(async move {
            c.call_tool("sleep", args(json!({"ms": 500 + i}))).await
        }));
    }
    state
        .until("the 50 calls reached the server", PATIENCE, |s| {
            s.counter("sleep") == 50
        })
        .await;
    // The crash is a mutation: not sent again. The sleeps (read-only) are.
    let crash = client
        .call_tool("crash", args(json!({"once": true})))
        .await
        .unwrap_err();
    assert!(crash.is_interrupted(), "{crash:?}");
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(state.starts(), 2, "50 interrupted calls, one new process");
    assert_eq!(client.connection_count(), 2);
    assert_eq!(state.counter("crash"), 0);
    client.close().await;
}

/// A request in flight when a stdio server dies fails as soon as the
/// server's output ends, not when rmcp's service for the dead connection
/// has wound down: rmcp first lets a handler still answering the server's
/// question finish (here one that never does, for its 5 s grace), and
/// takes new requests meanwhile without ever writing or failing them. The
/// request timeout is shorter than that grace: waiting for the wind-down,
/// the request would time out. It fails as interrupted (a `tools/call`,
/// which the server may have acted on), after one reconnect, on which the
/// next request runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_in_flight_fails_when_the_server_dies_not_when_its_connection_winds_down() {
    let held = Arc::new(Held::default());
    let mut options = options();
    options.elicitation = Some(Elicitation(held.clone()));
    options.request_timeout = Duration::from_secs(4);
    let state = StateDir::new();
    let marker = state.path().to_string_lossy().into_owned();
    let client = McpClient::connect(name("winding"), stdio_cfg(&state.args()), Arc::new(options))
        .await
        .unwrap();
    // Through rmcp's service (`request_whole`), not the direct tool calls.
    let asking = {
        let client = client.clone();
        tokio::spawn(async move {
            let call = json!({"name": "elicit", "arguments": {"message": "your name?"}});
            client.request_whole("tools/call", call).await
        })
    };
    tokio::time::timeout(PATIENCE, held.waiting.subscribe().wait_for(|n| *n == 1))
        .await
        .expect("the server's question never reached the handler")
        .unwrap();
    kill_one(&marker).await;
    let lost = asking.await.unwrap().unwrap_err();
    assert!(lost.is_interrupted(), "{lost:?}");
    client.ping().await.unwrap();
    assert_eq!(client.connection_count(), 2);
    assert_eq!(state.starts(), 2);
    held.release.notify_waiters();
    client.close().await;
}

/// A server script that runs the testkit server normally until the file
/// `die` exists in its state directory, then dies on every start.
fn dying_server(state: &StateDir) -> (McpServerConfig, PathBuf) {
    let bin = extpool_testkit::server_binary();
    let script = state.path().join("server.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n\
         if [ -e \"$KIT_STATE/die\" ]; then exec \"$KIT_BIN\" --transport stdio --state-dir \"$KIT_STATE\" --die-on-start; fi\n\
         exec \"$KIT_BIN\" --transport stdio --state-dir \"$KIT_STATE\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cfg = McpServerConfig::stdio(script.to_string_lossy(), Vec::<String>::new());
    cfg.env
        .insert("KIT_STATE".into(), state.path().to_string_lossy().into());
    cfg.env
        .insert("KIT_BIN".into(), bin.to_string_lossy().into());
    (cfg, state.path().join("die"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_dying_on_every_start_is_unavailable_and_others_are_unaffected() {
    let pool = pool();
    let state = StateDir::new();
    let (cfg, die) = dying_server(&state);
    let doomed = pool.get_client(&name("doomed"), &cfg).await.unwrap();
    let healthy = pool
        .get_client(&name("healthy"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap();
    std::fs::write(&die, b"").unwrap();
    let err = doomed
        .call_tool("crash", args(json!({"once": false})))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(
            "MCP server \"doomed\" unavailable after reconnect: \
             initialize failed: connection closed: initialize response; stderr: "
        ),
        "{message}"
    );
    assert!(err.is_unavailable(), "{err:?}");
    assert!(
        err.stderr_tail().iter().any(|l| l.contains("die-on-start")),
        "{:?}",
        err.stderr_tail()
    );
    assert_eq!(state.starts(), 2, "one reconnect attempt (the default)");
    let r = healthy
        .call_tool("echo", args(json!({"message": "fine"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "fine");
    // A later call tries again (the server may be back): still unavailable.
    let err = doomed.ping().await.unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    assert_eq!(state.starts(), 3);
    // ... and once it is back, the client recovers.
    std::fs::remove_file(&die).unwrap();
    doomed.ping().await.unwrap();
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_share_a_failed_reconnect() {
    let state = StateDir::new();
    let (cfg, die) = dying_server(&state);
    let client = connect("doomed", cfg).await;
    let mut calls = Vec::new();
    for _ in 0..20 {
        let c = client.clone();
        calls.push(tokio::spawn(async move {
            c.call_tool("sleep", args(json!({"ms": 5_000}))).await
        }));
    }
    state
        .until("the 20 calls reached the server", PATIENCE, |s| {
            s.counter("sleep") == 20
        })
        .await;
    std::fs::write(&die, b"").unwrap();
    let err = client
        .call_tool("crash", args(json!({"once": false})))
        .await
        .unwrap_err();
    assert!(err.is_unavailable());
    for call in calls {
        let err = call.await.unwrap().unwrap_err();
        assert!(err.is_unavailable(), "{err:?}");
    }
    assert_eq!(state.starts(), 2, "21 failed calls, one reconnect attempt");
    client.close().await;
}

#[tokio::test]
async fn reconnect_attempts_and_backoff_are_configurable() {
    let state = StateDir::new();
    let (mut cfg, die) = dying_server(&state);
    cfg.reconnect = ReconnectPolicy {
        attempts: 3,
        backoff_ms: 10,
    };
    let client = connect("retrying", cfg).await;
    std::fs::write(&die, b"").unwrap();
    let err = client
        .call_tool("crash", args(json!({"once": false})))
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    assert_eq!(state.starts(), 1 + 3);
    client.close().await;
}

#[tokio::test]
async fn reconnect_can_be_disabled() {
    let state = StateDir::new();
    let mut cfg = stdio_cfg(&state.args());
    cfg.reconnect = ReconnectPolicy {
        attempts: 0,
        backoff_ms: 0,
    };
    let client = connect("once", cfg).await;
    let err = client
        .call_tool("crash", args(json!({"once": true})))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Disconnected { .. }), "{err:?}");
    assert_eq!(state.starts(), 1);
    client.close().await;
}

#[tokio::test]
async fn json_rpc_error_is_not_retried() {
    let state = StateDir::new();
    let client = connect("failing", stdio_cfg(&state.args())).await;
    let err = client
        .call_tool("fail", args(json!({"message": "no"})))
        .await
        .unwrap_err();
    assert!(err.is_server_declared(), "{err:?}");
    assert_eq!(state.counter("fail"), 1);
    assert_eq!(client.connection_count(), 1);
    client.close().await;
}

#[tokio::test]
async fn http_failures_are_not_replayed() {
    for status in [429u16, 502, 503, 504] {
        let fake = FakeHttp::start(Answer::Status(status)).await;
        let client = connect("fake", http_cfg(&fake.url)).await;
        let err = client.call_tool("anything", None).await.unwrap_err();
        match &err {
            ClientError::HttpStatus {
                status: s,
                retry_after,
                ..
            } => {
                assert_eq!(*s, status);
                assert_eq!(retry_after.as_deref(), Some("7"));
            }
            other => panic!("HTTP {status}: {other:?}"),
        }
        assert!(err.is_server_declared());
        assert_eq!(fake.calls(), 1, "HTTP {status} must not be replayed");
        assert_eq!(client.connection_count(), 1);
        client.close().await;
    }
}

#[tokio::test]
async fn http_400_is_not_replayed() {
    let fake = FakeHttp::start(Answer::Status(400)).await;
    let client = connect("fake", http_cfg(&fake.url)).await;
    let err = client.call_tool("anything", None).await.unwrap_err();
    assert!(!err.is_unavailable(), "{err:?}");
    assert_eq!(fake.calls(), 1);
    client.close().await;

    let fake = FakeHttp::start(Answer::JsonRpcError400).await;
    let client = connect("fake", http_cfg(&fake.url)).await;
    let err = client.call_tool("anything", None).await.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code.0), Some(-32602), "{err:?}");
    assert_eq!(fake.calls(), 1);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_stream_broken_mid_call_reconnects_and_retries() {
    let state = StateDir::new();
    let mut server = HttpServer::spawn(state.args());
    // The restarted server needs a moment to listen: allow a few attempts.
    let mut cfg = http_cfg(server.url());
    cfg.reconnect = ReconnectPolicy {
        attempts: 10,
        backoff_ms: 50,
    };
    let client = connect("web", cfg).await;
    let c = client.clone();
    let call = tokio::spawn(async move { c.call_tool("sleep", args(json!({"ms": 1_500}))).await });
    state
        .until("the call reached the server", PATIENCE, |s| {
            s.counter("sleep") == 1
        })
        .await;
    tokio::task::block_in_place(|| server.restart());
    call.await.unwrap().unwrap();
    assert_eq!(state.starts(), 2);
    assert_eq!(client.connection_count(), 2);
    client.close().await;
}

#[tokio::test]
async fn http_server_gone_is_unavailable_after_reconnect() {
    let mut server = HttpServer::start();
    let client = connect("web", http_cfg(server.url())).await;
    server.kill();
    let err = client
        .call_tool("echo", args(json!({"message": "x"})))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("MCP server \"web\" unavailable after reconnect: "),
        "{message}"
    );
    assert!(message.contains("Connection refused"), "{message}");
    client.close().await;
}
