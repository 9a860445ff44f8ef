//! Guardrails (`guardrails:` in extpool.yaml) as a team runs them: through
//! `extpool serve` with real clients (the Python SDK, rmcp), a policy
//! webhook started by the test speaking the documented wire format, the
//! audit log, `extpool call` and `config check`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use extpool_testkit::{StateDir, stdio_command};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

use crate::serve::{Served, python};
use crate::support::Sandbox;

/// An extpool.yaml with the testkit server (its state in `state`) and
/// `extra`.
fn config(sb: &Sandbox, state: &StateDir, extra: &str) {
    let (program, args) = stdio_command(state.args()).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  testkit:\n    command: {:?}\n    args: [{}]\nskills:\n  default_roots: false\n{extra}",
            program.display().to_string(),
            args.join(", ")
        ),
    );
}

/// `extpool serve` on a free port with an audit log; its audit log's path.
fn serve(sb: &Sandbox, env: &[(&str, &str)]) -> (Served, std::path::PathBuf) {
    let audit = sb.work().join("audit.jsonl");
    let mut command = sb.command();
    command.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--audit-log",
        audit.to_str().unwrap(),
    ]);
    for (k, v) in env {
        command.env(k, v);
    }
    (Served::spawn(command), audit)
}

fn audit_records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A `call` step of the Python client.
fn call(name: &str, args: Value) -> Value {
    json!({"op": "call", "name": name, "args": args})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_call_never_reaches_its_server_and_a_secret_in_a_result_is_redacted() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    config(
        &sb,
        &state,
        "guardrails:\n  block:\n    - pattern: forbidden\n      tools: mcp__testkit__counter\n    - pattern: \"rm\\\\s+-rf\"\n  redact:\n    - name: openai-key\n      pattern: \"sk-[A-Za-z0-9]{20,}\"\n",
    );
    let (served, audit) = serve(&sb, &[]);
    let url = served.url.clone();
    let secret = "sk-ABCDEFGHIJKLMNOPQRSTUVWX";
    let steps = json!([
        call("mcp__testkit__counter", json!({"key": "forbidden"})),
        call("mcp__testkit__echo", json!({"message": "rm -rf /"})),
        call("mcp__testkit__counter", json!({"key": "allowed"})),
        call(
            "mcp__testkit__echo",
            json!({"message": format!("the key is {secret}")})
        ),
    ]);
    let out = tokio::task::spawn_blocking(move || python(&["--url", &url], steps))
        .await
        .unwrap();

    // Refused with a message the model reads, naming the rule.
    assert_eq!(out[1]["is_error"], true, "{out:?}");
    assert_eq!(
        out[1]["text"],
        json!([
            "mcp__testkit__counter was not called: blocked by guardrail block[0] (\"forbidden\") for mcp__testkit__counter"
        ])
    );
    assert_eq!(
        out[2]["text"],
        json!([
            "mcp__testkit__echo was not called: blocked by guardrail block[1] (\"rm\\\\s+-rf\")"
        ])
    );
    assert_eq!(out[3]["text"], json!(["1"]), "{out:?}");
    assert_eq!(
        out[4]["text"],
        json!(["the key is [REDACTED:openai-key]"]),
        "{out:?}"
    );
    // The blocked call never reached the server; the allowed one did.
    assert_eq!(state.counter("forbidden"), 0);
    assert_eq!(state.counter("allowed"), 1);

    // The audit log has each decision and its rule, never the arguments.
    let text = std::fs::read_to_string(&audit).unwrap();
    assert!(!text.contains(secret) && !text.contains("rm -rf"), "{text}");
    let records = audit_records(&audit);
    assert_eq!(records.len(), 4, "{records:#?}");
    assert_eq!(records[0]["outcome"], "blocked");
    assert_eq!(records[0]["decision"], "allow", "permission allowed it");
    assert_eq!(
        records[0]["guardrails"],
        json!([{
            "phase": "call",
            "decision": "block",
            "guardrail": "block[0] (\"forbidden\") for mcp__testkit__counter",
            "reason": "blocked by guardrail block[0] (\"forbidden\") for mcp__testkit__counter",
        }])
    );
    assert_eq!(
        records[1]["guardrails"][0]["guardrail"],
        "block[1] (\"rm\\\\s+-rf\")"
    );
    assert!(records[2].get("guardrails").is_none(), "{:?}", records[2]);
    assert_eq!(records[3]["outcome"], "ok");
    assert_eq!(
        records[3]["guardrails"],
        json!([{
            "phase": "result",
            "decision": "redact",
            "guardrail": "redact[0] (openai-key)",
            "reason": "1 match replaced by [REDACTED:openai-key]",
        }])
    );
}

/// A policy service on loopback speaking the webhook's wire format: it
/// decides by the echoed message, and keeps each question with the
/// `Authorization` it came with.
struct Policy {
    url: String,
    questions: Arc<Mutex<Vec<(Value, String)>>>,
    /// One message per question that holds until released.
    held: mpsc::UnboundedReceiver<()>,
    release: Arc<Notify>,
}

async fn policy() -> Policy {
    use axum::http::HeaderMap;
    use axum::response::IntoResponse;
    let questions = Arc::new(Mutex::new(Vec::new()));
    let (held_tx, held) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let (kept, released) = (questions.clone(), release.clone());
    let app = axum::Router::new().route(
        "/check",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let (kept, released, held_tx) = (kept.clone(), released.clone(), held_tx.clone());
            async move {
                let q: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                kept.lock().unwrap().push((q.clone(), auth));
                let message = q["arguments"]["message"].as_str().unwrap_or_default();
                let answer = |v: Value| v.to_string().into_response();
                match (q["phase"].as_str(), message) {
                    (Some("call"), "deny me") => {
                        answer(json!({"decision": "deny", "reason": "echoing this is not allowed"}))
                    }
                    (Some("call"), "hang") => {
                        std::future::pending::<axum::response::Response>().await
                    }
                    (Some("call"), "garbage") => "<html>policy</html>".into_response(),
                    (Some("call"), "hold") => {
                        let _ = held_tx.send(());
                        released.notified().await;
                        answer(json!({"decision": "allow"}))
                    }
                    _ => answer(json!({"decision": "allow"})),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/check", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Policy {
        url,
        questions,
        held,
        release,
    }
}

fn webhook_config(url: &str, timeout_ms: u64) -> String {
    format!(
        "guardrails:\n  webhook:\n    url: {url}\n    timeout_ms: {timeout_ms}\n    fail: closed\n    headers: {{Authorization: \"Bearer ${{POLICY_TOKEN}}\"}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_hears_who_calls_and_what_it_denies_or_cannot_answer_is_blocked() {
    let policy = policy().await;
    let sb = Sandbox::new();
    let state = StateDir::new();
    config(&sb, &state, &webhook_config(&policy.url, 200));
    let (served, audit) = serve(&sb, &[("POLICY_TOKEN", "t0ken")]);
    let url = served.url.clone();
    let echo = |message: &str| call("mcp__testkit__echo", json!({"message": message}));
    let steps = json!([echo("deny me"), echo("hang"), echo("garbage"), echo("fine")]);
    let out = tokio::task::spawn_blocking(move || python(&["--url", &url], steps))
        .await
        .unwrap();

    assert_eq!(
        out[1]["text"],
        json!([
            "mcp__testkit__echo was not called: blocked by the guardrail webhook: echoing this is not allowed"
        ])
    );
    assert_eq!(
        out[2]["text"],
        json!([
            "mcp__testkit__echo was not called: blocked: the guardrail webhook did not answer within 200 ms (fail: closed)"
        ])
    );
    let garbage = out[3]["text"][0].as_str().unwrap();
    assert!(
        garbage.starts_with(
            "mcp__testkit__echo was not called: blocked: the guardrail webhook answered something that is not JSON"
        ) && garbage.ends_with("(fail: closed)"),
        "{garbage}"
    );
    assert_eq!(out[1]["is_error"], true);
    assert_eq!(out[4]["text"], json!(["fine"]), "{out:?}");
    assert_eq!(out[4]["is_error"], false);

    // The questions, in the wire format, with the caller's label and the
    // header's variable resolved; the allowed call was asked about twice.
    let questions = policy.questions.lock().unwrap().clone();
    assert!(
        questions.iter().all(|(_, auth)| auth == "Bearer t0ken"),
        "{questions:?}"
    );
    let about_fine: Vec<&Value> = questions
        .iter()
        .map(|(q, _)| q)
        .filter(|q| q["arguments"]["message"] == "fine")
        .collect();
    assert_eq!(
        about_fine[0],
        &json!({"phase": "call", "tool": "mcp__testkit__echo", "server": "testkit",
                "principal": "local", "arguments": {"message": "fine"}})
    );
    assert_eq!(about_fine[1]["phase"], "result");
    assert_eq!(
        about_fine[1]["result"],
        json!({"content": [{"type": "text", "text": "fine"}], "isError": false})
    );
    assert_eq!(about_fine.len(), 2, "{questions:?}");

    let records = audit_records(&audit);
    let outcomes: Vec<&str> = records
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["blocked", "blocked", "blocked", "ok"]);
    assert_eq!(
        records[1]["guardrails"],
        json!([{
            "phase": "call",
            "decision": "block",
            "guardrail": "webhook",
            "reason": "blocked: the guardrail webhook did not answer within 200 ms (fail: closed)",
        }])
    );
    assert_eq!(
        records[0]["guardrails"][0]["reason"],
        "blocked by the guardrail webhook: echoing this is not allowed"
    );
}

/// Calls echo with `message` through an rmcp client of `url`.
async fn echo_over_rmcp(url: &str, message: &str) -> Value {
    let client = extpool_testkit::client::connect_http(url).await.unwrap();
    let mut params = rmcp::model::CallToolRequestParams::new("mcp__testkit__echo");
    params.arguments = json!({"message": message}).as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    let _ = client.cancel().await;
    serde_json::to_value(result).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_other_calls_while_the_webhook_holds_one() {
    let mut policy = policy().await;
    let sb = Sandbox::new();
    let state = StateDir::new();
    // Long enough that the held question never times out while the other
    // client's call runs.
    config(&sb, &state, &webhook_config(&policy.url, 30_000));
    let (served, _audit) = serve(&sb, &[("POLICY_TOKEN", "t0ken")]);

    let url = served.url.clone();
    let first = tokio::spawn(async move { echo_over_rmcp(&url, "hold").await });
    // The webhook is holding the first call's question.
    tokio::time::timeout(Duration::from_secs(120), policy.held.recv())
        .await
        .expect("the first call's question never reached the webhook");

    // Another client's call completes meanwhile.
    let second = tokio::time::timeout(
        Duration::from_secs(120),
        echo_over_rmcp(&served.url, "meanwhile"),
    )
    .await
    .expect("a call hung while the webhook held another");
    assert_eq!(second["content"][0]["text"], "meanwhile", "{second}");
    assert!(!first.is_finished(), "the held call finished early");

    // Released, the first call goes on to its server.
    policy.release.notify_one();
    let first = tokio::time::timeout(Duration::from_secs(120), first)
        .await
        .expect("the released call never finished")
        .unwrap();
    assert_eq!(first["content"][0]["text"], "hold", "{first}");
    assert_eq!(first["isError"], false, "{first}");
}

#[test]
fn extpool_call_prints_the_refusal_of_a_blocked_call() {
    let sb = Sandbox::new();
    sb.testkit_config(
        "skills:\n  default_roots: false\nguardrails:\n  block:\n    - pattern: \"rm\\\\s+-rf\"\n",
    );
    let run = sb.run(&["call", "mcp__testkit__echo", "message=rm -rf /"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "mcp__testkit__echo was not called: blocked by guardrail block[0] (\"rm\\\\s+-rf\")"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    // An allowed call is not touched.
    let run = sb.run(&["call", "mcp__testkit__echo", "message=ls"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "ls\n");
}

#[test]
fn config_check_locates_a_bad_guardrail() {
    let sb = Sandbox::new();
    sb.testkit_config(
        "guardrails:\n  block:\n    - pattern: \"(unclosed\"\n  webhook:\n    url: http://policy.example/check\n",
    );
    let run = sb.run(&["config", "check"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let shown = format!("{}{}", run.stdout, run.stderr);
    assert!(
        shown.contains(
            "extpool.yaml:6:16: error: guardrails.block[0].pattern: invalid regular expression \"(unclosed\""
        ),
        "{shown}"
    );
    assert!(
        shown.contains(
            "extpool.yaml:8:10: error: guardrails.webhook.url: is plain http:// off loopback"
        ),
        "{shown}"
    );
}

/// What the `redact` rule of [`redacting`] takes out, and what it leaves.
const SECRET: &str = "sk-ABCDEFGHIJKLMNOPQRSTUVWX";
const REDACTED: &str = "[REDACTED:openai-key]";

/// A sandbox whose testkit server (its state in `state`) serves resource
/// `testkit://secret` holding [`SECRET`], under a `redact` rule.
fn redacting(sb: &Sandbox, state: &StateDir) {
    let lists = json!({
        "resources": [{"uri": "testkit://secret", "name": "secret", "mimeType": "text/plain"}],
        "contents": [{"uri": "testkit://secret", "mimeType": "text/plain",
                      "text": format!("the key is {SECRET}")}],
    });
    let file = sb.write("lists.json", &lists.to_string());
    let mut args = state.args();
    args.extend(["--lists-file".to_owned(), file.display().to_string()]);
    let (program, args) = stdio_command(args).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  testkit:\n    command: {:?}\n    args: [{}]\nskills:\n  default_roots: false\nguardrails:\n  redact:\n    - name: openai-key\n      pattern: \"sk-[A-Za-z0-9]{{20,}}\"\n",
            program.display().to_string(),
            args.join(", ")
        ),
    );
}

#[test]
fn extpool_call_run_and_read_print_only_what_the_redact_rules_left() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    redacting(&sb, &state);
    let query = |message: &str| {
        json!({"server": "testkit", "tool": "echo", "args": {"message": message},
               "jq_filter": "explode | map(. + 1) | implode"})
        .to_string()
    };
    // The filter read the redacted text: its output is what it gives on it.
    let through = sb.run(&[
        "call",
        "CallMcpWithQuery",
        "--args",
        &query(&format!("the key is {SECRET}")),
    ]);
    assert_eq!(through.code, 0, "{}", through.stderr);
    let expected = sb.run(&[
        "call",
        "CallMcpWithQuery",
        "--args",
        &query(&format!("the key is {REDACTED}")),
    ]);
    assert_eq!(through.stdout, expected.stdout);

    // An upstream's JSON-RPC error.
    let failed = sb.run(&[
        "call",
        "mcp__testkit__fail",
        &format!("message=the key is {SECRET}"),
    ]);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    assert!(
        failed.stderr.contains(&format!("the key is {REDACTED}"))
            && !failed.stderr.contains(SECRET),
        "{}",
        failed.stderr
    );

    // A prompt run as a command, and a resource read.
    let run = sb.run(&["run", "/mcp__testkit__greet", &format!("name={SECRET}")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim_end(), format!("Hello, {REDACTED}!"));
    let read = sb.run(&["read", "testkit://secret"]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert_eq!(read.stdout.trim_end(), format!("the key is {REDACTED}"));
}
