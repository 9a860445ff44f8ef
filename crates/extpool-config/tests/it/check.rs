//! What `config check` relies on: every schema error at once, strict-JSON
//! files warned about what their own program rejects, a skipped file
//! reported as an error, and a broken entry in a `--config` file explained.

use extpool_config::{LoadRequest, Severity, load, load_file};

use crate::support::Dirs;

fn errors_of(text: &str) -> Vec<String> {
    let dirs = Dirs::new();
    let path = dirs.project("extpool.yaml", text);
    let err = load_file(&path, &dirs.places()).unwrap_err();
    err.diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{}:{}: {}", d.pos.map_or(0, |p| p.line), d.path, d.message))
        .collect()
}

#[test]
fn every_wrong_type_and_unknown_key_is_reported() {
    let errors = errors_of(
        "mcp_servers:\n  a:\n    command: x\n    argz: [1]\n  b:\n    command: y\n    args: oops\n    request_timeout_ms: soon\n  c:\n    url: https://h/mcp\n    headerz: {}\nskillz: {}\n",
    );
    assert_eq!(
        errors,
        [
            "4:mcp_servers.a: unknown key \"argz\"",
            "7:mcp_servers.b.args: expected a list, found a string",
            "8:mcp_servers.b.request_timeout_ms: expected a non-negative integer, found a string",
            "11:mcp_servers.c: unknown key \"headerz\"",
            "12:: unknown key \"skillz\"",
        ],
    );
}

#[test]
fn list_items_keep_their_own_indexes() {
    let errors =
        errors_of("mcp_servers:\n  a:\n    command: x\n    args: [ok, [1], fine, {k: v}, last]\n");
    assert_eq!(
        errors,
        [
            "4:mcp_servers.a.args[1]: expected a string, found a sequence",
            "4:mcp_servers.a.args[3]: expected a string, found a mapping",
        ],
    );
}

#[test]
fn a_required_key_taken_out_is_not_reported_twice() {
    let errors = errors_of("permissions:\n  allow: 3\n  deny: [1, [2]]\n");
    assert_eq!(
        errors.len(),
        2,
        "one error each for allow and deny[1]: {errors:#?}"
    );
}

#[test]
fn a_trailing_comma_in_a_strict_json_file_is_warned_about() {
    let dirs = Dirs::new();
    dirs.project(
        ".mcp.json",
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": [\"y\",]},\n}}\n",
    );
    // VS Code's file is JSONC: trailing commas are its own syntax.
    dirs.project(
        ".vscode/mcp.json",
        "{\"servers\": {\"b\": {\"command\": \"x\",},},}\n",
    );
    let loaded = load(&LoadRequest {
        files: Vec::new(),
        places: dirs.places(),
    })
    .unwrap();
    let warnings: Vec<String> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        warnings,
        [
            ".mcp.json:2:37: warning: trailing comma: extpool accepts it, but Claude Code reads this file as strict JSON and rejects it"
        ],
    );
    assert_eq!(loaded.config.mcp_servers.len(), 2);
}

#[test]
fn a_discovered_file_skipped_for_its_syntax_is_an_error() {
    let dirs = Dirs::new();
    dirs.project("extpool.yaml", "mcp_servers:\n  ok:\n    command: echo\n");
    dirs.home(".codex/config.toml", "[mcp_servers.x]\ncommand = \n");
    let loaded = load(&LoadRequest {
        files: Vec::new(),
        places: dirs.places(),
    })
    .expect("the project still loads");
    assert!(loaded.config.mcp_servers.contains_key("ok"));
    let errors: Vec<_> = loaded.errors().collect();
    assert_eq!(errors.len(), 1, "{:#?}", loaded.diagnostics);
    assert_eq!(errors[0].file, "~/.codex/config.toml");
    assert!(
        errors[0].message.starts_with("invalid TOML")
            && errors[0].message.ends_with("; the file is skipped"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_broken_entry_of_a_file_named_with_config_says_what_to_do() {
    let dirs = Dirs::new();
    let path = dirs.project(
        ".mcp.json",
        "{\"mcpServers\": {\"only\": {\"args\": [\"x\"]}}}",
    );
    let err = load_file(&path, &dirs.places()).unwrap_err();
    assert_eq!(
        err.to_string(),
        ".mcp.json:1:25: error: mcpServers.only: needs either `command` (stdio) or `url` (streamable HTTP); this server is skipped, and because the file was named with --config nothing runs until this entry is fixed or removed"
    );
    // Discovered, the same file only skips the entry.
    let loaded = load(&LoadRequest {
        files: Vec::new(),
        places: dirs.places(),
    })
    .unwrap();
    assert!(loaded.config.mcp_servers.is_empty());
    assert!(
        loaded.diagnostics.iter().any(|d| d.message.ends_with(
            "needs either `command` (stdio) or `url` (streamable HTTP); this server is skipped"
        )),
        "{:#?}",
        loaded.diagnostics
    );
}
