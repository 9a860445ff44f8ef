//! Every class of configuration error, with its file:line:column message,
//! through `extpool config check` as a user runs it.

use crate::support::Sandbox;

fn check_fails(file: &str, text: &str, expected: &[&str]) {
    let sb = Sandbox::new();
    sb.write(file, text);
    let r = sb.run(&["--config", file, "config", "check"]);
    assert_eq!(r.code, 1, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    for line in expected {
        assert!(
            r.stderr.contains(line),
            "expected {line:?} in stderr:\n{}",
            r.stderr
        );
    }
}

#[test]
fn yaml_syntax_error() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  a:\n    command: x\n   args: [1\n",
        &["extpool.yaml:4:", ": error: invalid YAML: "],
    );
}

#[test]
fn unknown_key_with_did_you_mean() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  github:\n    comand: npx\n",
        &[
            "extpool.yaml:3:5: error: mcp_servers.github: unknown key \"comand\"",
            "help: did you mean \"command\"? expected one of: command, args, env",
        ],
    );
    check_fails(
        "extpool.yaml",
        "skils:\n  paths: []\n",
        &[
            "extpool.yaml:1:1: error: unknown key \"skils\"",
            "did you mean \"skills\"?",
        ],
    );
}

#[test]
fn wrong_type_names_what_was_expected() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  a:\n    command: x\n    args: --verbose\n",
        &["extpool.yaml:4:11: error: mcp_servers.a.args: expected a list, found a string"],
    );
    check_fails(
        "extpool.yaml",
        "extensions:\n  max_clients: many\n",
        &[
            "extpool.yaml:2:16: error: extensions.max_clients: expected a non-negative integer, found a string",
        ],
    );
}

#[test]
fn unknown_value_with_did_you_mean() {
    check_fails(
        "extpool.yaml",
        "skills:\n  validation: strcit\n",
        &[
            "extpool.yaml:2:15: error: skills.validation: unknown value \"strcit\", expected one of: lenient, strict",
            "did you mean \"strict\"?",
        ],
    );
}

#[test]
fn duplicate_key() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  a:\n    command: x\n  a:\n    command: y\n",
        &["extpool.yaml:4:3: error: invalid YAML: duplicate key \"a\" (first defined at line 2)"],
    );
}

#[test]
fn invalid_and_colliding_server_names() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  my-server:\n    command: x\n  GitHub:\n    command: y\n  github:\n    command: z\n",
        &[
            "extpool.yaml:2:3: error: mcp_servers.my-server: server name \"my-server\" has '-' at byte 2; only ASCII letters, digits and '_' are allowed (for example \"my_server\")",
            "extpool.yaml:6:3: error: mcp_servers.github: server name \"github\" collides with \"GitHub\" (line 4): names must be unique ignoring case",
        ],
    );
}

#[test]
fn missing_or_double_transport() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  none:\n    args: [x]\n  both:\n    command: x\n    url: https://h/mcp\n",
        &[
            "extpool.yaml:2:3: error: mcp_servers.none: needs either `command` (stdio) or `url` (streamable HTTP)",
            "extpool.yaml:4:3: error: mcp_servers.both: has both `command` and `url`; choose one transport",
        ],
    );
}

#[test]
fn malformed_variable_reference() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  a:\n    url: https://h/mcp\n    headers:\n      Authorization: Bearer ${TOKEN\n",
        &[
            "extpool.yaml:5:22: error: mcp_servers.a.headers.Authorization: malformed variable reference",
        ],
    );
}

#[test]
fn json_and_toml_syntax_errors() {
    check_fails(
        ".mcp.json",
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}\n",
        &[".mcp.json:4:5: error: invalid JSON: expected `,` or `}`, found '\"'"],
    );
    check_fails(
        "config.toml",
        "[mcp_servers.a]\ncommand = \n",
        &["config.toml:2:", ": error: invalid TOML: "],
    );
}

#[test]
fn foreign_entry_errors_are_located() {
    check_fails(
        ".mcp.json",
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": \"-y\"}\n}}\n",
        &[
            ".mcp.json:2:33: error: mcpServers.a.args: expected a list, found a string; this server is skipped",
        ],
    );
}

#[test]
fn valid_config_passes_and_reports_unset_variables() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        "mcp_servers:\n  gh:\n    url: https://h/mcp\n    headers:\n      Authorization: Bearer ${EXTPOOL_TEST_UNSET_TOKEN}\n",
    );
    let r = sb.run(&["config", "check"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("ok: 1 server, 1 warning"), "{}", r.stdout);
    assert!(
        r.stderr.contains("extpool.yaml:2:3: warning: mcp_servers.gh.headers.Authorization: environment variable EXTPOOL_TEST_UNSET_TOKEN is not set"),
        "{}",
        r.stderr
    );
}

#[test]
fn errors_as_json() {
    let sb = Sandbox::new();
    sb.write("extpool.yaml", "mcp_servers:\n  a:\n    comand: x\n");
    let r = sb.run(&["config", "check", "--json"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    insta::assert_json_snapshot!(v, @r#"
    {
      "diagnostics": [
        {
          "file": "extpool.yaml",
          "help": "did you mean \"command\"? expected one of: command, args, env, cwd, url, headers, insecure_http, request_timeout_ms, startup_timeout_ms, max_message_bytes, lazy, tools, reconnect, protocol, allow_env, sandbox, prefix, enabled, oauth",
          "message": "unknown key \"comand\"",
          "path": "mcp_servers.a",
          "pos": {
            "column": 5,
            "line": 3
          },
          "severity": "error"
        }
      ],
      "ok": false,
      "sources": []
    }
    "#);
}

#[test]
fn a_skipped_foreign_file_fails_check_and_the_project_still_runs() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    // One bad byte in the user's Claude Code file, a TOML syntax error in
    // Codex's, and a trailing comma Claude Code itself would refuse.
    std::fs::write(
        sb.home().join(".claude.json"),
        b"{\"mcpServers\": {\"u\": {\"command\": \"caf\xe9\"}}}",
    )
    .unwrap();
    std::fs::create_dir_all(sb.home().join(".codex")).unwrap();
    std::fs::write(
        sb.home().join(".codex/config.toml"),
        "[mcp_servers.x]\ncommand = \n",
    )
    .unwrap();
    sb.write(
        ".mcp.json",
        "{\"mcpServers\": {\"t\": {\"command\": \"x\", \"lazy\": true, \"args\": [\"y\",]}}}",
    );

    let r = sb.run(&["config", "check"]);
    assert_eq!(r.code, 1, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    for line in [
        "~/.claude.json:1:38: error: invalid UTF-8 (byte 37 of the file); the file is skipped",
        "~/.codex/config.toml:2:11: error: invalid TOML: ",
        ".mcp.json:1:",
        "warning: trailing comma: extpool accepts it, but Claude Code reads this file as strict JSON and rejects it",
    ] {
        assert!(r.stderr.contains(line), "{line:?} in:\n{}", r.stderr);
    }
    assert!(r.stdout.contains("✓ extpool.yaml"), "{}", r.stdout);
    assert!(
        r.stdout.contains("✗ ~/.claude.json  skipped")
            && r.stdout.contains("✗ ~/.codex/config.toml  skipped"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("error: 2 errors: the files or entries named are skipped"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("ok:"), "{}", r.stdout);

    let r = sb.run(&["config", "check", "--json"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["ok"], false);

    // The project's healthy server still runs, and the skipped files are
    // said once, located, on stderr.
    let r = sb.run(&["call", "mcp__testkit__add", "a=2", "b=3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "5");
    assert_eq!(
        r.stderr
            .matches("~/.claude.json:1:38: error: invalid UTF-8")
            .count(),
        1,
        "{}",
        r.stderr
    );
}

#[test]
fn check_reports_every_wrong_type_and_unknown_key() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  a:\n    command: x\n    argz: [1]\n  b:\n    command: y\n    args: oops\n    request_timeout_ms: soon\nskillz: {}\n",
        &[
            "extpool.yaml:4:5: error: mcp_servers.a: unknown key \"argz\"",
            "extpool.yaml:7:11: error: mcp_servers.b.args: expected a list, found a string",
            "extpool.yaml:8:25: error: mcp_servers.b.request_timeout_ms: expected a non-negative integer, found a string",
            "extpool.yaml:9:1: error: unknown key \"skillz\"",
            "the configuration has 4 errors",
        ],
    );
}

#[test]
fn a_config_that_is_no_regular_file_is_refused_at_once() {
    // A symlink to /dev/zero would be read without end, a FIFO would block
    // forever: both are refused before they are read, naming what they are.
    let sb = Sandbox::new();
    std::os::unix::fs::symlink("/dev/zero", sb.work().join("zero.yaml")).unwrap();
    sb.fifo("pipe.yaml");
    for (file, what) in [
        ("zero.yaml", "it is a character device, not a regular file"),
        ("pipe.yaml", "it is a FIFO (named pipe), not a regular file"),
    ] {
        for args in [
            &["--config", file, "config", "check"][..],
            &["--config", file, "list", "servers"][..],
        ] {
            let r = sb.run(args);
            assert_ne!(r.code, 0, "{args:?}: {}", r.stdout);
            assert!(
                r.stderr.contains(&format!("cannot read {file}: {what}")),
                "{args:?}: {}",
                r.stderr
            );
        }
    }
}

/// Every command a user may run on a refused configuration fails, and none
/// writes a raw ESC to the terminal.
fn assert_refused_without_raw_escapes(sb: &Sandbox) {
    for args in [
        &["config", "check"][..],
        &["config", "check", "--json"],
        &[],
        &["--json"],
        &["list", "servers"],
        &["list", "servers", "--json"],
        &["config", "show"],
    ] {
        let r = sb.run(args);
        assert_eq!(r.code, 1, "{args:?}: {}{}", r.stdout, r.stderr);
        for text in [&r.stdout, &r.stderr] {
            assert!(
                !text.contains('\u{1b}'),
                "{args:?} wrote a raw ESC: {text:?}"
            );
        }
    }
}

#[test]
fn a_server_name_with_an_escape_or_300_characters_is_refused_and_named_escaped() {
    let escaped =
        r#"mcp_servers.evil\x1b[31mname: server name "evil\u{1b}[31mname" has '\u{1b}' at byte 4"#;
    let long = "a".repeat(300);
    let too_long = format!(
        "mcp_servers.{long}: server name \"{long}\" is 300 bytes, more than the limit of 64"
    );
    for (key, named) in [
        // YAML's escape, then the ESC byte as is, quoted and plain.
        (r#""evil\e[31mname""#, escaped),
        ("\"evil\u{1b}[31mname\"", escaped),
        ("evil\u{1b}[31mname", escaped),
        (long.as_str(), too_long.as_str()),
    ] {
        let sb = Sandbox::new();
        sb.write(
            "extpool.yaml",
            &format!("mcp_servers:\n  {key}:\n    command: server\n"),
        );
        let r = sb.run(&["config", "check"]);
        assert_eq!(r.code, 1, "{key:?}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr
                .contains(&format!("extpool.yaml:2:3: error: {named}")),
            "{key:?}: {}",
            r.stderr
        );
        assert_refused_without_raw_escapes(&sb);
    }
}

#[test]
fn a_type_error_hides_no_other_error_of_the_file() {
    // One run reports the entry that cannot be read and every finding of
    // the servers that can, in the file's order, whichever command reads it;
    // the unreadable entry is left out whole (no "needs either `command`"
    // about what is left of it).
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        "mcp_servers:\n  s: {command: [1]}\n  t: {url: 5}\n  my-server: {command: x}\n  ok: {command: echo}\nextensions:\n  max_clients: many\n",
    );
    let expected = [
        "extpool.yaml:2:16: error: mcp_servers.s.command: expected a string, found a sequence",
        "extpool.yaml:3:12: error: mcp_servers.t.url: invalid URL \"5\": expected an http:// or https:// URL",
        "extpool.yaml:4:3: error: mcp_servers.my-server: server name \"my-server\" has '-' at byte 2",
        "extpool.yaml:7:16: error: extensions.max_clients: expected a non-negative integer, found a string",
        "the configuration has 4 errors",
    ];
    for args in [
        &["config", "check"][..],
        &["list", "servers"],
        &["list", "tools"],
    ] {
        let r = sb.run(args);
        assert_eq!(r.code, 1, "{args:?}: {}{}", r.stdout, r.stderr);
        let mut from = 0;
        for line in expected {
            let at = r.stderr[from..].find(line).map(|i| i + from);
            assert!(
                at.is_some(),
                "{args:?}: {line:?} after byte {from} in:\n{}",
                r.stderr
            );
            from = at.unwrap_or(from) + line.len();
        }
        assert!(!r.stderr.contains("mcp_servers.s: needs"), "{}", r.stderr);
    }
    let r = sb.run(&["config", "check", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["diagnostics"].as_array().map(Vec::len), Some(4), "{v:#}");
}

#[test]
fn a_server_url_the_mcp_client_refuses_fails_check_naming_the_server_and_the_rule() {
    // What would fail at start fails the check, each located, with the
    // client's own rule and the URL's password masked.
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  creds:\n    url: https://user:pw@example.com/mcp\n  v6:\n    url: http://[::1\n  empty:\n    url: https://\n  ok:\n    url: https://example.com/mcp\n",
        &[
            "extpool.yaml:3:10: error: mcp_servers.creds.url: invalid URL \"https://user:********@example.com/mcp\": credentials in the URL are not allowed; use MCP_<NAME>_TOKEN",
            "extpool.yaml:5:10: error: mcp_servers.v6.url: invalid URL \"http://[::1\": invalid IPv6 address",
            "extpool.yaml:7:10: error: mcp_servers.empty.url: invalid URL \"https://\": empty host",
            "the configuration has 3 errors",
        ],
    );

    // In a discovered file of another program only the refused entries are
    // skipped: the rest runs.
    let sb = Sandbox::new();
    sb.testkit_config(
        "  from_env:\n    url: https://${EXTPOOL_TEST_USERINFO}example.com/mcp\nskills:\n  default_roots: false\n",
    );
    sb.write(
        ".mcp.json",
        r#"{"mcpServers": {"passwd": {"type": "http", "url": "file:///etc/passwd"}, "creds": {"url": "https://u:s3cr3t@x.example/mcp"}}}"#,
    );
    let env = [("EXTPOOL_TEST_USERINFO", "me:hunter2@")];
    let r = sb.run_with(&["config", "check"], &env);
    assert_eq!(r.code, 1, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    for line in [
        ".mcp.json:1:51: error: mcpServers.passwd.url: invalid URL \"file:///etc/passwd\": scheme \"file\" is not http or https; this server is skipped",
        ".mcp.json:1:91: error: mcpServers.creds.url: invalid URL \"https://u:********@x.example/mcp\": credentials in the URL are not allowed; use MCP_<NAME>_TOKEN; this server is skipped",
        // A URL made with the environment's values is checked with them.
        "extpool.yaml:4:3: warning: mcp_servers.from_env.url: with the values its variables have here, the server will not start: invalid URL \"https://${EXTPOOL_TEST_USERINFO}example.com/mcp\": credentials in the URL are not allowed",
        "error: 2 errors: the files or entries named are skipped",
    ] {
        assert!(
            r.stderr.contains(line) || r.stdout.contains(line),
            "{line:?} in:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    for secret in ["s3cr3t", "hunter2"] {
        assert!(
            !r.stderr.contains(secret) && !r.stdout.contains(secret),
            "{}{}",
            r.stdout,
            r.stderr
        );
    }
    let r = sb.run_with(&["list", "servers"], &env);
    assert!(
        !r.stdout.contains("passwd") && !r.stdout.contains("creds"),
        "{}",
        r.stdout
    );
    let r = sb.run_with(&["call", "mcp__testkit__add", "a=2", "b=3"], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "5");
}

#[test]
fn delegated_credentials_without_a_remote_server_or_the_gateways_client() {
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  jira:\n    command: jira-mcp\n    oauth: {token_exchange: {}}\ngateway:\n  auth: {issuer: 'https://idp.example', client_id: gw, client_secret: '${S}'}\n",
        &[
            "extpool.yaml:4:12: error: mcp_servers.jira.oauth: `oauth.token_exchange` makes each caller's token for a remote server; \"jira\" is not one (no `url`)",
        ],
    );
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  jira:\n    url: https://jira.example/mcp\n    oauth: {token_exchange: {audience: jira}}\ngateway:\n  auth: {issuer: 'https://idp.example'}\n",
        &[
            "mcp_servers.jira.oauth: `oauth.token_exchange`: the gateway exchanges tokens as its own client at its issuer; set gateway.auth.client_id and gateway.auth.client_secret",
        ],
    );
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  wiki:\n    url: https://wiki.example/mcp\n    oauth: {passthrough: {}}\n",
        &[
            "mcp_servers.wiki.oauth: `oauth.passthrough` makes each caller's token from the one it presents to the gateway: set gateway.auth (its issuer)",
        ],
    );
    check_fails(
        "extpool.yaml",
        "mcp_servers:\n  jira:\n    url: https://jira.example/mcp\n    oauth: {token_exchange: {}, client_id: x}\n",
        &[
            "`oauth.token_exchange` makes each caller's credential from its own token; remove `client_id`",
        ],
    );
}
