//! `examples/rig_agent.rs`: a rig agent (rig-agent 0.44, its own OpenAI
//! chat client) drives the scripted model; the tools it calls are extpool's,
//! adapted by `extpool_agent::rig`.

use std::sync::Arc;

use extpool_testkit::StateDir;
use serde_json::json;

use crate::example::{Script, quickstart, scripted_model};

#[path = "../../../../examples/rig_agent.rs"]
#[allow(dead_code)]
mod rig_agent;

#[tokio::test]
async fn a_rig_agent_calls_extpool_tools() {
    let state = StateDir::new();
    let home = tempfile::tempdir().unwrap();
    let script = Arc::new(Script::default());
    script.replies.lock().extend([
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_1",
            "type": "function",
            "function": {"name": "mcp__testkit__add", "arguments": "{\"a\": 40, \"b\": 2}"},
        }]}),
        json!({"role": "assistant", "content": "40 + 2 = 42"}),
    ]);
    let base_url = scripted_model(script.clone()).await;
    let answer = rig_agent::run(
        quickstart(&state, home.path()),
        &base_url,
        "test-key",
        "scripted",
        "What is 40 + 2?",
    )
    .await
    .unwrap();
    assert_eq!(answer, "40 + 2 = 42");
    let requests = script.requests.lock();
    assert_eq!(requests.len(), 2);
    let (auth, first) = &requests[0];
    assert_eq!(auth.as_deref(), Some("Bearer test-key"));
    let tools = first["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["function"]["name"] == "mcp__testkit__add"),
        "{tools:?}"
    );
    // rig sent extpool's result back to the model.
    let (_, second) = &requests[1];
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool", "{last}");
    assert!(last["content"].to_string().contains("42"), "{last}");
    assert_eq!(state.starts(), 1);
}
