//! A lazy server (`lazy: true` with declared `tools:`): listed without
//! starting; its first call connects, and from then on its resources,
//! prompts and change events are there like any server's.

use extpool_host::ToolCall;
use std::time::Duration;

use extpool_testkit::StateDir;
use serde_json::json;

use crate::support::{Project, args, testkit_yaml};

#[tokio::test]
async fn a_lazy_servers_resources_and_prompts_appear_after_its_first_call() {
    let project = Project::new();
    let state = StateDir::new();
    project.config(&format!(
        "mcp_servers:\n  lazy:\n{}    lazy: true\n    tools:\n      - name: echo\n        description: Echo\nskills:\n  default_roots: false\n",
        testkit_yaml(&state, 4)
    ));
    let host = project.start().await;
    let session = host.session("s").unwrap();
    assert!(session.tools().iter().any(|t| t.name == "mcp__lazy__echo"));
    assert!(session.resources().is_empty());
    assert!(
        !session
            .commands()
            .iter()
            .any(|c| c.name == "/mcp__lazy__greet")
    );
    assert_eq!(state.starts(), 0, "listing never starts a lazy server");
    let before = session.revision().number();

    let r = session
        .call(ToolCall::new(
            "mcp__lazy__echo",
            args(json!({"message": "woke"})),
        ))
        .await
        .outcome
        .unwrap();
    assert_eq!(r.joined_text(), "woke");
    assert_eq!(state.starts(), 1);

    // Its change stream announces everything; the catalog re-lists it.
    tokio::time::timeout(
        Duration::from_secs(30),
        host.catalog().wait_for_revision(before + 1),
    )
    .await
    .expect("a new revision after the first call");
    let resources = session.resources();
    assert!(
        resources.iter().any(|r| r.uri == "testkit://info"),
        "{resources:?}"
    );
    assert!(
        session
            .commands()
            .iter()
            .any(|c| c.name == "/mcp__lazy__greet")
    );
    let info = session.read("testkit://info").await.unwrap();
    assert!(info.as_text().unwrap().contains("testkit"));
    assert_eq!(
        session
            .run("/mcp__lazy__greet", &["name=Ada".into()])
            .await
            .unwrap(),
        "Hello, Ada!"
    );
    host.shutdown().await;
}
