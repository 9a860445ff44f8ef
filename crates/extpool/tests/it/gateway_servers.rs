//! A running gateway's servers from the command line, through the binary
//! against `extpool serve`: `tools disable | enable` (a deny rule in
//! extpool.yaml that the gateway's configuration watcher applies).

use std::time::{Duration, Instant};

use extpool_testkit::{StateDir, stdio_command};
use serde_json::json;

use crate::discovery::tools;
use crate::serve::{Served, sigterm};
use crate::support::Sandbox;

/// How long a change may take to reach the gateway's clients.
const PATIENCE: Duration = Duration::from_secs(60);

/// extpool.yaml serving `kit` (a testkit server), as a person wrote it.
fn config(kit: &StateDir) -> String {
    let (program, args) = stdio_command(kit.args()).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "# the team's gateway\nmcp_servers:\n  kit:   # the test kit\n    command: {:?}\n    args: [{}]\n\nskills:\n  default_roots: false\n  watch: false\n",
        program.display().to_string(),
        args.join(", ")
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
