//! What travels back from an upstream to the client whose call caused it:
//! progress, log messages (at the level the client set), sampling and
//! elicitation requests (and their answers), and a client's cancel that
//! reaches the upstream.

use std::sync::{Arc, Mutex};

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
#[allow(deprecated)] // logging (SEP-2577) is deprecated but servers still send it
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};

use crate::support::{
    PATIENCE, Project, Sdk, Served, conformance_testkit_yaml, sdk_client, server_yaml, testkit_yaml,
};

fn everything_yaml() -> String {
    server_yaml("everything", extpool_testkit::peers::server_everything())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_an_upstream_reaches_the_calling_client() {
    let project = Project::new();
    project.config(&everything_yaml());
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([{
            "op": "call",
            "name": "mcp__everything__trigger-long-running-operation",
            "args": {"duration": 1, "steps": 3},
            "progress": true,
        }]),
    )
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    // server-everything reports steps 1, 2, 3, the last one just before
    // its result: the gateway handles what an upstream sent before its
    // result first, and sends it to the client before the result.
    let progress: Vec<f64> = out[1]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_f64().unwrap())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0], "{out:?}");
    served.stop().await;
}

/// Calls testkit `tool` with `args` from `sdk`'s client through the
/// gateway; the tool asks the client something, and its text (what the
/// client answered, as the upstream got it) must be `answer`.
async fn asks_the_client(sdk: Sdk, tool: &str, args: Value, answer: &str) {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = sdk_client(
        sdk,
        &served.url,
        json!([{"op": "call", "name": format!("mcp__testkit__{tool}"), "args": args}]),
    )
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    assert_eq!(out[1]["text"], json!([answer]), "{out:?}");
    served.stop().await;
}

async fn sampling_reaches(sdk: Sdk, answer: &str) {
    asks_the_client(sdk, "sample", json!({"prompt": "say hi"}), answer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_request_reaches_the_python_client_and_its_answer_the_server() {
    sampling_reaches(Sdk::Python, "sampled by the python client").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_request_reaches_the_typescript_client_and_its_answer_the_server() {
    sampling_reaches(Sdk::TypeScript, "sampled by the typescript client").await;
}

/// The clients accept an elicitation with {"answer": "yes"}.
async fn elicitation_reaches(sdk: Sdk) {
    let accepted = r#"action=accept, content={"answer":"yes"}"#;
    asks_the_client(sdk, "elicit", json!({"message": "Proceed?"}), accepted).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_reaches_the_python_client_and_its_answer_the_server() {
    elicitation_reaches(Sdk::Python).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_reaches_the_typescript_client_and_its_answer_the_server() {
    elicitation_reaches(Sdk::TypeScript).await;
}

/// An rmcp client that keeps the log messages it receives.
#[derive(Clone, Default)]
struct LogRecorder(Arc<Mutex<Vec<Value>>>);

impl ClientHandler for LogRecorder {
    #[allow(deprecated)] // logging (SEP-2577) is deprecated but servers still send it
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.data);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_reach_the_calling_client_only() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    // Another session, connected the whole time, calling nothing.
    let bystander = LogRecorder::default();
    let other = bystander
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
        .await
        .unwrap();
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "call", "name": "mcp__testkit__notify", "args": {"kind": "log", "count": 3}},
            {"op": "wait_logs", "count": 3},
        ]),
    )
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    // Waited for, not timed: the three lines reach the caller (their order
    // among themselves is the order the upstream's handlers ran in).
    let mut logs: Vec<String> = out[2]["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    logs.sort();
    assert_eq!(logs, ["log line 0", "log line 1", "log line 2"], "{out:?}");
    // Each upstream log line goes to one client, and these went to the caller.
    assert!(bystander.0.lock().unwrap().is_empty());
    other.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_below_the_level_a_client_set_do_not_reach_it() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&conformance_testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "set_level", "level": "error"},
            // Three info lines: below "error", not relayed.
            {"op": "call", "name": "mcp__testkit__notify", "args": {"kind": "log", "count": 3}},
            {"op": "set_level", "level": "info"},
            // Three other info lines, now relayed.
            {"op": "call", "name": "mcp__testkit__test_tool_with_logging"},
            {"op": "wait_logs", "count": 3},
        ]),
    )
    .await;
    // What the gateway relays for one call reaches the client before that
    // call's result, and in the order of the calls: had the first call's
    // lines been relayed, they would be the first three.
    let mut logs: Vec<String> = out[5]["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    logs.sort();
    assert_eq!(
        logs,
        [
            "Tool execution completed",
            "Tool execution started",
            "Tool processing data"
        ],
        "{out:?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cancel_reaches_the_upstream() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
            .await
            .unwrap();
    let mut params = CallToolRequestParams::new("mcp__testkit__sleep");
    params.arguments = json!({"ms": 60_000}).as_object().cloned();
    let handle = client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    // The call is running upstream once the testkit counted its start;
    // the sleep tool counts `sleep` as it begins.
    state
        .until("the upstream call started", PATIENCE, |s| {
            s.counter("sleep") == 1
        })
        .await;
    tokio::time::timeout(PATIENCE, handle.cancel(Some("test".into())))
        .await
        .unwrap()
        .unwrap();
    state
        .until("the upstream saw the cancellation", PATIENCE, |s| {
            s.counter("cancelled") == 1
        })
        .await;
    client.cancel().await.unwrap();
    served.stop().await;
}
