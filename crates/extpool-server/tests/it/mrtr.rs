//! Results that ask for input (`input_required`, SEP-2322) through the
//! gateway: an upstream spoken to in the 2026-07-28 era answers a call
//! with questions and a request state; a 2026-07-28 client gets them as
//! they are, and its retry with its answers and that state reaches the
//! same upstream, which completes. A session-era client, which cannot take
//! such rounds, gets an error saying so.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, InputRequest,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::json;

use crate::support::{
    Project, Served, SessionEra, modern_http_upstream, modern_with, remote_yaml, within,
};

/// A 2026-07-28 client that answers every form with `answer: yes`.
struct Answers;

impl ClientHandler for Answers {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            rmcp::model::ElicitationCapability::new()
                .with_form(rmcp::model::FormElicitationCapability::new()),
        );
        ClientConfig::new(capabilities, Implementation::new("mrtr-test", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"answer": "yes"})))
    }
}

fn confirm() -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("mcp__remote__confirm");
    params.arguments = json!({"question": "Ship it?"}).as_object().cloned();
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_result_reaches_the_client_and_its_retry_completes_upstream() {
    let state = StateDir::new();
    let upstream = modern_http_upstream(&state, &[]).await;
    let project = Project::new();
    project.config(&remote_yaml("remote", upstream.url(), "2026-07-28", ""));
    let served = Served::start(project, GatewayOptions::default()).await;
    let client = modern_with(&served.url, Answers).await;

    // One round by hand: the questions and the state come through as they are.
    let CallToolResponse::InputRequired(asked) =
        within(client.call_tool_once(confirm())).await.unwrap()
    else {
        panic!("not input_required");
    };
    assert_eq!(asked.request_state.as_deref(), Some("confirm-round-1"));
    let requests = asked.input_requests.unwrap();
    let Some(InputRequest::Elicitation(question)) = requests.get("answer") else {
        panic!("{requests:?}");
    };
    let question = serde_json::to_value(question).unwrap();
    assert_eq!(question["params"]["message"], "Ship it?", "{question}");
    assert_eq!(state.counter("confirm-rounds"), 1);

    // rmcp's client drives the rounds through its handler: the retry, with
    // the answer and the state, completes on the same upstream.
    let done = within(client.call_tool(confirm())).await.unwrap();
    assert_eq!(done.content[0].as_text().unwrap().text, "confirmed: yes");
    assert_eq!(
        state.counter("confirm-rounds"),
        3,
        "1 + a question and its retry"
    );
    let upstream_calls: Vec<_> = state
        .requests()
        .into_iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    assert_eq!(upstream_calls.len(), 3, "{upstream_calls:?}");
    assert!(
        upstream_calls
            .iter()
            .all(|r| r["headers"]["mcp-name"] == "confirm"),
        "the upstream's own name: {upstream_calls:?}"
    );

    // A session-era client cannot take the round: a tool error saying so.
    let old = within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
        .await
        .unwrap();
    let refused = within(old.call_tool(confirm())).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    let text = &refused.content[0].as_text().unwrap().text;
    assert!(
        text.contains("MCP server \"remote\" needs input from the client")
            && text.contains("only a 2026-07-28 client takes such rounds"),
        "{text}"
    );
    old.cancel().await.unwrap();
    client.cancel().await.unwrap();
    served.stop().await;
}
