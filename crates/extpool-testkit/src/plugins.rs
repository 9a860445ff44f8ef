//! Plugins for tests, written as each host's documentation describes them
//! and laid out in a home folder as each host's own CLI installs them
//! (observed with Claude Code 2.1.328 and Gemini CLI 0.61 installing
//! into an empty `HOME`): a Claude Code plugin with a command, a skill,
//! a subagent, a hook and an MCP server (the testkit server, started
//! through `${CLAUDE_PLUGIN_ROOT}/bin/kit`), its install record and its
//! `enabledPlugins` entry; a Gemini CLI extension; a Codex plugin.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::server_binary;

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create the fixture's folder");
    }
    std::fs::write(path, text).expect("write a fixture file");
}

/// A shell script at `path` that runs the testkit server over stdio
/// (with `args` after its own), made executable.
pub fn kit_script(path: &Path, args: &[String]) {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    write(
        path,
        &format!(
            "#!/bin/sh\nexec '{}' --transport stdio {} \"$@\"\n",
            server_binary().display(),
            quoted.join(" ")
        ),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .expect("make the script executable");
    }
}

/// The `plugins:` section of an `extpool.yaml` that lets the kit servers
/// of plugins `names` run under their default permission profile: each
/// plugin's profile widened by read access to the testkit server binary,
/// which the kit's `bin/kit` runs from outside the plugin's folder (where
/// the default profile does not reach, as it would not reach a real
/// plugin's program kept elsewhere), and by write access to `writable`
/// (a `--state-dir` given to the servers).
pub fn kit_grants(names: &[&str], writable: &[&Path]) -> String {
    let binary = server_binary().display().to_string();
    let write: Vec<String> = writable
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect();
    let mut yaml = String::from("plugins:\n  sandbox:\n");
    for name in names {
        yaml.push_str(&format!("    {name}:\n      read: [{binary:?}]\n"));
        if !write.is_empty() {
            yaml.push_str(&format!("      write: [{}]\n", write.join(", ")));
        }
    }
    yaml
}

/// Writes [`kit_grants`] for `names` as the user's `extpool.yaml` in
/// `home` (`~/.config/extpool/extpool.yaml`).
pub fn grant_kits(home: &Path, names: &[&str], writable: &[&Path]) {
    write(
        &home.join(".config/extpool/extpool.yaml"),
        &kit_grants(names, writable),
    );
}

/// Writes Claude Code plugin `name` into `dir`: `.claude-plugin/plugin.json`,
/// `commands/hi.md` (`$ARGUMENTS`, and a `` !`…` `` shell line),
/// `skills/hello/SKILL.md` (with `references/notes.md`),
/// `agents/helper.md`, `hooks/hooks.json` and `.mcp.json` with server
/// `kit` (the testkit server, `server_args` after its own).
pub fn claude_plugin(dir: &Path, name: &str, server_args: &[String]) {
    write(
        &dir.join(".claude-plugin/plugin.json"),
        &json!({"name": name, "version": "1.0.0", "description": format!("The {name} plugin")})
            .to_string(),
    );
    write(
        &dir.join("commands/hi.md"),
        "---\ndescription: Says hi\nargument-hint: <who>\n---\nSay hi to $ARGUMENTS.\nBranch: !`git branch --show-current`\n",
    );
    write(
        &dir.join("skills/hello/SKILL.md"),
        "---\nname: hello\ndescription: Greets people by name\n---\nGreet $ARGUMENTS warmly. See references/notes.md.\n",
    );
    write(&dir.join("skills/hello/references/notes.md"), "Be kind.\n");
    write(
        &dir.join("agents/helper.md"),
        &format!(
            "---\nname: helper\ndescription: Helps with greetings\ntools: Read, mcp__plugin_{name}_kit__echo\nmodel: sonnet\n---\nYou help people greet each other.\n"
        ),
    );
    write(
        &dir.join("hooks/hooks.json"),
        &json!({"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [
            {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/format.sh"}]}]}})
        .to_string(),
    );
    kit_script(&dir.join("bin/kit"), server_args);
    write(
        &dir.join(".mcp.json"),
        &json!({"mcpServers": {"kit": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/kit"}}}).to_string(),
    );
}

fn read_json(path: &Path) -> Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({}))
}

fn write_json(path: &Path, value: &Value) {
    write(
        path,
        &serde_json::to_string_pretty(value).expect("serialize JSON"),
    );
}

/// Installs Claude Code plugin `name` of marketplace `market` (written by
/// [`claude_plugin`]) into `home` as `claude plugin install` does: a copy
/// under `~/.claude/plugins/cache/<market>/<name>/1.0.0`, its entry in
/// `installed_plugins.json`, and `enabledPlugins["name@market"] =
/// enabled` in `~/.claude/settings.json`. Returns the copy's folder.
pub fn claude_install(
    home: &Path,
    market: &str,
    name: &str,
    enabled: bool,
    server_args: &[String],
) -> PathBuf {
    let install = home
        .join(".claude/plugins/cache")
        .join(market)
        .join(name)
        .join("1.0.0");
    claude_plugin(&install, name, server_args);
    let id = format!("{name}@{market}");
    let record = home.join(".claude/plugins/installed_plugins.json");
    let mut installed = read_json(&record);
    installed["version"] = json!(2);
    installed["plugins"][&id] = json!([{
        "scope": "user",
        "installPath": install.display().to_string(),
        "version": "1.0.0",
        "installedAt": "2026-12-01T10:00:00.000Z",
        "lastUpdated": "2026-12-01T10:00:00.000Z"
    }]);
    write_json(&record, &installed);
    claude_enable(home, &id, enabled);
    install
}

/// Sets `enabledPlugins[id]` in `~/.claude/settings.json`, as `claude
/// plugin enable|disable` does.
pub fn claude_enable(home: &Path, id: &str, enabled: bool) {
    let settings = home.join(".claude/settings.json");
    let mut value = read_json(&settings);
    value["enabledPlugins"][id] = json!(enabled);
    write_json(&settings, &value);
}

/// Writes Gemini CLI extension `name` into `dir`: its manifest (server
/// `kit`, the testkit server through `${extensionPath}/bin/kit`),
/// `GEMINI.md`, `commands/greet.toml` (`{{args}}` and a `!{…}` shell
/// line) and `skills/wave/SKILL.md`.
pub fn gemini_extension(dir: &Path, name: &str, server_args: &[String]) {
    write(
        &dir.join("gemini-extension.json"),
        &json!({"name": name, "version": "1.0.0",
            "mcpServers": {"kit": {"command": "${extensionPath}/bin/kit"}},
            "contextFileName": "GEMINI.md"})
        .to_string(),
    );
    write(&dir.join("GEMINI.md"), "Context for the model.\n");
    write(
        &dir.join("commands/greet.toml"),
        "description = \"Greets\"\nprompt = \"Greet {{args}}. Files: !{ls}\"\n",
    );
    write(
        &dir.join("skills/wave/SKILL.md"),
        "---\nname: wave\ndescription: Waves\n---\nWave.\n",
    );
    kit_script(&dir.join("bin/kit"), server_args);
}

/// Installs Gemini CLI extension `name` (see [`gemini_extension`]) into
/// `home` as `gemini extensions install` does: a copy in
/// `~/.gemini/extensions/<name>/` with its install metadata, and its rule
/// in `extension-enablement.json`.
pub fn gemini_install(home: &Path, name: &str, enabled: bool, server_args: &[String]) -> PathBuf {
    let dir = home.join(".gemini/extensions").join(name);
    gemini_extension(&dir, name, server_args);
    write_json(
        &dir.join(".gemini-extension-install.json"),
        &json!({"source": "/tmp/src", "type": "local"}),
    );
    let rule = format!("{}{}/*", if enabled { "" } else { "!" }, home.display());
    let file = home.join(".gemini/extensions/extension-enablement.json");
    let mut value = read_json(&file);
    value[name] = json!({"overrides": [rule]});
    write_json(&file, &value);
    dir
}
