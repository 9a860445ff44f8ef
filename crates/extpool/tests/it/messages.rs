//! Error messages as a user reads them: each cause once, outermost first,
//! the server named once, no internal names, and the cause of a start
//! failure shown (with where to read the whole of it).

use crate::support::Sandbox;

fn error_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{stderr}"))
}

#[test]
fn a_start_failure_shows_its_cause_once_and_where_to_read_it_whole() {
    let sb = Sandbox::new();
    // Refuses connections for as long as `closed` lives.
    let closed = extpool_testkit::ClosedPort::new();
    let port = closed.addr().port();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  bad:\n    command: ./does-not-exist\n  remote:\n    url: http://127.0.0.1:{port}/mcp?api_key=s3cr3t\nskills:\n  default_roots: false\n"
        ),
    );
    let refused = format!(
        "failed: cannot connect to http://127.0.0.1:{port}/mcp: Connection refused (os error 111)"
    );
    let r = sb.run(&[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains(&refused), "{}", r.stdout);
    // The table may shorten the cause (the path in it is as long as the
    // temporary directory's): its start is there, the whole of it below.
    assert!(
        r.stdout.contains("failed: could not start \""),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("the whole errors: extpool list sources"),
        "{}",
        r.stdout
    );
    // The live status (plain lines here) says the same, naming each server once.
    assert!(
        r.stderr.contains(&format!("remote: {refused}")),
        "{}",
        r.stderr
    );
    for text in [&r.stdout, &r.stderr] {
        assert!(!text.contains("failed to start"), "{text}");
        assert!(!text.contains("MCP server \""), "{text}");
        assert!(!text.contains("s3cr3t"), "{text}");
        assert!(!text.contains("client error (Connect)"), "{text}");
    }

    let r = sb.run(&["list", "sources", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let bad = v[0]["detail"].as_str().unwrap_or_default();
    assert!(
        bad.starts_with("could not start \"")
            && bad.ends_with("does-not-exist\": No such file or directory (os error 2)"),
        "{v}"
    );
    assert_eq!(
        v[1]["detail"],
        format!("cannot connect to http://127.0.0.1:{port}/mcp: Connection refused (os error 111)")
    );
}

#[test]
fn a_tool_of_a_server_that_failed_gets_that_servers_failure() {
    let sb = Sandbox::new();
    sb.testkit_config("  bad:\n    command: ./does-not-exist\nskills:\n  default_roots: false\n");
    for args in [
        &["call", "mcp__bad__add", "a=1", "b=2"][..],
        &["describe", "mcp__bad__add"],
    ] {
        let r = sb.run(args);
        assert_eq!(r.code, 1, "{args:?}");
        let line = error_line(&r.stderr);
        assert!(
            line.starts_with(
                "error: mcp__bad__add is unavailable: MCP server \"bad\" failed to start: could not start \""
            ) && line.ends_with(
                "does-not-exist\": No such file or directory (os error 2); see `extpool list sources`"
            ),
            "{args:?}: {line}"
        );
        assert!(!line.contains("did you mean"), "{line}");
    }
}

#[test]
fn a_failed_call_or_read_names_its_server_once() {
    let sb = Sandbox::new();
    sb.testkit_config("    request_timeout_ms: 300\nskills:\n  default_roots: false\n");
    let r = sb.run(&["call", "mcp__testkit__sleep", "ms=10000"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        error_line(&r.stderr),
        "error: mcp__testkit__sleep: MCP server \"testkit\": tools/call timed out after 300 ms"
    );
    let r = sb.run(&["call", "mcp__testkit__fail", "message=no"]);
    assert_eq!(
        error_line(&r.stderr),
        "error: mcp__testkit__fail: MCP server \"testkit\" returned error -32603: no"
    );
    // A file an MCP-hosted skill does not have.
    let r = sb.run(&["read", "skill://testkit-skill/nope.md"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        error_line(&r.stderr),
        "error: cannot read skill://testkit-skill/nope.md: MCP server \"testkit\" returned error -32002: no resource skill://testkit-skill/nope.md"
    );
}

#[test]
fn a_query_secret_never_reaches_the_overview_json_or_trace_logs() {
    let sb = Sandbox::new();
    // Refuses connections for as long as `closed` lives.
    let closed = extpool_testkit::ClosedPort::new();
    let port = closed.addr().port();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  remote:\n    url: http://127.0.0.1:{port}/mcp?api_key=s3cr3tq\nskills:\n  default_roots: false\n"
        ),
    );
    let refused =
        format!("cannot connect to http://127.0.0.1:{port}/mcp: Connection refused (os error 111)");
    let r = sb.run(&["--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    for text in [&r.stdout, &r.stderr] {
        assert!(!text.contains("s3cr3tq"), "{text}");
    }
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let remote = v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "remote")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(remote["state"], "failed", "{}", r.stdout);
    assert_eq!(remote["detail"], refused.as_str(), "{}", r.stdout);

    // Logged at every level, the connection error keeps the secret out.
    for (args, env) in [
        (&["-v", "list", "tools"][..], &[][..]),
        (&["-vvv", "list", "tools"], &[]),
        (&["list", "tools"], &[("EXTPOOL_LOG", "trace")]),
    ] {
        let r = sb.run_with(args, env);
        assert_eq!(r.code, 1, "{args:?} {env:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(&refused),
            "{args:?} {env:?}: the failure is reported:\n{}",
            r.stderr
        );
        for text in [&r.stdout, &r.stderr] {
            assert!(
                !text.contains("s3cr3tq"),
                "{args:?} {env:?} printed the secret:\n{text}"
            );
        }
    }
}

#[test]
fn a_jq_error_is_shown_once() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    for (args, message) in [
        (
            &["tool=large_text", r#"args={"bytes":300000}"#, "jq_filter=."][..],
            "jq output exceeds 100000 bytes; select fewer fields",
        ),
        (
            &["tool=echo", r#"args={"message":"x"}"#, "jq_filter=.["],
            "jq syntax error at line 1, column 3 (byte 2)",
        ),
    ] {
        let mut call = vec!["call", "CallMcpWithQuery", "server=testkit"];
        call.extend_from_slice(args);
        let r = sb.run(&call);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        let line = error_line(&r.stderr);
        assert!(
            line.starts_with(&format!(
                "error: CallMcpWithQuery on mcp__testkit__{}: {message}",
                &args[0][5..]
            )),
            "{line}"
        );
        assert_eq!(
            r.stderr.matches(message).count(),
            1,
            "{args:?}: said once:\n{}",
            r.stderr
        );
    }
}

#[test]
fn a_tool_name_no_tool_can_have_is_refused_at_once_and_shown_cut() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let long = "x".repeat(100_000);
    for command in ["call", "describe"] {
        let r = sb.run(&[command, ""]);
        assert_eq!(r.code, 2, "{command}: {}{}", r.stdout, r.stderr);
        assert_eq!(
            error_line(&r.stderr),
            "error: a tool name is needed, not an empty one; see `extpool list tools`",
            "{command}"
        );
        assert!(!r.stderr.contains("testkit"), "{command}: {}", r.stderr);
        let r = sb.run(&[command, &long]);
        assert_eq!(r.code, 2, "{command}: {}", r.stdout);
        assert_eq!(
            error_line(&r.stderr),
            format!(
                "error: no tool is named {}… (100000 bytes): a tool name is at most 256 bytes; see `extpool list tools`",
                "x".repeat(64)
            ),
            "{command}"
        );
        assert!(r.stderr.len() < 1000, "{command}: {} bytes", r.stderr.len());
        // Refused before anything started: no server's start is drawn.
        assert!(!r.stderr.contains("testkit"), "{command}: {}", r.stderr);
    }
}

#[test]
fn a_config_size_limit_that_is_no_number_is_said_with_the_default_that_applies() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    for value in ["abc", "0"] {
        let r = sb.run_with(&["config", "check"], &[("EXTPOOL_MAX_CONFIG_BYTES", value)]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!(
                "warning: EXTPOOL_MAX_CONFIG_BYTES={value:?} is not a positive number of bytes; the default limit of 67108864 bytes (64 MiB) applies"
            )),
            "{}",
            r.stderr
        );
    }
    let r = sb.run_with(
        &["config", "check"],
        &[("EXTPOOL_MAX_CONFIG_BYTES", "100000")],
    );
    assert!(
        !r.stderr.contains("EXTPOOL_MAX_CONFIG_BYTES"),
        "{}",
        r.stderr
    );
}
