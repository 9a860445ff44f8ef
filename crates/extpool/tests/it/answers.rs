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
