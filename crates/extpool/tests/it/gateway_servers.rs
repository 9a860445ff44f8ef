//! A running gateway's servers from the command line, through the binary
//! against `extpool serve`: `logs` (a server's stderr and extpool's lines
//! about it, kept and followed), `restart` (one server's process replaced, the
//! others kept; for an operator only) and `tools disable | enable` (a deny
//! rule in extpool.yaml that the gateway's configuration watcher applies).

use std::time::{Duration, Instant};

use extpool_testkit::{StateDir, stdio_command};
use serde_json::json;

use crate::discovery::tools;
use crate::serve::{Served, sigterm};
use crate::support::Sandbox;

/// How long a change may take to reach the gateway's clients.
const PATIENCE: Duration = Duration::from_secs(60);

/// A testkit server's entry named `name`, with its state in `state`.
fn server(name: &str, state: &StateDir) -> String {
    let (program, args) = stdio_command(state.args()).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "  {name}:   # a test kit\n    command: {:?}\n    args: [{}]\n",
        program.display().to_string(),
        args.join(", ")
    )
}

/// extpool.yaml serving `kit` (a testkit server), as a person wrote it.
fn config(kit: &StateDir) -> String {
    format!(
        "# the team's gateway\nmcp_servers:\n{}\nskills:\n  default_roots: false\n  watch: false\n",
        server("kit", kit)
    )
}

/// Lists the gateway's tools until `check` holds for them.
fn tools_until(endpoint: &str, what: &str, check: impl Fn(&[String]) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let listed = tools(endpoint);
        if check(&listed) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never happened: {what}: {listed:?}"
        );
    }
}

#[test]
fn tools_disable_and_enable_reach_a_running_gateway_and_keep_the_file() {
    let sb = Sandbox::new();
    let kit = StateDir::new();
    let written = config(&kit);
    let path = sb.write("extpool.yaml", &written);
    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive=false"]);
    let mut served = Served::spawn(command);
    let has = |t: &[String]| t.iter().any(|n| n == "mcp__kit__echo");
    tools_until(&served.url, "the kit's tools are served", has);

    let disabled = sb.run(&["tools", "disable", "mcp__kit__echo"]);
    assert_eq!(disabled.code, 0, "{}", disabled.stderr);
    assert!(
        disabled.stdout.contains("disabled mcp__kit__echo")
            && disabled.stdout.contains("extpool.yaml"),
        "{}",
        disabled.stdout
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        format!("{written}\npermissions:\n  deny:\n  - mcp__kit__echo\n")
    );
    tools_until(&served.url, "the disabled tool vanishes", |t| {
        !has(t) && t.iter().any(|n| n == "mcp__kit__add")
    });
    let again = sb.run(&["tools", "disable", "mcp__kit__echo"]);
    assert!(again.stdout.contains("already"), "{}", again.stdout);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    let enabled = sb.run(&["tools", "enable", "mcp__kit__echo"]);
    assert_eq!(enabled.code, 0, "{}", enabled.stderr);
    assert!(
        enabled.stdout.contains("enabled mcp__kit__echo"),
        "{}",
        enabled.stdout
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    tools_until(&served.url, "the enabled tool is back", has);
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn tools_disable_works_without_a_gateway_and_refuses_a_bad_name() {
    let sb = Sandbox::new();
    let path = sb.write("extpool.yaml", "skills:\n  default_roots: false\n");
    let out = sb.run(&["--json", "tools", "disable", "mcp__x__*"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let answer: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(answer["outcome"], "disabled", "{answer}");
    assert!(
        answer["file"].as_str().unwrap().ends_with("extpool.yaml"),
        "{answer}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.ends_with("permissions:\n  deny:\n  - mcp__x__*\n"),
        "{text}"
    );
    let missing = sb.run(&["tools", "enable", "mcp__y__z"]);
    assert_eq!(missing.code, 0, "{}", missing.stderr);
    assert!(
        missing.stdout.contains("not in permissions.deny"),
        "{}",
        missing.stdout
    );
    let bad = sb.run(&["tools", "disable", "two words"]);
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains("no spaces"), "{}", bad.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_gives_one_server_a_new_process_and_is_for_an_operator_only() {
    let sb = Sandbox::new();
    let (kit, other) = (StateDir::new(), StateDir::new());
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n{}{}skills:\n  default_roots: false\n  watch: false\n",
            server("kit", &kit),
            server("other", &other)
        ),
    );
    let state = format!("sqlite:{}", sb.work().join("state.db").display());
    let key = |args: &[&str]| {
        let made = sb.run(&[&["api-keys", "create"], args, &["--state", &state]].concat());
        assert_eq!(made.code, 0, "{}", made.stderr);
        made.stdout.trim().to_owned()
    };
    let (ci, admin) = (key(&["ci"]), key(&["admin", "--operator"]));
    let mut command = sb.command();
    command.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--toolhive=false",
        "--state",
        &state,
    ]);
    let mut served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let started = |s: &StateDir| s.starts() >= 1;
    kit.until("kit started", PATIENCE, started).await;
    other.until("other started", PATIENCE, started).await;
    let (first, others) = (kit.pids(), other.pids());
    assert_eq!(first.len(), 1, "{first:?}");

    let restart = |token: Option<&str>, name: &str| {
        let mut command = sb.command();
        command
            .args(["--json", "restart", name, "--gateway", &base])
            .env_remove("EXTPOOL_GATEWAY_TOKEN");
        if let Some(token) = token {
            command.env("EXTPOOL_GATEWAY_TOKEN", token);
        }
        crate::support::run(command)
    };
    // Nobody's restart but an operator's.
    for token in [None, Some(ci.as_str())] {
        let refused = restart(token, "kit");
        assert_ne!(refused.code, 0, "{}", refused.stdout);
        assert!(
            refused.stderr.contains("403") && refused.stderr.contains("for an operator"),
            "{}",
            refused.stderr
        );
    }
    assert_eq!(kit.pids(), first);
    let mut read = sb.command();
    read.args(["logs", "kit", "--gateway", &base])
        .env("EXTPOOL_GATEWAY_TOKEN", &ci);
    let refused = crate::support::run(read);
    assert!(refused.stderr.contains("403"), "{}", refused.stderr);

    let done = restart(Some(&admin), "kit");
    assert_eq!(done.code, 0, "{}", done.stderr);
    let answer: serde_json::Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(answer["restarted"], "kit", "{answer}");
    assert_eq!(answer["connection"]["connected"], true, "{answer}");
    let pid = answer["connection"]["pid"].as_u64().unwrap() as u32;
    let pids = kit.pids();
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert_eq!((pids[0], pids[1]), (first[0], pid), "{answer}");
    assert_ne!(pid, first[0]);
    assert_eq!(other.pids(), others, "the other server keeps its process");
    // The restarted server serves calls.
    let called = crate::serve::python_as(
        Some(&admin),
        &["--url", &served.url],
        json!([{"op": "call", "name": "mcp__kit__echo", "args": {"message": "again"}}]),
    );
    assert_eq!(called[1]["text"], json!(["again"]), "{called:?}");

    let mut words = sb.command();
    words
        .args(["restart", "kit", "--gateway", &base])
        .env("EXTPOOL_GATEWAY_TOKEN", &admin);
    let said = crate::support::run(words);
    assert!(
        said.stdout.starts_with("restarted kit: connected, pid "),
        "{}",
        said.stdout
    );
    // The log tells the restart.
    let mut read = sb.command();
    read.args(["--json", "logs", "kit", "--gateway", &base])
        .env("EXTPOOL_GATEWAY_TOKEN", &admin);
    let log = crate::support::run(read);
    assert_eq!(log.code, 0, "{}", log.stderr);
    let log: serde_json::Value = serde_json::from_str(&log.stdout).unwrap();
    let said: Vec<&str> = log["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "extpool")
        .map(|l| l["line"].as_str().unwrap())
        .collect();
    assert!(said[0].starts_with("started: ready, pid "), "{said:?}");
    assert!(
        said.contains(&"restart asked: closing its connection"),
        "{said:?}"
    );
    assert!(
        said.contains(&format!("reconnected (connection 2, pid {pid})").as_str()),
        "{said:?}"
    );
    let unknown = restart(Some(&admin), "nope");
    assert_ne!(unknown.code, 0);
    assert!(
        unknown.stderr.contains("404") && unknown.stderr.contains("no MCP server named \"nope\""),
        "{}",
        unknown.stderr
    );
    assert_eq!(sigterm(&mut served), 143);
}

/// A child process killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn logs_show_what_a_server_wrote_to_stderr_and_follow_new_lines() {
    use std::io::BufRead;
    let sb = Sandbox::new();
    let kit = StateDir::new();
    sb.write("extpool.yaml", &config(&kit));
    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive=false"]);
    let mut served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let say = |message: &str| {
        let out = crate::serve::python(
            &["--url", &served.url],
            json!([{"op": "call", "name": "mcp__kit__stderr", "args": {"message": message}}]),
        );
        assert_eq!(out[1]["text"], json!(["ok"]), "{out:?}");
    };
    say("written before anyone reads");

    let mut follow = sb.command();
    follow
        .args(["--json", "logs", "kit", "--follow", "--gateway", &base])
        .stdout(std::process::Stdio::piped());
    let mut child = Child(follow.spawn().unwrap());
    let (tx, lines) = std::sync::mpsc::channel::<serde_json::Value>();
    let stdout = std::io::BufReader::new(child.0.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                return;
            }
        }
    });
    let until = |text: &str| {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("the follower never showed {text:?}"));
            if line["line"] == text {
                assert_eq!(line["kind"], "stderr", "{line}");
                assert_eq!(line["server"], "kit", "{line}");
                return;
            }
        }
    };
    until("written before anyone reads");
    say("written while following");
    until("written while following");
    drop(child);

    let read = sb.run(&["logs", "kit", "--gateway", &base]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    let text = &read.stdout;
    assert!(text.contains(" extpool started: ready, pid "), "{text}");
    assert!(
        text.contains(" stderr  written before anyone reads"),
        "{text}"
    );
    assert!(text.contains(" stderr  written while following"), "{text}");
    let missing = sb.run(&["logs", "nope", "--gateway", &base]);
    assert!(missing.stderr.contains("404"), "{}", missing.stderr);
    assert_eq!(sigterm(&mut served), 143);
}
