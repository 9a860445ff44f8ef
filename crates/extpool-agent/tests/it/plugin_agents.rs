//! A plugin's subagent definition (`agents/helper.md` of a Claude Code
//! plugin, installed in the home folder as Claude Code installs it)
//! spawned through the agent library: its system prompt first in its
//! instructions, its model hint kept, and only the tools its allowlist
//! names offered and callable; the parent keeps every tool.

use extpool_agent::SubagentSpec;
use extpool_host::Resolved;
use extpool_testkit::StateDir;
use extpool_testkit::plugins::{claude_install, kit_grants};

use crate::support::Project;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_subagent_gets_its_prompt_its_model_hint_and_only_its_tools() {
    let state = StateDir::new();
    let project = Project::new();
    // The kit server runs confined (a plugin's default profile); its
    // plugin is granted the testkit binary and the state folder.
    project.config(&format!(
        "mcp_servers: {{}}\n{}",
        kit_grants(&["demo"], &[state.path()])
    ));
    claude_install(
        &project.path().join("home"),
        "mk",
        "demo",
        true,
        &state.args(),
    );
    let (host, factory) = project.start().await;
    let definitions = factory.definitions();
    let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["demo:helper"]);
    let def = factory.definition("demo:helper").unwrap();

    let session = host.session("s").unwrap();
    let parent = factory.open_agent(&session, "main").unwrap();
    let parents = parent.compile().await.unwrap();
    assert!(parents.tool("mcp__plugin_demo_kit__add").is_some());
    let sub = parent
        .spawn_subagent("helper", SubagentSpec::defined(def))
        .await
        .unwrap();
    assert_eq!(sub.definition().unwrap().model.as_deref(), Some("sonnet"));
    let compiled = sub.compile().await.unwrap();
    let offered: Vec<&str> = compiled.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(
        offered,
        ["mcp__plugin_demo_kit__echo"],
        "only what it lists"
    );
    assert!(
        !matches!(
            compiled.table().resolve("mcp__plugin_demo_kit__add"),
            Resolved::Tool(_)
        ),
        "a tool it does not list is not callable"
    );
    assert_eq!(compiled.instructions()[0].source, "agent:demo:helper");
    assert_eq!(
        compiled.instructions()[0].text,
        "You help people greet each other."
    );
    // The parent is unchanged; a subagent without a definition sees all.
    assert!(
        parent
            .compile()
            .await
            .unwrap()
            .tool("mcp__plugin_demo_kit__add")
            .is_some()
    );
    sub.complete().await;
    let plain = parent
        .spawn_subagent("helper", SubagentSpec::new())
        .await
        .unwrap();
    assert!(
        plain
            .compile()
            .await
            .unwrap()
            .tool("mcp__plugin_demo_kit__add")
            .is_some()
    );
    plain.complete().await;
    parent.complete().await;
    host.shutdown().await;
}
