//! What `extpool serve` says when it starts, checked as its readers take
//! it: each snippet of the banner parsed as its agent parses it (Codex's
//! TOML, Cursor's and VS Code's JSON, the shell's words of a command), the
//! tool count against a real client's `tools/list`, the times of
//! `ListMcpSources` and `/v1/sources`, the warnings about a weak or exposed
//! token, and a busy `--listen` port.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::support::Sandbox;

/// How long a line may take to come: only a hang is this slow.
const PATIENCE: Duration = Duration::from_secs(120);

/// A running `extpool serve`, its stdout and stderr read line by line.
struct Gateway {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

/// Sends each line of `pipe` to a channel, on a thread of its own.
fn lines_of(pipe: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Gateway {
    /// `extpool serve ARGS` in the sandbox, with `env` set.
    fn spawn(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Gateway {
        let mut command = sb.command();
        command.arg("serve").args(args);
        command.env_remove("EXTPOOL_GATEWAY_TOKEN");
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Gateway {
            child,
            stdout,
            stderr,
        }
    }

    /// Lines of `rx` up to and including the first that `last` accepts.
    fn until(rx: &Receiver<String>, what: &str, last: impl Fn(&str) -> bool) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            match rx.recv_timeout(PATIENCE) {
                Ok(line) => {
                    let done = last(&line);
                    lines.push(line);
                    if done {
                        return lines;
                    }
                }
                Err(e) => panic!("no {what} ({e:?}); lines so far: {lines:#?}"),
            }
        }
    }

    /// The banner: stdout up to its last line.
    fn banner(&self) -> Vec<String> {
        Self::until(&self.stdout, "end of the banner", |l| {
            l == "Stop with Ctrl-C."
        })
    }

    /// Stderr up to the line that says where sessions are kept, which
    /// comes after every warning about the configuration and the token.
    fn warnings(&self) -> Vec<String> {
        Self::until(&self.stderr, "state store line", |l| {
            l.starts_with("sessions are kept in")
        })
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command line split into words as a POSIX shell splits it (quotes and
/// backslashes; nothing is expanded).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// The rest of the banner line that starts with `label`.
fn after<'a>(banner: &'a [String], label: &str) -> &'a str {
    banner
        .iter()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no line starts with {label:?}: {banner:#?}"))
}

/// One JSON-RPC message to `url` as a streamable-HTTP client sends it;
/// the session id the answer gave and the answer (`Null` for none).
async fn rpc(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: Value,
) -> (Option<String>, Value) {
    let mut request = client
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(message.to_string());
    if let Some(id) = session {
        request = request
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-06-18");
    }
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{message}: {response:?}");
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
    let body = response.text().await.unwrap();
    let answer = if sse {
        // The answer is the event whose data has the request's id.
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id") == message.get("id"))
            .unwrap_or(Value::Null)
    } else if body.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&body).unwrap()
    };
    (session, answer)
}

/// A session-era client on `url`: `initialize`, `notifications/initialized`,
/// then each request of `then`; their answers.
fn client_session(url: &str, then: &[Value]) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "banner-test", "version": "1"}}});
        let (session, answer) = rpc(&client, url, None, init).await;
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        let session = session.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        rpc(&client, url, Some(&session), initialized).await;
        let mut answers = Vec::new();
        for (i, request) in then.iter().enumerate() {
            let mut request = request.clone();
            request["jsonrpc"] = json!("2.0");
            request["id"] = json!(i + 1);
            let (_, answer) = rpc(&client, url, Some(&session), request).await;
            assert!(answer.get("error").is_none(), "{answer}");
            answers.push(answer["result"].clone());
        }
        answers
    })
}

#[test]
fn each_snippet_of_the_banner_parses_as_its_agent_reads_it_and_the_tool_count_is_tools_list() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let gateway = Gateway::spawn(&sb, &["--listen", "127.0.0.1:0"], &[]);
    let banner = gateway.banner();
    // The first line: what is served, on the address really bound.
    let words: Vec<&str> = banner[0].split_whitespace().collect();
    let url = words.last().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{banner:#?}");
    assert!(!url.starts_with("http://127.0.0.1:0/"), "{banner:#?}");
    let at = words.iter().position(|w| w.starts_with("tool")).unwrap();
    let counted: usize = words[at - 1].parse().unwrap();

    let claude = shell_words(after(&banner, "  Claude Code  "));
    assert_eq!(
        claude,
        [
            "claude",
            "mcp",
            "add",
            "--transport",
            "http",
            "extpool",
            &url
        ]
    );

    let codex_at = banner
        .iter()
        .position(|l| l.starts_with("  Codex"))
        .unwrap();
    assert!(
        banner[codex_at].contains("~/.codex/config.toml"),
        "{banner:#?}"
    );
    let toml_text: Vec<&str> = banner[codex_at + 1..]
        .iter()
        .take_while(|l| l.starts_with("               "))
        .map(|l| l.trim())
        .collect();
    let table: toml::Table = toml::from_str(&toml_text.join("\n"))
        .unwrap_or_else(|e| panic!("the Codex snippet is not TOML: {e}\n{toml_text:#?}"));
    assert_eq!(
        table["mcp_servers"]["extpool"]["url"].as_str(),
        Some(url.as_str()),
        "{table:#?}"
    );

    let cursor_line = after(&banner, "  Cursor");
    let (file, cursor) = cursor_line.split_once(": ").unwrap();
    assert!(file.ends_with(".cursor/mcp.json"), "{cursor_line}");
    let cursor: Value = serde_json::from_str(cursor).unwrap();
    assert_eq!(cursor, json!({"mcpServers": {"extpool": {"url": url}}}));

    let vscode = shell_words(after(&banner, "  VS Code"));
    assert_eq!(vscode[..2], ["code", "--add-mcp"], "{vscode:?}");
    assert_eq!(vscode.len(), 3, "{vscode:?}");
    let added: Value = serde_json::from_str(&vscode[2]).unwrap();
    assert_eq!(
        added,
        json!({"name": "extpool", "type": "http", "url": url})
    );

    // The count is what a client's tools/list shows, the gateway's own
    // tools included.
    let answers = client_session(&url, &[json!({"method": "tools/list"})]);
    let listed = answers[0]["tools"].as_array().unwrap();
    assert!(answers[0].get("nextCursor").is_none(), "{:#}", answers[0]);
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        names.contains(&"ListMcpSources") && names.contains(&"RefreshMcpSources"),
        "{names:?}"
    );
    assert!(names.contains(&"mcp__testkit__echo"), "{names:?}");
    assert_eq!(
        counted,
        listed.len(),
        "banner: {banner:#?}\nlisted: {names:?}"
    );
}

/// True for `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn is_rfc3339_utc_ms(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22];
    b.len() == 24
        && digits.iter().all(|&i| b[i].is_ascii_digit())
        && [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'.'),
            (23, b'Z'),
        ]
        .iter()
        .all(|&(i, c)| b[i] == c)
}

/// Checks every time of a sources answer: RFC 3339, between `before` and
/// `after` (which, in that one format, order as text does).
fn check_times(what: &str, sources: &Value, before: &str, after: &str) {
    let text = sources.to_string();
    assert!(!text.contains("secs_since_epoch"), "{what}: {text}");
    let catalog = &sources["catalog"];
    let mut times = vec![catalog["last_reconcile"].clone()];
    for source in catalog["sources"].as_array().unwrap() {
        times.push(source["last_attempt"].clone());
        times.push(source["last_success"].clone());
    }
    assert!(times.len() >= 3, "{what}: {catalog:#}");
    for t in times {
        let t = t
            .as_str()
            .unwrap_or_else(|| panic!("{what}: not a string: {t}"));
        assert!(is_rfc3339_utc_ms(t), "{what}: {t}");
        assert!(
            before <= t && t <= after,
            "{what}: {before} <= {t} <= {after}"
        );
    }
}

#[test]
fn list_mcp_sources_and_v1_sources_show_times_as_rfc_3339() {
    let rfc3339 = extpool_host::core::time::rfc3339;
    let before = rfc3339(SystemTime::now() - Duration::from_secs(1));
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let gateway = Gateway::spawn(&sb, &["--listen", "127.0.0.1:0"], &[]);
    let banner = gateway.banner();
    let url = banner[0].split_whitespace().last().unwrap().to_owned();
    let call =
        json!({"method": "tools/call", "params": {"name": "ListMcpSources", "arguments": {}}});
    let answers = client_session(&url, &[call]);
    let text = answers[0]["content"][0]["text"].as_str().unwrap();
    let listed: Value = serde_json::from_str(text).unwrap();
    let v1 = url.replace("/mcp", "/v1/sources");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let api: Value = runtime.block_on(async {
        let response = reqwest::get(&v1).await.unwrap();
        assert!(response.status().is_success(), "{response:?}");
        response.json().await.unwrap()
    });
    let after = rfc3339(SystemTime::now() + Duration::from_secs(1));
    check_times("ListMcpSources", &listed, &before, &after);
    check_times("GET /v1/sources", &api, &before, &after);
}

#[test]
fn a_short_token_and_a_token_file_others_can_read_are_warned_about_never_shown() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    // The environment's token, one byte long: weak, and said so.
    let gateway = Gateway::spawn(
        &sb,
        &["--listen", "127.0.0.1:0"],
        &[("EXTPOOL_GATEWAY_TOKEN", "x")],
    );
    let warnings = gateway.warnings().join("\n");
    assert!(
        warnings.contains(
            "warning: the token in EXTPOOL_GATEWAY_TOKEN is 1 character long; a token shorter than 16 characters is weak"
        ),
        "{warnings}"
    );
    gateway.banner();
    drop(gateway);

    // A file any user may read, with a 15-character token.
    let secret = "sEcReT-15-chars";
    let file = sb.write("gw.token", &format!("{secret}\n"));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let gateway = Gateway::spawn(
        &sb,
        &["--listen", "127.0.0.1:0", "--token-file", "gw.token"],
        &[],
    );
    let warnings = gateway.warnings().join("\n");
    assert!(
        warnings.contains(
            "warning: the token file gw.token is accessible by others (mode 0644); anyone who reads it can use the gateway: run `chmod 600 gw.token`"
        ),
        "{warnings}"
    );
    assert!(
        warnings.contains("warning: the token in gw.token is 15 characters long"),
        "{warnings}"
    );
    assert!(!warnings.contains(secret), "{warnings}");
    // The gateway serves all the same.
    assert!(gateway.banner()[0].contains("http://127.0.0.1:"));
    drop(gateway);

    // Mode 0600 and 32 characters: nothing to say.
    std::fs::write(&file, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let gateway = Gateway::spawn(
        &sb,
        &["--listen", "127.0.0.1:0", "--token-file", "gw.token"],
        &[],
    );
    let warnings = gateway.warnings();
    assert!(
        !warnings.iter().any(|l| l.starts_with("warning")),
        "{warnings:#?}"
    );
}

#[test]
fn a_busy_port_is_refused_naming_listen_and_the_address() {
    let sb = Sandbox::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let r = sb.run(&["serve", "--listen", &addr]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let errors: Vec<&str> = r.stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{}", r.stderr);
    assert!(
        errors[0].starts_with(&format!("error: --listen {addr}: cannot listen there: ")),
        "{}",
        r.stderr
    );
    assert!(
        errors[0].contains("another program listens there")
            && errors[0].contains("--listen 127.0.0.1:0"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

#[test]
fn serve_names_the_config_file_it_serves_without() {
    let sb = Sandbox::new();
    sb.write(".mcp.json", "{\n  \"mcpServers\": {\n");
    let gateway = Gateway::spawn(&sb, &["--listen", "127.0.0.1:0"], &[]);
    let warnings = gateway.warnings().join("\n");
    assert!(
        warnings.contains(".mcp.json:3:1: error: invalid JSON"),
        "{warnings}"
    );
    assert!(
        warnings.contains("warning: serving without .mcp.json: it was skipped for the error above"),
        "{warnings}"
    );
    let banner = gateway.banner();
    assert!(banner[0].starts_with("extpool serves 0 servers and 2 tools on http://"));
    // The operator page is named at the listener's root.
    let url = banner[0].rsplit(' ').next().unwrap();
    let page = url.strip_suffix("mcp").unwrap();
    assert_eq!(banner[1], format!("The operator page, live: {page}"));
}

/// `--workers N` sets how many threads serve requests, as the gateway's
/// `/metrics` says; 0 is refused, naming the flag.
#[test]
fn serve_runs_as_many_request_threads_as_workers_says() {
    let sb = Sandbox::new();
    let gateway = Gateway::spawn(&sb, &["--listen", "127.0.0.1:0", "--workers", "3"], &[]);
    let banner = gateway.banner();
    let url = banner[0].split_whitespace().last().unwrap().to_string();
    let metrics = url.replace("/mcp", "/metrics");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body =
        runtime.block_on(async { reqwest::get(&metrics).await.unwrap().text().await.unwrap() });
    assert!(
        body.lines().any(|l| l == "extpool_runtime_workers 3"),
        "{body}"
    );

    let r = sb.run(&["serve", "--listen", "127.0.0.1:0", "--workers", "0"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--workers"), "{}", r.stderr);
}
