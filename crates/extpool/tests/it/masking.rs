//! A server that echoes its command line to stderr: the literal secrets of
//! its arguments (`--api-key=…`, `--password X`, a URL's password and query
//! values), masked by `config show`, are masked wherever extpool shows what
//! the server wrote or answered — the live status, `list sources` (table
//! and JSON), the overview, `-vv` logs, a call's error and the gateway's
//! `GET /v1/sources`.

use crate::serve::Served;
use crate::support::{Sandbox, testkit};

const API_KEY: &str = "sk-ant-api03-Zq9xWv8uTs7rQp6oNm5lKj4i";
const PASSWORD: &str = "hunter2hunter2";
const URL_PASSWORD: &str = "urlpw-0bscur3";
const QUERY_VALUE: &str = "q-v4lue-77";

/// What the servers echo, with every secret masked.
const MASKED_ARGS: &str = "--api-key=*** --password *** --db postgres://app:***@db/app?sslkey=***";

/// An extpool.yaml with two testkit servers that echo their arguments,
/// `echoing` serving and `dying` exiting at once.
fn config(sb: &Sandbox) {
    let args = format!(
        "\"--\", \"--api-key={API_KEY}\", \"--password\", \"{PASSWORD}\", \"--db\", \"postgres://app:{URL_PASSWORD}@db/app?sslkey={QUERY_VALUE}\""
    );
    let bin = testkit().display().to_string();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  echoing:\n    command: {bin:?}\n    args: [\"--echo-argv\", {args}]\n  dying:\n    command: {bin:?}\n    args: [\"--echo-argv\", \"--die-on-start\", {args}]\nskills:\n  default_roots: false\n"
        ),
    );
}

fn assert_masked(what: &str, text: &str) {
    for secret in [API_KEY, PASSWORD, URL_PASSWORD, QUERY_VALUE] {
        assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
    }
}

#[test]
fn literal_secrets_in_a_servers_arguments_never_show_in_what_it_echoes() {
    let sb = Sandbox::new();
    config(&sb);
    // `config show` masks them: the rule everything else follows.
    let r = sb.run(&["config", "show"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_masked("config show", &r.stdout);

    let dying = format!("argv: --echo-argv --die-on-start -- {MASKED_ARGS}");
    for args in [
        &["list", "sources"][..],
        &["list", "sources", "--json"],
        &["-v"],
        &["--json"],
    ] {
        let r = sb.run(args);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(
            all.contains(&dying),
            "{args:?}: the failed server's stderr is shown:\n{all}"
        );
        assert_masked(&format!("{args:?}"), &all);
    }

    // Logged line by line (where the log's own masking of URLs applies
    // too), and shown as the live status while it starts.
    let r = sb.run(&["-vv", "list", "tools"]);
    assert!(
        r.stderr
            .contains("argv: --echo-argv -- --api-key=*** --password *** --db postgres://app:*"),
        "the serving server's stderr is logged:\n{}",
        r.stderr
    );
    assert_masked("-vv list tools", &format!("{}{}", r.stdout, r.stderr));

    // What the server answers is masked too: an error quoting its arguments.
    let r = sb.run(&[
        "call",
        "mcp__echoing__fail",
        &format!("message=bad {PASSWORD}"),
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("returned error -32603: bad ***"),
        "{}",
        r.stderr
    );
    assert_masked("the call's error", &format!("{}{}", r.stdout, r.stderr));
}

#[test]
fn the_gateways_sources_never_show_a_servers_literal_secrets() {
    let sb = Sandbox::new();
    config(&sb);
    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive=false"]);
    let served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let dying = format!("argv: --echo-argv --die-on-start -- {MASKED_ARGS}");
    let sources = crate::discovery::sources_until(&base, "the failed server's stderr", |s| {
        s.to_string().contains("argv: --echo-argv --die-on-start")
    })
    .to_string();
    assert!(sources.contains(&dying), "{sources}");
    assert_masked("GET /v1/sources", &sources);
}
