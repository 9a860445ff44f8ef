//! Discovery from a HOME laid out as the hosts' own CLIs leave it
//! (notes: plugins as installed): Claude Code's install record and
//! settings, Codex's config and plugin cache, Gemini CLI's extensions and
//! enablement — enabled and disabled as each host decides.

use std::path::{Path, PathBuf};

use extpool_plugins::{DiscoverRequest, Host, InstalledPlugin, discover};

use crate::support::{copy_tree, fixture, write};

struct Layout {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

fn claude_install(home: &Path, plugin: &str, market: &str, from: &Path) -> PathBuf {
    let path = home
        .join(".claude/plugins/cache")
        .join(market)
        .join(plugin)
        .join("1.0.0");
    copy_tree(from, &path);
    path
}

/// A home after `claude plugin marketplace add DIR`, `claude plugin install
/// kit@market` and `claude plugin install other@market` then `claude
/// plugin disable other@market`; `gemini extensions install` of two
/// extensions, one disabled; Codex with two configured plugins, one disabled.
fn layout() -> Layout {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let project = home.join("work/repo");
    std::fs::create_dir_all(project.join(".git")).expect("mkdir");
    let kit = claude_install(&home, "kit", "market", &fixture("claude-plugin"));
    let other_src = tmp.path().join("other");
    write(
        &other_src,
        ".claude-plugin/plugin.json",
        r#"{"name": "other", "version": "1.0.0"}"#,
    );
    write(&other_src, "commands/hello.md", "Hello.\n");
    write(
        &other_src,
        ".mcp.json",
        r#"{"mcpServers": {"o": {"command": "other-server"}}}"#,
    );
    let other = claude_install(&home, "other", "market", &other_src);
    write(
        &home,
        ".claude/plugins/installed_plugins.json",
        &serde_json::json!({
            "version": 2,
            "plugins": {
                "kit@market": [{"scope": "user", "installPath": kit, "version": "1.0.0",
                                "installedAt": "2026-12-01T00:00:00.000Z", "lastUpdated": "2026-12-01T00:00:00.000Z"}],
                "other@market": [{"scope": "user", "installPath": other, "version": "1.0.0"}]
            }
        })
        .to_string(),
    );
    write(
        &home,
        ".claude/plugins/known_marketplaces.json",
        r#"{"market": {"source": {"source": "directory", "path": "/gone"}, "installLocation": "/gone"}}"#,
    );
    write(
        &home,
        ".claude/settings.json",
        r#"{"extraKnownMarketplaces": {"market": {"source": {"source": "directory", "path": "/gone"}}},
            "enabledPlugins": {"kit@market": true, "other@market": false}}"#,
    );
    // Gemini CLI.
    let ext = home.join(".gemini/extensions");
    copy_tree(&fixture("gemini-extension"), &ext.join("tools-ext"));
    write(
        &ext,
        "tools-ext/.gemini-extension-install.json",
        r#"{"source": "/gone", "type": "local"}"#,
    );
    write(
        &ext,
        "off-ext/gemini-extension.json",
        r#"{"name": "off-ext", "version": "1.0.0"}"#,
    );
    write(&ext, "off-ext/commands/off.toml", "prompt = \"off\"\n");
    let h = home.display();
    write(
        &ext,
        "extension-enablement.json",
        &format!(
            r#"{{"tools-ext": {{"overrides": ["{h}/*"]}}, "off-ext": {{"overrides": ["!{h}/*"]}}}}"#
        ),
    );
    // Codex.
    copy_tree(
        &fixture("codex-plugin"),
        &home.join(".codex/plugins/cache/openai-curated/sample/local"),
    );
    copy_tree(
        &fixture("codex-plugin"),
        &home.join(".codex/plugins/cache/openai-curated/sample/0.9.0"),
    );
    write(
        &home,
        ".codex/plugins/cache/mk/quiet/1.0.0/.codex-plugin/plugin.json",
        r#"{"name": "quiet"}"#,
    );
    write(
        &home,
        ".codex/config.toml",
        "model = \"gpt-5\"\n\n[plugins.\"sample@openai-curated\"]\nenabled = true\n\n[plugins.\"quiet@mk\"]\nenabled = false\n\n[plugins.\"gone@mk\"]\n",
    );
    Layout {
        _tmp: tmp,
        home,
        project,
    }
}

fn find<'a>(plugins: &'a [InstalledPlugin], host: Host, id: &str) -> &'a InstalledPlugin {
    plugins
        .iter()
        .find(|p| p.host == host && p.id == id)
        .unwrap_or_else(|| panic!("{id} of {host:?} in {plugins:#?}"))
}

#[test]
fn every_installed_plugin_is_found_enabled_or_not_with_no_configuration() {
    let l = layout();
    let found = discover(&DiscoverRequest::new(
        &l.home,
        Some(l.project.clone()),
        l.home.join("data"),
    ));
    let kit = find(&found.plugins, Host::ClaudeCode, "kit@market");
    assert!(kit.enabled, "{}", kit.enabled_by);
    assert!(
        kit.enabled_by.contains("settings.json"),
        "{}",
        kit.enabled_by
    );
    assert_eq!(kit.scope, "user");
    let plugin = kit.plugin.as_ref().expect("read");
    assert_eq!(plugin.name, "kit");
    let other = find(&found.plugins, Host::ClaudeCode, "other@market");
    assert!(!other.enabled, "disabled in settings: {}", other.enabled_by);
    let tools = find(&found.plugins, Host::GeminiCli, "tools-ext");
    assert!(tools.enabled, "{}", tools.enabled_by);
    let off = find(&found.plugins, Host::GeminiCli, "off-ext");
    assert!(!off.enabled, "{}", off.enabled_by);
    assert!(off.enabled_by.contains("extension-enablement.json"));
    let sample = find(&found.plugins, Host::Codex, "sample@openai-curated");
    assert!(sample.enabled);
    assert!(
        sample.install_path.ends_with("sample/local"),
        "the local version is the active one"
    );
    let quiet = find(&found.plugins, Host::Codex, "quiet@mk");
    assert!(!quiet.enabled);
    assert!(
        found.diagnostics.iter().any(|d| d
            .message
            .contains("gone@mk is configured but not installed")),
        "{:?}",
        found.diagnostics
    );
    let enabled: Vec<&str> = found.enabled().map(|p| p.id.as_str()).collect();
    assert_eq!(
        enabled,
        ["kit@market", "sample@openai-curated", "tools-ext"]
    );
    // Only enabled plugins contribute commands and skills.
    let names: Vec<&str> = found.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "kit:frontend:test",
            "kit:review",
            "tools-ext:git:commit",
            "tools-ext:summary"
        ]
    );
    let skills: Vec<&str> = found
        .plugin_skills
        .iter()
        .map(|s| s.qualified.as_str())
        .collect();
    assert_eq!(
        skills,
        [
            "kit:lint",
            "sample:deep",
            "sample:search",
            "tools-ext:greeter"
        ]
    );
}

#[test]
fn project_and_local_settings_override_the_user_settings() {
    let l = layout();
    write(
        &l.project,
        ".claude/settings.json",
        r#"{"enabledPlugins": {"kit@market": false, "other@market": true}}"#,
    );
    write(
        &l.project,
        ".claude/settings.local.json",
        r#"{"enabledPlugins": {"kit@market": true}}"#,
    );
    let found = discover(&DiscoverRequest::new(
        &l.home,
        Some(l.project.clone()),
        l.home.join("data"),
    ));
    let kit = find(&found.plugins, Host::ClaudeCode, "kit@market");
    assert!(kit.enabled);
    assert!(
        kit.enabled_by.contains("settings.local.json"),
        "{}",
        kit.enabled_by
    );
    let other = find(&found.plugins, Host::ClaudeCode, "other@market");
    assert!(
        other.enabled,
        "the project enables it: {}",
        other.enabled_by
    );
    assert!(found.commands.iter().any(|c| c.name == "other:hello"));
}

#[test]
fn gemini_enablement_follows_the_working_directory() {
    let l = layout();
    let ext = l.home.join(".gemini/extensions");
    let p = l.project.display();
    let h = l.home.display();
    write(
        &ext,
        "extension-enablement.json",
        &format!(r#"{{"tools-ext": {{"overrides": ["{h}/*", "!{p}"]}}}}"#),
    );
    let here = discover(&DiscoverRequest::new(
        &l.home,
        Some(l.project.clone()),
        l.home.join("data"),
    ));
    assert!(
        !find(&here.plugins, Host::GeminiCli, "tools-ext").enabled,
        "disabled in the project"
    );
    let elsewhere = l.home.join("work/other");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let there = discover(&DiscoverRequest::new(
        &l.home,
        Some(elsewhere),
        l.home.join("data"),
    ));
    assert!(
        find(&there.plugins, Host::GeminiCli, "tools-ext").enabled,
        "enabled elsewhere"
    );
}

#[test]
fn a_broken_host_record_is_located_and_the_other_hosts_still_load() {
    let l = layout();
    write(
        &l.home,
        ".claude/plugins/installed_plugins.json",
        "{\n  \"plugins\": {\n    \"kit@market\": [\n}",
    );
    write(
        &l.home,
        ".codex/config.toml",
        "[plugins.\"sample@openai-curated\"\nenabled = true\n",
    );
    let found = discover(&DiscoverRequest::new(
        &l.home,
        Some(l.project.clone()),
        l.home.join("data"),
    ));
    assert!(
        found.plugins.iter().all(|p| p.host == Host::GeminiCli),
        "{:#?}",
        found.plugins
    );
    assert_eq!(found.plugins.len(), 2);
    let claude = found
        .diagnostics
        .iter()
        .find(|d| d.path.ends_with("installed_plugins.json"))
        .expect("claude record reported");
    assert_eq!(claude.line, Some(4), "{claude}");
    let codex = found
        .diagnostics
        .iter()
        .find(|d| d.path.ends_with("config.toml"))
        .expect("codex record reported");
    assert_eq!(codex.line, Some(1), "{codex}");
}

#[test]
fn an_empty_home_has_nothing_and_says_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let found = discover(&DiscoverRequest::new(
        tmp.path(),
        None,
        tmp.path().join("data"),
    ));
    assert!(found.plugins.is_empty());
    assert!(found.commands.is_empty());
    assert!(found.diagnostics.is_empty(), "{:?}", found.diagnostics);
}
