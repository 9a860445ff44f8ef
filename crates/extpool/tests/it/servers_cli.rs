//! `extpool mcp add | remove | list` through the binary: located edits of
//! extpool.yaml that keep every other byte, literal secrets written as
//! references, user and project scope, and a running gateway taking an
//! added server from its configuration watcher.

use extpool_testkit::{StateDir, stdio_command};
use serde_json::{Value, json};

use crate::discovery::{api, sources_until};
use crate::serve::{Served, python, sigterm};
use crate::support::Sandbox;

/// A file a person wrote: comments, blank lines, quoting, other sections.
const WRITTEN: &str = "\
# Team servers. Keep this comment.
mcp_servers:
  # the wiki
  wiki:
    url: \"https://wiki.example/mcp\"   # trailing note

skills:
  default_roots: false   # no host folders
";

#[test]
fn mcp_add_and_remove_keep_every_other_byte_and_secrets_become_references() {
    let sb = Sandbox::new();
    let path = sb.write("extpool.yaml", WRITTEN);
    let secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";
    let added = sb.run(&[
        "mcp",
        "add",
        "docs",
        "https://docs.example/mcp",
        "--header",
        &format!("Authorization: Bearer {secret}"),
    ]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    assert!(
        added.stdout.contains("added MCP server docs"),
        "{}",
        added.stdout
    );
    assert!(
        added.stderr.contains("export DOCS_TOKEN"),
        "{}",
        added.stderr
    );
    let local = sb.run(&[
        "mcp",
        "add",
        "files",
        "--env",
        "LOG_LEVEL=info",
        "--",
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem",
        ".",
    ]);
    assert_eq!(local.code, 0, "{}", local.stderr);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(secret), "the token is never written: {text}");
    assert!(
        text.starts_with(WRITTEN.split("\nskills:").next().unwrap()),
        "the lines before are kept: {text}"
    );
    assert!(
        text.contains("default_roots: false   # no host folders"),
        "{text}"
    );
    // What was written is what `mcp list` and `config check` read.
    let listed = sb.run(&["--json", "mcp", "list"]);
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["docs", "files", "wiki"], "{rows:#}");
    let shown = sb.run(&["--json", "config", "show"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let config: Value = serde_json::from_str(&shown.stdout).unwrap();
    let servers = &config["config"]["mcp_servers"];
    assert_eq!(
        servers["docs"]["headers"]["Authorization"], "Bearer ${DOCS_TOKEN}",
        "{config:#}"
    );
    assert_eq!(
        servers["files"]["args"],
        json!(["-y", "@modelcontextprotocol/server-filesystem", "."])
    );
    assert_eq!(servers["files"]["env"]["LOG_LEVEL"], "info");
    // A second add of the name is refused, located; nothing is written.
    let again = sb.run(&["mcp", "add", "DOCS", "https://other.example/mcp"]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("extpool.yaml:") && again.stderr.contains("already defined"),
        "{}",
        again.stderr
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // Removing both gives the file back byte for byte.
    for name in ["docs", "files"] {
        let removed = sb.run(&["mcp", "remove", name]);
        assert_eq!(removed.code, 0, "{}", removed.stderr);
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), WRITTEN);
    let missing = sb.run(&["mcp", "remove", "docs"]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("no MCP server named docs"),
        "{}",
        missing.stderr
    );
}

#[test]
fn mcp_add_writes_the_scope_asked_for_and_refuses_an_invalid_entry() {
    let sb = Sandbox::new();
    let user = sb.home().join(".config/extpool/extpool.yaml");
    let added = sb.run(&["mcp", "add", "kit", "--scope", "user", "--", "kit-server"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    let text = std::fs::read_to_string(&user).unwrap();
    assert!(
        text.contains("kit:") && text.contains("command: kit-server"),
        "{text}"
    );
    assert!(!sb.work().join("extpool.yaml").exists());
    let project = sb.run(&[
        "mcp",
        "add",
        "web",
        "https://web.example/mcp",
        "--scope",
        "project",
    ]);
    assert_eq!(project.code, 0, "{}", project.stderr);
    assert!(sb.work().join("extpool.yaml").exists());
    // An entry `config check` would refuse is not written.
    let bad = sb.run(&[
        "mcp",
        "add",
        "plain",
        "ftp://remote.example/mcp",
        "--scope",
        "project",
    ]);
    assert_ne!(bad.code, 0, "{}", bad.stdout);
    assert!(
        bad.stderr.contains("extpool.yaml:") && bad.stderr.contains("not written"),
        "{}",
        bad.stderr
    );
    let project_text = std::fs::read_to_string(sb.work().join("extpool.yaml")).unwrap();
    assert!(!project_text.contains("plain"), "{project_text}");
    let bad_name = sb.run(&["mcp", "add", "my-server", "https://x.example/mcp"]);
    assert_eq!(bad_name.code, 2, "{}", bad_name.stderr);
    assert!(bad_name.stderr.contains("my_server"), "{}", bad_name.stderr);
}

/// A testkit server's command line after `--`.
fn testkit_words(state: &StateDir) -> Vec<String> {
    let (program, args) = stdio_command(state.args()).into_parts();
    std::iter::once(program.display().to_string())
        .chain(args.iter().cloned())
        .collect()
}

#[test]
fn a_server_added_while_serving_is_served_and_a_removed_one_stops() {
    let sb = Sandbox::new();
    let kit = StateDir::new();
    let extra = StateDir::new();
    sb.write(
        "extpool.yaml",
        "# served\nmcp_servers: {}\ndiscovery:\n  interval_ms: 100\nskills:\n  default_roots: false\n  watch: false\n",
    );
    let first: Vec<String> = testkit_words(&kit);
    let mut args = vec!["mcp", "add", "base", "--"];
    args.extend(first.iter().map(String::as_str));
    assert_eq!(sb.run(&args).code, 0);
    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive=false"]);
    let mut served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let serves = |s: &Value, name: &str| {
        s["discovery"].as_array().unwrap().iter().any(|d| {
            d["source"] == "config" && d["servers"].as_array().unwrap().iter().any(|x| x == name)
        })
    };
    sources_until(&base, "the first server", |s| serves(s, "base"));
    let words = testkit_words(&extra);
    let mut args = vec!["mcp", "add", "extra", "--"];
    args.extend(words.iter().map(String::as_str));
    let added = sb.run(&args);
    assert_eq!(added.code, 0, "{}", added.stderr);
    sources_until(&base, "the added server", |s| serves(s, "extra"));
    let called = python(
        &["--url", &served.url],
        json!([{"op": "call", "name": "mcp__extra__echo", "args": {"message": "added"}}]),
    );
    assert_eq!(called[1]["text"], json!(["added"]), "{called:?}");
    assert_eq!(sb.run(&["mcp", "remove", "extra"]).code, 0);
    sources_until(&base, "the removed server", |s| !serves(s, "extra"));
    let sources = api("GET", &format!("{base}/v1/sources"));
    assert!(serves(&sources, "base"), "{sources:#}");
    assert_eq!(sigterm(&mut served), 143);
}
