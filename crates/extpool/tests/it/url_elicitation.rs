//! URL-mode elicitation through `extpool serve --stdio`, run as a client
//! runs it (the TypeScript SDK client starting the real binary): the
//! upstream's URL-mode `elicitation/create` reaches the client, its later
//! `notifications/elicitation/complete` follows, and a
//! `URLElicitationRequiredError` (-32042) reaches the client unchanged.

use serde_json::{Value, json};

use crate::support::{Sandbox, testkit};

#[test]
fn serve_stdio_relays_url_elicitation_and_its_completion() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  testkit:\n    command: {:?}\n    args: [\"--url-elicitation\"]\nskills:\n  default_roots: false\n",
            testkit().display().to_string()
        ),
    );
    let config = sb.work().join("extpool.yaml").display().to_string();
    let tool = |name: &str| format!("mcp__testkit__{name}");
    let url = "https://auth.example/stdio";
    let steps = json!([
        {"op": "connect", "as": "a", "elicitation": {"form": {}, "url": {}}},
        {"op": "call", "as": "a", "name": tool("elicit_url"), "args": {"url": url, "elicitationId": "e-s"}},
        {"op": "call", "as": "a", "name": tool("complete_elicitation"), "args": {"elicitationId": "e-s"}},
        {"op": "wait_complete", "as": "a", "id": "e-s"},
        {"op": "call", "as": "a", "name": tool("url_required"), "args": {"url": url, "elicitationId": "e-r"}},
        {"op": "call", "as": "a", "name": tool("complete_elicitation"), "args": {"elicitationId": "e-r"}},
        {"op": "wait_complete", "as": "a", "id": "e-r"},
        {"op": "asked", "as": "a"},
        {"op": "completes", "as": "a"},
    ]);
    let mut command = extpool_testkit::peers::typescript_url_elicitation_clients();
    command
        .args([
            "--stdio",
            env!("CARGO_BIN_EXE_extpool"),
            "--config",
            &config,
        ])
        .args(["serve", "--stdio"])
        .arg(steps.to_string())
        .env("HOME", sb.home())
        .current_dir(sb.work());
    let out = sb_run(command);
    assert_eq!(out[1]["text"], json!(["action=accept"]), "{out:#?}");
    assert_eq!(out[4]["error"]["code"], -32042, "{out:#?}");
    assert_eq!(
        out[4]["error"]["elicitations"][0]["elicitationId"], "e-r",
        "{out:#?}"
    );
    assert_eq!(
        out[7]["asked"],
        json!([{"mode": "url", "url": url, "elicitationId": "e-s", "message": "Open the link to finish signing in."}]),
        "{out:#?}"
    );
    assert_eq!(out[8]["completes"], json!(["e-s", "e-r"]), "{out:#?}");
}

/// Runs the clients; their lines, one per step. Fails when they fail.
fn sb_run(mut command: std::process::Command) -> Vec<Value> {
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the clients failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
