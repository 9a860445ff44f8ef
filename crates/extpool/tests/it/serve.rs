//! `extpool serve`, run as a user runs it: the endpoint it prints, a real
//! client (the Python MCP SDK) over HTTP and over stdio, flags that add
//! upstreams, the token rule off loopback, and a clean stop on SIGTERM.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};
use std::time::Duration;

use extpool_testkit::{HttpServer, StateDir, stdio_command};
use serde_json::{Value, json};

use crate::support::Sandbox;

/// A config with the testkit server (state in `state`).
fn testkit_config(sb: &Sandbox, state: &StateDir) {
    let (program, args) = stdio_command(state.args()).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  testkit:\n    command: {:?}\n    args: [{}]\nskills:\n  default_roots: false\n",
            program.display().to_string(),
            args.join(", ")
        ),
    );
}

/// A running `extpool serve` and the endpoint it printed.
pub struct Served {
    child: Child,
    /// The MCP endpoint it printed.
    pub url: String,
    /// Its standard error, when [`Served::spawn_with_stderr`] was asked
    /// for it.
    pub stderr: Option<std::process::ChildStderr>,
}

impl Served {
    /// Spawns `command` (an `extpool serve` command line) and waits for the
    /// endpoint line on its stdout.
    pub fn spawn(mut command: std::process::Command) -> Served {
        command.stderr(Stdio::inherit());
        Self::spawn_with_stderr(command)
    }

    /// [`Served::spawn`] with the standard error `command` sets up (piped:
    /// in [`Served::stderr`]).
    pub fn spawn_with_stderr(mut command: std::process::Command) -> Served {
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("extpool serve ended before printing its endpoint"))
                .unwrap();
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_owned();
            }
        };
        // Keep reading, as a terminal would, until extpool exits.
        std::thread::spawn(move || lines.for_each(drop));
        Served { child, url, stderr }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `extpool serve ARGS` in the sandbox.
pub fn serve(sb: &Sandbox, args: &[&str]) -> Served {
    let mut command = sb.command();
    command.arg("serve").args(args);
    Served::spawn(command)
}

/// Sends SIGTERM and waits for the exit code.
pub fn sigterm(served: &mut Served) -> i32 {
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_exit(&mut served.child)
}

/// How long a Python SDK client process may take: on two cores busy with
/// builds its imports alone took 16 s, so this bound only catches a hang.
const CLIENT_PATIENCE: Duration = Duration::from_secs(300);

/// Runs the Python SDK test client with `connect` and `steps`; its results,
/// one per step. A client that hangs is killed after [`CLIENT_PATIENCE`].
pub fn python(connect: &[&str], steps: Value) -> Vec<Value> {
    python_as(None, connect, steps)
}

/// [`python`] presenting `bearer` as its token on every HTTP request.
pub fn python_as(bearer: Option<&str>, connect: &[&str], steps: Value) -> Vec<Value> {
    let mut command = extpool_testkit::peers::python_client();
    if let Some(bearer) = bearer {
        command.env("MCP_CLIENT_BEARER", bearer);
    }
    let mut child = command
        .args(connect)
        .arg(steps.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let waited = rx.recv_timeout(CLIENT_PATIENCE);
    if waited.is_err() {
        // A hung client: killed, so its pipes close and the test says so.
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let Ok(status) = waited else {
        panic!(
            "the Python client did not finish within {} s; steps done (one line each): \
             {stdout}\nstderr: {stderr}",
            CLIENT_PATIENCE.as_secs()
        );
    };
    assert!(
        status.unwrap().success(),
        "client failed: {stdout}\n{stderr}"
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits for `child` to exit, on the kernel's word (its pidfd); returns
/// its code.
fn wait_exit(child: &mut Child) -> i32 {
    extpool_testkit::procs::wait_exited(child.id());
    child.wait().unwrap().code().unwrap_or(-1)
}

/// Live processes whose command line holds `marker`.
fn live(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let alive = std::fs::read_to_string(e.path().join("stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false);
            alive && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .count()
}

#[test]
fn serve_prints_its_endpoint_serves_a_client_and_stops_cleanly_on_sigterm() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    testkit_config(&sb, &state);
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0"]);
    let url = served.url.clone();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let out = python(
        &["--url", &url],
        json!([{"op": "call", "name": "mcp__testkit__echo", "args": {"message": "served"}}]),
    );
    assert_eq!(out[1]["text"], json!(["served"]));
    let marker = state.path().display().to_string();
    assert_eq!(live(&marker), 1);
    assert_eq!(sigterm(&mut served), 143);
    assert_eq!(
        live(&marker),
        0,
        "an upstream server outlived extpool serve"
    );
}

#[test]
fn serve_stdio_serves_one_client_on_stdin_and_stdout() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    testkit_config(&sb, &state);
    let config = sb.work().join("extpool.yaml");
    let exe = env!("CARGO_BIN_EXE_extpool");
    let config = config.display().to_string();
    let out = python(
        &["--stdio", exe, "--config", &config, "serve", "--stdio"],
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "mcp__testkit__add", "args": {"a": 2, "b": 40}},
        ]),
    );
    assert_eq!(out[0]["server"], "extpool");
    assert!(
        out[1]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__testkit__add")
    );
    assert_eq!(out[2]["text"], json!(["42"]));
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused() {
    let sb = Sandbox::new();
    sb.write("extpool.yaml", "mcp_servers: {}\n");
    let r = sb.run(&["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("refusing to serve on 0.0.0.0:0 without a bearer token"),
        "{}",
        r.stderr
    );
}

#[test]
fn mcp_server_flags_add_an_upstream_and_bad_ones_are_named() {
    let sb = Sandbox::new();
    sb.write("extpool.yaml", "mcp_servers: {}\n");
    let remote = HttpServer::start();
    let flag = format!("kit={}", remote.url());
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0", "--mcp-server", &flag]);
    let out = python(
        &["--url", &served.url],
        json!([{"op": "call", "name": "mcp__kit__echo", "args": {"message": "flagged"}}]),
    );
    assert_eq!(out[1]["text"], json!(["flagged"]));
    assert_eq!(sigterm(&mut served), 143);
    let r = sb.run(&["serve", "--mcp-server", "a__b=http://127.0.0.1:1/mcp"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("--mcp-server a__b") && r.stderr.contains("'__'"),
        "{}",
        r.stderr
    );
    let r = sb.run(&["serve", "--mcp-server", "nourl"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("expected NAME=URL"), "{}", r.stderr);
}

#[test]
fn the_sessions_command_drives_a_running_gateway() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    testkit_config(&sb, &state);
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0", "--state", &db]);
    let gateway = served.url.trim_end_matches("/mcp").to_owned();
    let sessions = |args: &[&str]| {
        let mut all = vec!["sessions", "--gateway", gateway.as_str()];
        all.extend_from_slice(args);
        sb.run(&all)
    };
    let r = sessions(&["create", "--id", "cli1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let created: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(created["session"]["id"], "cli1");
    assert!(
        created["granted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "mcp__testkit__echo")
    );
    let r = sessions(&["list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("SESSION"), "{}", r.stdout);
    assert!(
        r.stdout.lines().any(|l| l.starts_with("cli1 ")),
        "{}",
        r.stdout
    );
    let r = sessions(&["refresh", "cli1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let refreshed: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(refreshed["authority_changed"], false, "{refreshed}");
    let r = sessions(&["sources"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("testkit"), "{}", r.stdout);
    let r = sessions(&["delete", "cli1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = sessions(&["get", "cli1"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("404") && r.stderr.contains("cli1"),
        "{}",
        r.stderr
    );
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn unprefixed_lists_a_server_by_its_own_names_and_an_unknown_one_is_named() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    testkit_config(&sb, &state);
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0", "--unprefixed", "testkit"]);
    let out = python(
        &["--url", &served.url],
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "echo", "args": {"message": "bare"}},
            {"op": "list_prompts"},
        ]),
    );
    let tools = out[1]["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("echo")), "{tools:?}");
    assert!(!tools.contains(&json!("mcp__testkit__echo")), "{tools:?}");
    assert_eq!(out[2]["text"], json!(["bare"]));
    assert!(
        out[3]["prompts"]
            .as_array()
            .unwrap()
            .contains(&json!("greet")),
        "{out:?}"
    );
    assert_eq!(sigterm(&mut served), 143);
    let r = sb.run(&["serve", "--unprefixed", "nosuch"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("--unprefixed nosuch: no server named \"nosuch\" is configured"),
        "{}",
        r.stderr
    );
}

#[test]
fn resource_tool_and_prompt_flags_switch_what_serve_offers() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    testkit_config(&sb, &state);
    let offered = |flags: &[&str]| {
        let mut args = vec!["--listen", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let mut served = serve(&sb, &args);
        let out = python(
            &["--url", &served.url],
            json!([{"op": "list_tools"}, {"op": "list_prompts"}]),
        );
        assert_eq!(sigterm(&mut served), 143);
        (strings(&out[1]["tools"]), strings(&out[2]["prompts"]))
    };
    let resource_tools = ["ListMcpResources", "ReadMcpResource"];
    let (tools, prompts) = offered(&[]);
    for tool in resource_tools {
        assert!(tools.iter().any(|t| t == tool), "{tool}: {tools:?}");
    }
    assert!(
        prompts.iter().any(|p| p == "mcp__testkit__greet"),
        "{prompts:?}"
    );
    let (tools, prompts) = offered(&["--mcp-resource-tools=false", "--mcp-prompts=false"]);
    assert!(tools.iter().any(|t| t == "mcp__testkit__echo"), "{tools:?}");
    for tool in resource_tools {
        assert!(!tools.iter().any(|t| t == tool), "{tool}: {tools:?}");
    }
    assert!(
        !prompts.iter().any(|p| p.starts_with("mcp__testkit__")),
        "{prompts:?}"
    );
    let r = sb.run(&["serve", "--mcp-server-insecure-http", "nosuch"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "--mcp-server-insecure-http nosuch: no server named \"nosuch\" is configured"
        ),
        "{}",
        r.stderr
    );
}

/// Names in a JSON array of strings.
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// Refreshes session `id` over the API until `stop` is set; returns the
/// names every acknowledged refresh added.
fn refresh_until(
    gateway: String,
    id: &'static str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let client = reqwest::Client::new();
            let url = format!("{gateway}/v1/sessions/{id}/mcp-refresh");
            let mut added = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let Ok(response) = client.post(&url).send().await else {
                    continue;
                };
                if response.status() != 200 {
                    continue;
                }
                // Acknowledged only once the whole answer arrived.
                let Ok(body) = response.json::<Value>().await else {
                    continue;
                };
                added.extend(strings(&body["added"]));
            }
            added
        })
    })
}

#[test]
fn a_kill_9_in_a_loop_of_refreshes_loses_no_acknowledged_grant() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    testkit_config(&sb, &state);
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0", "--state", &db]);
    let gateway = served.url.trim_end_matches("/mcp").to_owned();
    let r = sb.run(&["sessions", "--gateway", &gateway, "create", "--id", "dur"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let created: Value = serde_json::from_str(&r.stdout).unwrap();
    let mut acknowledged = strings(&created["granted"]);
    // The model adds a tool upstream and refreshes, again and again, while
    // the operator API refreshes the same session in a loop.
    let steps: Vec<Value> = (0..200)
        .flat_map(|i| {
            [
                json!({"op": "call", "name": "mcp__testkit__add_tool", "args": {"name": format!("t{i}")}}),
                json!({"op": "call", "name": "RefreshMcpSources"}),
            ]
        })
        .collect();
    let mut model = extpool_testkit::peers::python_client()
        .args(["--url", &format!("{gateway}/sessions/dur/mcp")])
        .arg(Value::from(steps).to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let operator = refresh_until(gateway.clone(), "dur", stop.clone());
    let mut lines = BufReader::new(model.stdout.take().unwrap()).lines();
    let mut refreshes = 0;
    // Until the model's own refreshes have been answered five times and
    // one of them granted a tool it added (a tool added upstream reaches
    // the catalog a moment after its call: not every refresh finds one).
    let model_granted = |names: &Vec<String>| {
        names.iter().any(|n| {
            n.strip_prefix("mcp__testkit__t")
                .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    while refreshes < 5 || !model_granted(&acknowledged) {
        let line = lines
            .next()
            .expect("the model's client ended early")
            .unwrap();
        let step: Value = serde_json::from_str(&line).unwrap();
        let Some(text) = step["text"][0].as_str() else {
            continue;
        };
        if let Ok(refresh) = serde_json::from_str::<Value>(text)
            && refresh.get("added").is_some()
        {
            acknowledged.extend(strings(&refresh["added"]));
            refreshes += 1;
        }
    }
    // Refreshes are in flight from both clients now: kill -9.
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    acknowledged.extend(operator.join().unwrap());
    let _ = model.kill();
    let _ = model.wait();
    // A restart on the same store has every acknowledged grant.
    let mut again = serve(&sb, &["--listen", "127.0.0.1:0", "--state", &db]);
    let gateway = again.url.trim_end_matches("/mcp").to_owned();
    let r = sb.run(&["sessions", "--gateway", &gateway, "get", "dur"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let restored: Value = serde_json::from_str(&r.stdout).unwrap();
    let granted = strings(&restored["granted"]);
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|n| !granted.contains(n))
        .collect();
    assert!(lost.is_empty(), "acknowledged grants lost: {lost:?}");
    assert_eq!(sigterm(&mut again), 143);
}

#[test]
fn tool_search_flags_defer_schemas_behind_a_search_tool() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    testkit_config(&sb, &state);
    let mut served = serve(
        &sb,
        &[
            "--listen",
            "127.0.0.1:0",
            "--tool-search",
            "--tool-search-budget",
            "1",
        ],
    );
    let out = python(
        &["--url", &served.url],
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "ToolSearch", "args": {"query": "echo message"}},
        ]),
    );
    let listed = strings(&out[1]["tools"]);
    assert!(listed.contains(&"ToolSearch".to_owned()), "{listed:?}");
    assert!(
        !listed.contains(&"mcp__testkit__echo".to_owned()),
        "{listed:?}"
    );
    let found: Value = serde_json::from_str(out[2]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(found["tools"][0]["name"], "mcp__testkit__echo", "{found}");
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn the_limit_flags_bound_request_bodies_and_sessions_with_clear_errors() {
    let sb = Sandbox::new();
    sb.write("extpool.yaml", "mcp_servers: {}\n");
    let mut served = serve(
        &sb,
        &[
            "--listen",
            "127.0.0.1:0",
            "--max-request-bytes",
            "1000",
            "--max-sessions",
            "1",
        ],
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let post = |body: String| {
        let url = served.url.clone();
        runtime.block_on(async move {
            let response = reqwest::Client::new()
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        })
    };
    let (status, text) = post(format!("{{\"pad\":\"{}\"}}", "x".repeat(2000)));
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("accepts at most 1000"), "{text}");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "limits", "version": "1"}}})
    .to_string();
    let (status, text) = post(initialize.clone());
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"serverInfo\""), "{text}");
    let (status, text) = post(initialize);
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("holds at most 1 MCP sessions at once (extpool serve --max-sessions)")
            && text.contains("--session-idle-timeout"),
        "{text}"
    );
    assert_eq!(sigterm(&mut served), 143);
}

/// The first `snapshot` of the operator page's event stream at `base`
/// (`http://host:port`), read over a plain HTTP/1.1 connection.
fn page_snapshot(base: &str) -> Value {
    use std::io::Write;
    let authority = base.strip_prefix("http://").unwrap();
    let mut tcp = std::net::TcpStream::connect(authority).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        tcp,
        "GET /v1/page/events HTTP/1.1\r\nHost: {authority}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut lines = BufReader::new(tcp).lines();
    let mut snapshot = false;
    loop {
        let line = lines.next().expect("the stream ended").unwrap();
        if line == "event: snapshot" {
            snapshot = true;
        } else if let Some(data) = line.strip_prefix("data: ")
            && snapshot
        {
            return serde_json::from_str(data).unwrap();
        }
    }
}

#[test]
fn the_operator_page_offers_the_playground_only_with_the_flag() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    testkit_config(&sb, &state);
    for (args, offered) in [(&[][..], false), (&["--playground"][..], true)] {
        let mut command_args = vec!["--listen", "127.0.0.1:0"];
        command_args.extend(args);
        let served = serve(&sb, &command_args);
        let base = served.url.strip_suffix("/mcp").unwrap();
        let snapshot = page_snapshot(base);
        assert_eq!(snapshot["playground"], json!(offered), "{args:?}");
        assert_eq!(snapshot["servers"][0]["name"], json!("testkit"));
    }
}

#[test]
fn the_sessions_command_shows_why_the_gateway_refused_it() {
    let sb = Sandbox::new();
    sb.write("extpool.yaml", "mcp_servers: {}\n");
    let token = sb.write("gw.token", "the-sessions-command-gateway-token");
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let mut served = serve(
        &sb,
        &[
            "--listen",
            "127.0.0.1:0",
            "--state",
            &db,
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    let gateway = served.url.trim_end_matches("/mcp").to_owned();
    let list = |token: Option<&str>| {
        let mut command = sb.command();
        command
            .args(["sessions", "--gateway", &gateway, "list"])
            .env_remove("EXTPOOL_GATEWAY_TOKEN");
        if let Some(token) = token {
            command.env("EXTPOOL_GATEWAY_TOKEN", token);
        }
        crate::support::run(command)
    };
    for (token, says) in [
        (None, "this extpool gateway requires its bearer token"),
        (
            Some("not-the-token"),
            "the bearer token is not one this extpool gateway accepts",
        ),
    ] {
        let r = list(token);
        assert_eq!(r.code, 1, "{token:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("401 Unauthorized") && r.stderr.contains(says),
            "{token:?}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("EXTPOOL_GATEWAY_TOKEN"),
            "{token:?}: {}",
            r.stderr
        );
        assert!(
            !r.stderr.contains("did not answer with JSON"),
            "{}",
            r.stderr
        );
    }
    let r = list(Some("the-sessions-command-gateway-token"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn sessions_per_principal_comes_from_the_config_and_the_flag_wins() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        "mcp_servers: {}\ngateway:\n  limits:\n    sessions_per_principal: 2\n",
    );
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let create = |served: &Served, id: &str| {
        let gateway = served.url.trim_end_matches("/mcp").to_owned();
        sb.run(&["sessions", "--gateway", &gateway, "create", "--id", id])
    };
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0", "--state", &db]);
    for id in ["s1", "s2"] {
        let r = create(&served, id);
        assert_eq!(r.code, 0, "{id}: {}", r.stderr);
    }
    let r = create(&served, "s3");
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("429 Too Many Requests")
            && r.stderr.contains("you hold 2 durable sessions on this extpool gateway, the most one caller may (gateway.limits.sessions_per_principal, extpool serve --sessions-per-principal 2)"),
        "{}",
        r.stderr
    );
    assert_eq!(sigterm(&mut served), 143);
    let mut served = serve(
        &sb,
        &[
            "--listen",
            "127.0.0.1:0",
            "--state",
            &db,
            "--sessions-per-principal",
            "3",
        ],
    );
    let r = create(&served, "s3");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = create(&served, "s4");
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("--sessions-per-principal 3"),
        "{}",
        r.stderr
    );
    assert_eq!(sigterm(&mut served), 143);
    sb.write(
        "extpool.yaml",
        "mcp_servers: {}\ngateway:\n  limits:\n    sessions_per_principal: 0\n",
    );
    let r = sb.run(&["serve", "--listen", "127.0.0.1:0", "--state", &db]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("gateway.limits.sessions_per_principal")
            && r.stderr.contains("expected at least 1"),
        "{}",
        r.stderr
    );
}
