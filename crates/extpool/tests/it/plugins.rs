//! Plugins through the real binary: what Claude Code and Gemini CLI
//! installed in the sandbox's home (laid out as their own CLIs lay it
//! out) listed, called, read and run; `plugins validate`'s JSON interface;
//! extpool's own plugin manager from a folder, a local git repository and
//! a marketplace, with its confirmation, lock record and refusals.

use std::path::Path;
use std::process::Command;

use extpool_testkit::plugins::{claude_install, claude_plugin, gemini_install, grant_kits};
use serde_json::Value;

use crate::support::{Run, Sandbox};

fn json(run: &Run) -> Value {
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

fn find<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|x| x[key] == value)
        .unwrap_or_else(|| panic!("no {key} = {value} in {list:#}"))
}

fn has(list: &Value, key: &str, value: &str) -> bool {
    list.as_array().unwrap().iter().any(|x| x[key] == value)
}

/// The sandbox with Claude Code's `demo@mk`, Gemini CLI's `gext` (their
/// kit servers granted the testkit binary) and a project command file.
fn installed() -> Sandbox {
    let sb = Sandbox::new();
    grant_kits(&sb.home(), &["demo", "gext"], &[]);
    claude_install(&sb.home(), "mk", "demo", true, &[]);
    claude_install(&sb.home(), "mk", "off", false, &[]);
    gemini_install(&sb.home(), "gext", true, &[]);
    sb.write(
        ".claude/commands/review.md",
        "---\ndescription: Reviews the diff\n---\nReview $ARGUMENTS.\n",
    );
    sb
}

#[test]
fn what_hosts_installed_is_listed_called_read_and_run_with_its_plugin_named() {
    let sb = installed();
    let plugins = json(&sb.run(&["list", "plugins", "--json"]));
    let demo = find(&plugins, "name", "demo");
    assert_eq!(demo["host"], "claude-code");
    assert_eq!(demo["enabled"], true);
    assert_eq!(demo["hooks"][0]["run_by_extpool"], false);
    assert_eq!(find(&plugins, "name", "off")["enabled"], false);
    assert_eq!(find(&plugins, "name", "gext")["host"], "gemini-cli");

    let servers = json(&sb.run(&["list", "servers", "--json"]));
    assert_eq!(find(&servers, "name", "plugin_demo_kit")["plugin"], "demo");
    assert!(!has(&servers, "name", "plugin_off_kit"), "{servers:#}");

    let tools = json(&sb.run(&["list", "tools", "--json"]));
    assert_eq!(
        find(&tools, "name", "mcp__plugin_demo_kit__echo")["plugin"],
        "demo"
    );
    assert_eq!(
        find(&tools, "name", "mcp__plugin_gext_kit__echo")["plugin"],
        "gext"
    );

    let skills = json(&sb.run(&["list", "skills", "--json"]));
    let hello = find(&skills, "name", "demo:hello");
    assert_eq!(hello["plugin"], "demo");
    assert_eq!(hello["uri"], "skill://demo/hello/SKILL.md");

    let commands = json(&sb.run(&["list", "commands", "--json"]));
    assert_eq!(find(&commands, "name", "/demo:hi")["plugin"], "demo");
    assert_eq!(find(&commands, "name", "/review")["source"], "file");
    assert!(!has(&commands, "name", "/off:hi"));

    let agents = json(&sb.run(&["list", "agents", "--json"]));
    let helper = find(&agents, "name", "demo:helper");
    assert_eq!(helper["model"], "sonnet");
    assert_eq!(helper["system_prompt"], "You help people greet each other.");

    let hi = sb.run(&["run", "/demo:hi", "Ada"]);
    assert_eq!(hi.code, 0, "{}", hi.stderr);
    assert!(hi.stdout.contains("Say hi to Ada."), "{}", hi.stdout);
    assert!(
        hi.stdout.contains("!`git branch --show-current`"),
        "{}",
        hi.stdout
    );
    assert_eq!(
        hi.stdout
            .matches("extpool ran and included nothing")
            .count(),
        1
    );
    let review = sb.run(&["run", "review", "the", "diff"]);
    assert_eq!(
        review.stdout.trim(),
        "Review the diff.",
        "{}",
        review.stderr
    );

    let read = sb.run(&["read", "skill://demo/hello/references/notes.md"]);
    assert_eq!(read.stdout, "Be kind.\n", "{}", read.stderr);
    let call = sb.run(&["call", "mcp__plugin_demo_kit__echo", "message=plugged"]);
    assert_eq!(call.stdout.trim(), "plugged", "{}", call.stderr);

    let overview = json(&sb.run(&["--json"]));
    assert!(has(&overview["plugins"], "name", "demo"), "{overview:#}");
    let shown = sb.run(&[]);
    assert!(shown.stdout.contains("Plugins (3)"), "{}", shown.stdout);
    assert!(
        shown
            .stdout
            .contains("hooks are listed, never run by extpool")
    );
}

#[test]
fn validate_prints_one_object_for_a_plugin_and_exits_1_for_a_folder_that_is_not_one() {
    let sb = Sandbox::new();
    claude_plugin(&sb.work().join("kit"), "kit", &[]);
    let report = json(&sb.run(&["plugins", "validate", "kit", "--json"]));
    assert_eq!(report["outcome"], "loaded");
    assert_eq!(report["name"], "kit");
    assert_eq!(report["skills"], serde_json::json!(["hello"]));
    assert_eq!(report["servers"], serde_json::json!(["kit"]));
    assert_eq!(report["commands"], serde_json::json!(["hi"]));
    assert!(report["diagnostics"].is_array());
    sb.write("empty/README.md", "nothing\n");
    let rejected = sb.run(&["plugins", "validate", "empty", "--json"]);
    assert_eq!(rejected.code, 1);
    let value: Value = serde_json::from_str(&rejected.stdout).unwrap();
    assert_eq!(value["outcome"], "rejected");
    assert_eq!(value["reason"], "manifest-missing");
    let text = sb.run(&["plugins", "validate", "kit"]);
    assert!(
        text.stdout.contains("loaded: plugin kit (claude-code"),
        "{}",
        text.stdout
    );
}

fn data(sb: &Sandbox) -> std::path::PathBuf {
    sb.home().join(".local/share/extpool/plugins")
}

fn lock(sb: &Sandbox) -> Value {
    serde_json::from_str(&std::fs::read_to_string(data(sb).join("lock.json")).unwrap()).unwrap()
}

#[test]
fn add_says_what_a_plugin_runs_asks_and_installs_with_a_lock_record() {
    let sb = installed();
    grant_kits(&sb.home(), &["demo", "gext", "kit"], &[]);
    claude_plugin(&sb.work().join("kit-src"), "kit", &[]);

    // No terminal and no --yes: what it runs is said, nothing installed.
    let refused = sb.run(&["plugins", "add", "kit-src"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("pass --yes"), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("MCP server kit (plugin_kit_kit): runs `<plugin>/bin/kit` confined"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains(
            "hook PostToolUse [Write]: <plugin>/hooks/format.sh — listed only, never run by extpool"
        ),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("commands /kit:hi ask their host to run shell lines")
    );
    assert!(!data(&sb).join("lock.json").exists());
    assert_eq!(
        json(&sb.run(&["plugins", "list", "--json"])),
        serde_json::json!([])
    );

    let added = json(&sb.run(&["plugins", "add", "kit-src", "--yes", "--json"]));
    assert_eq!(added["outcome"], "installed");
    let record = &lock(&sb)["plugins"][0];
    assert_eq!(record["name"], "kit");
    assert_eq!(record["source"]["kind"], "path");
    assert!(record["digest"].as_str().unwrap().starts_with("sha256:"));
    let installed_at = record["installed_at"].clone();
    let again = json(&sb.run(&["plugins", "add", "kit-src", "--yes", "--json"]));
    assert_eq!(again["outcome"], "unchanged");
    assert_eq!(lock(&sb)["plugins"][0]["installed_at"], installed_at);
    assert_eq!(
        std::fs::read_dir(data(&sb).join(".staging"))
            .unwrap()
            .count(),
        0,
        "nothing left in staging"
    );

    let plugins = json(&sb.run(&["list", "plugins", "--json"]));
    assert_eq!(find(&plugins, "name", "kit")["host"], "extpool");
    assert_eq!(plugins[0]["name"], "kit", "extpool's own come first");
    let call = sb.run(&["call", "mcp__plugin_kit_kit__echo", "message=mine"]);
    assert_eq!(call.stdout.trim(), "mine", "{}", call.stderr);

    assert_eq!(sb.run(&["plugins", "disable", "kit"]).code, 0);
    let tools = json(&sb.run(&["list", "tools", "--json"]));
    assert!(!has(&tools, "name", "mcp__plugin_kit_kit__echo"));
    assert_eq!(sb.run(&["plugins", "enable", "kit"]).code, 0);
    let tools = json(&sb.run(&["list", "tools", "--json"]));
    assert!(has(&tools, "name", "mcp__plugin_kit_kit__echo"));

    let theirs = sb.run(&["plugins", "disable", "demo"]);
    assert_eq!(theirs.code, 1);
    assert!(
        theirs.stderr.contains("installed by claude-code (demo@mk)"),
        "{}",
        theirs.stderr
    );

    let folder = data(&sb).join(lock(&sb)["plugins"][0]["path"].as_str().unwrap());
    assert!(folder.is_dir());
    assert_eq!(sb.run(&["plugins", "remove", "kit"]).code, 0);
    assert!(!folder.exists());
    assert_eq!(lock(&sb)["plugins"], serde_json::json!([]));
}

#[test]
fn an_install_that_fails_or_was_interrupted_leaves_nothing_installed() {
    let sb = Sandbox::new();
    claude_plugin(&sb.work().join("leaky"), "leaky", &[]);
    std::os::unix::fs::symlink("/etc", sb.work().join("leaky/skills/passwd")).unwrap();
    let failed = sb.run(&["plugins", "add", "leaky", "--yes"]);
    assert_eq!(failed.code, 1);
    assert!(
        failed.stderr.contains("skills/passwd")
            && failed.stderr.contains("outside the plugin folder"),
        "the path is named: {}",
        failed.stderr
    );
    assert!(failed.stderr.contains("nothing was installed"));
    assert!(!data(&sb).join("lock.json").exists());
    assert_eq!(
        std::fs::read_dir(data(&sb).join(".staging"))
            .unwrap()
            .count(),
        0
    );

    // What a killed install left — files staged, even moved into place
    // without their record — is not installed.
    let staged = data(&sb).join(".staging/999-1/plugin");
    claude_plugin(&staged, "ghost", &[]);
    claude_plugin(
        &data(&sb).join("installed/ghost@0123456789abcdef"),
        "ghost",
        &[],
    );
    assert_eq!(
        json(&sb.run(&["plugins", "list", "--json"])),
        serde_json::json!([])
    );
    assert!(!has(
        &json(&sb.run(&["list", "plugins", "--json"])),
        "name",
        "ghost"
    ));
    assert!(!has(
        &json(&sb.run(&["list", "tools", "--json"])),
        "name",
        "mcp__plugin_ghost_kit__echo"
    ));
    // An hour later, the next install removes them.
    for dir in [
        data(&sb).join(".staging/999-1"),
        data(&sb).join("installed/ghost@0123456789abcdef"),
    ] {
        let aged = Command::new("touch")
            .args(["-d", "3 hours ago"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(aged.success());
    }
    claude_plugin(&sb.work().join("fine"), "fine", &[]);
    assert_eq!(sb.run(&["plugins", "add", "fine", "--yes"]).code, 0);
    assert!(!data(&sb).join(".staging/999-1").exists());
    assert!(!data(&sb).join("installed/ghost@0123456789abcdef").exists());
    let kept = lock(&sb)["plugins"][0]["path"].as_str().unwrap().to_owned();
    assert!(data(&sb).join(kept).is_dir());
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn add_from_a_git_repository_records_the_commit_and_refuses_option_like_urls_and_refs() {
    let sb = Sandbox::new();
    grant_kits(&sb.home(), &["gitkit"], &[]);
    let repo = sb.dir.path().join("repo");
    claude_plugin(&repo, "gitkit", &[]);
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "v1"]);
    git(&repo, &["tag", "v1"]);
    let v1 = git(&repo, &["rev-parse", "HEAD"]);
    let url = format!("file://{}", repo.display());

    let added = json(&sb.run(&["plugins", "add", &format!("{url}#v1"), "--yes", "--json"]));
    assert_eq!(added["record"]["commit"], v1.as_str());
    assert_eq!(added["record"]["source"]["kind"], "git");
    assert_eq!(added["record"]["source"]["ref"], "v1");
    let again = json(&sb.run(&["plugins", "add", &format!("{url}#v1"), "--yes", "--json"]));
    assert_eq!(again["outcome"], "unchanged", "the same commit is a no-op");

    std::fs::write(repo.join("commands/bye.md"), "Say bye.\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "v2"]);
    let v2 = git(&repo, &["rev-parse", "HEAD"]);
    let updated = json(&sb.run(&["plugins", "add", &url, "--yes", "--json"]));
    assert_eq!(updated["outcome"], "installed");
    assert_eq!(updated["record"]["commit"], v2.as_str());
    let commands = json(&sb.run(&["list", "commands", "--json"]));
    assert!(has(&commands, "name", "/gitkit:bye"), "{commands:#}");

    let marker = sb.dir.path().join("pwned");
    for (spec, said) in [
        (
            format!("{url}#--upload-pack=touch {}", marker.display()),
            "a ref may not start with `-`",
        ),
        (
            format!("-u touch {}.git", marker.display()),
            "a URL may not start with `-`",
        ),
        (
            format!("ext::sh -c touch% {}.git", marker.display()),
            "ext::, fd::",
        ),
        (
            format!("{url}#nope"),
            "no branch, tag or commit of that name",
        ),
    ] {
        let refused = sb.run(&["plugins", "add", "--yes", "--", &spec]);
        assert_eq!(refused.code, 1, "{spec}: {}", refused.stderr);
        assert!(refused.stderr.contains(said), "{spec}: {}", refused.stderr);
    }
    assert!(!marker.exists(), "git ran nothing it was handed");
}

#[test]
fn a_plugin_is_added_by_name_from_a_marketplace() {
    let sb = Sandbox::new();
    let market = sb.work().join("market");
    claude_plugin(&market.join("plugins/mkit"), "mkit", &[]);
    sb.write(
        "market/.claude-plugin/marketplace.json",
        r#"{"name": "acme", "owner": {"name": "t"}, "plugins": [{"name": "mkit", "source": "./plugins/mkit", "description": "A kit"}]}"#,
    );
    let added = sb.run(&["plugins", "marketplace", "add", "market"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert!(
        added
            .stdout
            .contains("added marketplace acme (1 plugin: mkit)"),
        "{}",
        added.stdout
    );
    let unknown = sb.run(&["plugins", "add", "nope@acme", "--yes"]);
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.stderr.contains("lists no plugin named \"nope\""),
        "{}",
        unknown.stderr
    );
    let installed = json(&sb.run(&["plugins", "add", "mkit@acme", "--yes", "--json"]));
    assert_eq!(installed["record"]["source"]["kind"], "marketplace");
    assert_eq!(installed["record"]["source"]["marketplace"], "acme");
    let skills = json(&sb.run(&["list", "skills", "--json"]));
    assert!(has(&skills, "name", "mkit:hello"));

    // A marketplace in a git repository is cloned into extpool's store.
    let repo = sb.dir.path().join("market-repo");
    claude_plugin(&repo.join("plugins/gkit"), "gkit", &[]);
    std::fs::create_dir_all(repo.join(".claude-plugin")).unwrap();
    std::fs::write(
        repo.join(".claude-plugin/marketplace.json"),
        r#"{"name": "gitmarket", "owner": {"name": "t"}, "plugins": [{"name": "gkit", "source": "./plugins/gkit"}]}"#,
    )
    .unwrap();
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "market"]);
    let url = format!("file://{}", repo.display());
    let added = sb.run(&["plugins", "marketplace", "add", &url]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    std::fs::remove_dir_all(&repo).unwrap();
    let installed = json(&sb.run(&["plugins", "add", "gkit@gitmarket", "--yes", "--json"]));
    assert_eq!(installed["outcome"], "installed", "{installed}");
    let markets = json(&sb.run(&["plugins", "marketplace", "list", "--json"]));
    assert!(has(&markets, "name", "gitmarket") && has(&markets, "name", "acme"));
}

#[test]
fn one_precedence_the_first_definition_wins_and_every_shadowed_one_is_reported() {
    let sb = Sandbox::new();
    // A skill and a command file of one name: the skill wins (as in
    // Claude Code).
    sb.write(
        ".claude/skills/review/SKILL.md",
        "---\nname: review\ndescription: The review skill\n---\nReview as a skill.\n",
    );
    sb.write(".claude/commands/review.md", "Review as a command file.\n");
    // The project's command file before the user's of the same name.
    sb.write(".claude/commands/ship.md", "Ship from the project.\n");
    std::fs::create_dir_all(sb.home().join(".claude/commands")).unwrap();
    std::fs::write(
        sb.home().join(".claude/commands/ship.md"),
        "Ship from home.\n",
    )
    .unwrap();
    // One plugin name installed by two hosts: extpool's own order keeps
    // Claude Code's, and Gemini CLI's is reported.
    claude_install(&sb.home(), "mk", "twin", true, &[]);
    gemini_install(&sb.home(), "twin", true, &[]);
    grant_kits(&sb.home(), &["twin"], &[]);

    let review = sb.run(&["run", "/review"]);
    assert!(
        review.stdout.contains("Review as a skill."),
        "{}",
        review.stdout
    );
    assert!(
        review
            .stderr
            .contains("command files: name \"review\" is already taken"),
        "{}",
        review.stderr
    );
    let ship = sb.run(&["run", "/ship"]);
    assert_eq!(ship.stdout.trim(), "Ship from the project.");
    let sources = json(&sb.run(&["list", "sources", "--json"]));
    let commands = find(&sources, "kind", "commands");
    let dropped: Vec<&str> = commands["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    let said = |what: &str| dropped.iter().any(|d| d.contains(what));
    assert!(said("name \"review\" is already taken"), "{dropped:#?}");
    assert!(said("command /ship is already defined by"), "{dropped:#?}");
    assert!(
        said("plugin twin: server \"kit\" is not served: the name \"plugin_twin_kit\" is taken"),
        "{dropped:#?}"
    );
    let servers = json(&sb.run(&["list", "servers", "--json"]));
    let origin = find(&servers, "name", "plugin_twin_kit")["origin"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        origin.contains(".claude/plugins/cache"),
        "Claude Code's comes first: {origin}"
    );
}
