//! `extpool connect AGENT` through the binary: each agent's own file (a
//! fixture as the agent writes it) gets the entry in the agent's format,
//! read back by that format's parser, with everything else kept; a second
//! run changes nothing; `--remove` and `--status`; the token as a
//! variable's name only. And Claude Code's own `claude mcp list` sees the
//! gateway connected.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::serve::{Served, sigterm};
use crate::support::{Sandbox, fixture};

/// An agent's id, its fixture, where its user file is under the sandbox's
/// home, and the comment the fixture holds (none for plain JSON).
const AGENTS: [(&str, &str, &str, Option<&str>); 5] = [
    ("claude-code", "claude.json", ".claude.json", None),
    (
        "codex",
        "codex.toml",
        ".codex/config.toml",
        Some("# the default model"),
    ),
    ("cursor", "cursor.json", ".cursor/mcp.json", None),
    (
        "vscode",
        "vscode.jsonc",
        ".config/Code/User/mcp.json",
        Some("// Servers of this profile."),
    ),
    (
        "gemini",
        "gemini.json",
        ".gemini/settings.json",
        Some("// Gemini CLI settings"),
    ),
];

/// A file of an agent as a JSON value, read by its format's own parser.
fn parsed(agent: &str, text: &str) -> Value {
    if agent == "codex" {
        let value: toml::Value = toml::from_str(text).unwrap();
        return serde_json::to_value(value).unwrap();
    }
    if agent == "claude-code" || agent == "cursor" {
        // Plain JSON, as these agents read it.
        return serde_json::from_str(text).unwrap();
    }
    let options = jsonc_parser::ParseOptions::default();
    jsonc_parser::parse_to_serde_value::<Value>(text, &options).unwrap()
}

/// The servers of a parsed file.
fn servers<'a>(agent: &str, file: &'a Value) -> &'a Value {
    match agent {
        "codex" => &file["mcp_servers"],
        "vscode" => &file["servers"],
        _ => &file["mcpServers"],
    }
}

fn place(sb: &Sandbox, rel: &str, fixture_name: &str) -> (PathBuf, String) {
    let path = sb.home().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = std::fs::read_to_string(fixture(&format!("agents/{fixture_name}"))).unwrap();
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

#[test]
fn connect_writes_each_agents_file_in_its_format_and_keeps_the_rest() {
    let sb = Sandbox::new();
    let url = "http://127.0.0.1:8520/mcp";
    for (agent, fixture_name, rel, comment) in AGENTS {
        let (path, original) = place(&sb, rel, fixture_name);
        let before = parsed(agent, &original);
        let done = sb.run(&["connect", agent]);
        assert_eq!(done.code, 0, "{agent}: {}{}", done.stdout, done.stderr);
        assert!(
            done.stdout.contains("now reaches"),
            "{agent}: {}",
            done.stdout
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let after = parsed(agent, &text);
        let entry = &servers(agent, &after)["extpool"];
        let expected = match agent {
            "claude-code" | "vscode" => json!({"type": "http", "url": url}),
            "gemini" => json!({"httpUrl": url}),
            _ => json!({"url": url}),
        };
        assert_eq!(entry, &expected, "{agent}: {text}");
        // Everything else is as it was.
        let mut without = after.clone();
        let container = match agent {
            "codex" => "mcp_servers",
            "vscode" => "servers",
            _ => "mcpServers",
        };
        without[container]
            .as_object_mut()
            .unwrap()
            .remove("extpool");
        assert_eq!(without, before, "{agent}: {text}");
        if let Some(comment) = comment {
            assert!(text.contains(comment), "{agent} keeps its comments: {text}");
        }
        // Idempotent: a second run writes nothing.
        let again = sb.run(&["connect", agent]);
        assert_eq!(again.code, 0, "{}", again.stderr);
        assert!(
            again.stdout.contains("unchanged"),
            "{agent}: {}",
            again.stdout
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
    // --status: every agent reaches the local gateway.
    let status = sb.run(&["--json", "connect", "--status"]);
    assert_eq!(status.code, 0, "{}", status.stderr);
    let rows: Value = serde_json::from_str(&status.stdout).unwrap();
    let agents: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["this_gateway"] == true && r["scope"] == "user")
        .map(|r| r["agent"].as_str().unwrap())
        .collect();
    assert_eq!(
        agents,
        ["claude-code", "codex", "cursor", "vscode", "gemini"],
        "{rows:#}"
    );
    // --remove gives back what the agent had.
    for (agent, fixture_name, rel, comment) in AGENTS {
        let path = sb.home().join(rel);
        let removed = sb.run(&["connect", agent, "--remove"]);
        assert_eq!(removed.code, 0, "{}", removed.stderr);
        let text = std::fs::read_to_string(&path).unwrap();
        let original = std::fs::read_to_string(fixture(&format!("agents/{fixture_name}"))).unwrap();
        assert_eq!(parsed(agent, &text), parsed(agent, &original), "{agent}");
        if let Some(comment) = comment {
            assert!(text.contains(comment), "{agent}: {text}");
        }
    }
    let none = sb.run(&["connect", "--status"]);
    assert!(none.stdout.contains("no agent reaches"), "{}", none.stdout);
}

#[test]
fn connect_names_the_token_variable_never_the_token_and_prints_or_scopes_on_request() {
    let sb = Sandbox::new();
    let token = "gw-secret-7d1e2c3b4a5f6e7d8c9b0a1f";
    let done = sb.run_with(
        &["connect", "cursor", "--url", "http://127.0.0.1:9000/mcp"],
        &[("EXTPOOL_GATEWAY_TOKEN", token)],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let text = std::fs::read_to_string(sb.home().join(".cursor/mcp.json")).unwrap();
    assert!(!text.contains(token), "{text}");
    let file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        file["mcpServers"]["extpool"]["headers"]["Authorization"],
        "Bearer ${env:EXTPOOL_GATEWAY_TOKEN}"
    );
    // A remote gateway needs a token: Codex reads it from the variable named.
    let remote = sb.run(&[
        "connect",
        "codex",
        "--scope",
        "project",
        "--url",
        "https://gw.example/mcp",
        "--token-env",
        "TEAM_GW_TOKEN",
    ]);
    assert_eq!(remote.code, 0, "{}", remote.stderr);
    let codex: toml::Value =
        toml::from_str(&std::fs::read_to_string(sb.work().join(".codex/config.toml")).unwrap())
            .unwrap();
    assert_eq!(
        codex["mcp_servers"]["extpool"]["bearer_token_env_var"].as_str(),
        Some("TEAM_GW_TOKEN")
    );
    // --print writes nothing and prints what would be written.
    let printed = sb.run(&["connect", "gemini", "--print"]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let snippet: Value = serde_json::from_str(&printed.stdout).unwrap();
    assert_eq!(
        snippet["mcpServers"]["extpool"]["httpUrl"],
        "http://127.0.0.1:8520/mcp"
    );
    assert!(!sb.home().join(".gemini").exists());
    // A file the agent cannot read either is refused, located, untouched.
    let broken = "{\n  \"mcpServers\": {\n    \"a\": [1,\n}\n";
    let path = sb.home().join(".claude.json");
    std::fs::write(&path, broken).unwrap();
    let refused = sb.run(&["connect", "claude-code"]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(".claude.json:") && refused.stderr.contains("nothing was written"),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
}

/// Claude Code's own `claude mcp list` (its health check connects to each
/// server) shows the entry `extpool connect` wrote as connected to a
/// running gateway.
#[test]
fn claude_code_lists_the_connected_gateway_as_connected() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive=false"]);
    let mut served = Served::spawn(command);
    // Claude Code's file, as a fresh install leaves it.
    std::fs::write(sb.home().join(".claude.json"), "{\"numStartups\": 1}\n").unwrap();
    let done = sb.run(&["connect", "claude-code", "--url", &served.url]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let listed = extpool_testkit::peers::claude(&sb.home())
        .current_dir(sb.work())
        .args(["mcp", "list"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("extpool:"))
        .unwrap_or_else(|| panic!("no extpool entry: {out}"));
    assert!(line.contains(&served.url), "{line}");
    assert!(line.contains("Connected"), "{line}");
    assert_eq!(sigterm(&mut served), 143);
}
