//! The RFC's lifecycle diagrams 5–9, each a test named after it, against
//! the testkit server started for real. Overlap and cancellation are proven
//! on the server side: `barrier` calls return only when all parties are in
//! flight together, and the server counts the cancellations it receives.

use std::collections::BTreeSet;

use extpool_agent::{AgentEvent, CallOutcome, FunctionTools, SubagentSpec};
use extpool_host::{HostEvent, ToolResult};
use extpool_testkit::StateDir;
use extpool_testkit::procs::{ServerLink, kill_one, pids_with, wait_until_gone};
use serde_json::json;

use crate::support::{
    Project, agent_event, args, eventually, host_event, kit_config, linked_yaml, marker, names,
    testkit_config, testkit_yaml, within,
};

fn barrier(key: &str) -> serde_json::Map<String, serde_json::Value> {
    args(json!({"key": key, "parties": 2}))
}

fn echo(text: &str) -> serde_json::Map<String, serde_json::Value> {
    args(json!({"message": text}))
}

fn text(result: &ToolResult) -> String {
    assert!(!result.is_error, "tool error: {}", result.joined_text());
    result.joined_text()
}

/// RFC diagram 5: a subagent registers agent-scoped capabilities that
/// inherit the pool's, compiles (its servers connected), calls tools on the
/// pool's connection, and on completion only its own capabilities are shut
/// down; the parent keeps using the same connection.
#[tokio::test]
async fn subagent_spawning_with_mcp_tools() {
    let project = Project::new();
    let pooled = StateDir::new();
    let scratch = StateDir::new();
    project.config(&kit_config(&pooled));
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let parent = factory.open_agent(&session, "main").unwrap();
    assert!(names(&parent.compile().await.unwrap()).contains(&"mcp__kit__echo".to_owned()));
    let kit_pid = pids_with(&marker(&pooled));
    assert_eq!(kit_pid.len(), 1);
    let mut events = factory.events();

    let notes = FunctionTools::new("notes")
        .unwrap()
        .tool(
            "remember",
            "Remembers a note",
            json!({"type": "object", "properties": {"note": {"type": "string"}}}),
            |a| async move { ToolResult::text(format!("noted {}", a["note"])) },
        )
        .build();
    let spec = SubagentSpec::new()
        .server("scratch", testkit_config(&scratch))
        .capability(notes);
    let sub = parent.spawn_subagent("coder", spec).await.unwrap();
    // Spawning registered the subagent's server, which connected.
    assert_eq!(scratch.starts(), 1);
    let compiled = sub.compile().await.unwrap();
    let offered = names(&compiled);
    for tool in [
        "mcp__kit__echo",
        "mcp__scratch__counter",
        "mcp__notes__remember",
    ] {
        assert!(offered.contains(&tool.to_owned()), "{tool} in {offered:?}");
    }
    // The parent sees none of the subagent's capabilities.
    let parents = names(&parent.compile().await.unwrap());
    assert!(
        !parents
            .iter()
            .any(|n| n.starts_with("mcp__scratch__") || n.starts_with("mcp__notes__"))
    );

    let turn = sub.turn("t1", "count and remember").await.unwrap();
    assert_eq!(
        text(
            &turn
                .call("mcp__scratch__counter", args(json!({})))
                .await
                .unwrap()
        ),
        "1"
    );
    assert_eq!(
        text(&turn.call("mcp__kit__echo", echo("hi")).await.unwrap()),
        "hi"
    );
    assert_eq!(
        text(
            &turn
                .call("mcp__notes__remember", args(json!({"note": "x"})))
                .await
                .unwrap()
        ),
        "noted \"x\""
    );
    assert_eq!(turn.calls().len(), 3);
    turn.end().await;

    let report = sub.complete().await;
    let shut: BTreeSet<&str> = report.order().into_iter().collect();
    assert_eq!(
        shut,
        BTreeSet::from(["notes", "scratch"]),
        "agent scope only"
    );
    let completed = agent_event(&mut events, |e| match e {
        AgentEvent::Completed { scope, .. } => Some(scope),
        _ => None,
    })
    .await;
    assert_eq!(completed.agent_name, "coder");

    // The pool's connection persists and the parent reuses it.
    let again = parent.turn("p1", "echo").await.unwrap();
    assert_eq!(
        text(&again.call("mcp__kit__echo", echo("still")).await.unwrap()),
        "still"
    );
    assert_eq!(pids_with(&marker(&pooled)), kit_pid);
    assert_eq!(pooled.starts(), 1);
    again.end().await;
    // A new subagent of the same name starts clean, and the subagent
    // server's pooled connection is reused when it asks for it again.
    let fresh = parent
        .spawn_subagent(
            "coder",
            SubagentSpec::new().server("scratch", testkit_config(&scratch)),
        )
        .await
        .unwrap();
    let fresh_names = names(&fresh.compile().await.unwrap());
    assert!(!fresh_names.iter().any(|n| n.starts_with("mcp__notes__")));
    assert_eq!(scratch.starts(), 1, "the pooled connection is reused");
    fresh.complete().await;
    parent.complete().await;
    host.shutdown().await;
    wait_until_gone(&marker(&pooled)).await;
    wait_until_gone(&marker(&scratch)).await;
}

/// RFC diagram 6: the server is killed while a subagent's call is in
/// flight. First the client reconnects and re-sends the (read-only) call,
/// which completes; then the server cannot be restarted: the call returns
/// the tool error the model reads, the capability is marked degraded, the
/// next compile leaves its tools out while everything else works, and once
/// it can be reached again its tools return.
#[tokio::test]
async fn mcp_disconnection_during_subagent_run() {
    let project = Project::new();
    let kit = StateDir::new();
    let other = StateDir::new();
    let link = ServerLink::new(project.path(), "kit-server");
    project.config(&format!(
        "mcp_servers:\n  kit:\n{}  other:\n{}skills:\n  default_roots: false\n",
        linked_yaml(&link, &kit, 4),
        testkit_yaml(&other, 4)
    ));
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let parent = factory.open_agent(&session, "main").unwrap();
    let sub = parent
        .spawn_subagent("coder", SubagentSpec::new())
        .await
        .unwrap();
    let mut changes = Box::pin(sub.view().changes());
    let turn = sub.turn("t1", "create the issue").await.unwrap();

    // The server crashes mid-call; the reconnect succeeds.
    let call = tokio::spawn({
        let turn = turn.clone();
        async move { turn.call("mcp__kit__barrier", barrier("r1")).await }
    });
    eventually(
        &kit,
        |s| s.arrivals("r1") == 1,
        "the call reaches the server",
    )
    .await;
    kill_one(&marker(&kit)).await;
    eventually(
        &kit,
        |s| s.arrivals("r1") == 2,
        "the call is re-sent after the reconnect",
    )
    .await;
    let parent_turn = parent.turn("p1", "release").await.unwrap();
    assert_eq!(
        text(
            &parent_turn
                .call("mcp__kit__barrier", barrier("r1"))
                .await
                .unwrap()
        ),
        "released 2"
    );
    assert_eq!(text(&within(call).await.unwrap().unwrap()), "released 2");
    assert_eq!(kit.starts(), 2);
    assert!(sub.view().degraded().is_empty());

    // The server crashes mid-call and cannot be started again.
    let call = tokio::spawn({
        let turn = turn.clone();
        async move { turn.call("mcp__kit__barrier", barrier("r2")).await }
    });
    eventually(
        &kit,
        |s| s.arrivals("r2") == 1,
        "the call reaches the server",
    )
    .await;
    link.break_it();
    kill_one(&marker(&kit)).await;
    let failed = within(call).await.unwrap().unwrap();
    assert!(failed.is_error);
    assert!(
        failed
            .joined_text()
            .contains("MCP server \"kit\" unavailable after reconnect"),
        "{}",
        failed.joined_text()
    );
    let degraded = host_event(&mut changes, |e| match e {
        HostEvent::Degraded { capability, .. } => Some(capability),
        _ => None,
    })
    .await;
    assert_eq!(degraded, "kit");
    let last = turn.calls().pop().unwrap();
    assert_eq!(
        (last.outcome, last.server.as_str()),
        (CallOutcome::ToolError, "kit")
    );
    turn.end().await;

    // The next compile leaves the degraded server's tools out; the rest works.
    let compiled = sub.compile().await.unwrap();
    let offered = names(&compiled);
    assert!(
        !offered.iter().any(|n| n.starts_with("mcp__kit__")),
        "{offered:?}"
    );
    assert!(offered.contains(&"mcp__other__echo".to_owned()));
    assert_eq!(compiled.excluded()[0].capability, "kit");
    assert!(
        !names(&parent.compile().await.unwrap())
            .iter()
            .any(|n| n.starts_with("mcp__kit__"))
    );
    let next = sub.turn("t2", "carry on").await.unwrap();
    assert_eq!(
        text(&next.call("mcp__other__echo", echo("fine")).await.unwrap()),
        "fine"
    );
    let refused = next.call("mcp__kit__echo", echo("x")).await.unwrap();
    assert!(refused.is_error);
    assert!(
        refused
            .joined_text()
            .contains("unavailable after reconnect")
            && refused.joined_text().contains("return when it recovers"),
        "{}",
        refused.joined_text()
    );
    next.end().await;

    // It can be reached again: its tools return.
    link.restore();
    host.catalog().reconcile_now().await;
    let compiled = sub.compile().await.unwrap();
    assert!(names(&compiled).contains(&"mcp__kit__echo".to_owned()));
    assert!(compiled.excluded().is_empty());
    let back = sub.turn("t3", "again").await.unwrap();
    assert_eq!(
        text(&back.call("mcp__kit__echo", echo("back")).await.unwrap()),
        "back"
    );
    let recovered = host_event(&mut changes, |e| match e {
        HostEvent::Recovered { capability } => Some(capability),
        _ => None,
    })
    .await;
    assert_eq!(recovered, "kit");
    back.end().await;
    parent_turn.end().await;
    sub.complete().await;
    parent.complete().await;
    host.shutdown().await;
    wait_until_gone(&marker(&kit)).await;
    wait_until_gone(&marker(&other)).await;
}

/// RFC diagram 7: a skill's embedded server fails in a subagent. Its tools
/// go (the tool error, then the next compile without them); the skill's
/// instructions stay — listed, activatable, readable — and every other
/// tool keeps working.
#[tokio::test]
async fn skill_embedded_mcp_failure_in_subagent() {
    let project = Project::new();
    let embedded = StateDir::new();
    let other = StateDir::new();
    let link = ServerLink::new(project.path(), "kit-server");
    project.skill(
        "code-review",
        &format!(
            "description: Review a change and open a pull request\nmcp_servers:\n  kit:\n{}",
            linked_yaml(&link, &embedded, 4)
        ),
        "Review the diff, then open a pull request with the kit tools.",
    );
    project.config(&format!(
        "mcp_servers:\n  other:\n{}skills:\n  paths: [./skills]\n  default_roots: false\n",
        testkit_yaml(&other, 4)
    ));
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let parent = factory.open_agent(&session, "main").unwrap();
    let sub = parent
        .spawn_subagent("reviewer", SubagentSpec::new())
        .await
        .unwrap();

    let compiled = sub.compile().await.unwrap();
    let offered = names(&compiled);
    assert!(
        offered.contains(&"mcp__code_review_kit__echo".to_owned()),
        "{offered:?}"
    );
    assert!(
        compiled
            .system_prompt()
            .contains("code-review: Review a change")
    );
    let turn = sub.turn("t1", "review this").await.unwrap();
    turn.activate_skill("code-review").await.unwrap();
    let ctx = turn.before_model_request().await.unwrap();
    assert!(ctx.injected().iter().any(|s| s.contains("Review the diff")));
    assert_eq!(
        text(
            &turn
                .call("mcp__code_review_kit__echo", echo("pr"))
                .await
                .unwrap()
        ),
        "pr"
    );
    assert_eq!(
        embedded.starts(),
        1,
        "the call reused the compile's connection"
    );

    // The embedded server dies mid-call and cannot come back.
    let call = tokio::spawn({
        let turn = turn.clone();
        async move {
            turn.call("mcp__code_review_kit__barrier", barrier("e1"))
                .await
        }
    });
    eventually(
        &embedded,
        |s| s.arrivals("e1") == 1,
        "the call reaches the server",
    )
    .await;
    link.break_it();
    kill_one(&marker(&embedded)).await;
    let failed = within(call).await.unwrap().unwrap();
    assert!(
        failed.is_error
            && failed
                .joined_text()
                .contains("MCP server \"code_review_kit\" unavailable after reconnect"),
        "{}",
        failed.joined_text()
    );
    // The rest of the turn goes on.
    assert_eq!(
        text(&turn.call("mcp__other__echo", echo("ok")).await.unwrap()),
        "ok"
    );
    turn.end().await;

    // Next compile: the skill's server tools are gone, the skill is not.
    let compiled = sub.compile().await.unwrap();
    let offered = names(&compiled);
    assert!(
        !offered
            .iter()
            .any(|n| n.starts_with("mcp__code_review_kit__")),
        "{offered:?}"
    );
    assert!(offered.contains(&"mcp__other__echo".to_owned()));
    assert!(
        compiled
            .system_prompt()
            .contains("code-review: Review a change")
    );
    let next = sub.turn("t2", "review again").await.unwrap();
    next.activate_skill("code-review").await.unwrap();
    let ctx = next.before_model_request().await.unwrap();
    assert!(ctx.injected().iter().any(|s| s.contains("Review the diff")));
    let body = sub
        .view()
        .read("skill://code-review/SKILL.md")
        .await
        .unwrap();
    assert!(body.as_text().unwrap().contains("open a pull request"));
    assert_eq!(
        text(
            &next
                .call("mcp__other__echo", echo("partial"))
                .await
                .unwrap()
        ),
        "partial"
    );
    next.end().await;
    sub.complete().await;
    parent.complete().await;
    host.shutdown().await;
    wait_until_gone(&marker(&other)).await;
}

/// RFC diagram 8: the user interrupts the parent while a subagent's call is
/// in flight. The call is cancelled on the server (which counts it), the
/// subagent records nothing of it, and the pooled connection stays open for
/// the parent's next turn.
#[tokio::test]
async fn parent_interruption_while_subagent_running() {
    let project = Project::new();
    let pooled = StateDir::new();
    project.config(&kit_config(&pooled));
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let parent = factory.open_agent(&session, "main").unwrap();
    let sub = parent
        .spawn_subagent("coder", SubagentSpec::new())
        .await
        .unwrap();
    let turn = sub.turn("t1", "edit the file").await.unwrap();
    let pid = pids_with(&marker(&pooled));
    let mut events = factory.events();

    let call = tokio::spawn({
        let turn = turn.clone();
        async move { turn.call("mcp__kit__barrier", barrier("edit")).await }
    });
    eventually(
        &pooled,
        |s| s.arrivals("edit") == 1,
        "the call is in flight on the server",
    )
    .await;
    parent.run_handle().cancel();
    let err = within(call).await.unwrap().unwrap_err();
    assert!(err.is_interrupted(), "{err}");
    eventually(
        &pooled,
        |s| s.counter("cancelled") == 1,
        "the server receives the cancellation",
    )
    .await;
    // No partial state: nothing recorded, nothing loaded.
    assert!(turn.calls().is_empty());
    assert!(sub.loaded_tools().is_empty());
    let interrupted = agent_event(&mut events, |e| match e {
        AgentEvent::Call(record) => Some(record),
        _ => None,
    })
    .await;
    assert_eq!(interrupted.outcome, CallOutcome::Interrupted);
    // The interrupted run calls nothing more.
    let again = turn.call("mcp__kit__echo", echo("x")).await.unwrap_err();
    assert!(again.is_interrupted());
    turn.end().await;
    sub.complete().await;

    // The connection stays open; the parent's next turn reuses it.
    let next = parent.turn("p2", "what happened?").await.unwrap();
    assert_eq!(
        text(&next.call("mcp__kit__echo", echo("resumed")).await.unwrap()),
        "resumed"
    );
    assert_eq!(pids_with(&marker(&pooled)), pid);
    assert_eq!(pooled.starts(), 1);
    next.end().await;
    parent.complete().await;
    host.shutdown().await;
    wait_until_gone(&marker(&pooled)).await;
}

/// RFC diagram 9: two subagents spawned concurrently compile and call on
/// one connection to one server process, their calls in flight together
/// (each `barrier` call returns only when both have reached the server).
#[tokio::test]
async fn concurrent_subagents_sharing_mcp_connection() {
    let project = Project::new();
    let pooled = StateDir::new();
    project.config(&kit_config(&pooled));
    let (host, factory) = project.start().await;
    let session = host.session("s").unwrap();
    let parent = factory.open_agent(&session, "main").unwrap();
    let pid = pids_with(&marker(&pooled));
    assert_eq!(pid.len(), 1);

    let (a, b) = tokio::join!(
        parent.spawn_subagent("analyzer", SubagentSpec::new()),
        parent.spawn_subagent("reviewer", SubagentSpec::new()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let (ca, cb) = tokio::join!(a.compile(), b.compile());
    for compiled in [ca.unwrap(), cb.unwrap()] {
        assert!(names(&compiled).contains(&"mcp__kit__barrier".to_owned()));
    }
    let (ta, tb) = tokio::join!(a.turn("t", "analyze"), b.turn("t", "review"));
    let (ta, tb) = (ta.unwrap(), tb.unwrap());
    let (ra, rb) = within(async {
        tokio::join!(
            ta.call("mcp__kit__barrier", barrier("both")),
            tb.call("mcp__kit__barrier", barrier("both")),
        )
    })
    .await;
    assert_eq!(text(&ra.unwrap()), "released 2");
    assert_eq!(text(&rb.unwrap()), "released 2");
    assert_eq!(pooled.arrivals("both"), 2);
    assert_eq!(pooled.starts(), 1, "one server process");
    assert_eq!(
        pids_with(&marker(&pooled)),
        pid,
        "the same process throughout"
    );
    ta.end().await;
    tb.end().await;
    a.complete().await;
    b.complete().await;
    let next = parent.turn("p", "summarize").await.unwrap();
    assert_eq!(
        text(&next.call("mcp__kit__echo", echo("done")).await.unwrap()),
        "done"
    );
    assert_eq!(pids_with(&marker(&pooled)), pid);
    next.end().await;
    parent.complete().await;
    host.shutdown().await;
    wait_until_gone(&marker(&pooled)).await;
}
