//! Tasks (MCP 2025-11-25) through `extpool serve --stdio`, as over HTTP:
//! server-everything's task tool behind the gateway, the TypeScript SDK's
//! task client in front over stdio. The gateway reads a task-augmented
//! `tools/call` and the task methods whole from their lines, and its
//! `initialize` answer declares `tasks`, though rmcp's types carry neither.

use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::Sandbox;

const RESEARCH: &str = "mcp__everything__simulate-research-query";

/// The line of step `op` (the `n`th such, from 0).
fn step<'a>(out: &'a [Value], op: &str, n: usize) -> &'a Value {
    out.iter()
        .filter(|l| l["op"] == op)
        .nth(n)
        .unwrap_or_else(|| panic!("no {op} #{n} in {out:#?}"))
}

#[test]
fn a_task_through_serve_stdio_is_declared_started_polled_fetched_and_cancelled() {
    let sb = Sandbox::new();
    let (program, args) = extpool_testkit::peers::server_everything().into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  everything:\n    command: {:?}\n    args: [{}]\nskills:\n  default_roots: false\n",
            program.display().to_string(),
            args.join(", ")
        ),
    );
    // The client starts `extpool serve --stdio` as the sandbox would.
    let extpool = sb.command();
    let mut command = extpool_testkit::peers::typescript_tasks_clients();
    command
        .current_dir(sb.work())
        .envs(extpool.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .arg("--stdio")
        .arg(
            json!([
                extpool.get_program().to_string_lossy(),
                "serve",
                "--stdio",
                "--toolhive=false"
            ])
            .to_string(),
        )
        .arg(
            json!([
                {"op": "connect", "as": "a"},
                {"op": "tools", "as": "a"},
                {"op": "start", "as": "a", "name": RESEARCH, "args": {"topic": "stdio"}, "save": "t"},
                {"op": "get", "as": "a", "task": "extpool-task-nobody"},
                {"op": "list", "as": "a"},
                {"op": "wait", "as": "a", "task": "$t"},
                {"op": "result", "as": "a", "task": "$t"},
                {"op": "start", "as": "a", "name": RESEARCH, "args": {"topic": "cancel"}, "save": "c"},
                {"op": "cancel", "as": "a", "task": "$c"},
                {"op": "close", "as": "a"},
            ])
            .to_string(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the task client failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let declared = &step(&out, "connect", 0)["tasks"];
    assert!(
        declared.pointer("/requests/tools/call").is_some(),
        "{out:#?}"
    );
    assert_eq!(
        step(&out, "tools", 0)["tools"],
        json!([[RESEARCH, "required"]]),
        "{out:#?}"
    );
    let id = step(&out, "start", 0)["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{out:#?}"))
        .to_owned();
    assert!(id.starts_with("extpool-task-"), "{out:#?}");
    assert_eq!(step(&out, "get", 0)["error"]["code"], -32602, "{out:#?}");
    assert_eq!(step(&out, "list", 0)["tasks"][0][0], json!(id), "{out:#?}");
    assert_eq!(
        step(&out, "wait", 0)["task"]["status"],
        "completed",
        "{out:#?}"
    );
    let result = step(&out, "result", 0);
    assert!(
        result["text"]
            .as_str()
            .is_some_and(|t| t.contains("# Research Report: stdio")),
        "{out:#?}"
    );
    assert_eq!(
        step(&out, "cancel", 0)["task"]["status"],
        "cancelled",
        "{out:#?}"
    );
}
