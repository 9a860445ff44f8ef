//! A real host's own install: Claude Code 2.1.328 (`claude plugin
//! marketplace add` + `claude plugin install`) and Gemini CLI 0.61
//! (`gemini extensions install`, its trust question answered on stdin)
//! install a local plugin into the sandbox's home, offline, and extpool —
//! with no configuration — serves what they installed; when the host
//! disables it, extpool stops serving it (a running gateway included).
//!
//! Both CLIs are installed by `scripts/peers.sh`; a missing one fails the
//! test, saying so.

use std::io::Write;
use std::process::{Command, Stdio};

use extpool_testkit::StateDir;
use extpool_testkit::peers::{claude, gemini};
use extpool_testkit::plugins::{claude_plugin, gemini_extension, grant_kits, kit_grants};
use serde_json::{Value, json};

use crate::discovery::sources_until;
use crate::serve::{Served, python, sigterm};
use crate::support::{Run, Sandbox};

/// Runs a host's command, `input` on its stdin; fails with its output
/// when it fails.
fn host(mut command: Command, args: &[&str], input: &str) -> String {
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start the host's CLI");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{args:?} failed: {text}");
    text
}

fn json(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether the configuration source serves `server` now.
fn serving(sources: &Value, server: &str) -> bool {
    sources["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["servers"].as_array().unwrap().iter().any(|s| s == server))
}

#[test]
fn what_claude_code_installs_is_served_and_gone_once_claude_code_disables_it() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    let market = sb.dir.path().join("market");
    grant_kits(&sb.home(), &["demo"], &[state.path()]);
    claude_plugin(&market.join("plugins/demo"), "demo", &state.args());
    std::fs::create_dir_all(market.join(".claude-plugin")).unwrap();
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        json!({"name": "mk", "owner": {"name": "tests"},
               "plugins": [{"name": "demo", "source": "./plugins/demo", "description": "Demo"}]})
        .to_string(),
    )
    .unwrap();
    let market_arg = market.display().to_string();
    host(
        claude(&sb.home()),
        &["plugin", "marketplace", "add", &market_arg],
        "",
    );
    host(claude(&sb.home()), &["plugin", "install", "demo@mk"], "");
    // What runs is Claude Code's copy: the marketplace can go.
    std::fs::remove_dir_all(&market).unwrap();

    let plugins = json(&sb.run(&["list", "plugins", "--json"]));
    let demo = &plugins[0];
    assert_eq!(demo["name"], "demo", "{plugins:#}");
    assert_eq!(demo["host"], "claude-code");
    assert_eq!(demo["id"], "demo@mk");
    assert_eq!(demo["enabled"], true);
    let call = sb.run(&["call", "mcp__plugin_demo_kit__echo", "message=from claude"]);
    assert_eq!(call.stdout.trim(), "from claude", "{}", call.stderr);
    let hi = sb.run(&["run", "/demo:hi", "Ada"]);
    assert!(hi.stdout.contains("Say hi to Ada."), "{}", hi.stderr);
    assert!(names(&json(&sb.run(&["list", "skills", "--json"]))).contains(&"demo:hello".into()));

    // A gateway serving it sees `claude plugin disable` within the
    // watcher's debounce.
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers: {{}}\nskills:\n  default_roots: false\n{}",
            kit_grants(&["demo"], &[state.path()])
        ),
    );
    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive=false"]);
    let mut served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let out = python(
        &["--url", &served.url],
        json!([{"op": "call", "name": "mcp__plugin_demo_kit__echo", "args": {"message": "served"}}]),
    );
    assert_eq!(out[1]["text"], json!(["served"]), "{out:?}");
    host(claude(&sb.home()), &["plugin", "disable", "demo@mk"], "");
    sources_until(&base, "Claude Code's disabled plugin gone", |s| {
        !serving(s, "plugin_demo_kit")
    });
    let out = python(&["--url", &served.url], json!([{"op": "list_tools"}]));
    let tools: Vec<String> = serde_json::from_value(out[1]["tools"].clone()).unwrap();
    assert!(
        !tools
            .iter()
            .any(|t| t.starts_with("mcp__plugin_demo_kit__")),
        "{tools:?}"
    );
    assert_eq!(sigterm(&mut served), 143);
    let plugins = json(&sb.run(&["list", "plugins", "--json"]));
    assert_eq!(plugins[0]["enabled"], false);
}

/// `extpool ARGS` run in `dir`.
fn run_in(sb: &Sandbox, dir: &std::path::Path, args: &[&str]) -> Run {
    let mut command = sb.command();
    command.current_dir(dir).args(args);
    crate::support::run(command)
}

#[test]
fn what_gemini_cli_installs_is_served_and_gone_once_gemini_cli_disables_it() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    let source = sb.dir.path().join("gext-src");
    grant_kits(&sb.home(), &["gext"], &[state.path()]);
    gemini_extension(&source, "gext", &state.args());
    let source_arg = source.display().to_string();
    // `--consent` accepts the third-party notice; the trust question about
    // the folder is still asked, and answered here.
    host(
        gemini(&sb.home()),
        &["extensions", "install", &source_arg, "--consent"],
        "y\n",
    );
    assert!(
        sb.home()
            .join(".gemini/extensions/gext/gemini-extension.json")
            .is_file()
    );
    // Gemini CLI's enablement is per working directory: a project under
    // the home folder, where its user-scope rules apply.
    let project = sb.home().join("project");
    std::fs::create_dir_all(&project).unwrap();

    let plugins = json(&run_in(&sb, &project, &["list", "plugins", "--json"]));
    assert_eq!(plugins[0]["name"], "gext", "{plugins:#}");
    assert_eq!(plugins[0]["host"], "gemini-cli");
    assert_eq!(plugins[0]["enabled"], true);
    let call = run_in(
        &sb,
        &project,
        &["call", "mcp__plugin_gext_kit__echo", "message=from gemini"],
    );
    assert_eq!(call.stdout.trim(), "from gemini", "{}", call.stderr);
    let greet = run_in(&sb, &project, &["run", "/gext:greet", "Bo"]);
    assert!(
        greet.stdout.contains("Greet Bo. Files: !{ls}"),
        "{}",
        greet.stderr
    );
    assert!(greet.stdout.contains("extpool ran and included nothing"));

    host(gemini(&sb.home()), &["extensions", "disable", "gext"], "");
    let mut listed = gemini(&sb.home());
    listed.current_dir(&project);
    let theirs = host(listed, &["extensions", "list"], "");
    assert!(
        theirs.contains("✗ gext"),
        "Gemini CLI says it is disabled here: {theirs}"
    );
    let plugins = json(&run_in(&sb, &project, &["list", "plugins", "--json"]));
    assert_eq!(plugins[0]["enabled"], false, "{plugins:#}");
    let tools = json(&run_in(&sb, &project, &["list", "tools", "--json"]));
    assert!(
        !names(&tools)
            .iter()
            .any(|t| t.starts_with("mcp__plugin_gext_kit__"))
    );
}
