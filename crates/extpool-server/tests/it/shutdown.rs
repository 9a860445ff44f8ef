//! The gateway's shutdown through its library API, over HTTP: a
//! 2026-07-28 request still running when the gateway shuts down gets the
//! shutdown error as its whole answer, and a `subscriptions/listen`
//! stream ends as soon as the shutdown begins, long before the bound
//! requests in flight get. (`extpool serve`'s own tests, in the binary's
//! `shutdown.rs`, cover session-era calls, stdio and the exit codes.)

use std::time::Duration;

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::model::SubscriptionFilter;
use serde_json::json;

use crate::support::{PATIENCE, Project, Served, modern, raw_2026, testkit_yaml, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_call_still_running_at_shutdown_is_answered_with_the_error() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let url = served.url.clone();
    let call = tokio::spawn(async move {
        let sleep = json!({"name": "mcp__testkit__sleep", "arguments": {"ms": 600_000}});
        let headers = [
            ("mcp-method", "tools/call"),
            ("mcp-name", "mcp__testkit__sleep"),
        ];
        raw_2026(&url, "tools/call", sleep, &headers).await
    });
    state
        .until("the call arrived", PATIENCE, |s| s.counter("sleep") == 1)
        .await;
    served.stop().await;
    let (status, answer) = within(call).await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("shut down before the request finished and cancelled it"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_ends_when_the_shutdown_begins_not_at_the_bound() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    // A bound the test never waits out (PATIENCE is far shorter).
    let options = GatewayOptions {
        shutdown_timeout: Duration::from_secs(3600),
        ..GatewayOptions::default()
    };
    let (begin, begun) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        let _ = begun.await;
    };
    let served = Served::start_until(project, options, shutdown).await;
    let client = modern(&served.url).await;
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = within(client.listen(filter)).await.expect("listen");
    begin.send(()).unwrap();
    let next = within(subscription.next()).await;
    assert!(
        !matches!(next, Ok(Some(_))),
        "the stream ended, no notification: {next:?}"
    );
    let _ = client.cancel().await;
    served.stop().await;
}
