//! Skill-embedded MCP servers (RFC lifecycle diagram 3) through the host:
//! built on the shared pool, their tools in the catalog under
//! `mcp__<skill>_<server>__<tool>`, a failure costing only their own tools.

use extpool_host::ToolCall;
use extpool_testkit::StateDir;
use serde_json::json;

use crate::support::{Project, args, testkit_yaml};

#[tokio::test]
async fn a_skill_that_embeds_the_testkit_server_contributes_its_tools() {
    let project = Project::new();
    let state = StateDir::new();
    project.skill(
        "code-review",
        &format!(
            "description: Review code with the test server\nmcp_servers:\n  testkit:\n{}",
            testkit_yaml(&state, 4)
        ),
        "Review the change, then call echo.",
    );
    project.config("skills:\n  paths: [./skills]\n  default_roots: false\n");
    let host = project.start().await;
    let session = host.session("s").unwrap();
    let names: Vec<String> = session.tools().into_iter().map(|t| t.name).collect();
    assert!(
        names.contains(&"mcp__code_review_testkit__echo".to_owned()),
        "{names:?}"
    );
    let r = session
        .call(ToolCall::new(
            "mcp__code_review_testkit__echo",
            args(json!({"message": "hello"})),
        ))
        .await
        .outcome
        .unwrap();
    assert_eq!(r.joined_text(), "hello");
    // The server's prompts are commands under its own name; the skill is a command too.
    let commands: Vec<String> = session.commands().into_iter().map(|c| c.name).collect();
    assert!(
        commands.contains(&"/code-review".to_owned()),
        "{commands:?}"
    );
    assert!(
        commands.contains(&"/mcp__code_review_testkit__greet".to_owned()),
        "{commands:?}"
    );
    let body = session.read("skill://code-review/SKILL.md").await.unwrap();
    assert!(body.as_text().unwrap().contains("then call echo"));
    let row = host
        .sources()
        .into_iter()
        .find(|s| s.name == "code_review_testkit")
        .unwrap();
    assert_eq!((row.kind, row.state.as_str()), ("embedded", "ready"));
    assert_eq!(row.origin, "skill code-review");
    assert_eq!(state.starts(), 1);
    host.shutdown().await;
}

#[tokio::test]
async fn a_skill_whose_server_cannot_start_stays_readable_and_the_failure_is_reported() {
    let project = Project::new();
    let state = StateDir::new();
    project.skill(
        "broken",
        "description: Needs a server that does not exist\nmcp_servers:\n  nowhere:\n    command: /nonexistent/mcp-server\n",
        "Broken body.",
    );
    project.config(&format!(
        "mcp_servers:\n  testkit:\n{}skills:\n  paths: [./skills]\n  default_roots: false\n",
        testkit_yaml(&state, 4)
    ));
    let host = project.start().await;
    let session = host.session("s").unwrap();
    let names: Vec<String> = session.tools().into_iter().map(|t| t.name).collect();
    assert!(
        names.contains(&"mcp__testkit__echo".to_owned()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__broken_nowhere__")),
        "{names:?}"
    );
    // The skill is intact; every other extension works.
    let body = session.read("skill://broken/SKILL.md").await.unwrap();
    assert!(body.as_text().unwrap().contains("Broken body."));
    assert_eq!(
        session
            .call(ToolCall::new(
                "mcp__testkit__echo",
                args(json!({"message": "still"}))
            ))
            .await
            .outcome
            .unwrap()
            .joined_text(),
        "still"
    );
    let row = host
        .sources()
        .into_iter()
        .find(|s| s.name == "broken_nowhere")
        .expect("the embedded server is reported");
    assert_eq!((row.kind, row.state.as_str()), ("embedded", "unavailable"));
    assert!(row.detail.contains("/nonexistent/mcp-server"), "{row:?}");
    assert_eq!(row.origin, "skill broken");
    assert!(!host.status().catalog.any_stale());
    host.shutdown().await;
}

#[tokio::test]
async fn max_composition_depth_one_warns_about_a_skill_embedded_server() {
    let project = Project::new();
    let state = StateDir::new();
    project.skill(
        "deep",
        &format!(
            "description: Nests a server\nmcp_servers:\n  kit:\n{}",
            testkit_yaml(&state, 4)
        ),
        "Deep body.",
    );
    project.config(
        "skills:\n  paths: [./skills]\n  default_roots: false\nextensions:\n  max_composition_depth: 1\n",
    );
    let host = project.start().await;
    let diagnostics = host.status().diagnostics;
    assert!(
        diagnostics.iter().any(|d| d.contains("SKILL.md")
            && d.contains("'kit' nests 2 levels deep")
            && d.contains("max_composition_depth (1)")),
        "{diagnostics:?}"
    );
    // Warned, not refused (RFC: registration is not blocked).
    let session = host.session("s").unwrap();
    assert!(
        session
            .tools()
            .iter()
            .any(|t| t.name == "mcp__deep_kit__echo")
    );
    host.shutdown().await;
}

#[tokio::test]
async fn the_default_depth_does_not_warn() {
    let project = Project::new();
    let state = StateDir::new();
    project.skill(
        "shallow",
        &format!(
            "description: Nests a server\nmcp_servers:\n  kit:\n{}",
            testkit_yaml(&state, 4)
        ),
        "Body.",
    );
    project.config("skills:\n  paths: [./skills]\n  default_roots: false\n");
    let host = project.start().await;
    let diagnostics = host.status().diagnostics;
    assert!(
        !diagnostics.iter().any(|d| d.contains("levels deep")),
        "{diagnostics:?}"
    );
    host.shutdown().await;
}
