//! One upstream process per server, whatever the number of client
//! sessions; one upstream going away takes only its own tools with it.

use extpool_server::GatewayOptions;
use extpool_testkit::{HttpServer, StateDir};
use serde_json::json;

use crate::support::{Project, Sdk, Served, pids_with, sdk_client, testkit_yaml};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_client_sessions_share_one_upstream_process() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let marker = state.path().display().to_string();
    let sessions = 6;
    let runs = (0..sessions).map(|i| {
        let sdk = if i % 2 == 0 {
            Sdk::Python
        } else {
            Sdk::TypeScript
        };
        let url = served.url.clone();
        async move {
            sdk_client(
                sdk,
                &url,
                json!([{"op": "call", "name": "mcp__testkit__counter", "args": {"key": "shared"}}]),
            )
            .await
        }
    });
    let outs = futures::future::join_all(runs).await;
    for out in &outs {
        assert_eq!(out[1]["is_error"], false, "{out:?}");
    }
    assert_eq!(
        state.counter("shared"),
        sessions,
        "every session's call ran once"
    );
    assert_eq!(
        state.starts(),
        1,
        "one upstream process served every session"
    );
    assert_eq!(pids_with(&marker).len(), 1, "one live upstream process");
    served.stop().await;
    assert!(
        pids_with(&marker).is_empty(),
        "the upstream outlived the gateway"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_upstream_fails_only_its_own_tools_and_the_session_lives_on() {
    let state = StateDir::new();
    let mut remote = HttpServer::spawn(state.args());
    let kept = StateDir::new();
    let project = Project::new();
    project.config(&format!(
        "  remote:\n    url: {}\n{}",
        remote.url(),
        testkit_yaml("local", &kept)
    ));
    let served = Served::start(project, GatewayOptions::default()).await;
    // Killed for good: nothing listens on its address any more.
    remote.kill();
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "call", "name": "mcp__remote__echo", "args": {"message": "gone"}},
            {"op": "call", "name": "mcp__local__echo", "args": {"message": "still here"}},
            {"op": "list_tools"},
        ]),
    )
    .await;
    assert_eq!(out[1]["is_error"], true, "{out:?}");
    let message = out[1]["text"][0].as_str().unwrap();
    assert!(
        message.contains("remote"),
        "the message names the server: {message}"
    );
    assert_eq!(out[2]["is_error"], false, "{out:?}");
    assert_eq!(out[2]["text"], json!(["still here"]));
    assert!(
        out[3]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__local__echo")
    );
    served.stop().await;
}
