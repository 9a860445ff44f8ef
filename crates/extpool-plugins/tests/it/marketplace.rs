//! Marketplace files of Claude Code and Codex, through `marketplace::read`:
//! local sources confined to the marketplace, git sources described, an
//! unsupported or escaping entry skipped with a located message.

use extpool_plugins::marketplace::{self, PluginSource};
use extpool_plugins::{Limits, Outcome, validate};

use crate::support::{copy_tree, fixture, write};

#[test]
fn a_claude_code_marketplace_lists_its_plugins_and_skips_bad_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("market");
    copy_tree(&fixture("claude-plugin"), &dir.join("plugins/kit"));
    write(
        &dir,
        ".claude-plugin/marketplace.json",
        r#"{
  "name": "market",
  "owner": {"name": "Example"},
  "plugins": [
    {"name": "kit", "source": "./plugins/kit", "description": "Review helpers"},
    {"name": "gh", "source": {"source": "github", "repo": "example/gh-plugin", "ref": "v1"}},
    {"name": "sub", "source": {"source": "git-subdir", "url": "https://git.example.com/mono.git", "path": "plugins/sub", "sha": "0123456789abcdef0123456789abcdef01234567"}},
    {"name": "npm", "source": {"source": "npm", "package": "x"}},
    {"name": "escape", "source": "../outside"},
    {"name": "missing", "source": "./plugins/none"}
  ]
}"#,
    );
    let (m, diags) = marketplace::read(&dir, &Limits::default()).expect("reads");
    assert_eq!(m.name, "market");
    let names: Vec<_> = m.plugins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["kit", "gh", "sub"]);
    let kit_root = std::fs::canonicalize(dir.join("plugins/kit")).unwrap();
    assert_eq!(
        m.plugins[0].source,
        PluginSource::Path {
            path: kit_root.clone()
        }
    );
    assert_eq!(
        m.plugins[1].source,
        PluginSource::Git {
            url: "https://github.com/example/gh-plugin.git".into(),
            subdir: None,
            reference: Some("v1".into()),
            sha: None
        }
    );
    assert!(
        matches!(&m.plugins[2].source, PluginSource::Git { subdir: Some(s), .. } if s == "plugins/sub")
    );
    let text: Vec<String> = diags.iter().map(ToString::to_string).collect();
    assert_eq!(diags.len(), 3, "{text:?}");
    assert!(
        text[0].contains(":8: npm: plugin skipped: source kind \"npm\" is not supported"),
        "{text:?}"
    );
    assert!(
        text[1].contains(
            "escape: plugin skipped: \"../outside\" is not a relative path inside the plugin"
        ),
        "{text:?}"
    );
    assert!(text[2].contains("missing: plugin skipped"), "{text:?}");
    // The listed folder is a plugin extpool reads.
    let report = validate(&kit_root);
    assert_eq!(report.outcome, Outcome::Loaded);
    let json = serde_json::to_value(&report).unwrap();
    for key in [
        "outcome",
        "name",
        "skills",
        "servers",
        "commands",
        "diagnostics",
    ] {
        assert!(json.get(key).is_some(), "{key} in {json}");
    }
}

#[test]
fn a_codex_marketplace_is_read_from_its_own_location() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    copy_tree(&fixture("codex-plugin"), &dir.join("plugins/sample"));
    write(
        &dir,
        ".agents/plugins/marketplace.json",
        r#"{"name": "local-market", "plugins": [{"name": "sample", "source": {"source": "local", "path": "./plugins/sample"}}]}"#,
    );
    let (m, diags) = marketplace::read(&dir, &Limits::default()).expect("reads");
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(m.name, "local-market");
    assert!(
        matches!(&m.plugins[0].source, PluginSource::Path { path } if path.ends_with("plugins/sample"))
    );
    let none = marketplace::read(tmp.path(), &Limits::default()).unwrap_err();
    assert!(
        none.message.contains("no .claude-plugin/marketplace.json"),
        "{none}"
    );
}
