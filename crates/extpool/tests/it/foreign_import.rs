//! Reading the configs users already have, and `config import` /
//! `config show` of each, with secrets never printed.

use crate::support::{Sandbox, fixture};

/// Imports a fixture copied to `name` in the sandbox; returns (yaml, stderr).
fn import(sb: &Sandbox, fixture_name: &str, name: &str) -> (String, String) {
    let text = std::fs::read_to_string(fixture(fixture_name)).unwrap();
    sb.write(name, &text);
    let r = sb.run(&["config", "import", name]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    (sb.redact(&r.stdout), sb.redact(&r.stderr))
}

#[test]
fn imports_claude_code_mcp_json() {
    let sb = Sandbox::new();
    let (yaml, notes) = import(&sb, "claude_code.mcp.json", ".mcp.json");
    insta::assert_snapshot!("claude_code", yaml);
    assert!(
        notes.contains("server \"sequential-thinking\" is available as \"sequential_thinking\""),
        "{notes}"
    );
}

#[test]
fn imports_claude_desktop_and_replaces_literal_secrets() {
    let sb = Sandbox::new();
    let (yaml, notes) = import(
        &sb,
        "claude_desktop_config.json",
        "claude_desktop_config.json",
    );
    insta::assert_snapshot!("claude_desktop", yaml);
    assert!(!yaml.contains("BSA-literal-secret-123"));
    assert!(!notes.contains("BSA-literal-secret-123"));
    assert!(notes.contains("BRAVE_API_KEY  (mcp_servers.brave_search: the literal value in claude_desktop_config.json was not copied)"), "{notes}");
}

#[test]
fn imports_vscode_mcp_json() {
    let sb = Sandbox::new();
    let (yaml, notes) = import(&sb, "vscode.mcp.json", ".vscode/mcp.json");
    insta::assert_snapshot!("vscode", yaml);
    assert!(
        notes.contains("extpool reads it from the environment variable PERPLEXITY_KEY"),
        "{notes}"
    );
}

#[test]
fn imports_codex_config_toml() {
    let sb = Sandbox::new();
    let (yaml, _) = import(&sb, "codex.config.toml", "config.toml");
    insta::assert_snapshot!("codex", yaml);
}

#[test]
fn imports_cursor_mcp_json() {
    let sb = Sandbox::new();
    let (yaml, _) = import(&sb, "cursor.mcp.json", ".cursor/mcp.json");
    assert!(
        yaml.contains("Authorization: Bearer ${LINEAR_TOKEN}"),
        "{yaml}"
    );
}

#[test]
fn discovers_user_configs_and_imports_to_a_file() {
    let sb = Sandbox::new();
    // A Claude Code user and a Codex user: both files in their usual places.
    let claude = std::fs::read_to_string(fixture("claude_code.mcp.json")).unwrap();
    std::fs::write(sb.home().join(".claude.json"), claude).unwrap();
    std::fs::create_dir_all(sb.home().join(".codex")).unwrap();
    std::fs::write(
        sb.home().join(".codex/config.toml"),
        std::fs::read_to_string(fixture("codex.config.toml")).unwrap(),
    )
    .unwrap();
    let r = sb.run(&["list", "servers", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    insta::assert_json_snapshot!("discovered_servers", v);

    let r = sb.run(&["config", "import", "-o", "extpool.yaml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("wrote extpool.yaml: 4 servers from ~/.claude.json, ~/.codex/config.toml"),
        "{}",
        r.stderr
    );
    // The written file is a valid extpool.yaml that yields the same servers.
    let r2 = sb.run(&["--config", "extpool.yaml", "config", "check"]);
    assert_eq!(r2.code, 0, "{}", r2.stderr);
    assert!(r2.stdout.contains("ok: 4 servers"), "{}", r2.stdout);
    // A second import refuses to overwrite.
    let r3 = sb.run(&["config", "import", "-o", "extpool.yaml"]);
    assert_eq!(r3.code, 1);
    assert!(
        r3.stderr.contains("extpool.yaml exists; use --force"),
        "{}",
        r3.stderr
    );
}

#[test]
fn show_never_prints_resolved_or_literal_secrets() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        "mcp_servers:\n  gh:\n    url: https://h.example/mcp?api_key=literal-key-456\n    headers:\n      Authorization: Bearer ${GH_TOKEN}\n      X-Api-Key: literal-header-789\n  local:\n    command: server\n    args: [--token, literal-arg-000]\n    env:\n      GITHUB_TOKEN: ${GH_TOKEN}\n",
    );
    let secret = "ghp_resolved_secret_value";
    for args in [
        &["config", "show"][..],
        &["config", "show", "--json"][..],
        &["config", "check"][..],
        &["list", "servers"][..],
        &["list", "servers", "--json"][..],
        &["config", "import"][..],
    ] {
        let r = sb.run_with(args, &[("GH_TOKEN", secret)]);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        for leaked in [
            secret,
            "literal-key-456",
            "literal-header-789",
            "literal-arg-000",
        ] {
            assert!(
                !r.stdout.contains(leaked),
                "{args:?} printed {leaked}:\n{}",
                r.stdout
            );
            assert!(
                !r.stderr.contains(leaked),
                "{args:?} printed {leaked}:\n{}",
                r.stderr
            );
        }
    }
    let r = sb.run(&["config", "show"]);
    assert!(
        r.stdout.contains("Authorization: Bearer ${GH_TOKEN}"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("GITHUB_TOKEN: ${GH_TOKEN}"),
        "{}",
        r.stdout
    );
}

/// Secrets known by their value alone, under names that say nothing.
const ANTHROPIC_KEY: &str = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const GITHUB_TOKEN: &str = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
const AWS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
const DB_PASSWORD: &str = "pw123secret";

#[test]
fn secrets_known_by_their_value_are_masked_in_listings_and_replaced_on_import() {
    let sb = Sandbox::new();
    let db = format!("postgres://user:{DB_PASSWORD}@host/db");
    let args = [
        "serve".to_owned(),
        ANTHROPIC_KEY.to_owned(),
        format!("--github={GITHUB_TOKEN}"),
        "--aws".to_owned(),
        AWS_KEY_ID.to_owned(),
        db.clone(),
    ];
    let env = [
        ("MODEL", ANTHROPIC_KEY),
        ("GH", GITHUB_TOKEN),
        ("AWS_ID", AWS_KEY_ID),
        ("DATABASE", db.as_str()),
    ];
    let json_args = serde_json::to_string(&args).unwrap();
    let json_env = serde_json::to_string(&serde_json::Map::from_iter(
        env.iter().map(|(k, v)| ((*k).to_owned(), (*v).into())),
    ))
    .unwrap();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  tools:\n    command: server\n    args: {json_args}\n    env: {json_env}\n"
        ),
    );
    sb.write(
        ".mcp.json",
        &format!(
            "{{\"mcpServers\": {{\"tools\": {{\"command\": \"server\", \"args\": {json_args}, \"env\": {json_env}}}}}}}"
        ),
    );
    let secrets = [ANTHROPIC_KEY, GITHUB_TOKEN, AWS_KEY_ID, DB_PASSWORD];
    let assert_hidden = |what: &str, text: &str| {
        for secret in secrets {
            assert!(!text.contains(secret), "{what} printed {secret}:\n{text}");
        }
    };
    for file in ["extpool.yaml", ".mcp.json"] {
        for args in [
            &["config", "show"][..],
            &["config", "show", "--json"],
            &["config", "check"],
            &["list", "servers"],
            &["list", "servers", "--json"],
            &["config", "import"],
            &["config", "import", "-o", "imported.yaml", "--force"],
        ] {
            let what = format!("{file} {args:?}");
            let r = sb.run(&[&["--config", file][..], args].concat());
            assert_eq!(r.code, 0, "{what}: {}", r.stderr);
            assert_hidden(&what, &r.stdout);
            assert_hidden(&what, &r.stderr);
            if args[0] == "list" {
                assert!(
                    r.stdout
                        .contains("stdio: server serve ******** --github=********"),
                    "{what}: {}",
                    r.stdout
                );
            }
        }
        let written = std::fs::read_to_string(sb.work().join("imported.yaml")).unwrap();
        assert_hidden(&format!("{file}: the imported file"), &written);
        assert!(written.contains("${"), "{file}: {written}");
        // What replaces them is still a configuration of the same server.
        let r = sb.run(&["--config", "imported.yaml", "config", "check"]);
        assert!(
            r.stdout.contains("ok: 1 server"),
            "{file}: {}{}",
            r.stdout,
            r.stderr
        );
        let shown = sb.run(&["--config", file, "config", "show"]).stdout;
        assert!(shown.contains("********"), "{file}: {shown}");
    }
}
