//! Turns: compiled instructions, `before_model_request` injection,
//! capabilities activated for one turn (never leaking to another), calls
//! on the turn's pinned revision, and the bookkeeping rules.

use std::collections::BTreeSet;

use extpool_agent::{AgentError, SubagentSpec};
use extpool_testkit::StateDir;
use extpool_testkit::procs::wait_until_gone;
use serde_json::json;

use crate::support::{
    Project, args, kit_config, marker, names, testkit_config, testkit_yaml, within,
};

#[tokio::test]
async fn compile_gathers_skills_and_server_instructions_and_hooks_inject_always_active_skills() {
    let project = Project::new();
    let state = StateDir::new();
    project.skill(
        "house-style",
        "description: How we write\nalways_active: true\n",
        "Write short sentences.",
    );
    project.skill(
        "deploy",
        "description: Deploys the service\n",
        "Run the deploy script.",
    );
    project.config(&format!(
        "mcp_servers:\n  kit:\n{}skills:\n  paths: [./skills]\n  default_roots: false\n",
        testkit_yaml(&state, 4)
    ));
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let compiled = agent.compile().await.unwrap();
    let system = compiled.system_prompt();
    assert!(system.contains("<available-skills>"), "{system}");
    assert!(system.contains("deploy: Deploys the service"), "{system}");
    assert!(
        system.contains("extpool test server"),
        "the server's instructions: {system}"
    );
    assert!(!compiled.is_deferring());
    let definitions = compiled.definitions();
    let echo = definitions
        .iter()
        .find(|d| d.name == "mcp__kit__echo")
        .unwrap();
    assert_eq!(echo.parameters["required"], json!(["message"]));

    let turn = agent.turn("t1", "write the release notes").await.unwrap();
    let ctx = turn.before_model_request().await.unwrap();
    assert_eq!(ctx.user_prompt, "write the release notes");
    let injected = ctx.injected().join("\n");
    assert!(injected.contains("Write short sentences."), "{injected}");
    assert!(
        !injected.contains("Run the deploy script."),
        "only always-active skills"
    );
    turn.end().await;
    agent.complete().await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_turn_activates_a_skill_and_a_server_for_itself_alone() {
    let project = Project::new();
    let pooled = StateDir::new();
    let turn_server = StateDir::new();
    project.skill(
        "deploy",
        "description: Deploys the service\n",
        "Run the deploy script.",
    );
    project.config(&format!(
        "mcp_servers:\n  kit:\n{}skills:\n  paths: [./skills]\n  default_roots: false\n",
        testkit_yaml(&pooled, 4)
    ));
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let t1 = agent.turn("t1", "deploy it").await.unwrap();
    let t2 = agent.turn("t2", "something else").await.unwrap();
    t1.activate_skill("deploy").await.unwrap();
    t1.activate_server("helper", testkit_config(&turn_server))
        .await
        .unwrap();
    assert!(names(&t1.compiled()).contains(&"mcp__helper__echo".to_owned()));
    let injected = t1
        .before_model_request()
        .await
        .unwrap()
        .injected()
        .join("\n");
    assert!(
        injected.contains("<skill_content name=\"deploy\">"),
        "{injected}"
    );
    assert!(injected.contains("Run the deploy script."), "{injected}");
    assert_eq!(
        t1.call("mcp__helper__echo", args(json!({"message": "one"})))
            .await
            .unwrap()
            .joined_text(),
        "one"
    );

    // The other turn, open at the same time, sees neither.
    assert!(
        !names(&t2.compiled())
            .iter()
            .any(|n| n.starts_with("mcp__helper__"))
    );
    assert!(
        t2.before_model_request()
            .await
            .unwrap()
            .injected()
            .is_empty()
    );
    let refused = t2
        .call("mcp__helper__echo", args(json!({"message": "x"})))
        .await
        .unwrap();
    assert!(refused.is_error && refused.joined_text().contains("not offered"));
    assert!(
        !names(&agent.compile().await.unwrap())
            .iter()
            .any(|n| n.starts_with("mcp__helper__"))
    );

    // The turn ends: what it activated is unregistered and shut down.
    let report = t1.end().await;
    let shut: BTreeSet<&str> = report.order().into_iter().collect();
    assert_eq!(shut, BTreeSet::from(["helper", "skill-activation:deploy"]));
    let t3 = agent.turn("t3", "next").await.unwrap();
    assert!(
        !names(&t3.compiled())
            .iter()
            .any(|n| n.starts_with("mcp__helper__"))
    );
    assert!(
        t3.before_model_request()
            .await
            .unwrap()
            .injected()
            .is_empty()
    );
    let ended = t1
        .call("mcp__kit__echo", args(json!({"message": "x"})))
        .await;
    assert!(matches!(ended, Err(AgentError::TurnEnded { .. })));
    // An unknown skill is an error naming the skills there are.
    let err = t3.activate_skill("nope").await.unwrap_err();
    assert!(err.to_string().contains("known skills: deploy"), "{err}");
    t2.end().await;
    t3.end().await;
    agent.complete().await;
    host.shutdown().await;
    wait_until_gone(&marker(&turn_server)).await;
}

#[tokio::test]
async fn a_turn_dispatches_on_the_revision_it_pinned() {
    let project = Project::new();
    let state = StateDir::new();
    project.config(&kit_config(&state));
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let turn = agent.turn("t1", "grow").await.unwrap();
    let pinned = turn.compiled().revision().number();
    let before = host.catalog().current().number();
    turn.call("mcp__kit__add_tool", args(json!({"name": "fresh"})))
        .await
        .unwrap();
    within(host.catalog().wait_for_revision(before + 1)).await;
    // The turn keeps its revision: the new tool is not offered to it…
    assert_eq!(turn.compiled().revision().number(), pinned);
    let refused = turn.call("mcp__kit__fresh", args(json!({}))).await.unwrap();
    assert!(refused.is_error);
    assert_eq!(
        turn.call("mcp__kit__echo", args(json!({"message": "old"})))
            .await
            .unwrap()
            .joined_text(),
        "old"
    );
    turn.end().await;
    // …the next compile and the next turn see it.
    assert!(names(&agent.compile().await.unwrap()).contains(&"mcp__kit__fresh".to_owned()));
    let next = agent.turn("t2", "use it").await.unwrap();
    assert!(next.compiled().revision().number() > pinned);
    assert_eq!(
        next.call("mcp__kit__fresh", args(json!({})))
            .await
            .unwrap()
            .joined_text(),
        "fresh"
    );
    next.end().await;
    agent.complete().await;
    host.shutdown().await;
}

#[tokio::test]
async fn agent_names_and_turn_ids_are_open_once() {
    let project = Project::new();
    project.config("skills:\n  default_roots: false\n");
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let err = factory.open_agent(&session, "main").unwrap_err();
    assert!(matches!(err, AgentError::AgentOpen { .. }), "{err}");
    let sub = agent
        .spawn_subagent("coder", SubagentSpec::new())
        .await
        .unwrap();
    let err = agent
        .spawn_subagent("coder", SubagentSpec::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already open in session"), "{err}");
    let turn = agent.turn("t", "x").await.unwrap();
    assert!(agent.turn("t", "y").await.is_err());
    turn.end().await;
    agent.turn("t", "again").await.unwrap().end().await;
    // Agents open inside sessions only.
    let err = factory.open_agent(&host.pool(), "x").unwrap_err();
    assert!(matches!(err, AgentError::Scope(_)), "{err}");
    sub.complete().await;
    agent.complete().await;
    assert!(agent.compile().await.is_err());
    // A completed agent's name is free again.
    factory
        .open_agent(&session, "main")
        .unwrap()
        .complete()
        .await;
    host.shutdown().await;
}
