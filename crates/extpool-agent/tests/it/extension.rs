//! The catalog extension point: an embedding program's own tools enter
//! the catalog like MCP tools (names, permissions, dispatch, result
//! shaping, audit), and its filters decide what each agent is offered.

use extpool_agent::{AgentEvent, AgentOptions, CallOutcome, FunctionTools, SubagentSpec};
use extpool_host::{ModelTool, Scope, ToolResult};
use extpool_testkit::StateDir;
use serde_json::json;

use crate::support::{Project, agent_event, args, kit_config, names, testkit_yaml};

fn app_tools() -> std::sync::Arc<FunctionTools> {
    FunctionTools::new("app")
        .unwrap()
        .tool(
            "lookup",
            "Looks a customer up by email",
            json!({"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}),
            |a| async move { ToolResult::text(format!("customer {}", a["email"].as_str().unwrap_or("?"))) },
        )
        .tool(
            "secret",
            "Reads the vault",
            json!({"type": "object"}),
            |_| async { ToolResult::text("leaked") },
        )
        .tool(
            "report",
            "Builds a long report",
            json!({"type": "object"}),
            |_| async { ToolResult::text("x".repeat(5000)) },
        )
        .build()
}

#[tokio::test]
async fn an_embedding_programs_tools_enter_the_catalog_like_mcp_tools() {
    let project = Project::new();
    let state = StateDir::new();
    project.config(&format!(
        "mcp_servers:\n  kit:\n{}permissions:\n  deny: [\"mcp__app__secret\"]\nextensions:\n  result_limits: {{max_text_bytes: 1000}}\nskills:\n  default_roots: false\n",
        testkit_yaml(&state, 4)
    ));
    let (host, factory) = project.start().await;
    host.register(app_tools()).await.unwrap();
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let mut events = factory.events();
    let compiled = agent.compile().await.unwrap();
    let offered = names(&compiled);
    // The one naming rule, and the permission rules.
    assert!(
        offered.contains(&"mcp__app__lookup".to_owned()),
        "{offered:?}"
    );
    assert!(!offered.contains(&"mcp__app__secret".to_owned()));
    let turn = agent.turn("t1", "find the customer").await.unwrap();
    let found = turn
        .call("mcp__app__lookup", args(json!({"email": "a@example.com"})))
        .await
        .unwrap();
    assert_eq!(found.joined_text(), "customer a@example.com");
    let denied = turn
        .call("mcp__app__secret", args(json!({})))
        .await
        .unwrap();
    assert!(denied.is_error, "{}", denied.joined_text());
    assert!(!denied.joined_text().contains("leaked"));
    // The same result shaping as MCP tools.
    let report = turn
        .call("mcp__app__report", args(json!({})))
        .await
        .unwrap();
    assert!(
        report
            .joined_text()
            .contains("[truncated: 4000 of 5000 bytes omitted]"),
        "{}",
        &report.joined_text()[..100]
    );
    // The same audit trail.
    let record = agent_event(&mut events, |e| match e {
        AgentEvent::Call(record) => Some(record),
        _ => None,
    })
    .await;
    assert_eq!(
        (record.tool.as_str(), record.server.as_str(), record.outcome),
        ("mcp__app__lookup", "app", CallOutcome::Ok)
    );
    assert_eq!(record.scope.turn_id, "t1");
    turn.end().await;

    // Registered at an agent's scope, they are that agent's alone.
    let sub = agent
        .spawn_subagent(
            "helper",
            SubagentSpec::new().capability(
                FunctionTools::new("mine")
                    .unwrap()
                    .tool("ping", "Pings", json!({"type": "object"}), |_| async {
                        ToolResult::text("pong")
                    })
                    .build(),
            ),
        )
        .await
        .unwrap();
    assert!(names(&sub.compile().await.unwrap()).contains(&"mcp__mine__ping".to_owned()));
    assert!(!names(&agent.compile().await.unwrap()).contains(&"mcp__mine__ping".to_owned()));
    sub.complete().await;
    agent.complete().await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_filter_removes_and_reorders_what_an_agent_is_offered() {
    let project = Project::new();
    let state = StateDir::new();
    project.config(&kit_config(&state));
    // The agent "restricted" gets the app's tools and echo, app first; the
    // others get everything.
    let options = AgentOptions::default().filter(|scope: &Scope, tools: &mut Vec<ModelTool>| {
        if scope.agent_name == "restricted" {
            tools.retain(|t| t.server == "app" || t.name == "mcp__kit__echo");
            tools.sort_by_key(|t| t.server != "app");
        }
    });
    let (host, factory) = project.start_with(options).await;
    host.register(app_tools()).await.unwrap();
    let session = host.session("s").unwrap();
    let restricted = factory.open_agent(&session, "restricted").unwrap();
    let open = factory.open_agent(&session, "open").unwrap();
    assert_eq!(
        names(&restricted.compile().await.unwrap()),
        [
            "mcp__app__lookup",
            "mcp__app__report",
            "mcp__app__secret",
            "mcp__kit__echo"
        ]
    );
    assert!(names(&open.compile().await.unwrap()).contains(&"mcp__kit__add".to_owned()));
    // What a filter removes is not callable by that agent.
    let turn = restricted.turn("t", "count").await.unwrap();
    let refused = turn
        .call("mcp__kit__counter", args(json!({})))
        .await
        .unwrap();
    assert!(refused.is_error && refused.joined_text().contains("not offered"));
    assert_eq!(state.counter("default"), 0, "never dispatched");
    turn.end().await;
    let turn = open.turn("t", "count").await.unwrap();
    assert_eq!(
        turn.call("mcp__kit__counter", args(json!({})))
            .await
            .unwrap()
            .joined_text(),
        "1"
    );
    turn.end().await;
    restricted.complete().await;
    open.complete().await;
    host.shutdown().await;
}
