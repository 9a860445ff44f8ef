//! Property tests of every config parser of outside input: `extpool.yaml`
//! and the foreign formats (`.mcp.json` and `~/.claude.json`, VS Code's
//! JSONC `mcp.json`, Codex's `config.toml`). No input panics, every
//! document is read in bounded time, and every refusal names its file and
//! a position inside it.
//!
//! `EXTPOOL_FUZZ_CASES=100000 cargo test -p extpool-config --test it props`
//! runs a long campaign.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use extpool_config::foreign::{ForeignContext, codex, mcp_servers_json, vscode};
use extpool_config::tree::{Pos, parse_json, parse_toml, parse_yaml};
use extpool_config::{Diagnostic, ExtpoolConfig, Origin, de::from_node_all};
use proptest::prelude::*;

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("EXTPOOL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A watchdog on one case, not a speed check.
const CASE_LIMIT: Duration = Duration::from_secs(10);

/// Text that looks like a config: keys the readers know, values of every
/// kind, and syntax that is almost right.
fn config_text(pieces: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(pieces), 0..40).prop_map(|p| p.concat()),
        1 => "\\PC{0,200}",
        1 => prop::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

const YAML: &[&str] = &[
    "mcp_servers:",
    "\n",
    "  ",
    "    ",
    "a:",
    "b-c:",
    "GitHub:",
    "command: ",
    "args: ",
    "url: ",
    "env: ",
    "headers: ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "- ",
    "x",
    "\"${A}\"",
    "${B:-d}",
    "$${",
    "https://h/mcp?k=v",
    "1",
    "-1",
    "99999999999999999999",
    "true",
    "null",
    "~",
    "&a ",
    "*a",
    "!!str ",
    "skills:",
    "paths: ",
    "permissions:",
    "allow: ",
    "deny: ",
    "extensions:",
    "max_clients: ",
    "lazy: ",
    "tools:",
    "name: ",
    "input_schema: ",
    "prefix: ",
    "# c",
    "'q'",
    ": ",
    "? ",
    "|",
    ">",
    "\t",
    "\u{feff}",
    "é",
    "reconnect:",
    "attempts: ",
    "enabled: ",
];

const JSON: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"mcpServers\"",
    "\"servers\"",
    "\"inputs\"",
    "\"a\"",
    "\"b-c\"",
    "\"command\"",
    "\"args\"",
    "\"url\"",
    "\"env\"",
    "\"headers\"",
    "\"type\"",
    "\"http\"",
    "\"stdio\"",
    "\"${env:X}\"",
    "\"${input:k}\"",
    "\"${workspaceFolder}\"",
    "\"x\"",
    "1",
    "-0.5e3",
    "true",
    "null",
    "// c\n",
    "/* c */",
    "\"\\u00e9\"",
    "\"\\ud800\"",
    " ",
    "\n",
    "\"projects\"",
    "\"disabled\"",
    "\"envFile\"",
    "\"\\\"\"",
    "\u{feff}",
];

const TOML: &[&str] = &[
    "[mcp_servers.a]",
    "[mcp_servers.\"b c\"]",
    "\n",
    "command = ",
    "args = ",
    "url = ",
    "env = ",
    "bearer_token_env_var = ",
    "enabled_tools = ",
    "disabled_tools = ",
    "\"x\"",
    "[\"y\", \"z\"]",
    "{ A = \"1\" }",
    "1",
    "true",
    "[[a]]",
    "[",
    "]",
    "=",
    "# c",
    "'''",
    "startup_timeout_sec = ",
    "tool_timeout_sec = ",
    "1.5",
    "é",
    "\"${A}\"",
];

fn ctx(origin: Origin) -> ForeignContext {
    ForeignContext {
        file: "f".into(),
        origin,
        workspace: PathBuf::from("/ws"),
        cwd: PathBuf::from("/ws"),
        strict: false,
    }
}

/// Lines of `text`, counting `\r\n`, `\r` and `\n` as line breaks (as YAML does).
fn line_count(text: &str) -> usize {
    text.replace("\r\n", "\n")
        .split(['\n', '\r'])
        .count()
        .max(1)
}

/// Every diagnostic names the file, and its position (if any) is inside `text`.
fn located(diagnostics: &[Diagnostic], text: &str) -> Result<(), TestCaseError> {
    let lines = line_count(text);
    for d in diagnostics {
        prop_assert_eq!(&d.file, "f");
        if let Some(Pos { line, column }) = d.pos {
            prop_assert!(line >= 1 && line <= lines, "{d} in {text:?}");
            prop_assert!(column >= 1, "{d}");
        }
    }
    Ok(())
}

fn syntax_located(e: &extpool_config::tree::SyntaxError, text: &str) -> Result<(), TestCaseError> {
    let lines = line_count(text);
    prop_assert!(
        e.pos.line >= 1 && e.pos.line <= lines + 1,
        "{e} in {text:?}"
    );
    prop_assert!(!e.message.is_empty());
    Ok(())
}

fn timed<T>(f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let started = Instant::now();
    let out = f();
    prop_assert!(
        started.elapsed() < CASE_LIMIT,
        "took {:?}",
        started.elapsed()
    );
    Ok(out)
}

proptest! {
    #![proptest_config(cases(3000))]

    #[test]
    fn extpool_yaml(text in config_text(YAML)) {
        match timed(|| parse_yaml(&text))? {
            Ok(root) => {
                if let Err(errors) = timed(|| from_node_all::<ExtpoolConfig>(&root))? {
                    prop_assert!(!errors.is_empty());
                    for e in &errors {
                        prop_assert!(e.pos.is_some(), "{e} in {text:?}");
                    }
                }
            }
            Err(e) => syntax_located(&e, &text)?,
        }
    }

    #[test]
    fn mcp_servers_json_and_claude_json(text in config_text(JSON), user in any::<bool>()) {
        match timed(|| parse_json(&text))? {
            Ok(root) => {
                let out = timed(|| mcp_servers_json::read(&root, &ctx(Origin::ClaudeCode), user))?;
                located(&out.diagnostics, &text)?;
                check_names(&out.servers)?;
            }
            Err(e) => syntax_located(&e, &text)?,
        }
    }

    #[test]
    fn vscode_jsonc(text in config_text(JSON)) {
        match timed(|| parse_json(&text))? {
            Ok(root) => {
                let out = timed(|| vscode::read(&root, &ctx(Origin::VsCode)))?;
                located(&out.diagnostics, &text)?;
                check_names(&out.servers)?;
            }
            Err(e) => syntax_located(&e, &text)?,
        }
    }

    #[test]
    fn codex_toml(text in config_text(TOML)) {
        match timed(|| parse_toml(&text))? {
            Ok(root) => {
                let out = timed(|| codex::read(&root, &ctx(Origin::Codex)))?;
                located(&out.diagnostics, &text)?;
                check_names(&out.servers)?;
            }
            Err(e) => syntax_located(&e, &text)?,
        }
    }
}

/// Names of servers read from foreign files are valid and unique (ignoring case).
fn check_names(servers: &[extpool_config::foreign::ForeignServer]) -> Result<(), TestCaseError> {
    let mut seen = std::collections::HashSet::new();
    for s in servers {
        prop_assert!(
            !s.name.is_empty()
                && s.name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "{:?}",
            s.name
        );
        prop_assert!(
            seen.insert(s.name.to_ascii_lowercase()),
            "{:?} twice",
            s.name
        );
    }
    Ok(())
}
