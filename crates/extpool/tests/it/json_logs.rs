//! `--log-format json`: every log line `extpool serve` writes is one JSON
//! object a log pipeline reads, and a call's lines carry the fields of its
//! span — who called, the session, the upstream server and the tool. (The
//! messages for people — the start's progress, where sessions are kept —
//! stay text; a log line is one that starts with `{`.)

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::Sandbox;

/// The longest a step waits for its line; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(120);

#[test]
fn json_log_lines_parse_and_a_calls_lines_name_its_caller_session_server_and_tool() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let mut child = sb
        .command()
        .args([
            "-vv",
            "--log-format",
            "json",
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--state")
        .arg(format!("sqlite:{}", sb.work().join("state.db").display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let stdout = child.stdout.take().unwrap();
    let (url_tx, url_rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find("http://") {
                let _ = url_tx.send(line[at..].trim().to_owned());
            }
        }
    });
    let url = url_rx
        .recv_timeout(PATIENCE)
        .expect("serve printed its endpoint");
    let out = crate::serve::python(
        &["--url", &url],
        json!([{"op": "call", "name": "mcp__testkit__echo", "args": {"message": "logged"}}]),
    );
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    // Read the log until a line of the call's span shows up.
    let mut seen = Vec::new();
    let call = loop {
        let line = lines
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("no line of the call's span in:\n{}", seen.join("\n")));
        if !line.starts_with('{') {
            seen.push(line);
            continue;
        }
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
        seen.push(line);
        let spans = value["spans"].as_array().cloned().unwrap_or_default();
        if let Some(span) = spans.iter().find(|s| s["name"] == "tool_call") {
            break span.clone();
        }
    };
    assert_eq!(call["principal"], "local", "{call}");
    assert_eq!(call["server"], "testkit", "{call}");
    assert_eq!(call["tool"], "mcp__testkit__echo", "{call}");
    assert!(
        call["session"]
            .as_str()
            .is_some_and(|s| s.starts_with("gw-")),
        "{call}"
    );
    let _ = child.kill();
    let _ = child.wait();
    // Every other line written meanwhile is JSON too.
    while let Ok(line) = lines.recv_timeout(Duration::from_millis(0)) {
        if !line.starts_with('{') {
            continue;
        }
        assert!(
            serde_json::from_str::<Value>(&line).is_ok(),
            "a log line that is not JSON: {line}"
        );
    }
}
