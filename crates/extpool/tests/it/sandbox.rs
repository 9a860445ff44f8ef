//! Servers confined by a `sandbox:` profile, through the real CLI: the
//! testkit server's `--probe` tools try to read a key of the fixture
//! HOME, write outside the data directory, connect where the profile does
//! not allow, and read the gateway's environment — each is refused by the
//! kernel, while what the profile allows succeeds. Every probe is first
//! made of the same server unconfined, where it succeeds, so a denial is
//! the profile's doing.
//!
//! Listeners are waited on with a deadline (an accepted connection or
//! none), never a sleep.

use std::net::TcpListener;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::support::{Run, Sandbox, testkit};

/// Upper bound of a wait for a forwarded connection; reached only when broken.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// The variable the gateway holds that no confined server may see.
const SECRET: (&str, &str) = ("EXTPOOL_TEST_GATEWAY_SECRET", "s3cret-of-the-gateway");
/// A variable a profile passes by name.
const NAMED: (&str, &str) = ("EXTPOOL_TEST_NAMED", "passed-by-name");

/// A sandbox whose HOME holds an SSH key, with a `data` directory.
fn fixture() -> Sandbox {
    let sb = Sandbox::new();
    let ssh = sb.home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "PRIVATE KEY MATERIAL").unwrap();
    std::fs::create_dir_all(sb.work().join("data")).unwrap();
    sb
}

/// Writes extpool.yaml: the probing testkit server `probe` under
/// `sandbox` (YAML lines under `sandbox:`, or none), and an unconfined
/// probing testkit server `plain` beside it.
fn configure(sb: &Sandbox, sandbox: Option<&str>) {
    let bin = testkit().display().to_string();
    let profile = match sandbox {
        Some(lines) => format!("    sandbox:\n{lines}"),
        None => String::new(),
    };
    sb.write(
        "extpool.yaml",
        &format!(
            "skills:\n  default_roots: false\nmcp_servers:\n  probe:\n    command: {bin}\n    args: [--probe]\n{profile}  plain:\n    command: {bin}\n    args: [--probe]\n"
        ),
    );
}

/// Calls `tool` of `probe` with `args`; the tool's text and whether it succeeded.
fn call(sb: &Sandbox, tool: &str, args: &[String]) -> (bool, String) {
    let name = format!("mcp__probe__{tool}");
    let mut argv: Vec<&str> = vec!["call", &name];
    argv.extend(args.iter().map(String::as_str));
    let r: Run = sb.run_with(&argv, &[SECRET, NAMED]);
    if r.code == 0 {
        (true, r.stdout)
    } else {
        (false, r.stderr)
    }
}

pub(crate) fn arg(key: &str, value: impl std::fmt::Display) -> String {
    format!("{key}={value}")
}

/// Asserts the probe succeeded and returns its text.
pub(crate) fn allowed(result: (bool, String), what: &str) -> String {
    assert!(result.0, "{what} should succeed: {}", result.1);
    result.1
}

/// Asserts the probe was refused with `errno_text` and returns its text.
pub(crate) fn refused(result: (bool, String), what: &str, errno_text: &str) -> String {
    assert!(!result.0, "{what} should be refused: {}", result.1);
    assert!(
        result.1.contains(errno_text),
        "{what} should fail with {errno_text:?}: {}",
        result.1
    );
    result.1
}

/// A listener on `addr`, and a way to learn whether it accepted a
/// connection within [`PATIENCE`].
pub(crate) fn listener(addr: &str) -> (u16, mpsc::Receiver<()>) {
    let listener = TcpListener::bind(addr).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok((stream, _)) = listener.accept() {
            if tx.send(()).is_err() {
                break;
            }
            drop(stream);
        }
    });
    (port, rx)
}

fn key_path(sb: &Sandbox) -> String {
    sb.home().join(".ssh/id_ed25519").display().to_string()
}

#[test]
fn a_confined_server_is_refused_what_its_profile_does_not_allow_and_does_what_it_allows() {
    let sb = fixture();
    let data = sb.work().join("data");
    let outside = sb.work().join("outside.txt");
    let (allowed_port, allowed_accepts) = listener("127.0.0.1:0");
    // On every address, so that unconfined it is reachable both ways.
    let (other_port, _other_accepts) = listener("0.0.0.0:0");

    // Unconfined, every probe succeeds.
    configure(&sb, None);
    allowed(
        call(&sb, "read_file", &[arg("path", key_path(&sb))]),
        "reading the key unconfined",
    );
    allowed(
        call(
            &sb,
            "write_file",
            &[arg("path", outside.display()), arg("text", "x")],
        ),
        "writing outside unconfined",
    );
    std::fs::remove_file(&outside).unwrap();
    allowed(
        call(
            &sb,
            "connect",
            &[arg("address", format!("127.0.0.1:{other_port}"))],
        ),
        "connecting to another port unconfined",
    );
    allowed(
        call(
            &sb,
            "connect",
            &[arg("address", format!("127.0.0.2:{other_port}"))],
        ),
        "connecting to another address unconfined",
    );
    let env = allowed(
        call(&sb, "env", &[arg("name", SECRET.0)]),
        "the secret unconfined",
    );
    assert!(env.contains(SECRET.1), "{env}");
    let parent = allowed(
        call(&sb, "parent_environ", &[]),
        "the gateway's environment",
    );
    assert!(parent.contains(SECRET.0), "{parent}");

    // Confined.
    configure(
        &sb,
        Some(&format!(
            "      network: [\"127.0.0.1:{allowed_port}\"]\n      write: [{}]\n      env: [{}]\n",
            data.display(),
            NAMED.0
        )),
    );
    refused(
        call(&sb, "read_file", &[arg("path", key_path(&sb))]),
        "reading ~/.ssh/id_ed25519",
        "Permission denied",
    );
    let wrote = allowed(
        call(
            &sb,
            "write_file",
            &[
                arg("path", data.join("note.txt").display()),
                arg("text", "kept"),
            ],
        ),
        "writing in the data directory",
    );
    assert!(wrote.contains("wrote 4 bytes"), "{wrote}");
    assert_eq!(
        std::fs::read_to_string(data.join("note.txt")).unwrap(),
        "kept"
    );
    refused(
        call(
            &sb,
            "write_file",
            &[arg("path", outside.display()), arg("text", "x")],
        ),
        "writing outside the data directory",
        "Permission denied",
    );
    assert!(!outside.exists(), "nothing was written outside");
    refused(
        call(&sb, "read_file", &[arg("path", "/etc/shadow")]),
        "reading /etc/shadow",
        "Permission denied",
    );
    allowed(
        call(&sb, "read_file", &[arg("path", "/etc/passwd")]),
        "reading /etc/passwd",
    );

    let connected = allowed(
        call(
            &sb,
            "connect",
            &[arg("address", format!("127.0.0.1:{allowed_port}"))],
        ),
        "connecting to the allowed target",
    );
    assert!(connected.contains("connected"), "{connected}");
    allowed_accepts
        .recv_timeout(PATIENCE)
        .expect("the allowed target received the forwarded connection");
    refused(
        call(
            &sb,
            "connect",
            &[arg("address", format!("127.0.0.1:{other_port}"))],
        ),
        "connecting to another loopback port",
        "Connection refused",
    );
    refused(
        call(
            &sb,
            "connect",
            &[arg("address", format!("127.0.0.2:{other_port}"))],
        ),
        "connecting to a second address",
        "Connection refused",
    );
    refused(
        call(&sb, "connect", &[arg("address", "192.0.2.1:443")]),
        "connecting off the machine",
        "Network is unreachable",
    );

    let secret = allowed(
        call(&sb, "env", &[arg("name", SECRET.0)]),
        "asking for the secret",
    );
    assert_eq!(secret.trim(), "<unset>");
    let named = allowed(
        call(&sb, "env", &[arg("name", NAMED.0)]),
        "the named variable",
    );
    assert_eq!(named.trim(), NAMED.1);
    let home = allowed(call(&sb, "env", &[arg("name", "HOME")]), "HOME");
    assert!(
        home.trim().ends_with("sandbox/probe/home") && !home.contains(".ssh"),
        "HOME is a private directory: {home}"
    );
    refused(
        call(&sb, "parent_environ", &[]),
        "reading the gateway's environment through /proc",
        "Permission denied",
    );
    // The private HOME is the server's own: it may write there.
    allowed(
        call(
            &sb,
            "write_file",
            &[
                arg("path", format!("{}/cache", home.trim())),
                arg("text", "c"),
            ],
        ),
        "writing in its private HOME",
    );
}

#[test]
fn network_none_reaches_nothing_and_loopback_only_the_servers_own() {
    let sb = fixture();
    let (port, _accepts) = listener("127.0.0.1:0");
    let host_port = format!("127.0.0.1:{port}");
    configure(&sb, None);
    allowed(
        call(&sb, "connect", &[arg("address", &host_port)]),
        "unconfined",
    );

    configure(&sb, Some("      network: none\n"));
    refused(
        call(&sb, "connect", &[arg("address", &host_port)]),
        "a host port under network: none",
        "Network is unreachable",
    );
    configure(&sb, Some("      network: loopback\n"));
    refused(
        call(&sb, "connect", &[arg("address", &host_port)]),
        "a host port under network: loopback",
        "Connection refused",
    );
}

#[test]
fn an_allowed_dns_name_resolves_inside_the_sandbox_to_its_forwarder_and_no_other_does() {
    let sb = fixture();
    configure(&sb, Some("      network: [\"allowed.invalid:443\"]\n"));
    allowed(
        call(&sb, "connect", &[arg("address", "allowed.invalid:443")]),
        "connecting to the allowed name",
    );
    refused(
        call(&sb, "connect", &[arg("address", "allowed.invalid:80")]),
        "the allowed name on another port",
        "Connection refused",
    );
    let other = refused(
        call(&sb, "connect", &[arg("address", "other.invalid:443")]),
        "another name",
        "connecting to other.invalid:443",
    );
    assert!(!other.contains("connected"), "{other}");
}

#[test]
fn limits_are_the_servers_rlimits() {
    let sb = fixture();
    // The testkit server's threads have 256 MiB stacks, which count.
    configure(
        &sb,
        Some("      limits: {memory_mb: 8192, open_files: 96}\n"),
    );
    let limits = allowed(
        call(&sb, "read_file", &[arg("path", "/proc/self/limits")]),
        "reading its own limits",
    );
    let line = |name: &str| {
        limits
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert!(line("Max open files").contains("96 96"), "{limits}");
    assert!(
        line("Max data size").contains(&format!("{0} {0}", 8192u64 << 20)),
        "{limits}"
    );
}

#[test]
fn a_profile_that_cannot_be_enforced_refuses_its_server_loudly_and_the_others_work() {
    let sb = fixture();
    let root = rustix_like_is_root();
    // What this kernel cannot enforce here: the process limit for root
    // (exempt from RLIMIT_NPROC); a path that does not exist, everywhere.
    let profile = if root {
        "      limits: {processes: 16}\n"
    } else {
        "      read: [/nonexistent/extpool-test-dir]\n"
    };
    configure(&sb, Some(profile));
    let r = sb.run(&["list", "sources", "--json"]);
    assert_eq!(r.code, 1, "a failed source fails the listing: {}", r.stderr);
    let sources: Value = serde_json::from_str(&r.stdout).unwrap();
    let row = |name: &str| {
        sources
            .as_array()
            .or_else(|| sources["sources"].as_array())
            .and_then(|rows| rows.iter().find(|s| s["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no source {name}: {sources}"))
    };
    let probe = row("probe").to_string();
    let expected = if root {
        "the process limit cannot be enforced for root"
    } else {
        "cannot grant read access to /nonexistent/extpool-test-dir"
    };
    assert!(
        probe.contains("failed") && probe.contains(expected),
        "{probe}"
    );
    assert!(row("plain").to_string().contains("ready"), "{sources}");
    let r = sb.run(&["call", "mcp__plain__echo", "message=still here"]);
    assert_eq!((r.code, r.stdout.trim()), (0, "still here"), "{}", r.stderr);
}

/// Whether the tests run as root (the kernel exempts root from the
/// process limit), read from this process's status.
pub(crate) fn rustix_like_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

#[test]
fn list_servers_shows_each_servers_profile() {
    let sb = fixture();
    configure(
        &sb,
        Some("      network: [\"127.0.0.1:5432\"]\n      read: [data]\n      env: [LANG]\n"),
    );
    let r = sb.run(&["list", "servers", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: Value = serde_json::from_str(&r.stdout).unwrap();
    let probe = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "probe")
        .unwrap();
    assert_eq!(
        probe["sandbox"]["network"],
        serde_json::json!(["127.0.0.1:5432"])
    );
    assert_eq!(probe["sandbox"]["env"], serde_json::json!(["LANG"]));
    let plain = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "plain")
        .unwrap();
    assert_eq!(plain["sandbox"], Value::Null);
    let r = sb.run(&["list", "servers"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = |name: &str| {
        r.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        r.stdout.lines().next().unwrap().contains("SANDBOX"),
        "{}",
        r.stdout
    );
    assert!(
        line("probe").ends_with("network 127.0.0.1:5432; read 1 path; env LANG"),
        "{}",
        r.stdout
    );
    assert!(line("plain").ends_with("unconfined"), "{}", r.stdout);
}

#[test]
fn doctor_says_what_this_kernel_supports() {
    let sb = Sandbox::new();
    let r = sb.run(&["doctor", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let sandbox = &v["sandbox"];
    let abi = sandbox["landlock_abi"].as_u64().unwrap();
    if sandbox["supported"] == true {
        assert!(abi >= 3, "{sandbox}");
        assert_eq!(sandbox["confined_start"]["ok"], true, "{sandbox}");
        assert!(sandbox["confined_start_ms"].as_f64().unwrap() > 0.0);
    } else {
        assert!(sandbox["refusal"].is_string(), "{sandbox}");
    }
    let r = sb.run(&["doctor"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains(&format!("Landlock (file-system rules): ABI {abi}")),
        "{}",
        r.stdout
    );
}

#[test]
fn through_the_gateway_a_confined_servers_denials_are_its_tools_errors_and_the_others_work() {
    use crate::serve::{python, serve, sigterm};
    use serde_json::json;

    let sb = fixture();
    let (port, accepts) = listener("127.0.0.1:0");
    configure(
        &sb,
        Some(&format!("      network: [\"127.0.0.1:{port}\"]\n")),
    );
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0", "--toolhive=false"]);
    let out = python(
        &["--url", &served.url],
        json!([
            {"op": "call", "name": "mcp__probe__read_file", "args": {"path": key_path(&sb)}},
            {"op": "call", "name": "mcp__probe__connect", "args": {"address": format!("127.0.0.1:{port}")}},
            {"op": "call", "name": "mcp__probe__connect", "args": {"address": "127.0.0.2:1"}},
            {"op": "call", "name": "mcp__plain__read_file", "args": {"path": key_path(&sb)}},
        ]),
    );
    let text = |i: usize| out[i]["text"].to_string();
    assert_eq!(out[1]["is_error"], true, "{out:?}");
    assert!(text(1).contains("Permission denied"), "{out:?}");
    assert_eq!(out[2]["is_error"], false, "{out:?}");
    assert!(text(2).contains("connected"), "{out:?}");
    accepts
        .recv_timeout(PATIENCE)
        .expect("the allowed target was reached");
    assert_eq!(out[3]["is_error"], true, "{out:?}");
    assert!(text(3).contains("Connection refused"), "{out:?}");
    // The unconfined server beside it is unaffected (and reads what the
    // confined one may not: the denial is the profile's).
    assert_eq!(out[4]["is_error"], false, "{out:?}");
    assert!(text(4).contains("PRIVATE KEY MATERIAL"), "{out:?}");
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn config_check_locates_a_profiles_problems() {
    let sb = fixture();
    configure(
        &sb,
        Some("      env: [HOME]\n      write: [\"/\"]\n      limits: {open_files: 0}\n"),
    );
    let r = sb.run(&["config", "check"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    for expected in [
        "extpool.yaml:8:12: error: mcp_servers.probe.sandbox.env[0]: HOME is set by the sandbox itself",
        "error: mcp_servers.probe.sandbox.write[0]: write access to / would leave nothing confined",
        "error: mcp_servers.probe.sandbox.limits.open_files: expected a number of at least 1",
    ] {
        assert!(r.stderr.contains(expected), "{expected}\n{}", r.stderr);
    }
}

#[test]
fn read_paths_may_be_relative_to_the_config_or_name_variables() {
    let sb = fixture();
    let shared = sb.write("shared/readme.txt", "shared text");
    let docs = sb.write("docs/guide.txt", "guide text");
    configure(
        &sb,
        Some("      read: [shared, \"${EXTPOOL_TEST_DOCS}\"]\n"),
    );
    let read = |path: &Path| {
        let name = "mcp__probe__read_file".to_owned();
        let path = arg("path", path.display());
        sb.run_with(
            &["call", &name, &path],
            &[(
                "EXTPOOL_TEST_DOCS",
                &sb.work().join("docs").display().to_string(),
            )],
        )
    };
    let r = read(&shared);
    assert!(
        r.code == 0 && r.stdout.contains("shared text"),
        "{}",
        r.stderr
    );
    let r = read(&docs);
    assert!(
        r.code == 0 && r.stdout.contains("guide text"),
        "{}",
        r.stderr
    );
    let r = read(&sb.work().join("extpool.yaml"));
    assert!(
        r.code != 0 && r.stderr.contains("Permission denied"),
        "the config beside them is not granted: {}",
        r.stdout
    );
}
