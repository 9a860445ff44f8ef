#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use extpool_config::{BlockRule as BlockConfig, RedactRule as RedactConfig, WebhookConfig};
use extpool_core::ResourceContent;
use serde_json::json;
use tokio::sync::mpsc;

use super::webhook::parse_answer;
use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn subject(tool: &str) -> Subject {
    Subject {
        tool: tool.into(),
        server: "shell".into(),
        via: None,
        principal: None,
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn compiled(config: GuardrailsConfig) -> Guardrails {
    Guardrails::compile(&config, &no_env).unwrap()
}

#[tokio::test]
async fn sizes_are_checked_before_any_pattern_runs() {
    let g = compiled(GuardrailsConfig {
        max_argument_bytes: 20,
        max_result_bytes: 10,
        block: vec![BlockConfig {
            pattern: "x".into(),
            tools: None,
        }],
        ..GuardrailsConfig::default()
    });
    let mut verdicts = Vec::new();
    let blocked = g
        .check_call(
            &subject("mcp__shell__exec"),
            &args(json!({"message": "a long enough message"})),
            &mut verdicts,
        )
        .await
        .unwrap_err();
    assert_eq!(blocked.guardrail, "max_argument_bytes (20)");
    assert_eq!(
        blocked.reason,
        "blocked by guardrail max_argument_bytes (20): its arguments are 35 bytes of JSON"
    );
    assert_eq!(verdicts.len(), 1);
    assert_eq!(verdicts[0].decision, Decision::Block);
    assert_eq!(verdicts[0].phase, Phase::Call);

    let mut verdicts = Vec::new();
    let result = ToolResult {
        parts: vec![ContentPart::Text {
            text: "123456".into(),
        }],
        structured: Some(json!([1, 2])),
        is_error: false,
        as_sent: None,
    };
    let blocked = g
        .check_result(&subject("mcp__shell__exec"), None, result, &mut verdicts)
        .await
        .unwrap_err();
    assert_eq!(blocked.phase, Phase::Result);
    assert_eq!(
        blocked.reason,
        "blocked by guardrail max_result_bytes (10): its text and structured content are 11 bytes"
    );
    // Exactly the bound passes.
    let mut verdicts = Vec::new();
    let fits = ToolResult::text("0123456789");
    assert_eq!(
        g.check_result(&subject("t"), None, fits.clone(), &mut verdicts)
            .await,
        Ok(fits)
    );
    assert!(verdicts.is_empty());
}

#[tokio::test]
async fn block_rules_match_the_arguments_of_their_tools_and_name_themselves() {
    let g = compiled(GuardrailsConfig {
        block: vec![
            BlockConfig {
                pattern: r"rm\s+-rf".into(),
                tools: Some("mcp__shell__*".into()),
            },
            BlockConfig {
                pattern: "DROP TABLE".into(),
                tools: None,
            },
        ],
        ..GuardrailsConfig::default()
    });
    let mut verdicts = Vec::new();
    let blocked = g
        .check_call(
            &subject("mcp__shell__exec"),
            &args(json!({"cmd": "rm -rf /"})),
            &mut verdicts,
        )
        .await
        .unwrap_err();
    assert_eq!(
        blocked.guardrail,
        r#"block[0] ("rm\\s+-rf") for mcp__shell__*"#
    );
    assert_eq!(
        blocked.reason,
        r#"blocked by guardrail block[0] ("rm\\s+-rf") for mcp__shell__*"#
    );
    // A tab is `\t` in the JSON; the string as the tool gets it matches.
    let tabbed = args(json!({"cmd": "rm\t-rf /"}));
    assert!(
        g.check_call(&subject("mcp__shell__exec"), &tabbed, &mut Vec::new())
            .await
            .is_err()
    );
    // Another tool is not the rule's; the rule without tools is everyone's.
    assert_eq!(
        g.check_call(&subject("mcp__docs__search"), &tabbed, &mut Vec::new())
            .await,
        Ok(())
    );
    let blocked = g
        .check_call(
            &subject("mcp__db__query"),
            &args(json!({"sql": "DROP TABLE users"})),
            &mut Vec::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(blocked.guardrail, r#"block[1] ("DROP TABLE")"#);
    // Through CallMcpWithQuery, the rule of the tool reached applies.
    let via = Subject {
        via: Some("CallMcpWithQuery".into()),
        ..subject("mcp__shell__exec")
    };
    let query = args(
        json!({"server": "shell", "tool": "exec", "args": {"cmd": "rm -rf ~"}, "jq_filter": "."}),
    );
    assert!(g.check_call(&via, &query, &mut Vec::new()).await.is_err());
}

#[tokio::test]
async fn redact_rules_replace_matches_in_text_resources_and_structured_content() {
    let g = compiled(GuardrailsConfig {
        redact: vec![
            RedactConfig {
                name: "openai-key".into(),
                pattern: "sk-[A-Za-z0-9]{20,}".into(),
            },
            // Could match nothing at every position: only real matches count.
            RedactConfig {
                name: "pin".into(),
                pattern: "(?:PIN=[0-9]+)?".into(),
            },
        ],
        ..GuardrailsConfig::default()
    });
    // With redaction configured, the source's own copy of a result is not
    // passed on, even when nothing matched: redaction reads the parts only.
    let mut clean = ToolResult::text("nothing secret");
    clean.as_sent = Some(extpool_core::AsSent::new("as sent"));
    let out = g
        .check_result(&subject("mcp__x__y"), None, clean, &mut Vec::new())
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "nothing secret");
    assert!(out.as_sent.is_none());
    let key = "sk-ABCDEFGHIJKLMNOPQRSTUVWX";
    let result = ToolResult {
        parts: vec![
            ContentPart::Text {
                text: format!("key {key} and {key}, PIN=1234"),
            },
            ContentPart::Resource {
                resource: ResourceContent::text("file:///env", None, format!("KEY={key}")),
            },
        ],
        structured: Some(json!({"keys": [key, "sk-short"], key: 1})),
        is_error: false,
        as_sent: None,
    };
    let mut verdicts = Vec::new();
    let out = g
        .check_result(&subject("mcp__x__y"), None, result, &mut verdicts)
        .await
        .unwrap();
    assert_eq!(
        out.joined_text(),
        "key [REDACTED:openai-key] and [REDACTED:openai-key], [REDACTED:pin]"
    );
    let ContentPart::Resource { resource } = &out.parts[1] else {
        panic!("{out:?}")
    };
    assert_eq!(resource.as_text(), Some("KEY=[REDACTED:openai-key]"));
    assert_eq!(
        out.structured.as_ref().unwrap()["keys"],
        json!(["[REDACTED:openai-key]", "sk-short"])
    );
    assert_eq!(
        verdicts,
        vec![
            Verdict {
                phase: Phase::Result,
                decision: Decision::Redact,
                guardrail: "redact[0] (openai-key)".into(),
                reason: "5 matches replaced by [REDACTED:openai-key]".into(),
            },
            Verdict {
                phase: Phase::Result,
                decision: Decision::Redact,
                guardrail: "redact[1] (pin)".into(),
                reason: "1 match replaced by [REDACTED:pin]".into(),
            },
        ]
    );
}

#[test]
fn webhook_answers_are_read_strictly() {
    assert_eq!(
        parse_answer(br#"{"decision": "allow"}"#),
        Ok(webhook::Answer::Allow)
    );
    assert_eq!(
        parse_answer(br#"{"decision": "deny", "reason": "no\u001b[31m shell\nafter 6pm"}"#),
        Ok(webhook::Answer::Deny("no [31m shell after 6pm".into()))
    );
    assert_eq!(
        parse_answer(br#"{"decision": "deny"}"#),
        Ok(webhook::Answer::Deny("no reason given".into()))
    );
    let long = format!(
        r#"{{"decision": "deny", "reason": "{}"}}"#,
        "x".repeat(2000)
    );
    let Ok(webhook::Answer::Deny(reason)) = parse_answer(long.as_bytes()) else {
        panic!()
    };
    assert_eq!(reason.chars().count(), 501);
    let redact = br#"{"decision": "redact", "result": {"content": [{"type": "text", "text": "hidden"}], "isError": false}}"#;
    assert_eq!(
        parse_answer(redact),
        Ok(webhook::Answer::Redact(Box::new(ToolResult::text(
            "hidden"
        ))))
    );
    for (body, says) in [
        (&b"not json"[..], "answered something that is not JSON"),
        (br#"{"verdict": "allow"}"#, "without a \"decision\""),
        (br#"{"decision": "maybe"}"#, "unknown decision \"maybe\""),
        (
            br#"{"decision": "redact"}"#,
            "\"redact\" without a \"result\"",
        ),
        (
            br#"{"decision": "redact", "result": {"content": 5}}"#,
            "not a tool result",
        ),
    ] {
        let e = parse_answer(body).unwrap_err();
        assert!(e.contains(says), "{e}");
    }
}

/// A policy service on loopback: it answers by the `mode` argument (or
/// the result's text) and reports each question it gets.
struct Policy {
    url: String,
    questions: mpsc::UnboundedReceiver<Value>,
}

async fn policy() -> Policy {
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    let (tx, questions) = mpsc::unbounded_channel();
    let tx = Arc::new(tx);
    let app = axum::Router::new().route(
        "/check",
        axum::routing::post(move |body: String| {
            let tx = tx.clone();
            async move {
                let q: Value = serde_json::from_str(&body).unwrap();
                let _ = tx.send(q.clone());
                let mode = if q["phase"] == "result" {
                    q["result"]["content"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                } else {
                    q["arguments"]["mode"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                };
                let answer = |v: Value| v.to_string().into_response();
                match mode.as_str() {
                    "deny" => answer(json!({"decision": "deny", "reason": "not on fridays"})),
                    "hang" => std::future::pending::<Response>().await,
                    "garbage" => "<html>oops</html>".into_response(),
                    "error" => (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response(),
                    "huge" => "x".repeat(MAX_ANSWER_BYTES + 1).into_response(),
                    "redirect" => (
                        StatusCode::FOUND,
                        [("location", "http://127.0.0.1:1/elsewhere")],
                    )
                        .into_response(),
                    "secret" => answer(json!({
                        "decision": "redact",
                        "result": {"content": [{"type": "text", "text": "[withheld by policy]"}]}
                    })),
                    _ => answer(json!({"decision": "allow"})),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/check", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Policy { url, questions }
}

fn with_webhook(url: &str, fail: FailMode, headers: &[(&str, &str)]) -> GuardrailsConfig {
    GuardrailsConfig {
        webhook: Some(WebhookConfig {
            url: url.into(),
            timeout_ms: 200,
            fail,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
        }),
        ..GuardrailsConfig::default()
    }
}

#[tokio::test]
async fn the_webhook_is_asked_in_its_wire_format_and_its_denial_blocks() {
    let mut p = policy().await;
    let g = compiled(with_webhook(&p.url, FailMode::Closed, &[]));
    let alice = Subject {
        principal: Some("alice@https://idp.example".into()),
        ..subject("mcp__shell__exec")
    };
    let call = args(json!({"mode": "ok", "cmd": "ls"}));
    let mut verdicts = Vec::new();
    assert_eq!(g.check_call(&alice, &call, &mut verdicts).await, Ok(()));
    assert_eq!(
        p.questions.recv().await.unwrap(),
        json!({"phase": "call", "tool": "mcp__shell__exec", "server": "shell",
               "principal": "alice@https://idp.example", "arguments": {"mode": "ok", "cmd": "ls"}})
    );
    let out = g
        .check_result(&alice, Some(&call), ToolResult::text("fine"), &mut verdicts)
        .await
        .unwrap();
    assert_eq!(out, ToolResult::text("fine"));
    let q = p.questions.recv().await.unwrap();
    assert_eq!(q["phase"], "result");
    assert_eq!(q["arguments"], json!({"mode": "ok", "cmd": "ls"}));
    assert_eq!(
        q["result"],
        json!({"content": [{"type": "text", "text": "fine"}], "isError": false})
    );
    assert!(verdicts.is_empty(), "{verdicts:?}");

    let blocked = g
        .check_call(&alice, &args(json!({"mode": "deny"})), &mut verdicts)
        .await
        .unwrap_err();
    assert_eq!(blocked.guardrail, "webhook");
    assert_eq!(
        blocked.reason,
        "blocked by the guardrail webhook: not on fridays"
    );
    // A result it replaces is replaced, and said.
    let mut verdicts = Vec::new();
    let out = g
        .check_result(&alice, None, ToolResult::text("secret"), &mut verdicts)
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "[withheld by policy]");
    assert_eq!(verdicts[0].decision, Decision::Redact);
    assert_eq!(verdicts[0].guardrail, "webhook");
}

#[tokio::test]
async fn a_webhook_that_fails_blocks_when_closed() {
    let p = policy().await;
    let g = compiled(with_webhook(&p.url, FailMode::Closed, &[]));
    for (mode, says) in [
        (
            "hang",
            "blocked: the guardrail webhook did not answer within 200 ms (fail: closed)",
        ),
        (
            "garbage",
            "blocked: the guardrail webhook answered something that is not JSON",
        ),
        (
            "error",
            "blocked: the guardrail webhook answered HTTP 500 (fail: closed)",
        ),
        (
            "huge",
            "blocked: the guardrail webhook answered more than 1048576 bytes (fail: closed)",
        ),
        (
            "redirect",
            "blocked: the guardrail webhook answered HTTP 302 (fail: closed)",
        ),
    ] {
        let mut verdicts = Vec::new();
        let blocked = g
            .check_call(
                &subject("mcp__x__y"),
                &args(json!({"mode": mode})),
                &mut verdicts,
            )
            .await
            .unwrap_err();
        assert!(
            blocked.reason.starts_with(says),
            "{mode}: {}",
            blocked.reason
        );
        assert_eq!(verdicts[0].decision, Decision::Block);
    }
    // A "redact" is no answer to a call.
    let blocked = g
        .check_call(
            &subject("mcp__x__y"),
            &args(json!({"mode": "secret"})),
            &mut Vec::new(),
        )
        .await
        .unwrap_err();
    assert!(
        blocked.reason.contains("answered \"redact\" to a call"),
        "{}",
        blocked.reason
    );
}

#[tokio::test]
async fn a_webhook_that_fails_lets_through_when_open_and_says_so() {
    let p = policy().await;
    let g = compiled(with_webhook(&p.url, FailMode::Open, &[]));
    let mut verdicts = Vec::new();
    assert_eq!(
        g.check_call(
            &subject("mcp__x__y"),
            &args(json!({"mode": "hang"})),
            &mut verdicts
        )
        .await,
        Ok(())
    );
    assert_eq!(
        verdicts,
        vec![Verdict {
            phase: Phase::Call,
            decision: Decision::FailOpen,
            guardrail: "webhook".into(),
            reason: "the guardrail webhook did not answer within 200 ms; let through (fail: open)"
                .into(),
        }]
    );
    // A denial is still a denial.
    assert!(
        g.check_call(
            &subject("mcp__x__y"),
            &args(json!({"mode": "deny"})),
            &mut Vec::new()
        )
        .await
        .is_err()
    );
}

#[tokio::test]
async fn a_webhook_that_cannot_be_asked_fails_every_question_without_showing_secrets() {
    // Its header's variable is unset.
    let config = with_webhook(
        "https://policy.example/check",
        FailMode::Closed,
        &[("Authorization", "Bearer ${POLICY_TOKEN}")],
    );
    let g = compiled(config);
    let blocked = g
        .check_call(&subject("mcp__x__y"), &args(json!({})), &mut Vec::new())
        .await
        .unwrap_err();
    assert_eq!(
        blocked.reason,
        "blocked: the guardrail webhook cannot be asked: headers.Authorization: environment variable POLICY_TOKEN is not set (write ${POLICY_TOKEN:-default} for a fallback) (fail: closed)"
    );
    // Plain http to another machine, once its variable is known.
    let config = with_webhook("${POLICY_URL}", FailMode::Closed, &[]);
    let lookup = |name: &str| (name == "POLICY_URL").then(|| "http://policy.example/".to_owned());
    let g = Guardrails::compile(&config, &lookup).unwrap();
    let blocked = g
        .check_call(&subject("mcp__x__y"), &args(json!({})), &mut Vec::new())
        .await
        .unwrap_err();
    assert!(
        blocked
            .reason
            .contains("cannot be asked: url is plain http:// off loopback"),
        "{}",
        blocked.reason
    );
    // The resolved secret never shows in its debug form.
    let config = with_webhook(
        "https://policy.example/check?key=${K}",
        FailMode::Closed,
        &[("Authorization", "Bearer ${K}")],
    );
    let lookup = |_: &str| Some("s3cr3t-token".to_owned());
    let g = Guardrails::compile(&config, &lookup).unwrap();
    let shown = format!("{g:?}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(shown.contains("authorization"), "{shown}");
}

#[test]
fn a_bad_pattern_is_refused_naming_its_rule() {
    let e = Guardrails::compile(
        &GuardrailsConfig {
            redact: vec![RedactConfig {
                name: "x".into(),
                pattern: "(".into(),
            }],
            ..GuardrailsConfig::default()
        },
        &no_env,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("guardrails.redact[0].pattern: invalid regular expression \"(\""),
        "{e}"
    );
}

#[test]
fn what_a_server_wrote_in_an_error_is_redacted_and_bounded() {
    let g = compiled(GuardrailsConfig {
        max_result_bytes: 64,
        redact: vec![RedactConfig {
            name: "key".into(),
            pattern: "sk-[a-z]{8}".into(),
        }],
        ..GuardrailsConfig::default()
    });
    let rpc = rmcp::model::ErrorData::internal_error(
        "the key is sk-abcdefgh",
        Some(json!({"detail": "again sk-abcdefgh", "sk-zyxwvuts": 1})),
    );
    let client = extpool_mcp::ClientError::Rpc {
        server: extpool_mcp::ServerName::new("s").unwrap(),
        error: rpc,
    };
    let mut error = client.into_extension("s");
    let mut verdicts = Vec::new();
    g.redact_error(&mut error, &mut verdicts);
    let rpc = error
        .downcast_source::<extpool_mcp::ClientError>()
        .unwrap()
        .rpc_error()
        .unwrap();
    assert_eq!(rpc.message, "the key is [REDACTED:key]");
    assert_eq!(
        rpc.data,
        Some(json!({"detail": "again [REDACTED:key]", "[REDACTED:key]": 1}))
    );
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert_eq!(verdicts[0].reason, "3 matches replaced by [REDACTED:key]");

    // A message past max_result_bytes is cut before a pattern reads it.
    let mut long = format!("{}sk-abcdefgh", "é".repeat(40));
    g.redact_message(&mut long, &mut Vec::new());
    assert!(long.starts_with(&"é".repeat(32)), "{long}");
    assert!(
        long.ends_with("[cut: 91 bytes, over max_result_bytes]"),
        "{long}"
    );
    assert!(!long.contains("sk-"), "{long}");
}
