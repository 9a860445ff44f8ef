//! `extpool serve`, run as a user runs it: the endpoint it prints, a real
//! client (the Python MCP SDK) over HTTP and over stdio, flags that add
//! upstreams, the token rule off loopback, and a clean stop on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

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
}

impl Served {
    /// Spawns `command` (an `extpool serve` command line) and waits for the
    /// endpoint line on its stdout.
    pub fn spawn(mut command: std::process::Command) -> Served {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
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
        Served { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `extpool serve ARGS` in the sandbox.
fn serve(sb: &Sandbox, args: &[&str]) -> Served {
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

/// Runs the Python SDK client with `connect` arguments and `steps`.
pub fn python(connect: &[&str], steps: Value) -> Vec<Value> {
    let output = extpool_testkit::peers::python_client()
        .args(connect)
        .arg(steps.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits (up to a minute) for `child` to exit; returns its code.
fn wait_exit(child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        assert!(Instant::now() < deadline, "extpool serve did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
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
    assert_eq!(sigterm(&mut served), 0);
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
    let remote = HttpServer::spawn(StateDir::new().args());
    let flag = format!("kit={}", remote.url());
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0", "--mcp-server", &flag]);
    let out = python(
        &["--url", &served.url],
        json!([{"op": "call", "name": "mcp__kit__echo", "args": {"message": "flagged"}}]),
    );
    assert_eq!(out[1]["text"], json!(["flagged"]));
    assert_eq!(sigterm(&mut served), 0);
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
    assert_eq!(sigterm(&mut served), 0);
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
    assert_eq!(sigterm(&mut served), 0);
    let r = sb.run(&["serve", "--unprefixed", "nosuch"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("--unprefixed nosuch: no server named \"nosuch\" is configured"),
        "{}",
        r.stderr
    );
}
