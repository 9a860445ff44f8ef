//! Scoped views follow the RFC's visibility rules: pool → session → agent
//! → turn, never the reverse, never across sessions; closing a view shuts
//! down what it registered.

use std::sync::Arc;

use extpool_host::{Capability, Host, HostError, ToolCall, View};
use extpool_testkit::LocalSource;
use serde_json::Map;

use crate::support::Project;

fn own_tools(view: &View) -> Vec<String> {
    let mut names: Vec<String> = view
        .tools()
        .into_iter()
        .filter(|t| !t.builtin)
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

fn source(id: &str) -> Arc<dyn Capability> {
    LocalSource::with_tools(id, 1)
}

async fn empty_host(project: &Project) -> Host {
    project.config("skills:\n  default_roots: false\n");
    project.start().await
}

#[tokio::test]
async fn sessions_agents_and_turns_see_what_the_rfc_says() {
    let project = Project::new();
    let host = empty_host(&project).await;
    let a = host.session("A").unwrap();
    let b = host.session("B").unwrap();
    let coder = a.agent("coder").unwrap();
    let reviewer = a.agent("reviewer").unwrap();
    let turn = coder.turn("t1").unwrap();

    host.register(source("shared")).await.unwrap();
    a.register(source("a_only")).await.unwrap();
    coder.register(source("coder_only")).await.unwrap();
    turn.register(source("turn_only")).await.unwrap();

    assert_eq!(own_tools(&b), ["mcp__shared__tool_0"]);
    assert_eq!(
        own_tools(&a),
        ["mcp__a_only__tool_0", "mcp__shared__tool_0"]
    );
    assert_eq!(
        own_tools(&reviewer),
        ["mcp__a_only__tool_0", "mcp__shared__tool_0"]
    );
    assert_eq!(
        own_tools(&coder),
        [
            "mcp__a_only__tool_0",
            "mcp__coder_only__tool_0",
            "mcp__shared__tool_0"
        ]
    );
    assert_eq!(
        own_tools(&turn),
        [
            "mcp__a_only__tool_0",
            "mcp__coder_only__tool_0",
            "mcp__shared__tool_0",
            "mcp__turn_only__tool_0"
        ]
    );
    // Not visible is not callable.
    let err = b
        .call(ToolCall::new("mcp__a_only__tool_0", Map::new()))
        .await
        .outcome
        .unwrap_err();
    assert!(matches!(err, HostError::UnknownTool { .. }), "{err}");
    assert!(
        turn.call(ToolCall::new("mcp__a_only__tool_0", Map::new()))
            .await
            .outcome
            .is_ok()
    );
    // The same id is the same view.
    assert_eq!(own_tools(&host.session("A").unwrap()), own_tools(&a));

    // A turn ends: its capabilities go, the agent's stay.
    turn.close().await;
    assert!(matches!(
        turn.call(ToolCall::new("mcp__turn_only__tool_0", Map::new()))
            .await
            .outcome,
        Err(HostError::Scope(_))
    ));
    assert_eq!(own_tools(&coder.turn("t2").unwrap()), own_tools(&coder));
    // The session ends: its agents' capabilities go with it, B is untouched.
    a.close().await;
    let again = host.session("A").unwrap();
    assert_eq!(own_tools(&again), ["mcp__shared__tool_0"]);
    assert_eq!(own_tools(&b), ["mcp__shared__tool_0"]);
    host.shutdown().await;
}

#[tokio::test]
async fn views_open_only_at_the_next_level() {
    let project = Project::new();
    let host = empty_host(&project).await;
    let a = host.session("A").unwrap();
    let coder = a.agent("coder").unwrap();
    let turn = coder.turn("t1").unwrap();
    for result in [a.turn("t"), coder.agent("x"), turn.turn("t2"), a.agent("")] {
        let err = result.unwrap_err();
        assert!(matches!(err, HostError::Scope(_)), "{err}");
    }
    for bad in ["", "a\u{7}b"] {
        assert!(host.session(bad).is_err(), "{bad:?}");
    }
    host.shutdown().await;
    assert!(matches!(host.session("C"), Err(HostError::ShutDown)));
    assert!(matches!(
        a.call(ToolCall::new("x", Map::new())).await.outcome,
        Err(HostError::ShutDown)
    ));
}

#[tokio::test]
async fn unregistering_removes_tools_from_the_view() {
    let project = Project::new();
    let host = empty_host(&project).await;
    let a = host.session("A").unwrap();
    a.register(source("temp")).await.unwrap();
    assert_eq!(own_tools(&a), ["mcp__temp__tool_0"]);
    a.unregister("temp").await.unwrap();
    assert!(own_tools(&a).is_empty());
    let err = a.unregister("temp").await.unwrap_err();
    assert!(matches!(err, HostError::Registry(_)), "{err}");
    host.shutdown().await;
}
