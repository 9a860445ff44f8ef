//! Each command against the testkit example server and local skills.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::Sandbox;

const SKILL: &str = "---\nname: hello\ndescription: Greets someone. Use when asked to greet.\narguments: [who]\n---\nSay hello to $who.\n";

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("skills/hello/SKILL.md", SKILL);
    sb.testkit_config("skills:\n  paths: [./skills]\n");
    sb
}

#[test]
fn no_arguments_works_without_any_config() {
    let sb = Sandbox::new();
    let r = sb.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("no configuration file found"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("Try next"), "{}", r.stdout);
    assert!(r.stdout.contains("extpool config paths"), "{}", r.stdout);
}

#[test]
fn overview_lists_servers_skills_and_next_steps() {
    let sb = sandbox();
    let r = sb.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("✓ testkit  ready"), "{}", r.stdout);
    assert!(r.stdout.contains("hello"), "{}", r.stdout);
    assert!(
        r.stdout.contains("extpool call mcp__testkit__add a=1 b=1"),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("testkit: ready in "), "{}", r.stderr);
    assert!(r.stderr.contains("1 of 1 server ready"), "{}", r.stderr);
}

#[test]
fn list_tools_json_is_stable() {
    let sb = sandbox();
    let r = sb.run(&["list", "tools", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.is_empty(),
        "--json keeps stderr quiet: {}",
        r.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    insta::assert_json_snapshot!("tool_names", names);
    let echo = v
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__testkit__echo")
        .unwrap();
    assert_eq!(echo["server"], "testkit");
    assert_eq!(echo["tool"], "echo");
}

#[test]
fn list_skills_commands_resources_sources() {
    let sb = sandbox();
    let r = sb.run(&["list", "skills", "--hosted", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    insta::assert_json_snapshot!("skills", v);
    let r = sb.run(&["list", "commands", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    insta::assert_json_snapshot!("commands", v);
    let r = sb.run(&["list", "resources"]);
    assert!(r.stdout.contains("testkit://info"), "{}", r.stdout);
    let r = sb.run(&["list", "sources"]);
    assert!(r.stdout.contains("server  testkit  ready"), "{}", r.stdout);
    // A skill root says nothing in the servers' IMPLEMENTATION column.
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("skills  skills   found  ") && l.ends_with("  1 skill")),
        "{}",
        r.stdout
    );
    let r = sb.run(&["list"]);
    assert!(
        r.stdout.contains("TOOLS") && r.stdout.contains("RESOURCES"),
        "{}",
        r.stdout
    );
}

#[test]
fn call_with_pairs_and_json() {
    let sb = sandbox();
    let r = sb.run(&["call", "mcp__testkit__add", "a=2", "b=3"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "5\n"), "{}", r.stderr);
    let r = sb.run(&[
        "call",
        "mcp__testkit__echo",
        "--args",
        r#"{"message": "hi there"}"#,
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    insta::assert_json_snapshot!(v, @r#"
    {
      "is_error": false,
      "parts": [
        {
          "text": "hi there",
          "type": "text"
        }
      ]
    }
    "#);
}

#[test]
fn call_errors_and_usage() {
    let sb = sandbox();
    let r = sb.run(&["call", "mcp__testkit__ech", "message=x"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "unknown tool mcp__testkit__ech; did you mean mcp__testkit__echo?; see `extpool list tools`"
        ),
        "{}",
        r.stderr
    );
    let r = sb.run(&["call", "mcp__testkit__add", "--args", "{nope"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--args is not valid JSON"),
        "{}",
        r.stderr
    );
    let r = sb.run(&["frobnicate"]);
    assert_eq!(r.code, 2);
    let r = sb.run_with(&["call", "mcp__testkit__echo", "message=x"], &[]);
    assert_eq!(r.code, 0);
}

#[test]
fn permissions_hide_and_refuse_denied_tools() {
    let sb = Sandbox::new();
    sb.testkit_config("permissions:\n  deny: [\"mcp__testkit__ad*\"]\n");
    let r = sb.run(&["list", "tools", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("\"mcp__testkit__echo\""), "{}", r.stdout);
    assert!(!r.stdout.contains("mcp__testkit__add\""), "{}", r.stdout);
    let r = sb.run(&["call", "mcp__testkit__add", "a=1", "b=2"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("denied by deny rule"), "{}", r.stderr);
}

#[test]
fn read_skills_and_resources() {
    let sb = sandbox();
    let r = sb.run(&["read", "skill://hello/SKILL.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("---\nname: hello"), "{}", r.stdout);
    let r = sb.run(&["read", "skill://testkit-skill/SKILL.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("name: testkit-skill"), "{}", r.stdout);
    let r = sb.run(&["read", "testkit://info"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = sb.run(&["read", "skill://hello/../../etc/passwd"]);
    assert_eq!(r.code, 1);
    let r = sb.run(&["read", "skill://nobody/SKILL.md"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("known skills: hello, testkit-skill"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_unknown_skill_lists_a_bounded_number_of_known_ones() {
    let sb = Sandbox::new();
    for i in 0..500 {
        sb.write(
            &format!("skills/s{i:03}/SKILL.md"),
            &format!("---\nname: s{i:03}\ndescription: skill {i}\n---\nbody\n"),
        );
    }
    sb.write(
        "extpool.yaml",
        "skills:\n  paths: [./skills]\n  default_roots: false\n",
    );
    let r = sb.run(&["read", "skill://nobody/SKILL.md"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("known skills: s000, s001, ")
            && r.stderr
                .contains("s019, … and 480 more; see `extpool list skills`"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("s020"), "{}", r.stderr);
    assert!(
        r.stderr.len() < 1000,
        "{} bytes: {}",
        r.stderr.len(),
        r.stderr
    );
}

#[test]
fn run_skill_and_prompt_commands() {
    let sb = sandbox();
    // Rendered by the skill manager: the skill's base directory, then the body.
    let r = sb.run(&["run", "/hello", "Ada"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with("Base directory for this skill: ")
            && r.stdout.contains("hello\n\nSay hello to Ada.\n"),
        "{}",
        r.stdout
    );
    let r = sb.run(&["run", "/mcp__testkit__greet", "name=Ada"]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "Hello, Ada!\n"),
        "{}",
        r.stderr
    );
    let r = sb.run(&["run", "/helo"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("did you mean /hello?"), "{}", r.stderr);
}

#[test]
fn skills_validate_strict_and_lenient() {
    let sb = Sandbox::new();
    sb.write(
        "skills/good/SKILL.md",
        "---\nname: good\ndescription: Fine.\n---\nBody\n",
    );
    sb.write(
        "skills/Bad_Name/SKILL.md",
        "---\nname: Bad_Name\ndescription: Bad.\nunknown: 1\n---\nBody\n",
    );
    let r = sb.run(&["skills", "validate", "skills"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = sb.run(&["skills", "validate", "--strict", "skills"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("skills/Bad_Name/SKILL.md:2: error:"),
        "{}",
        r.stdout
    );
    let r = sb.run(&["skills", "validate", "--strict", "skills/good", "--json"]);
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    insta::assert_json_snapshot!(v, @r#"
    {
      "mode": "strict",
      "problems": [],
      "skills": 1,
      "valid": 1,
      "with_errors": 0
    }
    "#);
}

#[test]
fn completions_for_each_shell() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let r = sb.run(&["completions", shell]);
        assert_eq!(r.code, 0, "{shell}");
        assert!(r.stdout.contains("extpool"), "{shell}");
    }
}

#[test]
fn help_documents_exit_codes_and_examples() {
    let sb = Sandbox::new();
    let r = sb.run(&["--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("2  usage error"), "{}", r.stdout);
    for cmd in [
        "list",
        "call",
        "describe",
        "read",
        "run",
        "watch",
        "completions",
    ] {
        let r = sb.run(&[cmd, "--help"]);
        assert!(r.stdout.contains("Examples:"), "{cmd}: {}", r.stdout);
    }
}

#[test]
fn closed_stdout_exits_quietly() {
    let sb = sandbox();
    let mut cmd = sb.command();
    cmd.args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn watch_streams_skill_changes_until_interrupted() {
    let sb = sandbox();
    let mut cmd = sb.command();
    cmd.args(["watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut err_lines = BufReader::new(stderr).lines();
    let started = Instant::now();
    loop {
        let line = err_lines.next().expect("watch ended early").unwrap();
        if line.starts_with("watching ") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "watch did not start"
        );
    }
    sb.write(
        "skills/later/SKILL.md",
        "---\nname: later\ndescription: Added later.\n---\nBody\n",
    );
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = lines.next().expect("an event").unwrap();
    let event: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(event["kind"], "skills_changed");
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn listings_exit_1_when_a_configured_server_failed_and_still_show_the_rest() {
    let sb = Sandbox::new();
    sb.testkit_config(
        "  broken:\n    command: ./does-not-exist\nskills:\n  default_roots: false\n",
    );
    for args in [&[][..], &["list", "tools"], &["list", "sources", "--json"]] {
        let r = sb.run(args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(r.stdout.contains("testkit"), "{args:?}: {}", r.stdout);
    }
    let r = sb.run(&["list", "servers"]);
    assert_eq!(r.code, 0, "list servers starts nothing: {}", r.stderr);
    let healthy = sandbox();
    assert_eq!(healthy.run(&["list", "tools"]).code, 0);
}

#[test]
fn the_examples_of_help_run_as_written() {
    let sb = sandbox();
    let mut examples = Vec::new();
    for help in [sb.run(&["--help"]), sb.run(&["call", "--help"])] {
        for line in help.stdout.lines() {
            let line = line.trim();
            if line.starts_with("extpool call mcp__testkit__")
                || line.starts_with("extpool describe mcp__testkit__")
            {
                examples.push(line.to_owned());
            }
        }
    }
    assert!(examples.len() >= 4, "{examples:?}");
    for example in examples {
        // The example's words, up to the two-space gap before its comment.
        let command = example.split("  ").next().unwrap();
        let mut shell = std::process::Command::new("sh");
        shell
            .arg("-c")
            .arg(command.replacen("extpool", "\"$EXTPOOL\"", 1))
            .current_dir(sb.work())
            .env("EXTPOOL", env!("CARGO_BIN_EXE_extpool"))
            .env("HOME", sb.home())
            .env("XDG_CONFIG_HOME", sb.home().join(".config"))
            .env_remove("EXTPOOL_CONFIG");
        let r = crate::support::run(shell);
        assert_eq!(r.code, 0, "{command}: {}", r.stderr);
    }
}

#[test]
fn describe_shows_a_tools_arguments_and_a_call_to_try() {
    let sb = sandbox();
    let r = sb.run(&["describe", "mcp__testkit__add"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("tool add of server testkit"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("read-only"), "{}", r.stdout);
    let arg_a = r
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("a "))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(arg_a.contains("number") && arg_a.contains("yes"), "{arg_a}");
    assert!(
        r.stdout.contains("extpool call mcp__testkit__add a=1 b=1"),
        "{}",
        r.stdout
    );
    let r = sb.run(&["describe", "mcp__testkit__add", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["input_schema"]["required"], serde_json::json!(["a", "b"]));
    assert_eq!(v["annotations"]["readOnlyHint"], true);
    let r = sb.run(&["describe", "add"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("unknown tool add; did you mean mcp__testkit__add?"),
        "{}",
        r.stderr
    );
}

#[test]
fn list_resources_shows_resource_templates() {
    let sb = Sandbox::new();
    sb.testkit_config("    args: [--conformance]\nskills:\n  default_roots: false\n");
    let r = sb.run(&["list", "resources"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("test://template/{id}/data"))
        .unwrap_or_else(|| panic!("no template row:\n{}", r.stdout));
    assert!(
        row.contains("testkit") && row.contains("JSON data for any id"),
        "{row}"
    );
    assert!(r.stdout.contains("URI TEMPLATE"), "{}", r.stdout);
    let r = sb.run(&["list", "templates", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["uri_template"], "test://template/{id}/data");
    assert_eq!(v[0]["server"], "testkit");
    let r = sb.run(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["templates"][0]["uri_template"],
        "test://template/{id}/data"
    );
}

#[test]
fn a_call_without_the_server_prefix_suggests_the_tools_full_name() {
    let sb = sandbox();
    let r = sb.run(&["call", "add", "a=2", "b=3"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "nothing was called: {}", r.stdout);
    let line = r
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{}", r.stderr));
    assert!(line.starts_with("error: unknown tool add; "), "{line}");
    let suggested = line
        .split_once("did you mean ")
        .and_then(|(_, rest)| rest.split_once('?'))
        .map(|(name, _)| name)
        .unwrap_or_else(|| panic!("no suggestion in: {line}"));
    assert_eq!(suggested, "mcp__testkit__add", "{line}");
    // The suggestion, run as written, is the call that was meant.
    let r = sb.run(&["call", suggested, "a=2", "b=3"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "5\n"), "{}", r.stderr);
}
