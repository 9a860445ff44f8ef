//! Every path of a plugin stays inside its root (`..` and symlinks
//! refused, the path named), and every file is bounded.

use std::os::unix::fs::symlink;

use extpool_plugins::{Outcome, ReadOptions, validate, validate_with};

use crate::support::{copy_tree, fixture, kinds, write};

#[test]
fn dot_dot_paths_in_a_manifest_are_refused_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "outside/evil.md", "Evil.\n");
    let dir = tmp.path().join("kit");
    write(
        &dir,
        ".claude-plugin/plugin.json",
        r#"{"name": "kit", "commands": "../outside/evil.md", "agents": ["./a/../../outside"]}"#,
    );
    let report = validate(&dir);
    assert_eq!(report.outcome, Outcome::Loaded);
    assert!(report.commands.is_empty());
    let escapes: Vec<String> = report
        .diagnostics
        .iter()
        .filter(|d| d.kind.code() == "path-escape")
        .map(ToString::to_string)
        .collect();
    assert_eq!(escapes.len(), 2, "{escapes:?}");
    assert!(
        escapes[0].contains("\"../outside/evil.md\" is not a relative path inside the plugin"),
        "{escapes:?}"
    );
    assert!(escapes[1].contains("\"./a/../../outside\""), "{escapes:?}");
}

#[test]
fn symlinks_out_of_the_plugin_are_refused_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    write(
        &outside,
        "secret/SKILL.md",
        "---\nname: secret\ndescription: Outside the plugin.\n---\nx\n",
    );
    write(&outside, "cmd.md", "Outside.\n");
    write(
        &outside,
        "mcp.json",
        r#"{"mcpServers": {"x": {"command": "x"}}}"#,
    );
    let dir = tmp.path().join("kit");
    copy_tree(&fixture("claude-plugin"), &dir);
    symlink(outside.join("secret"), dir.join("skills/secret")).unwrap();
    symlink(outside.join("cmd.md"), dir.join("commands/linked.md")).unwrap();
    std::fs::remove_file(dir.join(".mcp.json")).unwrap();
    symlink(outside.join("mcp.json"), dir.join(".mcp.json")).unwrap();
    // A symlink inside the plugin is fine.
    symlink(
        dir.join("commands/review.md"),
        dir.join("commands/again.md"),
    )
    .unwrap();
    let report = validate(&dir);
    assert_eq!(report.outcome, Outcome::Loaded);
    assert_eq!(report.skills, ["lint"], "the linked skill is refused");
    assert_eq!(report.commands, ["again", "frontend:test", "review"]);
    assert_eq!(
        report.servers,
        ["inline-api"],
        "the linked .mcp.json is refused"
    );
    let out = std::fs::canonicalize(&outside).unwrap();
    for name in ["secret", "cmd.md", "mcp.json"] {
        let d = report
            .diagnostics
            .iter()
            .find(|d| d.message.contains(&out.join(name).display().to_string()))
            .unwrap_or_else(|| panic!("{name} refused in {:?}", report.diagnostics));
        assert!(d.message.contains("outside the plugin root"), "{d}");
        assert!(d.is_error());
    }
}

#[test]
fn agent_plugins_paths_that_escape_skip_only_their_component() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    write(
        &outside,
        "deploy/SKILL.md",
        "---\nname: deploy\ndescription: d\n---\n",
    );
    let dir = tmp.path().join("p");
    copy_tree(&fixture("agent-plugins-corpus/cases/minimal/plugin"), &dir);
    symlink(&outside, dir.join("skills")).unwrap();
    write(
        &dir,
        "mcp.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
        "a": {"type": "stdio", "command": "./bin/../../escape"},
        "b": {"type": "stdio", "command": "./bin/linked"},
        "c": {"type": "stdio", "command": "npx", "cwd": "${PLUGIN_DATA}/../x"},
        "d": {"type": "stdio", "command": "npx", "cwd": "./ok"}}}"#,
    );
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    symlink(outside.join("deploy/SKILL.md"), dir.join("bin/linked")).unwrap();
    let report = validate(&dir);
    assert_eq!(report.outcome, Outcome::Loaded);
    assert!(report.skills.is_empty());
    assert_eq!(report.servers, ["d"]);
    let mut k = kinds(&report.diagnostics);
    k.sort();
    assert_eq!(
        k,
        [
            "component-invalid",
            "server-skipped",
            "server-skipped",
            "server-skipped"
        ]
    );
    assert!(
        report
            .diagnostics
            .iter()
            .any(|d| d.message.contains("\"./bin/linked\" resolves to")),
        "{:?}",
        report.diagnostics
    );
}

#[test]
fn a_plugin_json_that_links_out_rejects_the_plugin() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "outside/plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "x"}"#,
    );
    let dir = tmp.path().join("p");
    std::fs::create_dir_all(&dir).unwrap();
    symlink(
        tmp.path().join("outside/plugin.json"),
        dir.join("plugin.json"),
    )
    .unwrap();
    let report = validate(&dir);
    assert_eq!(report.outcome, Outcome::Rejected);
    assert_eq!(report.reason, Some("manifest-escapes"));
}

#[test]
fn oversized_files_are_not_read_and_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kit");
    copy_tree(&fixture("claude-plugin"), &dir);
    write(&dir, "commands/huge.md", &"x".repeat(5000));
    let mut opts = ReadOptions::new(tmp.path().join("data"));
    opts.limits.max_file_bytes = 4096;
    let report = validate_with(&dir, None, &opts);
    assert_eq!(report.outcome, Outcome::Loaded);
    assert!(!report.commands.contains(&"huge".to_owned()));
    let d = report
        .diagnostics
        .iter()
        .find(|d| d.path.ends_with("huge.md"))
        .expect("reported");
    assert_eq!(d.kind.code(), "bound");
    assert!(
        d.message.contains("5000 bytes, over the 4096-byte bound"),
        "{d}"
    );
    // An oversized manifest rejects the plugin.
    write(
        &dir,
        ".claude-plugin/plugin.json",
        &format!(
            "{{\"name\": \"kit\", \"description\": \"{}\"}}",
            "d".repeat(5000)
        ),
    );
    let report = validate_with(&dir, None, &opts);
    assert_eq!(report.outcome, Outcome::Rejected);
    assert_eq!(report.diagnostics[0].kind.code(), "bound");
}

#[test]
fn a_plugin_with_too_many_files_stops_at_the_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("many");
    write(&dir, ".claude-plugin/plugin.json", r#"{"name": "many"}"#);
    for i in 0..30 {
        write(&dir, &format!("commands/c{i:02}.md"), "x\n");
    }
    let mut opts = ReadOptions::new(tmp.path().join("data"));
    opts.limits.max_files_per_plugin = 20;
    let report = validate_with(&dir, None, &opts);
    assert_eq!(report.commands.len(), 20);
    assert!(
        report.diagnostics.iter().any(|d| d.kind.code() == "bound"),
        "{:?}",
        report.diagnostics
    );
}
