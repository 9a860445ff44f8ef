//! `--state-dir`, `--die-on-start` and `--hang-on-initialize`: what tests of
//! reconnects and failures count on.

use std::{process::Stdio, time::Duration};

use extpool_testkit::{HttpServer, StateDir, server_binary};
use rmcp::{ServiceExt, transport::TokioChildProcess};
use serde_json::json;

use crate::common::{call_text, connect_http, connect_stdio, group_killed_on_drop, within};

#[tokio::test]
async fn counters_and_starts_survive_a_restart() {
    let state = StateDir::new();
    assert_eq!(state.starts(), 0);
    let mut server = HttpServer::spawn(state.args());
    {
        let (client, _) = connect_http(server.url()).await;
        assert_eq!(call_text(&client, "counter", json!({})).await, "1");
        assert_eq!(call_text(&client, "counter", json!({})).await, "2");
    }
    assert_eq!(state.counter("default"), 2);
    server.restart();
    let (client, _) = connect_http(server.url()).await;
    assert_eq!(call_text(&client, "counter", json!({})).await, "3");
    assert_eq!(
        call_text(&client, "count", json!({"key": "default"})).await,
        "3"
    );
    assert_eq!(state.counter("default"), 3);
    assert_eq!(state.starts(), 2);
}

#[tokio::test]
async fn stdio_and_http_processes_share_a_state_dir() {
    let state = StateDir::new();
    let dir = state.path().to_string_lossy().into_owned();
    let (stdio, _) = connect_stdio(&["--state-dir", &dir]).await;
    let http = HttpServer::spawn(state.args());
    let (client, _) = connect_http(http.url()).await;
    call_text(&stdio, "counter", json!({"key": "k"})).await;
    call_text(&client, "counter", json!({"key": "k"})).await;
    assert_eq!(state.counter("k"), 2);
    assert_eq!(state.starts(), 2);
}

#[tokio::test]
async fn concurrent_increments_are_not_lost() {
    let state = StateDir::new();
    let server = HttpServer::spawn(state.args());
    let (client, _) = connect_http(server.url()).await;
    let calls = (0..40).map(|_| call_text(&client, "counter", json!({"key": "many"})));
    let mut values: Vec<u64> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|v| v.parse().unwrap())
        .collect();
    values.sort_unstable();
    assert_eq!(values, (1..=40).collect::<Vec<u64>>());
    assert_eq!(state.counter("many"), 40);
}

#[tokio::test]
async fn die_on_start_records_the_start_then_exits_1() {
    let state = StateDir::new();
    for expected in 1..=2 {
        let status = within(
            tokio::process::Command::new(server_binary())
                .arg("--die-on-start")
                .args(state.args())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status(),
        )
        .await
        .unwrap();
        assert_eq!(status.code(), Some(1));
        assert_eq!(state.starts(), expected);
    }
}

#[tokio::test]
async fn die_on_start_fails_the_client_handshake() {
    let command = extpool_testkit::stdio_command(["--die-on-start"]).tokio_command();
    let (transport, _) = TokioChildProcess::builder(group_killed_on_drop(command))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let result = within(().serve(transport)).await;
    assert!(result.is_err(), "the handshake must fail");
}

#[tokio::test]
async fn hang_on_initialize_never_answers() {
    let command = extpool_testkit::stdio_command(["--hang-on-initialize"]).tokio_command();
    let (transport, _) = TokioChildProcess::builder(group_killed_on_drop(command))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let handshake = tokio::time::timeout(Duration::from_millis(1500), ().serve(transport)).await;
    assert!(handshake.is_err(), "initialize must not be answered");
}

#[tokio::test]
async fn hang_on_initialize_over_http_never_answers() {
    let server = HttpServer::spawn(["--hang-on-initialize"]);
    let attempt = tokio::time::timeout(
        Duration::from_millis(1500),
        crate::common::try_connect_http(server.url(), None),
    )
    .await;
    assert!(attempt.is_err(), "initialize must not be answered");
}

#[tokio::test]
async fn a_hung_stdio_server_exits_when_its_stdin_closes() {
    let mut child = extpool_testkit::stdio_command(["--hang-on-initialize"])
        .tokio_command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let handshake =
        tokio::time::timeout(Duration::from_millis(500), ().serve((stdout, stdin))).await;
    assert!(handshake.is_err(), "initialize must not be answered");
    // The timed-out handshake dropped the client side, closing stdin.
    let status = within(child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
}
