//! `sleep`: a cancelled call stops on the server and is counted.

use std::time::Duration;

use extpool_testkit::StateDir;
use rmcp::{
    model::{CallToolRequest, CallToolRequestParams, ClientRequest},
    service::{PeerRequestOptions, ServiceError},
};
use serde_json::json;

use crate::common::{args, call_text, connect_stdio, recorded, text_of, within};

#[tokio::test]
async fn a_short_sleep_answers() {
    let (client, _) = connect_stdio(&[]).await;
    assert_eq!(
        call_text(&client, "sleep", json!({"ms": 10})).await,
        "slept 10 ms"
    );
}

#[tokio::test]
async fn a_cancelled_sleep_increments_the_cancelled_counter() {
    let state = StateDir::new();
    let dir = state.path().to_string_lossy().into_owned();
    let (client, _) = connect_stdio(&["--state-dir", &dir]).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("sleep").with_arguments(args(json!({"ms": 600_000}))),
    ));
    let handle = within(client.send_request_with_option(
        request,
        PeerRequestOptions::with_timeout(Duration::from_millis(300)),
    ))
    .await
    .unwrap();
    match within(handle.await_response()).await {
        Err(ServiceError::Timeout { .. }) => {}
        other => panic!("expected the client-side timeout, got {other:?}"),
    }
    recorded(&state, "the server counts the cancellation", |s| {
        s.counter("cancelled") == 1
    })
    .await;
    // The connection is still usable.
    assert_eq!(
        call_text(&client, "echo", json!({"message": "still here"})).await,
        "still here"
    );
}

#[tokio::test]
async fn barrier_calls_return_only_together_and_a_cancelled_one_is_counted() {
    let state = StateDir::new();
    let dir = state.path().to_string_lossy().into_owned();
    let (client, _) = connect_stdio(&["--state-dir", &dir]).await;
    let barrier = |key: &str| {
        let peer = client.peer().clone();
        let params = CallToolRequestParams::new("barrier")
            .with_arguments(args(json!({"key": key, "parties": 2})));
        async move { text_of(&peer.call_tool(params).await.unwrap()) }
    };
    // The first call waits for the second: both answer only when both are in flight.
    let first = tokio::spawn(barrier("pair"));
    recorded(&state, "the first call arrives", |s| {
        s.arrivals("pair") == 1
    })
    .await;
    assert!(!first.is_finished());
    assert_eq!(within(barrier("pair")).await, "released 2");
    assert_eq!(within(first).await.unwrap(), "released 2");

    // A waiting call cancelled by the client stops on the server.
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("barrier")
            .with_arguments(args(json!({"key": "alone", "parties": 2}))),
    ));
    let handle = within(client.send_request_with_option(request, PeerRequestOptions::no_options()))
        .await
        .unwrap();
    recorded(&state, "the call arrives", |s| s.arrivals("alone") == 1).await;
    within(handle.cancel(Some("test".into()))).await.unwrap();
    recorded(&state, "the server counts the cancellation", |s| {
        s.counter("cancelled") == 1
    })
    .await;
}
