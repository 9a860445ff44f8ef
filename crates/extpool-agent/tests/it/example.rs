//! `examples/agent_loop.rs` against a scripted model: an HTTP server on
//! 127.0.0.1 speaking the OpenAI chat completions wire format that answers
//! with predetermined tool calls (no model runs on this machine). The
//! example's real client, extpool's compile and dispatch, and the real
//! testkit server do the rest.

use std::path::Path;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use extpool_host::{HostOptions, Places};
use extpool_testkit::{StateDir, stdio_command};
use parking_lot::Mutex;
use serde_json::{Value, json};

#[path = "../../../../examples/agent_loop.rs"]
#[allow(dead_code)]
mod agent_loop;

/// What the scripted model received, in order.
#[derive(Default)]
pub struct Script {
    pub requests: Mutex<Vec<(Option<String>, Value)>>,
    /// The replies, consumed in order.
    pub replies: Mutex<Vec<Value>>,
}

async fn completions(
    State(script): State<Arc<Script>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    script.requests.lock().push((auth, body));
    let message = {
        let mut replies = script.replies.lock();
        if replies.is_empty() {
            json!({"role": "assistant", "content": "the script has ended"})
        } else {
            replies.remove(0)
        }
    };
    Json(json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }))
}

/// Serves `script` on 127.0.0.1:0; returns the base URL (`…/v1`).
pub async fn scripted_model(script: Arc<Script>) -> String {
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(script);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{address}/v1")
}

/// The quickstart configuration with the already built testkit server.
pub fn quickstart(state: &StateDir, home: &Path) -> HostOptions {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let places = Places {
        cwd: root.clone(),
        home: Some(home.to_path_buf()),
        ..Places::default()
    };
    let mut loaded = extpool_host::config::load_file(&root.join("extpool.yaml"), &places).unwrap();
    let (program, args) = stdio_command(state.args()).into_parts();
    let server = loaded.config.mcp_servers.get_mut("testkit").unwrap();
    server.command = Some(program.display().to_string());
    server.args = args;
    server.cwd = None;
    HostOptions {
        places,
        watch_skills: Some(false),
        ..HostOptions::loaded(loaded)
    }
}

#[tokio::test]
async fn the_agent_loop_example_runs_tool_calls_of_a_scripted_model() {
    let state = StateDir::new();
    let home = tempfile::tempdir().unwrap();
    let script = Arc::new(Script::default());
    script.replies.lock().extend([
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_1",
            "type": "function",
            "function": {"name": "mcp__testkit__add", "arguments": "{\"a\": 2, \"b\": 3}"},
        }]}),
        json!({"role": "assistant", "content": "2 + 3 = 5"}),
    ]);
    let base_url = scripted_model(script.clone()).await;
    let endpoint = agent_loop::Endpoint {
        base_url,
        api_key: Some("test-key".into()),
        model: "scripted".into(),
    };
    let answer = agent_loop::run(quickstart(&state, home.path()), endpoint, "What is 2 + 3?")
        .await
        .unwrap();
    assert_eq!(answer, "2 + 3 = 5");

    let requests = script.requests.lock();
    assert_eq!(requests.len(), 2);
    let (auth, first) = &requests[0];
    assert_eq!(auth.as_deref(), Some("Bearer test-key"));
    // The model was given extpool's tools (provider-safe names, schemas)
    // and its instructions (the skills, the server's instructions).
    let tools = first["tools"].as_array().unwrap();
    let add = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__testkit__add")
        .expect("the add tool is offered");
    assert_eq!(add["function"]["parameters"]["required"], json!(["a", "b"]));
    assert!(
        !tools
            .iter()
            .any(|t| t["function"]["name"] == "mcp__testkit__crash"),
        "denied by the quickstart"
    );
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("release-notes"), "{system}");
    assert_eq!(first["messages"][1]["content"], "What is 2 + 3?");
    // The tool ran on the real server; its result went back to the model.
    let (_, second) = &requests[1];
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_1");
    assert_eq!(last["content"], "5");
    assert_eq!(state.starts(), 1);
}

#[path = "../../../../examples/agent.rs"]
#[allow(dead_code)]
mod agent_example;

#[tokio::test]
async fn the_books_agent_example_runs_and_is_the_books_code() {
    let state = StateDir::new();
    let home = tempfile::tempdir().unwrap();
    agent_example::run(quickstart(&state, home.path()))
        .await
        .unwrap();
    assert_eq!(state.starts(), 1);
    // The book's library chapter shows exactly the example's code.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let example = std::fs::read_to_string(root.join("examples/agent.rs")).unwrap();
    let book = std::fs::read_to_string(root.join("docs/src/library.md")).unwrap();
    let body = example
        .split("// BOOK:start\n")
        .nth(1)
        .and_then(|rest| rest.split("    // BOOK:end").next())
        .unwrap();
    let shown: String = body
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        book.contains(&format!("```rust\n{}\n```", shown.trim_end())),
        "docs/src/library.md's agent example differs from examples/agent.rs"
    );
}
