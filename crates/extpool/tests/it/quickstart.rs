//! The README's first command, run literally from the repository root:
//! `cargo run -p extpool -- serve` serves the example
//! configuration (the repository's `extpool.yaml`) to a real client, and
//! the commands the example suggests work on it.

use std::process::Command;

use serde_json::json;

use crate::serve::{Served, python, sigterm};
use crate::support::{Sandbox, repo_root, run};

/// `cargo run -p extpool -- serve` from `dir` (the repository
/// root, or elsewhere with `--manifest-path`), home in the sandbox.
fn first_command(sb: &Sandbox, dir: &std::path::Path) -> Served {
    let words: Vec<&str> = FIRST_COMMAND.split(' ').collect();
    let (verb, rest) = words[1..].split_first().unwrap();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(dir)
        .args([*verb, "--manifest-path"])
        .arg(repo_root().join("Cargo.toml"))
        .args(rest)
        .args(["--listen", "127.0.0.1:0"])
        .env("HOME", sb.home())
        .env("NO_COLOR", "1");
    Served::spawn(cmd)
}

/// The README's first command, as written there.
const FIRST_COMMAND: &str = "cargo run -p extpool -- serve";

#[test]
fn the_readme_opens_with_the_command_these_tests_run() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let first = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|block| block.lines().next())
        .unwrap_or_default();
    assert!(
        first.starts_with(&format!("{FIRST_COMMAND} ")),
        "README.md's first command is {first:?}; these tests run {FIRST_COMMAND:?}"
    );
}

#[test]
fn the_first_readme_command_serves_the_example_configuration() {
    let sb = Sandbox::new();
    let mut served = first_command(&sb, &repo_root());
    let out = python(
        &["--url", &served.url],
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "mcp__testkit__add", "args": {"a": 2, "b": 3}},
            {"op": "get_prompt", "name": "release-notes", "args": {"arguments": "v1.2.0"}},
            {"op": "read", "uri": "skill://release-notes/references/format.md"},
        ]),
    );
    let tools = out[1]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t == "mcp__testkit__echo"), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "mcp__testkit__crash"),
        "denied by the example's permissions: {tools:?}"
    );
    assert_eq!(out[2]["text"], json!(["5"]));
    assert!(
        out[3]["text"][0]
            .as_str()
            .unwrap()
            .contains("# Release notes for v1.2.0")
    );
    assert!(out[4]["text"][0].is_string());
    assert_eq!(sigterm(&mut served), 143);

    // The commands the example configuration suggests work from the root.
    let exe = env!("CARGO_BIN_EXE_extpool");
    let q = |args: &[&str]| {
        let mut c = Command::new(exe);
        c.current_dir(repo_root()).env("HOME", sb.home()).args(args);
        run(c)
    };
    let r = q(&["run", "/release-notes", "v1.2.0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("# Release notes for v1.2.0"),
        "{}",
        r.stdout
    );
    let r = q(&["call", "mcp__testkit__add", "a=2", "b=3"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "5\n"), "{}", r.stderr);
    let r = q(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("✓ testkit"), "{}", r.stdout);
}

/// The same command elsewhere, on a machine with no configuration at all:
/// it serves what it finds (nothing but the built-in tools).
#[test]
fn the_first_readme_command_serves_an_empty_machine() {
    let sb = Sandbox::new();
    let mut served = first_command(&sb, &sb.work());
    let out = python(&["--url", &served.url], json!([{"op": "list_tools"}]));
    let tools = out[1]["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .all(|t| !t.as_str().unwrap().starts_with("mcp__")),
        "{tools:?}"
    );
    assert_eq!(sigterm(&mut served), 143);
}
