//! A skill with an embedded MCP server — the real test server of
//! extpool-testkit, reached through extpool-mcp's `McpServerCap` and
//! `SessionConnectionPool`, as the binary wires them — whose server is then
//! killed: the skill stays usable, only that server's tools go, and the
//! failure is reported.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use extpool_core::{
    BoxError, Capability, ChangeKind, ChangeObservable, ChangeStream, CommandResource,
    ExtensionError, McpResource, SkillResource,
};
use extpool_mcp::{ClientError, McpServerCap, McpServerConfig, PoolConfig, SessionConnectionPool};
use extpool_skills::{DiscoveryConfig, EmbeddedServerFactory, SkillManagerCap};
use extpool_testkit::{HttpServer, StateDir, stdio_command};
use serde_json::{Map, Value, json};

use crate::support::{collect_events, write_raw};

/// Skill-embedded servers become `McpServerCap`s whose clients come from
/// the shared pool; the MCP client's own errors say when a server is down.
struct PoolFactory {
    pool: SessionConnectionPool,
}

impl EmbeddedServerFactory for PoolFactory {
    fn build(
        &self,
        skill: &extpool_skills::Skill,
        server: &str,
        config: &Value,
    ) -> Result<Arc<dyn Capability>, BoxError> {
        let config: McpServerConfig = serde_json::from_value(config.clone())?;
        let name = format!("{}_{server}", skill.meta.name).replace('-', "_");
        Ok(Arc::new(McpServerCap::new(
            &name,
            config,
            self.pool.clone(),
        )?))
    }

    fn is_server_down(&self, error: &ExtensionError) -> bool {
        extpool_mcp::is_server_down(error)
    }
}

fn args(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// A skill `code-review` embedding server `testkit` with `config` (YAML
/// lines indented under the server), allowed only `echo` and `crash`.
fn manager(root: &Path, config: &str) -> (SkillManagerCap, SessionConnectionPool) {
    write_raw(
        root,
        "code-review",
        &format!(
            "---\nname: code-review\ndescription: Review code with the test server\nallowed-tools: mcp__testkit__echo crash\nmcp_servers:\n  testkit:\n{config}    reconnect:\n      attempts: 0\n---\nReview the change, then call echo.\n"
        ),
    );
    let pool = SessionConnectionPool::new(PoolConfig::default());
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([root]))
        .watch(false)
        .embedded_servers(Arc::new(PoolFactory { pool: pool.clone() }))
        .build()
        .unwrap();
    assert!(cap.diagnostics().is_empty(), "{:?}", cap.diagnostics());
    (cap, pool)
}

async fn assert_working(cap: &SkillManagerCap) {
    let mut tools: Vec<String> = cap
        .toolset()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        ["crash", "echo"],
        "allowed-tools filters the server's tools"
    );
    let r = cap
        .call_tool("echo", args(&[("message", json!("hello"))]))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "hello");
    let denied = cap
        .call_tool("add", args(&[("a", json!(1)), ("b", json!(2))]))
        .await;
    assert!(denied.unwrap_err().is_not_found());
    // The server's MCP-hosted skill is listed after the local one.
    let skills: Vec<String> = cap
        .list_skills()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(skills[0], "code-review");
    assert!(skills.contains(&"testkit-skill".to_owned()), "{skills:?}");
    assert!(cap.child_failures().is_empty());
}

/// After the server died: its tools are gone, the failure is reported and
/// announced, and the skill is intact.
async fn assert_degraded(cap: &SkillManagerCap, events: &mut ChangeStream) {
    let tools = cap.toolset().await.unwrap();
    assert!(tools.is_empty(), "{tools:?}");
    let failures = cap.child_failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].child, "code_review_testkit");
    assert_eq!(failures[0].skill.as_deref(), Some("code-review"));
    let seen = collect_events(events, Duration::from_millis(300)).await;
    assert!(
        seen.iter().any(|e| e.kind == ChangeKind::ToolsChanged
            && e.capability_name == "skills"
            && e.source_uri == "mcp://code_review_testkit"),
        "{seen:?}"
    );
    assert!(
        cap.call_tool("echo", args(&[("message", json!("again"))]))
            .await
            .unwrap_err()
            .is_not_found(),
        "hidden tools are not routed"
    );

    assert_eq!(cap.list_skills().await.unwrap()[0].name, "code-review");
    assert!(
        cap.instructions()
            .await
            .unwrap()
            .unwrap()
            .contains("code-review: Review code")
    );
    let body = cap
        .read_skill("skill://code-review/SKILL.md")
        .await
        .unwrap()
        .unwrap();
    assert!(body.as_text().unwrap().contains("Review the change"));
    assert!(
        cap.get_command("code-review", &[])
            .await
            .unwrap()
            .ends_with("then call echo.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_killed() {
    let state = StateDir::new();
    let server_args = state.args();
    let mut server = tokio::task::spawn_blocking(move || HttpServer::spawn(server_args))
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (cap, _pool) = manager(tmp.path(), &format!("    url: {}\n", server.url()));
    cap.start().await.unwrap();
    let mut events = cap.on_change().unwrap();
    assert_working(&cap).await;

    server.kill();
    assert!(!server.is_running());
    // The first call after the kill fails with the client's own error…
    let err = cap
        .call_tool("echo", args(&[("message", json!("lost"))]))
        .await
        .unwrap_err();
    assert!(
        err.downcast_source::<ClientError>()
            .is_some_and(ClientError::is_unavailable),
        "{err}"
    );
    // …and from then on the server's tools are gone; the skill is not.
    assert_degraded(&cap, &mut events).await;
    cap.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_crashes() {
    let state = StateDir::new();
    let command = tokio::task::spawn_blocking({
        let a = state.args();
        move || stdio_command(a)
    })
    .await
    .unwrap();
    let config = format!(
        "    command: {}\n    args: {}\n",
        command.program.display(),
        serde_json::to_string(&command.args).unwrap()
    );
    let tmp = tempfile::tempdir().unwrap();
    let (cap, _pool) = manager(tmp.path(), &config);
    cap.start().await.unwrap();
    let mut events = cap.on_change().unwrap();
    assert_working(&cap).await;

    // The server process exits (code 3) in the middle of the call.
    let err = cap.call_tool("crash", Map::new()).await.unwrap_err();
    assert!(
        err.downcast_source::<ClientError>()
            .is_some_and(ClientError::is_unavailable),
        "{err}"
    );
    assert_degraded(&cap, &mut events).await;
    cap.shutdown().await.unwrap();
}
