//! Tasks (MCP 2025-11-25) through the gateway, with server-everything's
//! task tool (`simulate-research-query`) behind it and the SDK clients in
//! front: the gateway declares `tasks` because server-everything does; a
//! task-augmented call is started, polled, fetched and cancelled under an
//! id of the gateway's; a second session can neither see, fetch, list nor
//! cancel the first's task; status notifications reach the session that
//! started the task. The same with server-everything behind the gateway
//! over streamable HTTP, and with a TypeScript SDK server that answers
//! every POST as plain JSON.

use extpool_server::GatewayOptions;
use serde_json::{Value, json};

use crate::support::{Project, Sdk, Served, client_lines, server_yaml, testkit_yaml};

const RESEARCH: &str = "mcp__everything__simulate-research-query";

fn everything_yaml() -> String {
    server_yaml("everything", extpool_testkit::peers::server_everything())
}

/// Runs `steps` with `sdk`'s task clients against `url`.
async fn clients(sdk: Sdk, url: &str, steps: Value) -> Vec<Value> {
    let mut command = match sdk {
        Sdk::TypeScript => extpool_testkit::peers::typescript_tasks_clients(),
        Sdk::Python => extpool_testkit::peers::python_tasks_clients(),
    };
    command.args(["--url", url]).arg(steps.to_string());
    client_lines(command, &format!("{sdk:?} SDK task clients")).await
}

/// The line of step `op` of client `who` (the `n`th such, from 0).
fn step<'a>(out: &'a [Value], op: &str, who: &str, n: usize) -> &'a Value {
    out.iter()
        .filter(|l| l["op"] == op && l["as"] == who)
        .nth(n)
        .unwrap_or_else(|| panic!("no {op} #{n} of {who} in {out:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_task_is_started_polled_and_fetched_and_only_its_session_sees_it() {
    started_polled_and_fetched(Sdk::TypeScript, &everything_yaml()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_task_is_started_polled_and_fetched_and_only_its_session_sees_it() {
    started_polled_and_fetched(Sdk::Python, &everything_yaml()).await;
}

/// The same through a streamable HTTP upstream: server-everything over
/// HTTP, whose answers (SSE events) the gateway keeps whole as they pass
/// (its `tasks` capability, its tools' task support, the task methods'
/// answers), where rmcp's types would drop them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_an_http_upstream_is_started_polled_and_fetched_and_only_its_session_sees_it() {
    let everything = extpool_testkit::peers::server_everything_http();
    let yaml = format!("  everything:\n    url: {}\n", everything.url());
    started_polled_and_fetched(Sdk::TypeScript, &yaml).await;
    drop(everything);
}

/// The same through a streamable HTTP upstream that answers every POST as
/// plain `application/json`, never as SSE (the TypeScript SDK's server with
/// `enableJsonResponse`): the gateway keeps those answers whole from their
/// bodies, so the upstream's `tasks`, its tool's task support and the
/// answers to the task methods reach the clients as they do over SSE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_an_http_upstream_that_answers_plain_json_is_started_polled_and_fetched() {
    let upstream = JsonUpstream::start().await;
    // Under the name the shared steps call its tool by.
    let yaml = format!("  everything:\n    url: {}\n", upstream.url);
    started_polled_and_fetched(Sdk::TypeScript, &yaml).await;
    drop(upstream);
}

/// `fixtures/json_tasks_server.mjs`: a TypeScript SDK server over
/// streamable HTTP that answers as plain JSON, with task tool
/// `simulate-research-query`; killed on drop.
struct JsonUpstream {
    url: String,
    _child: tokio::process::Child,
}

impl JsonUpstream {
    async fn start() -> Self {
        use tokio::io::AsyncBufReadExt;
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/it/fixtures/json_tasks_server.mjs");
        let mut child = tokio::process::Command::new(extpool_testkit::peers::node())
            .arg(script)
            .env(
                "EXTPOOL_NODE_MODULES",
                extpool_testkit::peers::node_modules(),
            )
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts the JSON tasks server");
        let stdout = child.stdout.take().expect("its stdout");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line())
            .await
            .expect("the JSON tasks server listens within a minute")
            .expect("its stdout reads")
            .expect("it prints its LISTENING line before it exits");
        let url = line
            .strip_prefix("LISTENING ")
            .unwrap_or_else(|| panic!("not its LISTENING line: {line}"))
            .trim()
            .to_owned();
        Self { url, _child: child }
    }
}

async fn started_polled_and_fetched(sdk: Sdk, upstream_yaml: &str) {
    let project = Project::new();
    project.config(upstream_yaml);
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = clients(
        sdk,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "connect", "as": "b"},
            {"op": "tools", "as": "a"},
            {"op": "start", "as": "a", "name": RESEARCH, "args": {"topic": "gateways"}, "save": "t"},
            {"op": "get", "as": "b", "task": "$t"},
            {"op": "result", "as": "b", "task": "$t"},
            {"op": "cancel", "as": "b", "task": "$t"},
            {"op": "list", "as": "b"},
            {"op": "get", "as": "b", "task": "extpool-task-nobody"},
            {"op": "list", "as": "a"},
            {"op": "wait", "as": "a", "task": "$t"},
            {"op": "result", "as": "a", "task": "$t"},
            {"op": "statuses", "as": "a", "until": ["$t", "completed"]},
            {"op": "statuses", "as": "b"},
        ]),
    )
    .await;
    // Declared because server-everything declares task-augmented calls.
    let declared = &step(&out, "connect", "a", 0)["tasks"];
    assert!(
        declared.pointer("/requests/tools/call").is_some(),
        "{out:#?}"
    );
    // The tools its server takes as tasks say so, under the gateway's names.
    assert_eq!(
        step(&out, "tools", "a", 0)["tools"],
        json!([[RESEARCH, "required"]]),
        "{out:#?}"
    );
    let task = &step(&out, "start", "a", 0)["task"];
    let id = task["taskId"].as_str().unwrap();
    assert!(
        id.starts_with("extpool-task-"),
        "the gateway's own id: {task}"
    );
    assert_eq!(task["status"], "working", "{task}");

    // Session b: the same error as for an id nobody made, for every method.
    let nobody = &step(&out, "get", "b", 1)["error"];
    assert_eq!(nobody["code"], -32602, "{out:#?}");
    for op in ["get", "result", "cancel"] {
        let error = &step(&out, op, "b", 0)["error"];
        assert_eq!(error["code"], nobody["code"], "{op}: {out:#?}");
        assert_eq!(
            error["message"].as_str().unwrap().replace(id, "ID"),
            nobody["message"]
                .as_str()
                .unwrap()
                .replace("extpool-task-nobody", "ID"),
            "{op}: {out:#?}"
        );
    }
    assert_eq!(step(&out, "list", "b", 0)["tasks"], json!([]), "{out:#?}");

    // Session a: its task, listed, done, and its result under its id.
    assert_eq!(
        step(&out, "list", "a", 0)["tasks"][0][0],
        json!(id),
        "{out:#?}"
    );
    let done = &step(&out, "wait", "a", 0)["task"];
    assert_eq!(done["taskId"], json!(id), "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    let result = step(&out, "result", "a", 0);
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains("# Research Report: gateways"),
        "{result}"
    );
    assert_eq!(result["related"], json!(id), "{result}");

    // The server's status notifications reached a, renamed, and not b.
    let statuses = step(&out, "statuses", "a", 0)["statuses"]
        .as_array()
        .unwrap();
    assert!(statuses.contains(&json!([id, "completed"])), "{out:#?}");
    assert!(statuses.iter().all(|s| s[0] == json!(id)), "{out:#?}");
    assert_eq!(step(&out, "statuses", "b", 0)["statuses"], json!([]));
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_task_is_cancelled_by_its_session_only() {
    cancelled_by_its_session_only(Sdk::TypeScript, &everything_yaml()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_task_is_cancelled_by_its_session_only() {
    cancelled_by_its_session_only(Sdk::Python, &everything_yaml()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_an_http_upstream_is_cancelled_by_its_session_only() {
    let everything = extpool_testkit::peers::server_everything_http();
    let yaml = format!("  everything:\n    url: {}\n", everything.url());
    cancelled_by_its_session_only(Sdk::Python, &yaml).await;
    drop(everything);
}

async fn cancelled_by_its_session_only(sdk: Sdk, upstream_yaml: &str) {
    let project = Project::new();
    project.config(upstream_yaml);
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = clients(
        sdk,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "connect", "as": "b"},
            {"op": "start", "as": "a", "name": RESEARCH, "args": {"topic": "cancels"}, "save": "t"},
            {"op": "cancel", "as": "b", "task": "$t"},
            {"op": "get", "as": "a", "task": "$t"},
            {"op": "cancel", "as": "a", "task": "$t"},
            {"op": "get", "as": "a", "task": "$t"},
            {"op": "start", "as": "a", "name": "mcp__everything__echo", "args": {"message": "hi"}},
        ]),
    )
    .await;
    assert_eq!(step(&out, "cancel", "b", 0)["error"]["code"], -32602);
    // A tool its server does not list as taking tasks is not started as one.
    let refused = &step(&out, "start", "a", 1)["error"];
    assert_eq!(refused["code"], -32601, "{out:#?}");
    assert!(
        refused["message"].as_str().unwrap().contains("taskSupport"),
        "{out:#?}"
    );
    assert_eq!(
        step(&out, "get", "a", 0)["task"]["status"],
        "working",
        "{out:#?}"
    );
    let cancelled = &step(&out, "cancel", "a", 0)["task"];
    assert_eq!(cancelled["status"], "cancelled", "{out:#?}");
    let id = &step(&out, "start", "a", 0)["task"]["taskId"];
    assert_eq!(&cancelled["taskId"], id, "{out:#?}");
    assert_eq!(step(&out, "get", "a", 1)["task"]["status"], "cancelled");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_not_declared_without_an_upstream_that_takes_them() {
    let state = extpool_testkit::StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("kit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    for sdk in [Sdk::TypeScript, Sdk::Python] {
        let out = clients(sdk, &served.url, json!([{"op": "connect", "as": "a"}])).await;
        let declared = &step(&out, "connect", "a", 0)["tasks"];
        assert_eq!(declared, &Value::Null, "{sdk:?}: {out:#?}");
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_makes_a_task_of_a_tool_listed_as_one() {
    let project = Project::new();
    project.config(&everything_yaml());
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = clients(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "tools", "as": "a"},
            {"op": "stream", "as": "a", "name": RESEARCH, "args": {"topic": "streams"}},
        ]),
    )
    .await;
    let streamed = step(&out, "stream", "a", 0);
    assert_eq!(
        streamed["types"],
        json!(["taskCreated", "taskStatus", "result"]),
        "{out:#?}"
    );
    assert!(
        streamed["text"]
            .as_str()
            .unwrap()
            .contains("# Research Report: streams"),
        "{streamed}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_outlives_its_session_for_the_same_principal() {
    let project = Project::new();
    project.config(&everything_yaml());
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = clients(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "connect", "as": "b"},
            {"op": "start", "as": "a", "name": RESEARCH, "args": {"topic": "orphans"}, "save": "t"},
            {"op": "get", "as": "b", "task": "$t"},
            {"op": "close", "as": "a"},
            {"op": "connect", "as": "c"},
            {"op": "wait", "as": "c", "task": "$t"},
            {"op": "result", "as": "c", "task": "$t"},
            {"op": "list", "as": "c"},
            {"op": "get", "as": "b", "task": "$t"},
        ]),
    )
    .await;
    let id = &step(&out, "start", "a", 0)["task"]["taskId"];
    // b's session was alive while a's held the task: b never sees it,
    // not even after a's session ended and c's took it over.
    assert_eq!(
        step(&out, "get", "b", 0)["error"]["code"],
        -32602,
        "{out:#?}"
    );
    assert_eq!(
        step(&out, "wait", "c", 0)["task"]["status"],
        "completed",
        "{out:#?}"
    );
    let result = step(&out, "result", "c", 0);
    assert!(
        result["text"].as_str().unwrap().contains("orphans"),
        "{result}"
    );
    assert_eq!(&result["related"], id, "{result}");
    assert_eq!(step(&out, "list", "c", 0)["tasks"][0][0], *id, "{out:#?}");
    assert_eq!(
        step(&out, "get", "b", 1)["error"]["code"],
        -32602,
        "{out:#?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_the_gateways_restart_lost_is_failed_not_pending() {
    let project = Project::new();
    project.config(&everything_yaml());
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = clients(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "start", "as": "a", "name": RESEARCH, "args": {"topic": "restarts"}},
        ]),
    )
    .await;
    let id = step(&out, "start", "a", 0)["task"]["taskId"].clone();
    served.stop().await;

    let project = Project::new();
    project.config(&everything_yaml());
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = clients(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "get", "as": "a", "task": id},
            {"op": "result", "as": "a", "task": id},
            {"op": "cancel", "as": "a", "task": id},
            {"op": "get", "as": "a", "task": "extpool-task-0123456789ab-0123"},
        ]),
    )
    .await;
    let lost = &step(&out, "get", "a", 0)["task"];
    assert_eq!(lost["taskId"], id, "{out:#?}");
    assert_eq!(lost["status"], "failed", "{out:#?}");
    assert!(
        lost["statusMessage"]
            .as_str()
            .unwrap()
            .contains("restarted"),
        "{out:#?}"
    );
    let result = &step(&out, "result", "a", 0)["error"];
    assert!(
        result["message"].as_str().unwrap().contains("restarted"),
        "{out:#?}"
    );
    assert_eq!(
        step(&out, "cancel", "a", 0)["error"]["code"],
        -32602,
        "{out:#?}"
    );
    // Not shaped as the gateway's ids are: unknown, not lost.
    assert_eq!(
        step(&out, "get", "a", 1)["error"]["code"],
        -32602,
        "{out:#?}"
    );
    served.stop().await;
}

/// A 2026-07-28 client that declares the tasks extension (SEP-2663).
struct ExtensionClient;

impl rmcp::ClientHandler for ExtensionClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build(),
            rmcp::model::Implementation::new("extpool-tasks-test", "1.0.0"),
        )
    }
}

/// Polls `tasks/get` of `id` until the task ended.
async fn ended(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ExtensionClient>,
    id: &str,
) -> rmcp::model::DetailedTask {
    crate::support::within(async {
        loop {
            let got = client
                .get_task(rmcp::model::GetTaskParams::new(id))
                .await
                .unwrap();
            if got.task.status().is_terminal() {
                return got.task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tasks_extension_of_2026_07_28_runs_a_servers_task() {
    use rmcp::model::{CallToolRequestParams, CallToolResponse, TaskPayload, TaskStatus};
    let project = Project::new();
    project.config(&everything_yaml());
    let served = Served::start(project, GatewayOptions::default()).await;
    let client = crate::support::modern_with(&served.url, ExtensionClient).await;
    let info = client.peer_info().unwrap();
    assert!(info.capabilities.supports_tasks(), "{info:?}");

    let call = |topic: &str| {
        CallToolRequestParams::new(RESEARCH)
            .with_arguments(json!({"topic": topic}).as_object().unwrap().clone())
    };
    let CallToolResponse::Task(created) = client.call_tool_once(call("eras")).await.unwrap() else {
        panic!("a task tool's call makes a task");
    };
    let id = created.task.task_id.clone();
    assert!(id.starts_with("extpool-task-"), "{created:?}");
    assert_eq!(created.task.status, TaskStatus::Working);
    let done = ended(&client, &id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("completed: {done:?}");
    };
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("# Research Report: eras"), "{text}");

    let CallToolResponse::Task(second) = client.call_tool_once(call("halts")).await.unwrap() else {
        panic!("a task");
    };
    let second = second.task.task_id;
    client
        .cancel_task(rmcp::model::CancelTaskParams::new(second.as_str()))
        .await
        .unwrap();
    assert_eq!(
        ended(&client, &second).await.status(),
        TaskStatus::Cancelled
    );
    let unknown = client
        .get_task(rmcp::model::GetTaskParams::new("extpool-task-nobody"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");

    // A client without the extension gets no task: the server's answer
    // to a plain call of a task-only tool, as a tool error.
    let plain = crate::support::modern(&served.url).await;
    let answered = plain.call_tool(call("plain")).await.unwrap();
    assert_eq!(answered.is_error, Some(true), "{answered:?}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_outlives_its_session_for_its_principal_and_no_other() {
    let data = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", data.path().join("state.db").display());
    let store = extpool_state::StateStore::open_url(&url).await.unwrap();
    let alice = store.create_api_key("alice", false).await.unwrap().secret;
    let bob = store.create_api_key("bob", false).await.unwrap().secret;
    let project = Project::new();
    project.config(&everything_yaml());
    let options = GatewayOptions {
        state: Some(store),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let out = clients(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "connect", "as": "a1", "token": alice},
            {"op": "start", "as": "a1", "name": RESEARCH, "args": {"topic": "owners"}, "save": "t"},
            {"op": "close", "as": "a1"},
            {"op": "connect", "as": "b", "token": bob},
            {"op": "get", "as": "b", "task": "$t"},
            {"op": "list", "as": "b"},
            {"op": "connect", "as": "a2", "token": alice},
            {"op": "wait", "as": "a2", "task": "$t"},
            {"op": "get", "as": "b", "task": "$t"},
        ]),
    )
    .await;
    let id = &step(&out, "start", "a1", 0)["task"]["taskId"];
    // Bob never sees it, before alice's new session took it or after.
    assert_eq!(
        step(&out, "get", "b", 0)["error"]["code"],
        -32602,
        "{out:#?}"
    );
    assert_eq!(step(&out, "list", "b", 0)["tasks"], json!([]), "{out:#?}");
    assert_eq!(
        step(&out, "get", "b", 1)["error"]["code"],
        -32602,
        "{out:#?}"
    );
    let done = &step(&out, "wait", "a2", 0)["task"];
    assert_eq!(&done["taskId"], id, "{out:#?}");
    assert_eq!(done["status"], "completed", "{out:#?}");
    served.stop().await;
}

/// What a `redact` rule takes out of results.
const SECRET: &str = "sk-ABCDEFGHIJKLMNOPQRSTUVWX";
const REDACTED: &str = "[REDACTED:openai-key]";

/// server-everything under a `block` rule (topic `forbidden`) and a
/// `redact` rule ([`SECRET`]).
fn guarded_everything_yaml() -> String {
    format!(
        "{}guardrails:\n  block:\n    - pattern: forbidden\n  redact:\n    - name: openai-key\n      pattern: \"sk-[A-Za-z0-9]{{20,}}\"\n",
        everything_yaml()
    )
}

/// A task's result passes the guardrails before it reaches the client, as
/// a call's does: `tasks/result` (2025-11-25) and the completed task of
/// `tasks/get` (the 2026-07-28 tasks extension), its related task kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_result_is_redacted_in_both_eras() {
    use rmcp::model::{CallToolRequestParams, CallToolResponse, TaskPayload};
    let project = Project::new();
    project.config(&guarded_everything_yaml());
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = clients(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "start", "as": "a", "name": RESEARCH, "args": {"topic": SECRET}, "save": "t"},
            {"op": "wait", "as": "a", "task": "$t"},
            {"op": "result", "as": "a", "task": "$t"},
        ]),
    )
    .await;
    let id = &step(&out, "start", "a", 0)["task"]["taskId"];
    let result = step(&out, "result", "a", 0);
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("# Research Report: {REDACTED}")) && !text.contains(SECRET),
        "{result}"
    );
    assert_eq!(&result["related"], id, "{result}");

    let client = crate::support::modern_with(&served.url, ExtensionClient).await;
    let call = CallToolRequestParams::new(RESEARCH)
        .with_arguments(json!({"topic": SECRET}).as_object().unwrap().clone());
    let CallToolResponse::Task(created) = client.call_tool_once(call).await.unwrap() else {
        panic!("a task tool's call makes a task");
    };
    let done = ended(&client, &created.task.task_id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("completed: {done:?}");
    };
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("# Research Report: {REDACTED}")) && !text.contains(SECRET),
        "{text}"
    );
    served.stop().await;
}

/// A task-augmented call a guardrail blocks gets the tool error a plain
/// call of the tool gets, in both eras: never a JSON-RPC error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_task_augmented_call_gets_the_tool_error_of_a_plain_call() {
    use rmcp::model::{CallToolRequestParams, CallToolResponse};
    let project = Project::new();
    project.config(&guarded_everything_yaml());
    let served = Served::start(project, GatewayOptions::default()).await;
    let call = || {
        CallToolRequestParams::new(RESEARCH)
            .with_arguments(json!({"topic": "forbidden"}).as_object().unwrap().clone())
    };
    let plain = extpool_testkit::client::connect_http(&served.url)
        .await
        .unwrap();
    let refused = plain.call_tool(call()).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let text = refused.content[0].as_text().unwrap().text.clone();
    assert_eq!(
        text,
        format!("{RESEARCH} was not called: blocked by guardrail block[0] (\"forbidden\")")
    );
    plain.cancel().await.unwrap();

    // 2025-11-25: a task asked for is a task, completed at once, whose
    // result is that tool error; the SDK's task stream yields it.
    let out = clients(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "tools", "as": "a"},
            {"op": "stream", "as": "a", "name": RESEARCH, "args": {"topic": "forbidden"}},
        ]),
    )
    .await;
    let streamed = step(&out, "stream", "a", 0);
    assert_eq!(
        streamed["types"],
        json!(["taskCreated", "taskStatus", "result"]),
        "{out:#?}"
    );
    assert_eq!(streamed["text"], json!(text), "{out:#?}");
    let out = clients(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "connect", "as": "a"},
            {"op": "start", "as": "a", "name": RESEARCH, "args": {"topic": "forbidden"}, "save": "t"},
            {"op": "get", "as": "a", "task": "$t"},
            {"op": "result", "as": "a", "task": "$t"},
            {"op": "cancel", "as": "a", "task": "$t"},
        ]),
    )
    .await;
    let id = &step(&out, "start", "a", 0)["task"]["taskId"];
    assert_eq!(step(&out, "get", "a", 0)["task"]["status"], "completed");
    let result = step(&out, "result", "a", 0);
    assert_eq!(result["text"], json!(text), "{out:#?}");
    assert_eq!(&result["related"], id, "{out:#?}");
    assert_eq!(step(&out, "cancel", "a", 0)["error"]["code"], -32602);

    // 2026-07-28, the tasks extension declared.
    let client = crate::support::modern_with(&served.url, ExtensionClient).await;
    let CallToolResponse::Complete(answered) = client.call_tool_once(call()).await.unwrap() else {
        panic!("a blocked call makes no task");
    };
    assert_eq!(answered.is_error, Some(true), "{answered:?}");
    assert_eq!(answered.content[0].as_text().unwrap().text, text);
    served.stop().await;
}
