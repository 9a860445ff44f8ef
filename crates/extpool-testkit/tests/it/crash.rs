//! `crash`: the server dies mid-call; with `once: true` the retried call on
//! a new process succeeds and is counted exactly once.

use std::time::Duration;

use extpool_testkit::{HttpServer, StateDir};
use serde_json::json;

use crate::common::{NO_ARGS, call, call_text, connect_http, connect_stdio, within};

#[tokio::test]
async fn stdio_crash_kills_the_process_mid_call() {
    let (client, _) = connect_stdio(&[]).await;
    let result = call(&client, "crash", json!({})).await;
    assert!(result.is_err(), "a crash has no answer: {result:?}");
    // The client's service ends when the transport closes.
    within(client.waiting()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_crash_exits_with_code_3() {
    let mut server = HttpServer::spawn(NO_ARGS);
    let (client, _) = connect_http(server.url()).await;
    // How the client reports the lost call is the client's business; here
    // only the server's side counts.
    let call = tokio::spawn(async move {
        let _ = call(&client, "crash", json!({})).await;
    });
    let status = tokio::task::block_in_place(|| server.wait_for_exit(Duration::from_secs(30)));
    assert_eq!(status.and_then(|s| s.code()), Some(3));
    call.abort();
}

#[tokio::test]
async fn crash_once_then_the_retry_on_a_new_process_survives() {
    let state = StateDir::new();
    let dir = state.path().to_string_lossy().into_owned();
    let (first, _) = connect_stdio(&["--state-dir", &dir]).await;
    assert!(call(&first, "crash", json!({"once": true})).await.is_err());
    assert!(state.crashed());
    assert_eq!(state.counter("crash"), 0);

    // What a reconnecting client does: a new process, the same call.
    let (second, _) = connect_stdio(&["--state-dir", &dir]).await;
    assert_eq!(
        call_text(&second, "crash", json!({"once": true})).await,
        "survived"
    );
    assert_eq!(state.counter("crash"), 1);
    assert_eq!(state.starts(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_crash_once_then_restart_on_the_same_url() {
    let state = StateDir::new();
    let mut server = HttpServer::spawn(state.args());
    let url = server.url().to_owned();
    let (client, _) = connect_http(&url).await;
    let call = tokio::spawn(async move {
        let _ = call(&client, "crash", json!({"once": true})).await;
    });
    let status = tokio::task::block_in_place(|| server.wait_for_exit(Duration::from_secs(30)));
    assert_eq!(status.and_then(|s| s.code()), Some(3));
    call.abort();
    server.restart();
    assert_eq!(server.url(), url);
    let (client, _) = connect_http(&url).await;
    assert_eq!(
        call_text(&client, "crash", json!({"once": true})).await,
        "survived"
    );
    assert_eq!(state.counter("crash"), 1);
    assert_eq!(state.starts(), 2);
}

#[tokio::test]
async fn crash_once_needs_a_state_dir() {
    let (client, _) = connect_stdio(&[]).await;
    assert!(call(&client, "crash", json!({"once": true})).await.is_err());
    // Still alive: the call was refused, not crashed.
    assert_eq!(
        call_text(&client, "echo", json!({"message": "alive"})).await,
        "alive"
    );
}
