//! Plugins and command files through the host's public API: what Claude
//! Code and Gemini CLI installed in a home folder (laid out as their own
//! CLIs lay it out) and every host's command folders, served with no
//! configuration — enabled plugins' servers started, skills read through
//! `skill://` confined to the plugin, commands rendered without running
//! anything, subagents and hooks listed.

use extpool_host::{Host, HostOptions, PluginOptions, ToolCall};
use extpool_testkit::StateDir;
use extpool_testkit::plugins::{claude_install, gemini_install, kit_grants};

use crate::support::{Project, args};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project whose home has Claude Code plugin `demo@mk` (enabled) and
/// `off@mk` (disabled), Gemini CLI extension `gext`, a project command
/// file and a Codex prompt.
fn installed(state: &StateDir) -> Project {
    let project = Project::new();
    // The kit servers run confined (a plugin's default profile); their
    // plugins are granted the testkit binary and the state folder.
    project.config(&format!(
        "mcp_servers: {{}}\n{}",
        kit_grants(&["demo", "gext"], &[state.path()])
    ));
    let home = project.path().join("home");
    claude_install(&home, "mk", "demo", true, &state.args());
    claude_install(&home, "mk", "off", false, &state.args());
    gemini_install(&home, "gext", true, &state.args());
    write(
        &project.path().join(".claude/commands/review.md"),
        "---\ndescription: Reviews the diff\n---\nReview $ARGUMENTS carefully.\n",
    );
    write(
        &home.join(".codex/prompts/draft.md"),
        "---\ndescription: Drafts a note\n---\nDraft a note about $1.\n",
    );
    project
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugins_hosts_installed_and_command_files_are_served_with_no_configuration() {
    let state = StateDir::new();
    let project = installed(&state);
    let host = project.start().await;
    let view = host.session("s").unwrap();

    // Servers: only the enabled plugins', under plugin_<plugin>_<server>.
    let servers = host.servers();
    let demo = servers
        .iter()
        .find(|s| s.name == "plugin_demo_kit")
        .expect("demo's server");
    assert_eq!(demo.plugin.as_deref(), Some("demo"));
    assert!(demo.origin.starts_with("plugin demo ("), "{}", demo.origin);
    assert!(servers.iter().any(|s| s.name == "plugin_gext_kit"));
    assert!(
        !servers.iter().any(|s| s.name == "plugin_off_kit"),
        "a disabled plugin's server is not started: {servers:?}"
    );
    let tools = view.tools();
    let echo = tools
        .iter()
        .find(|t| t.name == "mcp__plugin_demo_kit__echo")
        .expect("the plugin server's tool");
    assert_eq!(echo.plugin.as_deref(), Some("demo"));
    let root = view
        .call(ToolCall::new(
            "mcp__plugin_demo_kit__env",
            args(serde_json::json!({"name": "CLAUDE_PLUGIN_ROOT"})),
        ))
        .await
        .outcome
        .unwrap()
        .joined_text();
    let install = project
        .path()
        .join("home/.claude/plugins/cache/mk/demo/1.0.0");
    assert_eq!(
        root,
        std::fs::canonicalize(&install)
            .unwrap()
            .display()
            .to_string()
    );

    // Skills: the enabled plugins', as plugin:skill, read confined.
    let skills = view.skills();
    let hello = skills
        .iter()
        .find(|s| s.name == "demo:hello")
        .expect("demo:hello");
    assert_eq!(hello.source, "plugin");
    assert_eq!(hello.plugin.as_deref(), Some("demo"));
    assert_eq!(hello.uri, "skill://demo/hello/SKILL.md");
    assert!(skills.iter().any(|s| s.name == "gext:wave"));
    assert!(!skills.iter().any(|s| s.name.starts_with("off:")));
    let body = view.read("skill://demo/hello/SKILL.md").await.unwrap();
    assert!(body.as_text().unwrap().contains("Greet $ARGUMENTS"));
    let notes = view
        .read("skill://demo/hello/references/notes.md")
        .await
        .unwrap();
    assert_eq!(notes.as_text(), Some("Be kind.\n"));
    let traversal = view
        .read("skill://demo/hello/../../.claude-plugin/plugin.json")
        .await
        .unwrap_err()
        .to_string();
    assert!(traversal.contains("traversal"), "{traversal}");
    // A link inside the skill to another file of the plugin: refused, the
    // read stays in the skill's own folder.
    std::os::unix::fs::symlink("../../.mcp.json", install.join("skills/hello/leak.md")).unwrap();
    let escape = view
        .read("skill://demo/hello/leak.md")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        escape.contains("resolves outside the skill directory"),
        "a read out of the skill is refused: {escape}"
    );

    // Commands: files, plugins' commands and skills, Codex prompts.
    let commands = view.commands();
    let find = |name: &str| {
        commands
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} in {commands:#?}"))
    };
    assert_eq!(find("/review").source, "file");
    assert_eq!(find("/review").plugin, None);
    assert_eq!(find("/demo:hi").plugin.as_deref(), Some("demo"));
    assert_eq!(find("/demo:hello").source, "skill");
    assert_eq!(find("/gext:greet").plugin.as_deref(), Some("gext"));
    find("/prompts:draft");
    assert!(!commands.iter().any(|c| c.name.starts_with("/off:")));
    let hi = view.run("/demo:hi", &["Ada".into()]).await.unwrap();
    assert!(hi.contains("Say hi to Ada."), "{hi}");
    assert!(
        hi.contains("!`git branch --show-current`"),
        "shown as text: {hi}"
    );
    assert_eq!(
        hi.matches("extpool ran and included nothing").count(),
        1,
        "{hi}"
    );
    let greet = view.run("/gext:greet", &["Bo".into()]).await.unwrap();
    assert!(greet.contains("Greet Bo. Files: !{ls}"), "{greet}");
    let hello = view.run("/demo:hello", &["Cy".into()]).await.unwrap();
    assert!(hello.contains("Greet Cy warmly."), "{hello}");
    assert!(
        hello.starts_with("Base directory for this skill: "),
        "{hello}"
    );

    // Plugins, subagents and hooks.
    let plugins = host.plugins();
    let names: Vec<(&str, &str, bool)> = plugins
        .iter()
        .map(|p| (p.host, p.name.as_str(), p.enabled))
        .collect();
    assert_eq!(
        names,
        [
            ("claude-code", "demo", true),
            ("claude-code", "off", false),
            ("gemini-cli", "gext", true)
        ]
    );
    let demo = &plugins[0];
    assert_eq!(demo.servers, ["plugin_demo_kit"]);
    assert_eq!(demo.hooks.len(), 1);
    assert!(!demo.hooks[0].run_by_extpool);
    let agents = host.agents();
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_eq!(agents[0].name, "demo:helper");
    assert_eq!(agents[0].model.as_deref(), Some("sonnet"));
    assert_eq!(
        agents[0].tools.as_deref(),
        Some(&["Read".to_owned(), "mcp__plugin_demo_kit__echo".to_owned()][..])
    );
    assert_eq!(agents[0].system_prompt, "You help people greet each other.");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_off_serves_none_of_them_and_the_configuration_wins_a_name() {
    let state = StateDir::new();
    let project = installed(&state);
    // A configured server of the plugin server's name comes first.
    project.config(&format!(
        "mcp_servers:\n  plugin_demo_kit:\n{}plugins:\n  discover: false\ncommands:\n  default_roots: false\n",
        crate::support::testkit_yaml(&state, 4)
    ));
    let host = project.start().await;
    let view = host.session("s").unwrap();
    assert!(host.plugins().is_empty(), "{:?}", host.plugins());
    assert!(view.skills().iter().all(|s| s.plugin.is_none()));
    assert!(!view.commands().iter().any(|c| c.name == "/review"));
    let server = host
        .servers()
        .into_iter()
        .find(|s| s.name == "plugin_demo_kit")
        .unwrap();
    assert_eq!(server.plugin, None, "the configured one");
    host.shutdown().await;

    // On: the plugin's server of that name is not served, and said so.
    project.config(&format!(
        "mcp_servers:\n  plugin_demo_kit:\n{}",
        crate::support::testkit_yaml(&state, 4)
    ));
    let host = project.start().await;
    let problems = host.plugin_problems();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("demo@mk") && p.contains("\"kit\"") && p.contains("taken")),
        "{problems:#?}"
    );
    assert_eq!(
        host.servers()
            .into_iter()
            .find(|s| s.name == "plugin_demo_kit")
            .unwrap()
            .plugin,
        None
    );
    host.shutdown().await;

    // Off from the embedding program.
    let host = Host::start(HostOptions {
        plugins: PluginOptions::Off,
        ..project.options()
    })
    .await
    .unwrap();
    assert!(host.plugins().is_empty());
    assert!(
        !host
            .session("s")
            .unwrap()
            .commands()
            .iter()
            .any(|c| c.name == "/review")
    );
    host.shutdown().await;
}

/// Waits until `check` holds, re-checking at each published revision.
async fn until_revision(host: &Host, what: &str, check: impl Fn(&Host) -> bool) {
    let mut revisions = host.catalog().subscribe();
    let wait = async {
        while !check(host) {
            revisions.changed().await.unwrap();
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), wait)
        .await
        .unwrap_or_else(|_| panic!("never happened: {what}"));
}

fn serves(host: &Host, tool: &str, skill: &str, command: &str) -> bool {
    let view = host.pool();
    view.tools().iter().any(|t| t.name == tool)
        && view.skills().iter().any(|s| s.name == skill)
        && view.commands().iter().any(|c| c.name == command)
}

fn serves_none(host: &Host, tool: &str, skill: &str, command: &str) -> bool {
    let view = host.pool();
    !view.tools().iter().any(|t| t.name == tool)
        && !view.skills().iter().any(|s| s.name == skill)
        && !view.commands().iter().any(|c| c.name == command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_installed_enabled_disabled_or_removed_in_a_host_changes_a_running_host() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&format!(
        "mcp_servers: {{}}\ndiscovery:\n  interval_ms: 100\n{}",
        kit_grants(&["demo"], &[state.path()])
    ));
    let home = project.path().join("home");
    let host = Host::start(HostOptions {
        discovery: extpool_host::DiscoveryOptions {
            reload: Some(extpool_host::ConfigReload {
                files: vec![project.path().join("extpool.yaml")],
                ..Default::default()
            }),
            toolhive: None,
        },
        ..project.options()
    })
    .await
    .unwrap();
    let (tool, skill, command) = ("mcp__plugin_demo_kit__echo", "demo:hello", "/demo:hi");
    assert!(serves_none(&host, tool, skill, command));

    // Claude Code installs and enables it.
    claude_install(&home, "mk", "demo", true, &state.args());
    until_revision(&host, "the installed plugin is served", |h| {
        serves(h, tool, skill, command)
    })
    .await;
    let echoed = host
        .pool()
        .call(ToolCall::new(
            tool,
            args(serde_json::json!({"message": "live"})),
        ))
        .await
        .outcome
        .unwrap()
        .joined_text();
    assert_eq!(echoed, "live");

    // `claude plugin disable demo@mk`.
    extpool_testkit::plugins::claude_enable(&home, "demo@mk", false);
    until_revision(&host, "the disabled plugin is gone", |h| {
        serves_none(h, tool, skill, command)
    })
    .await;
    assert!(
        host.plugins()
            .iter()
            .any(|p| p.name == "demo" && !p.enabled)
    );

    // Enabled again, then removed from the records.
    extpool_testkit::plugins::claude_enable(&home, "demo@mk", true);
    until_revision(&host, "the enabled plugin is back", |h| {
        serves(h, tool, skill, command)
    })
    .await;
    std::fs::write(
        home.join(".claude/plugins/installed_plugins.json"),
        r#"{"version": 2, "plugins": {}}"#,
    )
    .unwrap();
    until_revision(&host, "the removed plugin is gone", |h| {
        serves_none(h, tool, skill, command)
    })
    .await;
    assert!(host.plugins().is_empty());
    host.shutdown().await;
}
