//! Answers a server sends that cannot be read fail the request they answer
//! at once, saying why — never as a timeout: a line that passes the size
//! limit and never ends, a message with the request's id that is no
//! JSON-RPC response. Each request may wait an hour, so only the answer
//! can end it.

use extpool_testkit::raw_echo_binary;

use crate::support::{Run, Sandbox};

/// `extpool call mcp__raw__echo` of a raw echo server given `args`, with
/// a 64 KiB message limit and an hour for the start and the call.
fn call_raw(args: &[&str]) -> Run {
    let sb = Sandbox::new();
    let args: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  raw:\n    command: {}\n    args: [{}]\n    max_message_bytes: 65536\n    request_timeout_ms: 3600000\n    startup_timeout_ms: 3600000\nskills:\n  default_roots: false\n",
            raw_echo_binary().display(),
            args.join(", ")
        ),
    );
    let r = sb.run(&["call", "mcp__raw__echo", "message=hi"]);
    assert_eq!(r.code, 1, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("timed out"), "{}", r.stderr);
    r
}

#[test]
fn an_answer_that_never_ends_its_line_fails_its_call_as_too_large() {
    let r = call_raw(&["--endless", "tools/call"]);
    assert!(
        r.stderr.contains(
            "MCP server \"raw\" sent a message of more than 64.0 KiB in answer to tools/call; the limit is 64.0 KiB (`max_message_bytes` in the server's config)"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn an_initialize_answer_that_never_ends_its_line_fails_the_start_as_too_large() {
    let r = call_raw(&["--endless", "initialize"]);
    assert!(
        r.stderr.contains(
            "the server sent a message of more than 64.0 KiB in answer to initialize; the limit is 64.0 KiB (`max_message_bytes` in the server's config)"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn an_answer_with_the_calls_id_and_a_malformed_error_fails_the_call_saying_what_is_wrong() {
    let r = call_raw(&[
        "--answer",
        r#"tools/call={"jsonrpc":"2.0","id":{id},"error":{"code":"x"}}"#,
    ]);
    assert!(
        r.stderr.contains(
            "MCP server \"raw\" answered tools/call with a message that is not a JSON-RPC response: its \"error\" is not a JSON-RPC error object (invalid type: string \"x\", expected i32)"
        ),
        "{}",
        r.stderr
    );
    let r = call_raw(&[
        "--answer",
        r#"tools/call={"id":{id},"result":{"content":[]}}"#,
    ]);
    assert!(
        r.stderr.contains(
            "MCP server \"raw\" answered tools/call with a message that is not a JSON-RPC response: its \"jsonrpc\" member is not \"2.0\""
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn an_initialize_answer_with_a_malformed_error_fails_the_start_saying_what_is_wrong() {
    let r = call_raw(&[
        "--answer",
        r#"initialize={"jsonrpc":"2.0","id":{id},"error":{"code":"x"}}"#,
    ]);
    assert!(
        r.stderr.contains(
            "the server answered initialize with a message that is not a JSON-RPC response: its \"error\" is not a JSON-RPC error object (invalid type: string \"x\", expected i32)"
        ),
        "{}",
        r.stderr
    );
}

/// A raw server's `initialize` answer with protocol version `version`.
fn initialize_answering(version: &str) -> String {
    let version = serde_json::to_string(version).unwrap();
    format!(
        r#"initialize={{"jsonrpc":"2.0","id":{{id}},"result":{{"protocolVersion":{version},"capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"old","version":"1"}}}}}}"#
    )
}

/// What an upstream answering `1999-01-01` is told, after its name.
const UNSPOKEN: &str = "it answered protocolVersion \"1999-01-01\", which extpool does not speak \
                        (extpool speaks 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28)";

#[test]
fn an_upstream_answering_a_protocol_version_extpool_does_not_speak_fails_its_start_saying_so() {
    let r = call_raw(&["--answer", &initialize_answering("1999-01-01")]);
    assert!(
        r.stderr
            .contains(&format!("MCP server \"raw\" failed to start: {UNSPOKEN}")),
        "{}",
        r.stderr
    );
    // A control character in the version is shown escaped, never raw.
    let r = call_raw(&["--answer", &initialize_answering("2025-\u{1b}[2J")]);
    assert!(
        r.stderr
            .contains(r#"it answered protocolVersion "2025-\u{1b}[2J", which extpool"#),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains('\u{1b}'), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sources_and_the_gateway_say_which_version_an_upstream_answered() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  old:\n    command: {}\n    args: ['--answer', '{}']\nskills:\n  default_roots: false\n",
            raw_echo_binary().display(),
            initialize_answering("1999-01-01")
        ),
    );
    let r = sb.run(&["list", "sources", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let old = &listed[0];
    assert_eq!(
        (&old["name"], &old["state"]),
        (&"old".into(), &"failed".into()),
        "{listed}"
    );
    assert_eq!(old["detail"], UNSPOKEN, "{listed}");

    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive", "false"]);
    let served = crate::serve::Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp");
    let sources: serde_json::Value = reqwest::get(format!("{base}/v1/sources"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let old = sources["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "old")
        .unwrap_or_else(|| panic!("{sources}"));
    assert_eq!(old["state"], "failed", "{sources}");
    assert_eq!(old["detail"], UNSPOKEN, "{sources}");
    // Its tools are not offered: a call names the failure.
    let r = sb.run(&["call", "mcp__old__echo", "message=hi"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("MCP server \"old\" failed to start: {UNSPOKEN}")),
        "{}",
        r.stderr
    );
    drop(served);
}
