//! What the command line gets from the host: skill-embedded servers,
//! calls that start only their own server, the one server-name rule.

use crate::support::{Sandbox, testkit};

/// A skill that embeds the testkit server (with a state directory).
fn embedding_skill(sb: &Sandbox, state: &extpool_testkit::StateDir) {
    sb.write(
        "skills/code-review/SKILL.md",
        &format!(
            "---\nname: code-review\ndescription: Review code with the test server\nmcp_servers:\n  testkit:\n    command: {}\n    args: {}\n---\nReview, then call echo.\n",
            testkit().display(),
            serde_json::to_string(&state.args()).unwrap()
        ),
    );
    sb.write(
        "extpool.yaml",
        "skills:\n  paths: [./skills]\n  default_roots: false\n",
    );
}

#[test]
fn a_skill_embedded_server_contributes_tools_to_list_and_call() {
    let sb = Sandbox::new();
    let state = extpool_testkit::StateDir::new();
    embedding_skill(&sb, &state);
    let r = sb.run(&["list", "tools"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("mcp__code_review_testkit__echo"),
        "{}",
        r.stdout
    );
    let r = sb.run(&["call", "mcp__code_review_testkit__echo", "message=hi"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "hi");
    let r = sb.run(&["list", "sources"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = r
        .stdout
        .lines()
        .find(|l| l.contains("code_review_testkit"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(row.contains("embedded") && row.contains("ready"), "{row}");
}

#[test]
fn a_skill_whose_server_fails_is_still_readable_and_the_failure_listed() {
    let sb = Sandbox::new();
    sb.write(
        "skills/broken/SKILL.md",
        "---\nname: broken\ndescription: Needs a missing server\nmcp_servers:\n  nowhere:\n    command: /nonexistent/mcp-server\n---\nBroken body.\n",
    );
    sb.write(
        "extpool.yaml",
        "skills:\n  paths: [./skills]\n  default_roots: false\n",
    );
    let r = sb.run(&["read", "skill://broken/SKILL.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Broken body."), "{}", r.stdout);
    let r = sb.run(&["list", "sources", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "broken_nowhere")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(row["kind"], "embedded");
    assert_eq!(row["state"], "unavailable");
    assert!(
        row["detail"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/mcp-server"),
        "{row}"
    );
}

/// A sandbox with server `ok` and server `hung`, which never answers
/// initialize, each with its own state directory.
fn ok_and_hung() -> (
    Sandbox,
    extpool_testkit::StateDir,
    extpool_testkit::StateDir,
) {
    let sb = Sandbox::new();
    let ok = extpool_testkit::StateDir::new();
    let hung = extpool_testkit::StateDir::new();
    let args = |state: &extpool_testkit::StateDir, extra: &[&str]| {
        let mut a = state.args();
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        serde_json::to_string(&a).unwrap()
    };
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  ok:\n    command: {bin}\n    args: {}\n  hung:\n    command: {bin}\n    args: {}\nskills:\n  default_roots: false\n",
            args(&ok, &[]),
            args(&hung, &["--hang-on-initialize"]),
            bin = testkit().display()
        ),
    );
    (sb, ok, hung)
}

#[test]
fn a_call_starts_only_its_own_server() {
    // Calling a tool of `ok` must not start `hung` at all (and so never
    // wait for it).
    let (sb, ok, hung) = ok_and_hung();
    let r = sb.run(&["call", "mcp__ok__add", "a=2", "b=3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "5");
    assert_eq!(ok.starts(), 1);
    assert_eq!(hung.starts(), 0, "the unrelated server was started");
    assert!(!r.stderr.contains("hung"), "{}", r.stderr);
}

#[test]
fn a_built_in_that_names_its_server_starts_only_that_one() {
    // CallMcpWithQuery, ReadMcpResource and ListMcpResources name their
    // server in their arguments: `hung` is never started (its state
    // directory records no start), so nothing waits for it.
    let (sb, ok, hung) = ok_and_hung();
    for (call, answer) in [
        (
            &[
                "CallMcpWithQuery",
                "server=ok",
                "tool=add",
                r#"args={"a":2,"b":3}"#,
                "jq_filter=.",
            ][..],
            "5",
        ),
        (
            &["ReadMcpResource", "server=ok", "uri=testkit://info"],
            "testkit",
        ),
        (&["ListMcpResources", "server=ok"], "testkit://info"),
    ] {
        let r = sb.run(&[&["call"][..], call].concat());
        assert_eq!(r.code, 0, "{call:?}: {}", r.stderr);
        assert!(r.stdout.contains(answer), "{call:?}: {}", r.stdout);
        assert!(!r.stderr.contains("hung"), "{call:?}: {}", r.stderr);
        assert!(!r.stderr.contains("note:"), "{call:?}: {}", r.stderr);
    }
    assert_eq!(ok.starts(), 3);
    assert_eq!(hung.starts(), 0, "the unrelated server was started");
}

#[test]
fn a_built_in_naming_no_server_or_an_unknown_one_starts_every_server_and_says_so() {
    let sb = Sandbox::new();
    let (one, two) = (
        extpool_testkit::StateDir::new(),
        extpool_testkit::StateDir::new(),
    );
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  one:\n    command: {bin}\n    args: {}\n  two:\n    command: {bin}\n    args: {}\nskills:\n  default_roots: false\n",
            serde_json::to_string(&one.args()).unwrap(),
            serde_json::to_string(&two.args()).unwrap(),
            bin = testkit().display()
        ),
    );
    let r = sb.run(&[
        "call",
        "CallMcpWithQuery",
        "server=nope",
        "tool=add",
        "jq_filter=.",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "note: CallMcpWithQuery names \"nope\", which is not a configured server; starting every server"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("error: unknown MCP server \"nope\""),
        "{}",
        r.stderr
    );
    let r = sb.run(&["call", "ReadMcpResource", "uri=testkit://info"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("note: ReadMcpResource names no server (server=…); starting every server"),
        "{}",
        r.stderr
    );
    assert_eq!((one.starts(), two.starts()), (2, 2));
}

/// [`ok_and_hung`] with a local skill `hello` that has a command.
fn ok_hung_and_a_skill() -> (
    Sandbox,
    extpool_testkit::StateDir,
    extpool_testkit::StateDir,
) {
    let (sb, ok, hung) = ok_and_hung();
    sb.write(
        "skills/hello/SKILL.md",
        "---\nname: hello\ndescription: Greets someone.\n---\nSay hello to $ARGUMENTS.\n",
    );
    let config = std::fs::read_to_string(sb.work().join("extpool.yaml")).unwrap();
    sb.write(
        "extpool.yaml",
        &config.replace("skills:\n", "skills:\n  paths: [./skills]\n"),
    );
    (sb, ok, hung)
}

#[test]
fn local_skills_are_listed_read_and_run_without_starting_a_server() {
    // A server that hangs on initialize must not delay what only local
    // skills answer: no server is started for them at all.
    let (sb, ok, hung) = ok_hung_and_a_skill();
    let r = sb.run(&["list", "skills"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("hello"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("`extpool list skills --hosted` starts the servers"),
        "{}",
        r.stdout
    );
    let r = sb.run(&["list", "skills", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let skills: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(skills[0]["name"], "hello", "{skills}");
    let r = sb.run(&["read", "skill://hello/SKILL.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Say hello to"), "{}", r.stdout);
    let r = sb.run(&["run", "/hello", "Ada"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Say hello to Ada."), "{}", r.stdout);
    assert_eq!(
        ok.starts() + hung.starts(),
        0,
        "a server was started for a local skill"
    );
    assert!(!r.stderr.contains("hung"), "{}", r.stderr);
}

#[test]
fn a_prompt_command_starts_only_its_own_server() {
    let (sb, ok, hung) = ok_and_hung();
    let r = sb.run(&["run", "/mcp__ok__greet", "name=Ada"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Ada"), "{}", r.stdout);
    assert_eq!(ok.starts(), 1);
    assert_eq!(hung.starts(), 0, "the unrelated server was started");
}

#[test]
fn a_tool_of_a_server_not_configured_starts_nothing_and_says_so() {
    let (sb, ok, hung) = ok_and_hung();
    let r = sb.run(&["call", "mcp__okk__add", "a=2", "b=3"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "error: unknown tool mcp__okk__add; did you mean mcp__ok__add?; see `extpool list tools`"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(ok.starts() + hung.starts(), 0, "a server was started");
}

#[test]
fn a_name_the_catalog_would_refuse_is_refused_by_config_check() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        "mcp_servers:\n  ok:\n    command: x\n  a__b:\n    command: y\n",
    );
    let r = sb.run(&["config", "check"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            "extpool.yaml:4:3: error: mcp_servers.a__b: server name \"a__b\" contains '__', the separator of catalog names"
        ),
        "{}",
        r.stderr
    );
}
