//! What travels back from an upstream to the client whose call caused it:
//! progress, sampling requests (and their answers), and a client's cancel
//! that reaches the upstream.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

use crate::support::{PATIENCE, Project, Sdk, Served, eventually, sdk_client, testkit_yaml};

fn everything_yaml() -> String {
    let (program, args) = extpool_testkit::peers::server_everything().into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "  everything:\n    command: {:?}\n    args: [{}]\n",
        program.display().to_string(),
        args.join(", ")
    )
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
    // server-everything reports steps 1, 2, 3 about 330 ms apart, the
    // last one just before its result: the earlier ones always arrive
    // first; the last may be handled after the result upstream (MCP
    // notifications are not ordered with responses) and is then dropped.
    let progress: Vec<f64> = out[1]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_f64().unwrap())
        .collect();
    assert!(progress.len() >= 2, "{out:?}");
    assert_eq!(progress[..2], [1.0, 2.0], "{out:?}");
    served.stop().await;
}

async fn sampling_reaches(sdk: Sdk, answer: &str) {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = sdk_client(
        sdk,
        &served.url,
        json!([{"op": "call", "name": "mcp__testkit__sample", "args": {"prompt": "say hi"}}]),
    )
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    assert_eq!(out[1]["text"], json!([answer]), "{out:?}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_request_reaches_the_python_client_and_its_answer_the_server() {
    sampling_reaches(Sdk::Python, "sampled by the python client").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_request_reaches_the_typescript_client_and_its_answer_the_server() {
    sampling_reaches(Sdk::TypeScript, "sampled by the typescript client").await;
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
    eventually(|| state.counter("sleep") == 1, "the upstream call started").await;
    tokio::time::timeout(PATIENCE, handle.cancel(Some("test".into())))
        .await
        .unwrap()
        .unwrap();
    eventually(
        || state.counter("cancelled") == 1,
        "the upstream saw the cancellation",
    )
    .await;
    client.cancel().await.unwrap();
    served.stop().await;
}
