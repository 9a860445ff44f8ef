//! Interop with third-party servers installed by `scripts/peers.sh`:
//! `@modelcontextprotocol/server-everything` (Node) and a Python `mcp` SDK
//! server. A missing peer fails the test with instructions (the testkit's
//! peer helpers panic); nothing is skipped.

use extpool_core::{ChangeKind, CommandResource, McpResource, SkillResource};
use extpool_mcp::{McpServerCap, McpServerConfig};
use extpool_testkit::peers;
use serde_json::{Map, Value, json};

use crate::support::*;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn everything_stdio() -> McpServerConfig {
    let cmd = peers::server_everything();
    McpServerConfig::stdio(cmd.program.to_string_lossy(), cmd.args)
}

async fn exercise_everything(cap: &McpServerCap) {
    let tools = cap.list_tools().await.unwrap();
    for expected in [
        "echo",
        "get-sum",
        "get-structured-content",
        "get-tiny-image",
    ] {
        assert!(
            tools.iter().any(|t| t.name == expected),
            "missing {expected}"
        );
    }
    let r = cap
        .call_tool("echo", obj(json!({"message": "hello from extpool"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "Echo: hello from extpool");
    let r = cap
        .call_tool("get-sum", obj(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert!(r.joined_text().contains("42"), "{}", r.joined_text());

    let resources = cap.list_resources().await.unwrap();
    assert!(!resources.is_empty());
    let first = &resources[0];
    assert!(cap.resource_exists(&first.uri).await.unwrap());
    let read = cap.read_resource(&first.uri).await.unwrap().unwrap();
    assert!(!read.is_empty());
    let dynamic = "demo://resource/dynamic/text/1";
    assert!(
        cap.resource_exists(dynamic).await.unwrap(),
        "template match"
    );
    assert!(cap.read_resource(dynamic).await.unwrap().is_some());

    let commands = cap.list_commands().await.unwrap();
    assert!(commands.iter().any(|c| c.name == "args-prompt"));
    let text = cap
        .get_command("args-prompt", &["city=Paris".into(), "state=IDF".into()])
        .await
        .unwrap();
    assert!(text.contains("Paris"), "{text}");
    // No skills here, and that is not an error.
    assert!(cap.list_skills().await.unwrap().is_empty());
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let pool = pool();
    let cap = McpServerCap::new("everything", everything_stdio(), pool.clone()).unwrap();
    exercise_everything(&cap).await;
    // server-everything announces tools/list_changed right after initialize.
    let client = cap.client().unwrap();
    let mut changes = client.signals().subscribe();
    on_each("tools/list_changed received", &mut changes, || {
        client.signals().epoch(ChangeKind::ToolsChanged) >= 1
    })
    .await;
    pool.shutdown().await;
}

#[tokio::test]
async fn server_everything_over_http() {
    let server = peers::server_everything_http();
    let pool = pool();
    let cap = McpServerCap::new("everything", http_cfg(server.url()), pool.clone()).unwrap();
    exercise_everything(&cap).await;
    pool.shutdown().await;
}

async fn exercise_python(cap: &McpServerCap) {
    let tools = cap.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let r = cap
        .call_tool("echo", obj(json!({"message": "from rust"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "from rust");
    let r = cap
        .call_tool("add", obj(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "42");
    let r = cap
        .call_tool("structured", obj(json!({"count": 2})))
        .await
        .unwrap();
    assert_eq!(r.structured.unwrap()["items"][1]["name"], "item-1");
    let info = cap
        .read_resource("testkit://py/info")
        .await
        .unwrap()
        .unwrap();
    assert!(info.as_text().is_some());
    let commands = cap.list_commands().await.unwrap();
    assert!(commands.iter().any(|c| c.name == "greet"));
}

#[tokio::test]
async fn python_sdk_server_over_streamable_http() {
    let server = peers::FastMcpServer::spawn_http();
    let pool = pool();
    let cap = McpServerCap::new("python", http_cfg(server.url()), pool.clone()).unwrap();
    exercise_python(&cap).await;
    pool.shutdown().await;
}

#[tokio::test]
async fn python_sdk_server_over_stdio() {
    let cmd = peers::fastmcp_stdio();
    let cfg = McpServerConfig::stdio(cmd.program.to_string_lossy(), cmd.args);
    let pool = pool();
    let cap = McpServerCap::new("python", cfg, pool.clone()).unwrap();
    exercise_python(&cap).await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_caller_that_asked() {
    let pool = pool();
    let client = pool
        .get_client(&name("everything"), &everything_stdio())
        .await
        .unwrap();
    let run = |steps: u64| {
        let client = client.client().clone();
        async move {
            let (tx, mut rx) = tokio::sync::mpsc::channel(64);
            let result = client
                .call_tool_with_progress(
                    "trigger-long-running-operation",
                    args(json!({"duration": 1, "steps": steps})),
                    None,
                    tx,
                )
                .await
                .unwrap();
            let mut updates = Vec::new();
            while let Ok(p) = rx.try_recv() {
                updates.push(p);
            }
            (text(&result), updates)
        }
    };
    // Two calls at once: each sees only its own progress.
    let ((text3, three), (text5, five)) = tokio::join!(run(3), run(5));
    assert!(text3.contains("Steps: 3"), "{text3}");
    assert!(text5.contains("Steps: 5"), "{text5}");
    assert!(three.len() >= 2, "{three:?}");
    assert!(five.len() >= 4, "{five:?}");
    assert!(three.iter().all(|p| p.total == Some(3.0)), "{three:?}");
    assert!(five.iter().all(|p| p.total == Some(5.0)), "{five:?}");
    assert!(three.windows(2).all(|w| w[0].progress < w[1].progress));
    pool.shutdown().await;
}
