//! `extpool serve --stdio` as a client's one stdio server, whatever its
//! stdin and stdout are: a pause in the client's input never ends it
//! (stdout on a file included), a read of stdin that fails is said on
//! stderr and ends it non-zero, and a message that is no valid request is
//! answered with the JSON-RPC error HTTP answers it with — its id in the
//! answer when one can be read — and the session goes on.
//!
//! Nothing waits on time: answers are waited for as they come (on a pipe,
//! or by reading the file they are written to again each time it is
//! written), and exits through the process's own end.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::serve::Served;
use crate::support::Sandbox;

/// Upper bound of any wait; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(120);

/// The client's `initialize` (request `id`).
fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "stdio-probe", "version": "1"}}})
}

/// The client's `notifications/initialized`.
fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// A sandbox serving the testkit server.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    sb
}

/// `extpool serve --stdio` in `sb` with stdin piped, killed if the test
/// fails.
fn serve_stdio(sb: &Sandbox, stdout: Stdio, stderr: Stdio) -> Child {
    let mut command = Command::from(sb.command());
    command
        .args([
            "serve",
            "--stdio",
            "--toolhive=false",
            "--watch-config=false",
        ])
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr)
        .kill_on_drop(true);
    command.spawn().unwrap()
}

/// Writes `line` and its newline to serve's stdin.
async fn write_line(stdin: &mut ChildStdin, line: &[u8]) {
    let written = async {
        stdin.write_all(line).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await
    };
    if let Err(e) = written.await {
        panic!("serve no longer reads its stdin: {e}");
    }
}

/// The answer (result or error) to request `id` among the messages of `text`.
fn answer_in(text: &str, id: &Value) -> Option<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| &m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
}

/// Waits until the answer to request `id` is in the file at `out`, serve
/// (`child`, its stderr in `err`) still running: the file is read again
/// each time it is written (its inotify events), never on a timer.
async fn answer_in_file(out: &Path, err: &Path, child: &mut Child, id: u64) -> Value {
    use notify::Watcher;
    let id = json!(id);
    let (tx, mut written) = tokio::sync::mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = tx.send(event);
    })
    .unwrap();
    // Watched before the first read: a write after it is an event.
    watcher
        .watch(out, notify::RecursiveMode::NonRecursive)
        .unwrap();
    let found = async {
        loop {
            let text = std::fs::read_to_string(out).unwrap();
            if let Some(answer) = answer_in(&text, &id) {
                return answer;
            }
            tokio::select! {
                event = written.recv() => {
                    event.expect("the watcher ended").unwrap();
                }
                status = child.wait() => {
                    let stderr = std::fs::read_to_string(err).unwrap_or_default();
                    let text = std::fs::read_to_string(out).unwrap();
                    panic!(
                        "serve exited ({}) before answering {id}; stdout:\n{text}\nstderr:\n{stderr}",
                        status.unwrap()
                    );
                }
            }
        }
    };
    tokio::time::timeout(PATIENCE, found)
        .await
        .unwrap_or_else(|_| panic!("no answer to {id} in {}", out.display()))
}

/// The next answer (result or error) on serve's stdout, notifications
/// passed over.
async fn next_answer(lines: &mut Lines<BufReader<ChildStdout>>) -> Value {
    let next = async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("stdout ended before an answer");
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("serve wrote a line that is not JSON ({e}): {line}"));
            if message.get("result").is_some() || message.get("error").is_some() {
                return message;
            }
        }
    };
    tokio::time::timeout(PATIENCE, next)
        .await
        .expect("an answer on stdout")
}

/// `extpool serve --stdio` in `sb` (stdout piped, stderr inherited),
/// initialized: the child, its stdin, and the lines of its stdout.
async fn opened(sb: &Sandbox) -> (Child, ChildStdin, Lines<BufReader<ChildStdout>>) {
    let mut child = serve_stdio(sb, Stdio::piped(), Stdio::inherit());
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    write_line(&mut stdin, initialize(1).to_string().as_bytes()).await;
    assert_eq!(next_answer(&mut lines).await["id"], 1);
    write_line(&mut stdin, initialized().to_string().as_bytes()).await;
    (child, stdin, lines)
}

/// Closes serve's stdin and waits for its exit: its code.
async fn close_and_exit(child: &mut Child, stdin: ChildStdin) -> Option<i32> {
    drop(stdin);
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("serve exited once stdin closed")
        .unwrap();
    status.code()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stdio_with_stdout_on_a_file_waits_out_a_pause_in_its_input() {
    let sb = sandbox();
    let out = sb.work().join("answers.jsonl");
    let err = sb.work().join("stderr.txt");
    let stdout = std::fs::File::create(&out).unwrap();
    let stderr = std::fs::File::create(&err).unwrap();
    let mut child = serve_stdio(&sb, stdout.into(), stderr.into());
    let mut stdin = child.stdin.take().unwrap();
    write_line(&mut stdin, initialize(1).to_string().as_bytes()).await;
    // The client writes nothing more until it has the answer: a pause.
    let answer = answer_in_file(&out, &err, &mut child, 1).await;
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "extpool",
        "{answer}"
    );
    write_line(&mut stdin, initialized().to_string().as_bytes()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    write_line(&mut stdin, ping.to_string().as_bytes()).await;
    let pong = answer_in_file(&out, &err, &mut child, 2).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
    // And after another pause, a tool call.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mcp__testkit__add", "arguments": {"a": 2, "b": 40}}});
    write_line(&mut stdin, call.to_string().as_bytes()).await;
    let sum = answer_in_file(&out, &err, &mut child, 3).await;
    assert_eq!(sum["result"]["content"][0]["text"], "42", "{sum}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "serve exited while its client was still there"
    );
    let code = close_and_exit(&mut child, stdin).await;
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stdio_answers_a_malformed_message_as_http_does_and_goes_on() {
    // Each line, the id its answer carries and the error code.
    let malformed: [(&[u8], Value, i64); 9] = [
        // Params MCP defines of another shape: invalid params, not an
        // unknown method.
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}"#,
            json!(3),
            -32602,
        ),
        (
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]}"#,
            json!(4),
            -32602,
        ),
        (
            br#"{"jsonrpc":"2.0","id":"five","method":"vendor/x","params":[1]}"#,
            json!("five"),
            -32602,
        ),
        (b"this is not JSON", Value::Null, -32700),
        (b"\xff\xfe\xfd", Value::Null, -32700),
        // Not UTF-8 past its id, and cut short after it: the id is read.
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}",
            json!(6),
            -32700,
        ),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"ping""#,
            json!(7),
            -32700,
        ),
        (
            br#"[{"jsonrpc":"2.0","id":8,"method":"ping"}]"#,
            Value::Null,
            -32600,
        ),
        (br#"{"jsonrpc":"2.0","id":9,"method":7}"#, json!(9), -32600),
    ];
    let sb = sandbox();
    let (mut child, mut stdin, mut lines) = opened(&sb).await;
    let mut over_stdio = Vec::new();
    for (line, id, code) in &malformed {
        write_line(&mut stdin, line).await;
        let answer = next_answer(&mut lines).await;
        let shown = String::from_utf8_lossy(line);
        assert_eq!(&answer["id"], id, "{shown}: {answer}");
        assert_eq!(answer["error"]["code"], *code, "{shown}: {answer}");
        over_stdio.push(answer);
    }
    let message = over_stdio[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("invalid params for tools/call: ") && message.contains("7"),
        "{message}"
    );
    // The session goes on.
    let call = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "mcp__testkit__add", "arguments": {"a": 2, "b": 40}}});
    write_line(&mut stdin, call.to_string().as_bytes()).await;
    let sum = next_answer(&mut lines).await;
    assert_eq!(sum["id"], 10, "{sum}");
    assert_eq!(sum["result"]["content"][0]["text"], "42", "{sum}");
    assert_eq!(close_and_exit(&mut child, stdin).await, Some(0));

    // Over HTTP, the same messages get the same answers.
    let http = Sandbox::new();
    http.write(
        "extpool.yaml",
        "mcp_servers: {}\nskills:\n  default_roots: false\n",
    );
    let mut command = http.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive=false"]);
    let served = tokio::task::spawn_blocking(move || Served::spawn(command))
        .await
        .unwrap();
    let client = reqwest::Client::new();
    for ((line, _, _), over_stdio) in malformed.iter().zip(&over_stdio) {
        let response = client
            .post(&served.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(line.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400);
        let over_http: Value = response.json().await.unwrap();
        assert_eq!(&over_http, over_stdio, "{}", String::from_utf8_lossy(line));
    }
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stdio_says_a_failed_read_of_stdin_and_exits_non_zero() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        "mcp_servers: {}\nskills:\n  default_roots: false\n",
    );
    // stdin and stdout one socket, as inetd or socat hand it over: the
    // client closing its end with an answer unread resets the connection,
    // and serve's next read fails.
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut command = Command::from(sb.command());
    command
        .args(["serve", "--stdio", "--toolhive=false"])
        .stdin(OwnedFd::from(theirs.try_clone().unwrap()))
        .stdout(OwnedFd::from(theirs))
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    drop(command);
    ours.set_nonblocking(true).unwrap();
    let mut ours = tokio::net::UnixStream::from_std(ours).unwrap();
    ours.write_all(format!("{}\n", initialize(1)).as_bytes())
        .await
        .unwrap();
    // The answer, byte by byte: nothing after it is taken off the socket.
    let mut answer = Vec::new();
    while answer.last() != Some(&b'\n') {
        answer.push(ours.read_u8().await.unwrap());
    }
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    ours.write_all(format!("{}\n{ping}\n", initialized()).as_bytes())
        .await
        .unwrap();
    // The answer to the ping has come; only its first byte is read.
    assert_eq!(ours.read_u8().await.unwrap(), b'{');
    drop(ours);
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("serve exited once its stdin failed")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: reading the client's messages from stdin: ")
            && stderr.contains("os error 104"),
        "{stderr}"
    );

    // stdin a directory (neither pipe nor socket: read by blocking
    // calls): the first read fails.
    let mut command = Command::from(sb.command());
    command
        .args(["serve", "--stdio", "--toolhive=false"])
        .stdin(std::fs::File::open(sb.work()).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    drop(command);
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("serve exited once its stdin failed")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: reading the client's messages from stdin: ")
            && stderr.contains("os error 21"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stdio_relays_a_calls_log_messages_and_progress_in_the_order_they_were_sent() {
    const PAIRS: u64 = 100;
    let sb = sandbox();
    let (mut child, mut stdin, mut lines) = opened(&sb).await;
    // The testkit server sends `step i` and then progress i, for each i.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__testkit__notify",
            "arguments": {"kind": "mixed", "count": PAIRS},
            "_meta": {"progressToken": "mixed"}}});
    write_line(&mut stdin, call.to_string().as_bytes()).await;
    let mut relayed = Vec::new();
    let answer = async {
        loop {
            let line = lines.next_line().await.unwrap().expect("stdout ended");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == 2 {
                return message;
            }
            match message["method"].as_str() {
                Some("notifications/message") => {
                    let data = message["params"]["data"].as_str().unwrap();
                    relayed.push(format!("log {}", data.strip_prefix("step ").unwrap()));
                }
                Some("notifications/progress") => {
                    assert_eq!(message["params"]["progressToken"], "mixed", "{message}");
                    let progress = message["params"]["progress"].as_f64().unwrap();
                    relayed.push(format!("progress {progress}"));
                }
                _ => {}
            }
        }
    };
    let answer = tokio::time::timeout(PATIENCE, answer)
        .await
        .expect("an answer on stdout");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        format!("sent {PAIRS}"),
        "{answer}"
    );
    let sent: Vec<String> = (1..=PAIRS)
        .flat_map(|i| [format!("log {i}"), format!("progress {i}")])
        .collect();
    assert_eq!(relayed, sent);
    assert_eq!(close_and_exit(&mut child, stdin).await, Some(0));
}
