//! The deciders agree through the agent library: with the same permission
//! rules, filters and deferral, what an agent is offered (with its schema,
//! or deferred behind the search tool) is what its turns may call, by name
//! or through `CallMcpWithQuery`, and anything else is refused saying why.

use extpool_agent::{AgentOptions, DeferralConfig};
use extpool_host::{ModelTool, Scope};
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, args, testkit_yaml};

/// (catalog name, arguments): one kept, one denied by the rules, one the
/// filter removes from agent `a`, one deferred.
const PROBES: [(&str, &str); 4] = [
    ("mcp__kit__echo", r#"{"message": "hi"}"#),
    ("mcp__kit__add", r#"{"a": 1, "b": 2}"#),
    ("mcp__kit__counter", r#"{"key": "k"}"#),
    ("mcp__kit__count", r#"{"key": "k"}"#),
];

#[tokio::test]
async fn what_an_agent_is_offered_is_what_it_may_call_and_nothing_else() {
    let project = Project::new();
    let state = StateDir::new();
    project.config(&format!(
        "mcp_servers:\n  kit:\n{}permissions:\n  deny: [\"mcp__kit__add\"]\nskills:\n  default_roots: false\n",
        testkit_yaml(&state, 4)
    ));
    let options = AgentOptions {
        deferral: DeferralConfig {
            budget_bytes: 0,
            keep: vec!["mcp__kit__echo".into()],
            ..DeferralConfig::default()
        },
        ..AgentOptions::default()
    }
    .filter(|scope: &Scope, tools: &mut Vec<ModelTool>| {
        if scope.agent_name == "a" {
            tools.retain(|t| t.name != "mcp__kit__counter");
        }
    });
    let (host, factory) = project.start_with(options).await;
    let session = host.session("s").unwrap();
    for (agent, expect) in [
        ("a", [Some(true), None, None, Some(false)]),
        ("b", [Some(true), None, Some(false), Some(false)]),
    ] {
        let agent = factory.open_agent(&session, agent).unwrap();
        let turn = agent.turn("t", "probe").await.unwrap();
        let compiled = turn.compiled();
        for ((name, call_args), offered) in PROBES.into_iter().zip(expect) {
            // Offered with its schema (true), deferred (false), or neither.
            let with_schema = compiled.tools().any(|t| t.name == name);
            let deferred = compiled.deferred().any(|t| t.name == name);
            let state = (with_schema || deferred).then_some(with_schema);
            assert_eq!(state, offered, "{name} for {}", agent.name());
            let call_args: Value = serde_json::from_str(call_args).unwrap();
            let by_name = turn.call(name, args(call_args.clone())).await.unwrap();
            let through = turn
                .call(
                    "CallMcpWithQuery",
                    args(json!({"server": "kit", "tool": &name["mcp__kit__".len()..], "args": call_args, "jq_filter": "."})),
                )
                .await
                .unwrap();
            for (how, result) in [
                ("by name", &by_name),
                ("through CallMcpWithQuery", &through),
            ] {
                let text = result.joined_text();
                assert_eq!(!result.is_error, offered.is_some(), "{name} {how}: {text}");
                match name {
                    "mcp__kit__add" => assert!(text.contains("denied by deny rule"), "{text}"),
                    "mcp__kit__counter" if offered.is_none() => {
                        assert!(text.contains("not offered to this agent"), "{text}")
                    }
                    _ => {}
                }
            }
        }
        turn.end().await;
        agent.complete().await;
    }
    // The filtered tool never reached the server, by name or through the built-in.
    assert_eq!(state.counter("k"), 2, "agent b's two calls only");
    host.shutdown().await;
}
