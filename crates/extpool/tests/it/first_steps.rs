//! A newcomer's first commands, run through the binary: a configuration
//! file that does not parse is named as skipped by every command that
//! reads it (never "no configuration file found") and fails them as
//! `config check` fails.

use serde_json::Value;

use crate::support::Sandbox;

/// A `.mcp.json` cut short: its last line is missing.
const BROKEN: &str = "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"echo\"}\n  }\n";

#[test]
fn a_config_file_that_does_not_parse_is_named_as_skipped_and_fails_each_command() {
    let sb = Sandbox::new();
    sb.write(".mcp.json", BROKEN);
    let located = ".mcp.json:5:1: error: invalid JSON";

    let r = sb.run(&[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(located), "{}", r.stderr);
    assert!(
        !r.stdout.contains("no configuration file found"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains(".mcp.json  skipped  for the error above (extpool config check)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("extpool config check"), "{}", r.stdout);

    let r = sb.run(&["--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let overview: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(overview["skipped"], serde_json::json!([".mcp.json"]));

    let r = sb.run(&["list", "servers"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stdout.trim(),
        "no servers configured: .mcp.json skipped for the error above (see `extpool config check`)"
    );

    let r = sb.run(&["list", "tools"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("no tools: no server is configured (.mcp.json skipped"),
        "{}",
        r.stdout
    );

    let r = sb.run(&["call", "mcp__x__echo"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("(.mcp.json skipped for the error above: what it defines is not loaded)"),
        "{}",
        r.stderr
    );

    let r = sb.run(&["config", "check"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains(".mcp.json  skipped"), "{}", r.stdout);
}

#[test]
fn beside_a_good_config_a_skipped_file_is_listed_and_the_rest_works() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    sb.write(".mcp.json", BROKEN);
    let r = sb.run(&[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("  extpool.yaml"), "{}", r.stdout);
    assert!(
        r.stdout.lines().any(|l| l.starts_with("  .mcp.json ")
            && l.ends_with(" skipped  for the error above (extpool config check)")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("✓ testkit"), "{}", r.stdout);
    // A call of a server that loaded is not hindered.
    let r = sb.run(&["call", "mcp__testkit__echo", "message=hi"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "hi\n");
}

#[test]
fn a_call_missing_or_mistyping_arguments_is_refused_naming_them_and_their_types() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let last_line = |r: &crate::support::Run| r.stderr.lines().last().unwrap_or("").to_owned();

    let r = sb.run(&["call", "mcp__testkit__add"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        last_line(&r),
        "error: mcp__testkit__add: missing required arguments a (number), b (number); see `extpool describe mcp__testkit__add`"
    );

    let r = sb.run(&["call", "mcp__testkit__add", "a=two", "b=2"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        last_line(&r),
        "error: mcp__testkit__add: argument a is a string, the tool takes a number; see `extpool describe mcp__testkit__add`"
    );

    let r = sb.run(&["call", "mcp__testkit__add", "--args", r#"{"a": 1}"#]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        last_line(&r).contains("missing required argument b (number);"),
        "{}",
        r.stderr
    );

    // Where only a string is taken, a pair's value is the text typed.
    let r = sb.run(&["call", "mcp__testkit__echo", "message=42"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "42\n");
    let r = sb.run(&["call", "mcp__testkit__add", "a=2", "b=40"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "42\n"), "{}", r.stderr);
}

#[test]
fn a_configuration_error_is_said_once_each_line_with_one_severity() {
    let sb = Sandbox::new();
    sb.write("extpool.yaml", "mcp_servers:\n  a:\n    comand: x\n");
    for args in [&["list", "tools"][..], &[], &["call", "mcp__a__x"]] {
        let r = sb.run(args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert!(
            lines[0].starts_with("extpool.yaml:3:5: error: mcp_servers.a: unknown key \"comand\""),
            "{args:?}: {}",
            r.stderr
        );
        assert_eq!(
            lines.last(),
            Some(&"error: the configuration has 1 error"),
            "{args:?}: {}",
            r.stderr
        );
        for line in lines {
            assert!(line.matches("error:").count() <= 1, "{args:?}: {line}");
        }
    }
    // A cause the message quotes already is not repeated after it.
    let r = sb.run(&["--config", "nope.yaml", "list", "servers"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        "error: cannot read nope.yaml: No such file or directory (os error 2)\n"
    );
}

#[test]
fn an_entry_with_a_number_or_boolean_for_a_string_is_an_error_and_only_it_is_skipped() {
    let sb = Sandbox::new();
    let testkit = crate::support::testkit().display().to_string();
    sb.write(
        ".mcp.json",
        &format!(
            "{{\n  \"mcpServers\": {{\n    \"a\": {{\"command\": 7}},\n    \"b\": {{\"url\": false}},\n    \"ok\": {{\"command\": {testkit:?}}}\n  }}\n}}\n"
        ),
    );
    let a = ".mcp.json:3:22: error: mcpServers.a.command: expected a string, found an integer; this server is skipped";
    let b = ".mcp.json:4:18: error: mcpServers.b.url: expected a string, found a boolean; this server is skipped";
    let r = sb.run(&["config", "check"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains(a) && r.stderr.contains(b), "{}", r.stderr);
    let r = sb.run(&["list", "servers", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let servers: Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ok"]);
    // Every other server keeps working.
    let r = sb.run(&["call", "mcp__ok__echo", "message=hi"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"), "{}", r.stderr);
    assert!(r.stderr.contains(a), "{}", r.stderr);
}
