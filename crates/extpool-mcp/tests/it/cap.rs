//! McpServerCap through extpool-core's protocols: typed tool results,
//! resources, prompts as commands, MCP-hosted skills (SEP-2640 and
//! resource-only), change events, lazy vs non-lazy, client injection.

use std::sync::Arc;
use std::time::Duration;

use extpool_core::{
    Capability, ChangeKind, ChangeObservable, CommandResource, ContentPart, ExtensionError,
    ExtensionRegistry, McpResource, RegistryConfig, ResourceBody, Scope, ScopeLevel, SkillResource,
};
use extpool_mcp::{ClientError, McpClient, McpServerCap, StaticTool};
use extpool_testkit::StateDir;
use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::support::*;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn kit(pool: &extpool_mcp::SessionConnectionPool, args: &[&str]) -> McpServerCap {
    McpServerCap::new("kit", stdio_cfg(args), pool.clone()).unwrap()
}

#[tokio::test]
async fn tool_results_keep_every_part() {
    let pool = pool();
    let cap = kit(&pool, &[]);
    let tools = cap.toolset().await.unwrap();
    let structured = tools.iter().find(|t| t.name == "structured").unwrap();
    assert!(structured.output_schema.is_some());
    assert_eq!(
        tools
            .iter()
            .find(|t| t.name == "echo")
            .unwrap()
            .input_schema["required"][0],
        "message"
    );

    let r = cap.call_tool("mixed_content", Map::new()).await.unwrap();
    assert!(matches!(&r.parts[0], ContentPart::Text { .. }));
    assert!(
        matches!(&r.parts[1], ContentPart::Image { mime_type, data } if mime_type.starts_with("image/") && !data.is_empty())
    );
    assert!(
        matches!(&r.parts[2], ContentPart::Audio { mime_type, .. } if mime_type.starts_with("audio/"))
    );
    assert!(matches!(&r.parts[3], ContentPart::Resource { .. }));
    assert!(matches!(&r.parts[4], ContentPart::ResourceLink { .. }));

    let r = cap
        .call_tool("structured", obj(json!({"count": 3})))
        .await
        .unwrap();
    assert_eq!(r.structured.unwrap()["items"][2]["id"], 2);

    let r = cap
        .call_tool("tool_error", obj(json!({"message": "bad input"})))
        .await
        .unwrap();
    assert!(r.is_error);
    assert_eq!(r.joined_text(), "bad input");

    let err = cap
        .call_tool("fail", obj(json!({"message": "declared"})))
        .await
        .unwrap_err();
    let typed = err.downcast_source::<ClientError>().unwrap();
    assert!(typed.is_server_declared());
    pool.shutdown().await;
}

#[tokio::test]
async fn resources_are_listed_and_read() {
    let pool = pool();
    let cap = kit(&pool, &[]);
    let list = cap.list_resources().await.unwrap();
    assert!(list.iter().any(|r| r.uri == "testkit://info"));
    assert!(cap.resource_exists("testkit://info").await.unwrap());
    assert!(!cap.resource_exists("testkit://nope").await.unwrap());
    let info = cap.read_resource("testkit://info").await.unwrap().unwrap();
    assert!(info.as_text().is_some());
    let blob = cap.read_resource("testkit://blob").await.unwrap().unwrap();
    assert!(matches!(&blob.body, ResourceBody::Blob(b) if b.starts_with(b"\x89PNG")));
    pool.shutdown().await;
}

#[tokio::test]
async fn prompts_are_commands_with_arguments() {
    let pool = pool();
    let cap = kit(&pool, &[]);
    let commands = cap.list_commands().await.unwrap();
    let greet = commands.iter().find(|c| c.name == "greet").unwrap();
    assert_eq!(greet.arguments[0].name, "name");
    assert!(greet.arguments[0].required);
    let text = cap
        .get_command("greet", &["Ada".into(), "style=formal".into()])
        .await
        .unwrap();
    assert!(text.contains("Ada"), "{text}");
    let err = cap.get_command("nope", &[]).await.unwrap_err();
    assert!(err.is_not_found());
    let err = cap.get_command("greet", &[]).await.unwrap_err();
    assert!(matches!(err, ExtensionError::InvalidArgument(_)), "{err:?}");
    pool.shutdown().await;
}

#[tokio::test]
async fn sep_2640_skills_are_listed_lazily_and_verified() {
    let pool = pool();
    let cap = kit(&pool, &[]);
    let skills = cap.list_skills().await.unwrap();
    assert_eq!(skills.len(), 1, "{skills:?}");
    assert_eq!(skills[0].name, "testkit-skill");
    assert_eq!(skills[0].uri, "skill://testkit-skill/SKILL.md");
    assert!(
        cap.skill_exists("skill://testkit-skill/SKILL.md")
            .await
            .unwrap()
    );
    assert!(
        cap.skill_exists("skill://testkit-skill/references/guide.md")
            .await
            .unwrap()
    );
    assert!(!cap.skill_exists("skill://other/SKILL.md").await.unwrap());
    let md = cap
        .read_skill("skill://testkit-skill/SKILL.md")
        .await
        .unwrap()
        .unwrap();
    assert!(
        md.as_text()
            .unwrap()
            .starts_with("---\nname: testkit-skill")
    );
    let guide = cap
        .read_skill("skill://testkit-skill/references/guide.md")
        .await
        .unwrap()
        .unwrap();
    assert!(guide.as_text().unwrap().contains("Guide"));
    assert!(
        cap.read_skill("skill://other/SKILL.md")
            .await
            .unwrap()
            .is_none()
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn a_wrong_digest_is_refused() {
    let pool = pool();
    let cap = kit(&pool, &["--bad-digest"]);
    // SKILL.md itself matches its digest.
    assert!(
        cap.read_skill("skill://testkit-skill/SKILL.md")
            .await
            .unwrap()
            .is_some()
    );
    let err = cap
        .read_skill("skill://testkit-skill/references/guide.md")
        .await
        .unwrap_err();
    let typed = err.downcast_source::<ClientError>().unwrap();
    assert!(typed.is_skill_integrity(), "{typed:?}");
    assert!(typed.to_string().contains("digest"), "{typed}");
    pool.shutdown().await;
}

#[tokio::test]
async fn resource_only_skills_are_found() {
    let pool = pool();
    let cap = kit(&pool, &["--no-skills-extension"]);
    let skills = cap.list_skills().await.unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].name, "testkit-skill");
    assert!(skills[0].description.contains("Exercises"));
    let guide = cap
        .read_skill("skill://testkit-skill/references/guide.md")
        .await
        .unwrap()
        .unwrap();
    assert!(guide.as_text().unwrap().contains("Guide"));
    assert!(
        cap.read_skill("skill://testkit-skill/nope.md")
            .await
            .unwrap()
            .is_none()
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn registry_routes_skill_uris_to_the_server() {
    let pool = pool();
    let registry = ExtensionRegistry::new(RegistryConfig::default());
    let cap: Arc<dyn Capability> = Arc::new(kit(&pool, &[]));
    let scope = Scope::pool("p");
    registry
        .register(cap, ScopeLevel::Pool, &scope, None)
        .unwrap();
    let content = registry
        .resolve_uri("skill://testkit-skill/SKILL.md", &scope)
        .await
        .unwrap();
    assert!(content.as_text().unwrap().contains("testkit-skill"));
    pool.shutdown().await;
}

async fn next_kinds(stream: &mut extpool_core::ChangeStream, n: usize) -> Vec<ChangeKind> {
    let mut out = Vec::new();
    while out.len() < n {
        let event = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("a change event")
            .expect("stream open")
            .unwrap();
        assert_eq!(event.capability_name, "kit");
        assert_eq!(event.source_uri, "mcp://kit");
        out.push(event.kind);
    }
    out
}

#[tokio::test]
async fn list_changed_becomes_change_events_and_refreshes_lists() {
    let pool = pool();
    let cap = kit(&pool, &[]);
    let mut changes = cap.on_change().unwrap();
    let before = cap.list_tools().await.unwrap().len();

    cap.call_tool("add_tool", obj(json!({"name": "fresh_tool"})))
        .await
        .unwrap();
    assert_eq!(
        next_kinds(&mut changes, 1).await,
        [ChangeKind::ToolsChanged]
    );
    let tools = cap.list_tools().await.unwrap();
    assert_eq!(tools.len(), before + 1);
    assert!(tools.iter().any(|t| t.name == "fresh_tool"));

    cap.call_tool(
        "add_resource",
        obj(json!({"uri": "testkit://fresh", "text": "new"})),
    )
    .await
    .unwrap();
    assert_eq!(
        next_kinds(&mut changes, 2).await,
        [ChangeKind::ResourcesChanged, ChangeKind::SkillsChanged]
    );
    assert!(cap.resource_exists("testkit://fresh").await.unwrap());

    cap.call_tool("add_prompt", obj(json!({"name": "fresh_prompt"})))
        .await
        .unwrap();
    assert_eq!(
        next_kinds(&mut changes, 2).await,
        [ChangeKind::PromptsChanged, ChangeKind::CommandsChanged]
    );
    assert!(
        cap.list_commands()
            .await
            .unwrap()
            .iter()
            .any(|c| c.name == "fresh_prompt")
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn a_reconnect_is_announced_as_a_change() {
    let pool = pool();
    let state = StateDir::new();
    let cap = McpServerCap::new("kit", stdio_cfg(&state.args()), pool.clone()).unwrap();
    cap.start().await.unwrap();
    let mut changes = cap.on_change().unwrap();
    // The crash is a mutation: reconnected, but not sent again.
    let err = cap
        .call_tool("crash", obj(json!({"once": true})))
        .await
        .unwrap_err();
    assert!(
        err.downcast_source::<ClientError>()
            .is_some_and(ClientError::is_interrupted),
        "{err}"
    );
    let kinds = next_kinds(&mut changes, 1).await;
    assert_eq!(kinds, [ChangeKind::ToolsChanged]);
    pool.shutdown().await;
}

#[tokio::test]
async fn non_lazy_connects_at_start_lazy_on_first_call() {
    let pool = pool();
    let eager_state = StateDir::new();
    let eager = McpServerCap::new("eager", stdio_cfg(&eager_state.args()), pool.clone()).unwrap();
    eager.start().await.unwrap();
    assert_eq!(eager_state.starts(), 1);

    let lazy_state = StateDir::new();
    let mut cfg = stdio_cfg(&lazy_state.args());
    cfg.lazy = true;
    cfg.tools = vec![StaticTool {
        name: "echo".into(),
        description: "Echo".into(),
        input_schema: Some(
            r#"{"type":"object","properties":{"message":{"type":"string"}}}"#.into(),
        ),
    }];
    let lazy = McpServerCap::new("lazy", cfg, pool.clone()).unwrap();
    lazy.start().await.unwrap();
    let tools = lazy.toolset().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(
        tools[0].input_schema["properties"]["message"]["type"],
        "string"
    );
    assert!(lazy.instructions().await.unwrap().is_none());
    assert_eq!(
        lazy_state.starts(),
        0,
        "a lazy server is not started by compilation"
    );
    assert!(lazy.client().is_none());
    // Listing its resources, prompts and skills does not start it either.
    assert!(lazy.list_resources().await.unwrap().is_empty());
    assert!(lazy.list_commands().await.unwrap().is_empty());
    assert!(lazy.list_skills().await.unwrap().is_empty());
    assert!(!lazy.resource_exists("testkit://info").await.unwrap());
    assert_eq!(lazy_state.starts(), 0);
    let mut events = lazy.on_change().unwrap();

    let r = lazy
        .call_tool("echo", obj(json!({"message": "woke"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "woke");
    assert_eq!(lazy_state.starts(), 1);
    // Started: its resources, prompts and skills are there, and its change
    // stream says every list may differ (so a catalog re-lists them).
    let mut kinds = Vec::new();
    while kinds.len() < 5 {
        let event = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("change events after the first call")
            .unwrap()
            .unwrap();
        kinds.push(event.kind);
    }
    for kind in [
        ChangeKind::ToolsChanged,
        ChangeKind::ResourcesChanged,
        ChangeKind::PromptsChanged,
    ] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
    let resources = lazy.list_resources().await.unwrap();
    assert!(
        resources.iter().any(|r| r.uri == "testkit://info"),
        "{resources:?}"
    );
    let prompts = lazy.list_commands().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "greet"), "{prompts:?}");
    assert!(lazy.resource_exists("testkit://info").await.unwrap());
    pool.shutdown().await;
}

#[tokio::test]
async fn injected_client_is_used_without_a_pool() {
    let state = StateDir::new();
    let client: McpClient = connect("kit", stdio_cfg(&state.args())).await;
    let cap = McpServerCap::with_client(client.clone());
    assert_eq!(cap.id(), "kit");
    let r = cap
        .call_tool("counter", obj(json!({"key": "inj"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "1");
    let instructions = cap.instructions().await.unwrap();
    assert!(instructions.unwrap().contains("extpool test server"));
    cap.shutdown().await.unwrap();
    // The capability gave its client back; the client itself is still the owner's.
    client.ping().await.unwrap();
    assert_eq!(state.starts(), 1);
    client.close().await;
}

#[tokio::test]
async fn shutdown_returns_the_lease_and_the_pool_keeps_the_connection() {
    let pool = pool();
    let a = kit(&pool, &[]);
    let b = kit(&pool, &[]);
    a.start().await.unwrap();
    b.start().await.unwrap();
    assert_eq!(pool.snapshot()[0].leases, 2);
    a.shutdown().await.unwrap();
    assert_eq!(pool.snapshot()[0].leases, 1);
    assert!(
        a.call_tool("echo", obj(json!({"message": "x"})))
            .await
            .is_err()
    );
    b.call_tool("echo", obj(json!({"message": "x"})))
        .await
        .unwrap();
    pool.shutdown().await;
}

#[tokio::test]
async fn a_removed_pooled_client_is_replaced_and_events_follow() {
    let pool = pool();
    let state = StateDir::new();
    let cfg = stdio_cfg(&state.args());
    let cap = McpServerCap::new("kit", cfg.clone(), pool.clone()).unwrap();
    cap.start().await.unwrap();
    let mut changes = cap.on_change().unwrap();
    assert!(pool.remove(&name("kit"), &cfg).await);
    // The next call takes a fresh client from the pool (a new process)…
    cap.call_tool("add_tool", obj(json!({"name": "after_removal"})))
        .await
        .unwrap();
    assert_eq!(state.starts(), 2);
    // …and the change stream follows it: tools_changed arrives (from the
    // switch to the new client, or from its list_changed).
    let mut seen = Vec::new();
    while !seen.contains(&ChangeKind::ToolsChanged) {
        seen.extend(next_kinds(&mut changes, 1).await);
    }
    assert!(
        cap.list_tools()
            .await
            .unwrap()
            .iter()
            .any(|t| t.name == "after_removal")
    );
    pool.shutdown().await;
}
