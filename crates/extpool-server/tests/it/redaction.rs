//! Guardrails see what the model sees: a `redact` rule holds on every path
//! a result or a message reaches a client by through the gateway — a
//! tool's result before `CallMcpWithQuery`'s jq filter reads it and the
//! filter's output after, an upstream's JSON-RPC error, a resource read by
//! the protocol, a prompt — with the testkit server behind the gateway
//! (its `--lists-file` results written by the test) and an rmcp client in
//! front; keys a rule redacts are kept apart, never merged.

use extpool_server::GatewayOptions;
use extpool_testkit::{StateDir, stdio_command};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, ReadResourceRequestParams,
};
use serde_json::{Value, json};

use crate::support::{Project, Served, server_yaml, within};

/// What the rule redacts.
const SECRET: &str = "sk-ABCDEFGHIJKLMNOPQRSTUVWX";
/// What it leaves.
const REDACTED: &str = "[REDACTED:openai-key]";

/// The testkit's written tools and resource: a secret as keys, a secret
/// split over two fields, and a resource holding one.
fn lists() -> Value {
    let schema = json!({"type": "object"});
    let keys = json!({
        "sk-AAAAAAAAAAAAAAAAAAAAAAAA": 1,
        "sk-BBBBBBBBBBBBBBBBBBBBBBBB": 2,
        "[REDACTED:openai-key]": 3,
    });
    let halves = json!({"a": "sk-ABCDEFGHIJ", "b": "KLMNOPQRSTUVWX"});
    json!({
        "tools": [
            {"tool": {"name": "secret_keys", "description": "Secrets as keys", "inputSchema": schema},
             "result": {"content": [{"type": "text", "text": "keys"}], "structuredContent": keys}},
            {"tool": {"name": "halves", "description": "A secret in two halves", "inputSchema": schema},
             "result": {"content": [{"type": "text", "text": halves.to_string()}], "structuredContent": halves}},
        ],
        "resources": [{"uri": "testkit://secret", "name": "secret", "mimeType": "text/plain"}],
        "contents": [{"uri": "testkit://secret", "mimeType": "text/plain",
                      "text": format!("the key is {SECRET}")}],
    })
}

/// A gateway on the testkit (server `kit`, with [`lists`]) under a
/// `redact` rule, its audit log in `logs`.
async fn serve(state: &StateDir, logs: &tempfile::TempDir) -> (Served, std::path::PathBuf) {
    let project = Project::new();
    let file = project.path().join("lists.json");
    std::fs::write(&file, lists().to_string()).unwrap();
    let mut args = state.args();
    args.extend(["--lists-file".to_owned(), file.display().to_string()]);
    project.config(&format!(
        "{}guardrails:\n  redact:\n    - name: openai-key\n      pattern: \"sk-[A-Za-z0-9]{{20,}}\"\n",
        server_yaml("kit", stdio_command(args))
    ));
    let audit = logs.path().join("audit.jsonl");
    let options = GatewayOptions {
        audit_log: Some(audit.clone()),
        ..GatewayOptions::default()
    };
    (Served::start(project, options).await, audit)
}

type Client = extpool_testkit::client::RawClient;

async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().unwrap().clone());
    within(client.call_tool(params)).await.unwrap()
}

/// `CallMcpWithQuery` of `kit`'s `tool` with `args` and `filter`.
async fn query(client: &Client, tool: &str, args: Value, filter: &str) -> CallToolResult {
    call(
        client,
        "CallMcpWithQuery",
        json!({"server": "kit", "tool": tool, "args": args, "jq_filter": filter}),
    )
    .await
}

/// A result's text and structured content, as one JSON value.
fn seen(result: &CallToolResult) -> Value {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    json!({"text": texts, "structured": result.structured_content, "error": result.is_error})
}

fn audit_records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Filters that would hand a redacted secret back encoded, sliced,
/// re-cased, tested or stripped of what the rule matches, had the filter
/// read the tool's result before the rule did.
const FILTERS: [&str; 14] = [
    "@base64",
    "explode",
    ".[3:]",
    "split(\"\")",
    "ascii_upcase",
    "gsub(\"sk-\"; \"\")",
    "[.[0:16], .[16:]]",
    "test(\"sk-ABC\")",
    "index(\"sk-\")",
    "explode | map(. + 1) | implode",
    "@uri",
    "[splits(\"-\")]",
    "ltrimstr(\"the key is sk-\")",
    "length",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jq_filter_reads_only_what_the_redact_rules_left_and_its_output_is_checked_again() {
    let state = StateDir::new();
    let logs = tempfile::tempdir().unwrap();
    let (served, audit) = serve(&state, &logs).await;
    let client = extpool_testkit::client::connect_http(&served.url)
        .await
        .unwrap();
    let secret = json!({"message": format!("the key is {SECRET}")});
    let redacted = json!({"message": format!("the key is {REDACTED}")});
    for filter in FILTERS {
        // The filter's output is what it gives on the redacted text: it
        // never read the secret.
        let through = query(&client, "echo", secret.clone(), filter).await;
        let expected = query(&client, "echo", redacted.clone(), filter).await;
        assert_eq!(through.is_error, Some(false), "{filter}: {through:?}");
        assert_eq!(seen(&through), seen(&expected), "{filter}");
        assert!(!format!("{through:?}").contains("ABCDEFGHIJ"), "{filter}");
    }
    // A secret the filter puts together from parts no rule matches is
    // redacted in what leaves.
    let joined = query(&client, "halves", json!({}), ".a + .b").await;
    assert_eq!(
        seen(&joined)["text"],
        json!([json!(REDACTED).to_string()]),
        "{joined:?}"
    );

    client.cancel().await.unwrap();
    served.stop().await;
    // Each redaction is in the call's audit record: the tool's result
    // before the filter, the filter's output after.
    let records = audit_records(&audit);
    let first = &records[0];
    assert_eq!(first["name"], "CallMcpWithQuery");
    assert_eq!(
        first["guardrails"],
        json!([{"phase": "result", "decision": "redact", "guardrail": "redact[0] (openai-key)",
                "reason": "1 match replaced by [REDACTED:openai-key]"}]),
        "{first}"
    );
    let last = records.last().unwrap();
    assert_eq!(
        last["guardrails"][0]["decision"], "redact",
        "the joined secret's redaction: {last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_a_rule_redacts_are_kept_apart() {
    let state = StateDir::new();
    let logs = tempfile::tempdir().unwrap();
    let (served, _audit) = serve(&state, &logs).await;
    let client = extpool_testkit::client::connect_http(&served.url)
        .await
        .unwrap();
    let direct = call(&client, "mcp__kit__secret_keys", json!({})).await;
    let filtered = query(&client, "secret_keys", json!({}), ".").await;
    for result in [&direct, &filtered] {
        let keys = result.structured_content.as_ref().unwrap();
        let keys = keys.as_object().unwrap();
        assert_eq!(keys.len(), 3, "no key merged into another: {keys:?}");
        let mut values: Vec<i64> = keys.values().map(|v| v.as_i64().unwrap()).collect();
        values.sort_unstable();
        assert_eq!(values, [1, 2, 3], "{keys:?}");
        assert!(
            keys.keys()
                .all(|k| k.starts_with(REDACTED) && !k.contains("AAAA")),
            "{keys:?}"
        );
    }
    // Text that reads as JSON only with two keys made one is read as the
    // text it is: both values reach the filter.
    let text = "{\"sk-AAAAAAAAAAAAAAAAAAAAAAAA\": 1, \"sk-BBBBBBBBBBBBBBBBBBBBBBBB\": 2}";
    let read = query(&client, "echo", json!({"message": text}), ".").await;
    let both = json!(format!("{{\"{REDACTED}\": 1, \"{REDACTED}\": 2}}"));
    assert_eq!(seen(&read)["text"], json!([both.to_string()]), "{read:?}");
    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_error_a_resource_read_and_a_prompt_are_redacted() {
    let state = StateDir::new();
    let logs = tempfile::tempdir().unwrap();
    let (served, audit) = serve(&state, &logs).await;
    let client = extpool_testkit::client::connect_http(&served.url)
        .await
        .unwrap();
    let message = json!({"message": format!("the key is {SECRET}")});

    // A JSON-RPC error's message reaches the model as a tool error.
    for failed in [
        call(&client, "mcp__kit__fail", message.clone()).await,
        query(&client, "fail", message.clone(), ".").await,
    ] {
        assert_eq!(failed.is_error, Some(true), "{failed:?}");
        let text = seen(&failed)["text"][0].as_str().unwrap().to_owned();
        assert!(
            text.contains(&format!("the key is {REDACTED}")) && !text.contains(SECRET),
            "{text}"
        );
    }

    // A resource read by the protocol, as by its built-in twin.
    let read = within(client.read_resource(ReadResourceRequestParams::new("testkit://secret")))
        .await
        .unwrap();
    let read = serde_json::to_value(&read).unwrap();
    assert_eq!(
        read["contents"][0]["text"],
        json!(format!("the key is {REDACTED}")),
        "{read}"
    );
    assert_eq!(read["contents"][0]["uri"], "testkit://secret", "{read}");
    let twin = call(
        &client,
        "ReadMcpResource",
        json!({"server": "kit", "uri": "testkit://secret"}),
    )
    .await;
    assert_eq!(
        seen(&twin)["text"],
        json!([format!("the key is {REDACTED}")])
    );

    // A prompt.
    let mut params = GetPromptRequestParams::new("mcp__kit__greet");
    params.arguments = json!({"name": SECRET}).as_object().cloned();
    let prompt = within(client.get_prompt(params)).await.unwrap();
    let prompt = serde_json::to_value(&prompt).unwrap();
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        json!(format!("Hello, {REDACTED}!")),
        "{prompt}"
    );

    client.cancel().await.unwrap();
    served.stop().await;
    let records = audit_records(&audit);
    assert_eq!(records[0]["name"], "mcp__kit__fail");
    assert_eq!(
        records[0]["guardrails"][0]["decision"], "redact",
        "{records:?}"
    );
    assert!(!std::fs::read_to_string(&audit).unwrap().contains(SECRET));
}
