//! Results that ask for input (`input_required`, SEP-2322) through the
//! gateway: an upstream spoken to in the 2026-07-28 era answers a call
//! with questions and a request state; a 2026-07-28 client gets them as
//! they are, and its retry with its answers and that state reaches the
//! same upstream, which completes. A session-era client, which cannot take
//! such rounds, gets an error saying so.
//!
//! And the other way round: a session-era upstream asks by request
//! (sampling, elicitation) during a 2026-07-28 client's call; the gateway
//! makes each question an input round of its own and holds the upstream's
//! call until the client retries with the answer. A question the client
//! did not declare fails the call with `-32021` naming the capability.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, InputRequest,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::json;

use crate::support::{
    Project, Served, SessionEra, modern_http_upstream, modern_with, post_2026, remote_yaml,
    testkit_yaml, within,
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

/// A 2026-07-28 client that answers every form with `answer: yes` and
/// every sampling request with `four`.
struct AnswersAll;

impl ClientHandler for AnswersAll {
    fn get_info(&self) -> ClientConfig {
        let mut config = Answers.get_info();
        config.capabilities.sampling = Some(Default::default());
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Answers.create_elicitation(request, context).await
    }

    #[allow(deprecated)] // sampling (SEP-2577) is deprecated but servers still ask
    async fn create_message(
        &self,
        _request: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        Ok(rmcp::model::CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text("four"),
            "test-model".to_owned(),
        ))
    }
}

fn testkit_call(tool: &str, args: serde_json::Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(format!("mcp__testkit__{tool}"));
    params.arguments = args.as_object().cloned();
    params
}

/// The one question of a round, as JSON, and its key.
fn one_question(asked: &rmcp::model::InputRequiredResult) -> (String, serde_json::Value) {
    let requests = asked.input_requests.as_ref().unwrap();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let (key, request) = requests.iter().next().unwrap();
    (key.clone(), serde_json::to_value(request).unwrap())
}

/// The testkit's `elicit` asking `Ship it?`.
fn elicit() -> CallToolRequestParams {
    testkit_call("elicit", json!({"message": "Ship it?"}))
}

/// `extpool serve` with `options` in front of the testkit server (stdio,
/// session era), and a 2026-07-28 client of it that answers everything.
async fn testkit_behind(
    state: &StateDir,
    options: GatewayOptions,
) -> (Served, RunningService<RoleClient, AnswersAll>) {
    let project = Project::new();
    project.config(&testkit_yaml("testkit", state));
    let served = Served::start(project, options).await;
    let client = modern_with(&served.url, AnswersAll).await;
    (served, client)
}

/// One `tools/call` of `call` that must be answered with a round.
async fn round_of(
    client: &RunningService<RoleClient, AnswersAll>,
    call: CallToolRequestParams,
) -> rmcp::model::InputRequiredResult {
    match within(client.call_tool_once(call)).await.unwrap() {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("not input_required: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_era_upstreams_questions_reach_a_2026_client_as_input_rounds() {
    let state = StateDir::new();
    let (served, client) = testkit_behind(&state, GatewayOptions::default()).await;

    // One round by hand: the upstream's question, under the gateway's state.
    let asked = round_of(&client, elicit()).await;
    let (key, question) = one_question(&asked);
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "Ship it?", "{question}");
    let state_given = asked.request_state.clone().unwrap();
    assert!(state_given.starts_with("extpool-input-"), "{state_given}");

    // A retry without the answer is asked the same again.
    let mut retry = elicit();
    retry.request_state = Some(state_given.clone());
    let again = round_of(&client, retry.clone()).await;
    assert_eq!(one_question(&again), (key.clone(), question));
    assert_eq!(again.request_state.as_deref(), Some(state_given.as_str()));

    // A state changed on the way finds nothing: an error, nothing done.
    let mut tampered = retry.clone();
    tampered.request_state = Some(format!("{state_given}-TAMPERED"));
    tampered.input_responses = Some(
        [(
            key.clone(),
            json!({"action": "accept", "content": {"answer": "no"}}),
        )]
        .into_iter()
        .collect(),
    );
    let refused = within(client.call_tool_once(tampered)).await.unwrap_err();
    let rmcp::ServiceError::McpError(refused) = refused else {
        panic!("{refused:?}");
    };
    assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert!(
        refused.message.contains("names no call of yours"),
        "{refused:?}"
    );

    // The answer reaches the upstream's held call, which completes.
    retry.input_responses = Some(
        [(
            key,
            json!({"action": "accept", "content": {"answer": "ship"}}),
        )]
        .into_iter()
        .collect(),
    );
    let CallToolResponse::Complete(done) =
        within(client.call_tool_once(retry.clone())).await.unwrap()
    else {
        panic!("not complete");
    };
    let text = &done.content[0].as_text().unwrap().text;
    assert_eq!(text, r#"action=accept, content={"answer":"ship"}"#);
    // Its state is spent; the upstream was called once for all four.
    assert!(within(client.call_tool_once(retry)).await.is_err());
    assert_eq!(state.counter("elicit"), 1);

    // rmcp's client drives the rounds itself: three questions at once are
    // three rounds, one after the other, of one upstream call.
    let three = testkit_call("notify", json!({"kind": "elicit", "count": 3}));
    let done = within(client.call_tool(three)).await.unwrap();
    assert_eq!(
        done.content[0].as_text().unwrap().text,
        "accepted 3, declined 0, cancelled 0, failed 0"
    );
    let sampled = within(client.call_tool(testkit_call("sample", json!({"prompt": "2+2?"}))))
        .await
        .unwrap();
    assert_eq!(sampled.content[0].as_text().unwrap().text, "four");
    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_request_that_does_not_declare_what_an_upstream_asks_gets_minus_32021() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let call = async |tool: &str, args: serde_json::Value| {
        let name = format!("mcp__testkit__{tool}");
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": name, "arguments": args,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }});
        let headers = [("mcp-method", "tools/call"), ("mcp-name", name.as_str())];
        post_2026(&served.url, &headers, &body).await
    };

    // Sampling is what the tool needs: the call fails, and says why.
    let response = call("sample", json!({"prompt": "2+2?"})).await;
    assert_eq!(response.status(), 400);
    let text = within(response.text()).await.unwrap();
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&text);
    let answer: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{answer}"
    );
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(r#"MCP server "testkit" asked sampling/createMessage"#),
        "{message}"
    );

    // A form the client cannot be shown is declined for it, as for a
    // session without elicitation, and the tool goes on with that.
    let response = call("elicit", json!({"message": "Ship it?"})).await;
    assert_eq!(response.status(), 200);
    let text = within(response.text()).await.unwrap();
    assert!(text.contains("action=decline"), "{text}");
    served.stop().await;
}

/// Answering a round goes on with the call made already: a caller's rate
/// limit counts the call once, not once a round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_that_answers_a_round_is_not_a_new_call_for_the_rate_limit() {
    let state = StateDir::new();
    let options = GatewayOptions {
        rate_limits: extpool_host::config::RateLimitsConfig {
            calls_per_minute: Some(1),
            burst: Some(1),
            tools: Vec::new(),
        },
        ..GatewayOptions::default()
    };
    let (served, client) = testkit_behind(&state, options).await;

    let asked = round_of(&client, elicit()).await;
    let (key, _) = one_question(&asked);
    let mut retry = elicit();
    retry.request_state = asked.request_state.clone();
    retry.input_responses = Some(
        [(
            key,
            json!({"action": "accept", "content": {"answer": "ship"}}),
        )]
        .into_iter()
        .collect(),
    );
    let CallToolResponse::Complete(done) = within(client.call_tool_once(retry)).await.unwrap()
    else {
        panic!("the retry was refused");
    };
    assert_eq!(
        done.content[0].as_text().unwrap().text,
        r#"action=accept, content={"answer":"ship"}"#
    );

    // A new call is a call: the minute's one was taken. Refused as a
    // plain JSON answer: HTTP 429 (SEP-3304), which rmcp reads by its
    // status and Retry-After.
    let refused = within(client.call_tool_once(elicit())).await.unwrap_err();
    let (status, retry_after) = crate::support::http_status_of(&refused)
        .unwrap_or_else(|| panic!("not refused for the rate limit: {refused:?}"));
    assert_eq!(status, 429, "the rate limit: {refused:?}");
    assert!(retry_after.is_some(), "{refused:?}");
    client.cancel().await.unwrap();
    served.stop().await;
}

/// Posts a 2026-07-28 `tools/call` of the testkit's `elicit` declaring
/// elicitation, with a progress token `token`, log level info and `extra`
/// params (a retry's answer and state); the answer's content type and body.
async fn post_elicit(url: &str, token: &str, extra: serde_json::Value) -> (String, String) {
    let mut params = json!({
        "name": "mcp__testkit__elicit", "arguments": {"message": "Ship it?"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/logLevel": "info",
            "progressToken": token,
        },
    });
    for (key, value) in extra.as_object().unwrap() {
        params[key] = value.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
    let headers = [
        ("mcp-method", "tools/call"),
        ("mcp-name", "mcp__testkit__elicit"),
    ];
    let response = post_2026(url, &headers, &body).await;
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (kind, within(response.text()).await.unwrap())
}

/// What a held call says after its question was answered (its upstream's
/// log message and progress) reaches the request that answered it, under
/// that request's progress token, before the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_held_call_says_after_its_answer_reaches_the_retry_that_answered() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;

    let (kind, body) = post_elicit(&served.url, "first", json!({})).await;
    assert_eq!(kind, "application/json", "{body}");
    let asked: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let request_state = asked["result"]["requestState"].clone();
    let key = asked["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();

    let answer = json!({"action": "accept", "content": {"answer": "ship"}});
    let retry = json!({"requestState": request_state, "inputResponses": {key: answer}});
    let (kind, body) = post_elicit(&served.url, "second", retry).await;
    assert_eq!(kind, "text/event-stream", "{body}");
    let messages: Vec<serde_json::Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    let methods: Vec<&str> = messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(result)"))
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/message",
            "notifications/progress",
            "(result)"
        ],
        "{body}"
    );
    let said = messages[0]["params"]["data"].as_str().unwrap();
    assert!(said.starts_with("answered: action=accept"), "{said}");
    assert_eq!(messages[1]["params"]["progressToken"], "second", "{body}");
    assert_eq!(messages[1]["params"]["message"], "answered", "{body}");
    let result = &messages[2]["result"];
    assert_eq!(result["resultType"], "complete", "{body}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(r#"content={"answer":"ship"}"#),
        "{body}"
    );
    served.stop().await;
}
