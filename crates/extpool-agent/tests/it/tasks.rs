//! Tasks (MCP 2025-11-25) from a turn, with server-everything's task tool
//! (`simulate-research-query`): started through the turn's table, its state
//! asked, its result awaited, cancelled by the turn or by an interrupted
//! run.

use extpool_testkit::peers::server_everything;
use serde_json::json;

use crate::support::{Project, args, within};

const RESEARCH: &str = "mcp__everything__simulate-research-query";

/// A project with server-everything as server `everything`.
fn project() -> Project {
    project_with("")
}

/// [`project`] with `extra` YAML sections.
fn project_with(extra: &str) -> Project {
    let project = Project::new();
    let (program, arguments) = server_everything().into_parts();
    let arguments: Vec<String> = arguments.iter().map(|a| format!("{a:?}")).collect();
    project.config(&format!(
        "mcp_servers:\n  everything:\n    command: {:?}\n    args: [{}]\n{extra}",
        program.display().to_string(),
        arguments.join(", ")
    ));
    project
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_starts_a_task_and_awaits_its_result() {
    let project = project();
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let turn = agent.turn("t1", "research").await.unwrap();
    let task = turn
        .start_task(RESEARCH, args(json!({"topic": "agents"})), None)
        .await
        .unwrap();
    assert_eq!(task.server(), "everything");
    assert_eq!(task.state().await.unwrap().status, "working");
    let result = within(task.result()).await.unwrap();
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.joined_text().contains("# Research Report: agents"),
        "{}",
        result.joined_text()
    );
    assert!(task.state().await.unwrap().is_terminal());
    // A tool its server does not take as a task: the server says so.
    let refused = turn
        .start_task(
            "mcp__everything__echo",
            args(json!({"message": "hi"})),
            None,
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_and_an_interrupted_run_end_the_task_at_its_server() {
    let project = project();
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let turn = agent.turn("t1", "research").await.unwrap();
    let task = turn
        .start_task(RESEARCH, args(json!({"topic": "cancels"})), None)
        .await
        .unwrap();
    assert_eq!(task.cancel().await.unwrap().status, "cancelled");
    let result = within(task.result()).await.unwrap();
    assert!(result.is_error, "{result:?}");
    assert!(result.joined_text().contains("cancelled"), "{result:?}");

    let task = turn
        .start_task(RESEARCH, args(json!({"topic": "interrupts"})), None)
        .await
        .unwrap();
    let waiting = tokio::spawn({
        let task = task.clone();
        async move { task.result().await }
    });
    agent.run_handle().cancel();
    let err = within(waiting).await.unwrap().unwrap_err();
    assert!(err.is_interrupted(), "{err}");
    assert_eq!(task.state().await.unwrap().status, "cancelled");
    host.shutdown().await;
}

/// A task's result passes the guardrails before the turn gets it, as a
/// call's result does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_result_is_redacted_before_the_turn_gets_it() {
    const SECRET: &str = "sk-ABCDEFGHIJKLMNOPQRSTUVWX";
    let project = project_with(
        "guardrails:\n  redact:\n    - name: openai-key\n      pattern: \"sk-[A-Za-z0-9]{20,}\"\n",
    );
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let turn = agent.turn("t1", "research").await.unwrap();
    let task = turn
        .start_task(RESEARCH, args(json!({"topic": SECRET})), None)
        .await
        .unwrap();
    let result = within(task.result()).await.unwrap();
    let text = result.joined_text();
    assert!(
        text.contains("# Research Report: [REDACTED:openai-key]") && !text.contains(SECRET),
        "{text}"
    );
    host.shutdown().await;
}
