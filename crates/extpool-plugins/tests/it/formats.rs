//! Each format read as its host reads it, through `validate` and
//! `read_plugin`, over fixtures written from the formats' documentation.

use extpool_core::CommandResource;
use extpool_plugins::{
    Format, LocalCommandSource, McpOutcome, Outcome, Transport, read_plugin, validate,
};

use crate::support::{copy_tree, fixture, kinds, opts, write};

fn expand(s: &str) -> String {
    extpool_config::expand::expand(s, &|name| (name == "HOME").then(|| "/home/u".to_owned()))
        .expect("expands")
}

#[test]
fn agent_plugins_servers_get_the_plugin_anchors_once_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("full");
    copy_tree(&fixture("agent-plugins-corpus/cases/full/plugin"), &dir);
    write(
        &dir,
        "mcp.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
            "mcpServers": {
              "local": {"type": "stdio", "command": "./bin/validator",
                        "args": ["--data", "${PLUGIN_DATA}/v", "${HOME}", "$PLUGIN_ROOT"],
                        "env": {"CONFIG": "${PLUGIN_ROOT}/config.json", "OTHER": "${HOME}"},
                        "cwd": "${PLUGIN_DATA}/work"},
              "remote": {"type": "streamable-http", "url": "https://x.example.com/mcp",
                         "headers": {"X-Tenant": "${TENANT}"}},
              "legacy": {"type": "sse", "url": "https://legacy.example.com/sse"}
            }}"#,
    );
    let plugin = read_plugin(&dir, None, &opts(tmp.path())).expect("loads");
    assert_eq!(plugin.format, Format::AgentPlugins);
    assert_eq!(plugin.name, "acme.reports");
    assert!(plugin.diagnostics.is_empty(), "{:?}", plugin.diagnostics);
    let root = std::fs::canonicalize(&dir).unwrap();
    let data = tmp.path().join("data/agent-plugins/acme.reports");
    assert_eq!(plugin.data_dir, data);
    let local = &plugin.servers[0];
    assert_eq!(local.transport, Transport::Stdio);
    assert_eq!(local.server_name, "plugin_acme_reports_local");
    let c = &local.config;
    assert_eq!(
        expand(c.command.as_deref().unwrap()),
        root.join("bin/validator").display().to_string()
    );
    let args: Vec<String> = c.args.iter().map(|a| expand(a)).collect();
    assert_eq!(
        args,
        [
            "--data",
            &format!("{}/v", data.display()),
            "${HOME}",
            "$PLUGIN_ROOT"
        ],
        "only the two anchors are expanded, once; ${{HOME}} stays literal"
    );
    assert_eq!(
        expand(&c.env["CONFIG"]),
        format!("{}/config.json", root.display())
    );
    assert_eq!(expand(&c.env["OTHER"]), "${HOME}");
    assert_eq!(expand(&c.env["PLUGIN_ROOT"]), root.display().to_string());
    assert_eq!(expand(&c.env["PLUGIN_DATA"]), data.display().to_string());
    assert_eq!(
        expand(c.cwd.as_deref().unwrap()),
        format!("{}/work", data.display())
    );
    let remote = &plugin.servers[1];
    assert_eq!(
        expand(&remote.config.headers["X-Tenant"]),
        "${TENANT}",
        "no expansion in headers"
    );
    assert!(remote.startable());
    let legacy = &plugin.servers[2];
    assert_eq!(legacy.transport, Transport::Sse);
    assert!(!legacy.startable(), "extpool does not speak HTTP+SSE");
}

#[test]
fn a_claude_code_plugin_is_read_with_its_defaults_and_its_manifest() {
    let report = validate(&fixture("claude-plugin"));
    assert_eq!(report.outcome, Outcome::Loaded, "{report:?}");
    assert_eq!(report.format, Some(Format::ClaudeCode));
    assert_eq!(report.name.as_deref(), Some("kit"));
    assert_eq!(report.commands, ["frontend:test", "review"]);
    assert_eq!(report.skills, ["lint"]);
    assert_eq!(report.agents, ["code-reviewer"]);
    assert_eq!(report.hooks, ["PostToolUse", "SessionStart"]);
    let mut servers = report.servers.clone();
    servers.sort();
    assert_eq!(
        servers,
        ["inline-api", "kit-server"],
        "inline and .mcp.json merged"
    );
    assert!(
        report.diagnostics.iter().all(|d| !d.is_error()),
        "{:?}",
        report.diagnostics
    );

    let tmp = tempfile::tempdir().unwrap();
    let plugin = read_plugin(
        &fixture("claude-plugin"),
        Some(Format::ClaudeCode),
        &opts(tmp.path()),
    )
    .unwrap();
    let root = std::fs::canonicalize(fixture("claude-plugin")).unwrap();
    let kit = plugin
        .servers
        .iter()
        .find(|s| s.name == "kit-server")
        .unwrap();
    assert_eq!(kit.server_name, "plugin_kit_kit_server");
    assert_eq!(
        expand(kit.config.command.as_deref().unwrap()),
        root.join("bin/kit").display().to_string()
    );
    assert_eq!(
        expand(&kit.config.args[1]),
        root.join("config.json").display().to_string()
    );
    assert_eq!(
        expand(&kit.config.args[3]),
        "/home/u",
        "Claude Code expands ${{HOME}} from the environment"
    );
    assert_eq!(kit.config.env["KIT_MODE"], "${KIT_MODE:-fast}");
    let inline = plugin
        .servers
        .iter()
        .find(|s| s.name == "inline-api")
        .unwrap();
    assert_eq!(inline.transport, Transport::StreamableHttp);
    assert_eq!(
        inline.config.url.as_deref(),
        Some("https://api.example.com/mcp")
    );
    let hook = &plugin.hooks[0];
    assert_eq!(
        hook.command.as_deref().map(expand),
        Some(root.join("bin/format.sh").display().to_string())
    );
    assert!(!hook.run_by_extpool);
    let names: Vec<_> = plugin.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["kit:frontend:test", "kit:review"]);
    let review = plugin
        .commands
        .iter()
        .find(|c| c.local_name == "review")
        .unwrap();
    assert_eq!(review.argument_hint.as_deref(), Some("[file] [focus]"));
    assert_eq!(
        review.allowed_tools.as_deref(),
        Some("Bash(git diff:*), Read")
    );
    assert_eq!(review.model.as_deref(), Some("sonnet"));
    let agent = &plugin.agents[0];
    assert_eq!(agent.qualified, "kit:code-reviewer");
    assert_eq!(agent.tools.as_ref().unwrap(), &["Read", "Grep", "Glob"]);
    assert!(
        agent
            .system_prompt
            .starts_with("You are a careful code reviewer.")
    );
    assert_eq!(plugin.skills[0].qualified, "kit:lint");
}

#[tokio::test]
async fn a_plugin_command_renders_with_its_root_and_runs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let plugin = read_plugin(&fixture("claude-plugin"), None, &opts(tmp.path())).unwrap();
    let root = std::fs::canonicalize(fixture("claude-plugin")).unwrap();
    let source = LocalCommandSource::new("kit", plugin.commands.clone());
    let listed = source.list_commands().await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].argument_hint.as_deref(), Some("[file] [focus]"));
    let out = source
        .get_command("kit:review", &["src/a.rs".into(), "errors".into()])
        .await
        .unwrap();
    assert!(
        out.contains("Review src/a.rs with a focus on errors."),
        "{out}"
    );
    assert!(
        out.contains(&format!("{}/checklist.md", root.display())),
        "{out}"
    );
    assert!(out.contains("All arguments: src/a.rs errors"), "{out}");
    assert!(
        out.contains("!`git diff HEAD`"),
        "the shell line is shown as text: {out}"
    );
    assert_eq!(
        out.matches("extpool ran and included nothing").count(),
        1,
        "{out}"
    );
    let err = source.get_command("kit:nope", &[]).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

#[test]
fn claude_code_manifest_paths_replace_commands_and_agents_and_add_skills() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kit");
    copy_tree(&fixture("claude-plugin"), &dir);
    write(
        &dir,
        ".claude-plugin/plugin.json",
        r#"{"name": "kit", "commands": ["./more/extra.md", "./more/sub"], "skills": ["./none", "./more-skills"], "agents": ["./more/helper.md"]}"#,
    );
    write(
        &dir,
        "more-skills/extra-skill/SKILL.md",
        "---\nname: extra-skill\ndescription: More\n---\nMore.\n",
    );
    write(
        &dir,
        "more/helper.md",
        "---\nname: helper\ndescription: Helps\n---\nYou help.\n",
    );
    write(
        &dir,
        "more/extra.md",
        "---\ndescription: Extra\n---\nExtra.\n",
    );
    write(&dir, "more/sub/deep.md", "Deep.\n");
    let report = validate(&dir);
    // As Claude Code 2.1.328's `claude plugin validate` lists it.
    assert_eq!(report.commands, ["deep", "extra"], "commands/ is replaced");
    assert_eq!(
        report.skills,
        ["extra-skill", "lint"],
        "skills/ is kept, the manifest's folder added"
    );
    assert_eq!(report.agents, ["helper"], "agents/ is replaced");
    let missing = report
        .diagnostics
        .iter()
        .find(|d| d.message.contains("\"./none\" does not exist"))
        .expect("said");
    assert_eq!(missing.line, Some(1));
}

#[test]
fn a_codex_plugin_is_read_as_codex_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let report = validate(&fixture("codex-plugin"));
    assert_eq!(report.outcome, Outcome::Loaded, "{report:?}");
    assert_eq!(report.format, Some(Format::Codex));
    assert_eq!(report.name.as_deref(), Some("sample"));
    assert_eq!(
        report.skills,
        ["deep", "search"],
        "skills/ and the manifest's folder, at any depth"
    );
    assert_eq!(
        report.servers,
        ["indexer", "docs"],
        "the manifest's file replaces .mcp.json"
    );
    assert!(report.commands.is_empty());
    let plugin = read_plugin(&fixture("codex-plugin"), None, &opts(tmp.path())).unwrap();
    let root = std::fs::canonicalize(fixture("codex-plugin")).unwrap();
    let indexer = &plugin.servers[0];
    assert_eq!(indexer.config.command.as_deref(), Some("sample-indexer"));
    assert_eq!(
        indexer.config.cwd.as_deref(),
        Some(root.join("data").display().to_string().as_str())
    );
    assert_eq!(plugin.servers[1].transport, Transport::StreamableHttp);
    assert_eq!(plugin.skills[0].qualified, "sample:deep");
}

#[tokio::test]
async fn a_gemini_extension_is_read_as_gemini_cli_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let report = validate(&fixture("gemini-extension"));
    assert_eq!(report.outcome, Outcome::Loaded, "{report:?}");
    assert_eq!(report.format, Some(Format::GeminiCli));
    assert_eq!(report.name.as_deref(), Some("tools-ext"));
    assert_eq!(report.commands, ["git:commit", "summary"]);
    assert_eq!(report.skills, ["greeter"]);
    assert_eq!(report.agents, ["helper"]);
    assert_eq!(report.servers, ["runner", "remote"]);
    let plugin = read_plugin(&fixture("gemini-extension"), None, &opts(tmp.path())).unwrap();
    let root = std::fs::canonicalize(fixture("gemini-extension")).unwrap();
    assert_eq!(plugin.context_files, [root.join("CONTEXT.md")]);
    let runner = &plugin.servers[0];
    assert_eq!(
        expand(&runner.config.args[0]),
        root.join("server.js").display().to_string()
    );
    assert_eq!(
        expand(runner.config.cwd.as_deref().unwrap()),
        root.display().to_string()
    );
    let remote = &plugin.servers[1];
    assert_eq!(
        remote.config.url.as_deref(),
        Some("https://mcp.example.com/mcp"),
        "httpUrl is the streamable HTTP URL"
    );
    assert_eq!(
        plugin.agents[0].tools.as_ref().unwrap(),
        &["read_file", "grep"]
    );
    let source = LocalCommandSource::new("ext", plugin.commands.clone());
    let out = source
        .get_command("tools-ext:git:commit", &["be".into(), "brief".into()])
        .await
        .unwrap();
    assert!(out.contains("Extra instructions: be brief"), "{out}");
    assert!(out.contains("!{git diff --staged}"), "{out}");
    assert_eq!(out.matches("extpool ran and included nothing").count(), 1);
    let summary = source
        .get_command("tools-ext:summary", &["now".into()])
        .await
        .unwrap();
    assert_eq!(summary, "Summarize the project.\n\n/tools-ext:summary now");
    assert_eq!(
        plugin.commands[1].description,
        "Custom command from summary.toml"
    );
}

#[test]
fn a_broken_manifest_rejects_the_plugin_with_a_located_message() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    write(
        &dir,
        ".claude-plugin/plugin.json",
        "{\n  \"name\": \"kit\",\n  \"version\": 1.0.0\n}\n",
    );
    let report = validate(&dir);
    assert_eq!(report.outcome, Outcome::Rejected);
    assert_eq!(report.reason, Some("invalid-manifest"));
    let d = &report.diagnostics[0];
    assert_eq!(d.line, Some(3), "{d}");
    assert!(
        d.to_string().starts_with(&format!(
            "{}:3: not valid JSON",
            std::fs::canonicalize(&dir)
                .unwrap()
                .join(".claude-plugin/plugin.json")
                .display()
        )),
        "{d}"
    );

    let g = tmp.path().join("g");
    write(&g, "gemini-extension.json", r#"{"name": "ext"}"#);
    let report = validate(&g);
    assert_eq!(report.outcome, Outcome::Rejected);
    assert!(
        report.diagnostics[0]
            .message
            .contains("missing \"version\""),
        "{:?}",
        report.diagnostics
    );

    let none = validate(&tmp.path().join("nothing-here"));
    assert_eq!(none.outcome, Outcome::Rejected);
    assert_eq!(none.reason, Some("manifest-missing"));
}

#[test]
fn a_bad_part_skips_only_that_part() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kit");
    copy_tree(&fixture("claude-plugin"), &dir);
    write(
        &dir,
        ".mcp.json",
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",}\n}}",
    );
    write(&dir, "agents/bad.md", "---\nname: [unclosed\n---\n");
    write(&dir, "hooks/hooks.json", "[1, 2]");
    write(&dir, "commands/broken.md", "---\ndescription: x\n");
    let report = validate(&dir);
    assert_eq!(report.outcome, Outcome::Loaded);
    assert_eq!(report.commands, ["frontend:test", "review"]);
    assert_eq!(report.agents, ["code-reviewer"]);
    assert_eq!(report.servers, ["inline-api"]);
    assert_eq!(report.mcp, Some(McpOutcome::Disabled));
    let k = kinds(&report.diagnostics);
    for want in [
        "mcp-disabled",
        "agent-skipped",
        "hooks-skipped",
        "command-skipped",
    ] {
        assert!(k.contains(&want), "{want} in {k:?}");
    }
    for d in report.diagnostics.iter().filter(|d| d.is_error()) {
        assert!(d.line.is_some(), "located: {d}");
    }
}
