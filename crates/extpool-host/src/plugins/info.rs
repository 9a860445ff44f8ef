//! The rows front ends show of plugins: every plugin found (enabled or
//! not, loaded or not) with what it provides under the names it is served
//! by, its subagents, its hooks (listed, never run by extpool), and what
//! was found wrong.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use extpool_plugins::{AgentSpec, HookSpec, InstalledPlugin, qualified};
use extpool_sandbox::SandboxProfile;
use serde::Serialize;

use super::{Confinement, Found};

/// One plugin as `extpool list plugins` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PluginInfo {
    /// Its name: the namespace of what it provides.
    pub name: String,
    /// Its id in its host's records (`plugin@marketplace`, an extension's name).
    pub id: String,
    /// The host that installed it (`extpool`, `claude-code`, `codex`, `gemini-cli`).
    pub host: &'static str,
    /// Its format, when it loaded.
    pub format: Option<&'static str>,
    /// Its version, when it declares one.
    pub version: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// The install scope (`user`, `project`, `local`).
    pub scope: String,
    /// Whether its host has it enabled (only enabled plugins are served).
    pub enabled: bool,
    /// What decided `enabled`.
    pub enabled_by: String,
    /// Whether it loaded (a plugin that did not is listed with why).
    pub loaded: bool,
    /// Its folder.
    pub path: PathBuf,
    /// Its skills, as served (`plugin:skill`).
    pub skills: Vec<String>,
    /// Its commands, as served (`plugin:command`).
    pub commands: Vec<String>,
    /// Its MCP servers, by extpool server name (`plugin_<plugin>_<server>`).
    pub servers: Vec<String>,
    /// The permission profile each of its servers runs under, by extpool
    /// server name: `null` for one that runs unconfined (the user turned
    /// confinement off for the plugin, or an HTTP server, which runs
    /// elsewhere).
    pub sandbox: BTreeMap<String, Option<SandboxProfile>>,
    /// Its subagents (`plugin:agent`).
    pub agents: Vec<String>,
    /// Its hooks: listed, never run by extpool.
    pub hooks: Vec<HookSpec>,
    /// What was found wrong with it, one line each (`path:line: message`).
    pub diagnostics: Vec<String>,
}

/// One subagent definition of an enabled plugin, for the agent library:
/// its system prompt, tool allowlist and model hint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentInfo {
    /// The name it is listed under (`plugin:agent`).
    pub name: String,
    /// The plugin that defines it.
    pub plugin: String,
    /// When to use it.
    pub description: String,
    /// The tools it may use, as written (`None`: no allowlist).
    pub tools: Option<Vec<String>>,
    /// The model hint (`sonnet`, `inherit`, a model id).
    pub model: Option<String>,
    /// The system prompt.
    pub system_prompt: String,
    /// The file it was read from.
    pub path: PathBuf,
}

fn row(p: &InstalledPlugin, confinement: Option<&Confinement>) -> PluginInfo {
    let mut info = PluginInfo {
        name: p.id.clone(),
        id: p.id.clone(),
        host: p.host.as_str(),
        format: None,
        version: None,
        description: None,
        scope: p.scope.clone(),
        enabled: p.enabled,
        enabled_by: p.enabled_by.clone(),
        loaded: p.plugin.is_some(),
        path: p.install_path.clone(),
        skills: Vec::new(),
        commands: Vec::new(),
        servers: Vec::new(),
        sandbox: BTreeMap::new(),
        agents: Vec::new(),
        hooks: Vec::new(),
        diagnostics: p.diagnostics.iter().map(ToString::to_string).collect(),
    };
    if let Some(plugin) = &p.plugin {
        info.name = plugin.name.clone();
        info.format = Some(plugin.format.as_str());
        info.version = plugin.version.clone();
        info.description = plugin.description.clone();
        info.path = plugin.root.clone();
        info.skills = plugin.skills.iter().map(|s| s.qualified.clone()).collect();
        info.commands = plugin.commands.iter().map(|c| c.name.clone()).collect();
        info.servers = plugin
            .servers
            .iter()
            .map(|s| s.server_name.clone())
            .collect();
        let profile = confinement.map(Confinement::profile);
        info.sandbox = plugin
            .servers
            .iter()
            .map(|s| {
                let confined = s.config.command.is_some();
                (s.server_name.clone(), profile.clone().filter(|_| confined))
            })
            .collect();
        info.agents = plugin.agents.iter().map(|a| a.qualified.clone()).collect();
        info.hooks = plugin.hooks.clone();
        info.diagnostics
            .extend(plugin.diagnostics.iter().map(ToString::to_string));
    }
    info
}

/// Every plugin of `found`, in precedence order.
pub fn plugins(found: &Found) -> Vec<PluginInfo> {
    found
        .discovery
        .plugins
        .iter()
        .enumerate()
        .map(|(i, p)| row(p, found.confinements.get(i).and_then(Option::as_ref)))
        .collect()
}

/// The subagents of `found`'s enabled plugins, the first of a name kept.
pub fn agents(found: &Found) -> Vec<AgentInfo> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for p in found.discovery.enabled() {
        let Some(plugin) = &p.plugin else { continue };
        for a in &plugin.agents {
            let a: &AgentSpec = a;
            if !seen.insert(a.qualified.clone()) {
                continue;
            }
            out.push(AgentInfo {
                name: qualified(&plugin.name, &a.name),
                plugin: plugin.name.clone(),
                description: a.description.clone(),
                tools: a.tools.clone(),
                model: a.model.clone(),
                system_prompt: a.system_prompt.clone(),
                path: a.path.clone(),
            });
        }
    }
    out
}

/// A `list sources` row per plugin: enabled or not, what it provides,
/// its host and folder, what was found wrong with it.
pub(crate) fn source_rows(
    found: &Found,
    places: &extpool_config::Places,
) -> Vec<crate::SourceInfo> {
    plugins(found)
        .into_iter()
        .map(|p| {
            let state = match (p.loaded, p.enabled) {
                (false, _) => "not loaded",
                (true, true) => "enabled",
                (true, false) => "disabled",
            };
            let count =
                |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
            let detail = format!(
                "{}, {}, {}, {}, {} (not run)",
                count(p.skills.len(), "skill"),
                count(p.commands.len(), "command"),
                count(p.servers.len(), "server"),
                count(p.agents.len(), "agent"),
                count(p.hooks.len(), "hook"),
            );
            let path = extpool_config::diagnostics::display_path(
                &p.path,
                Some(&places.cwd),
                places.home.as_deref(),
            );
            crate::SourceInfo {
                kind: "plugin",
                name: p.name,
                state: state.into(),
                detail,
                origin: format!("{} {} ({path})", p.host, p.id),
                revision: None,
                stale: false,
                last_error: None,
                dropped: p.diagnostics,
                last_success_ms: None,
                discovered_by: None,
                implementation: None,
                sandbox: None,
            }
        })
        .collect()
}

/// What discovery found wrong outside any one plugin (host records,
/// command files, names defined twice) and the plugin servers not served,
/// one line each.
pub fn problems(found: &Found) -> Vec<String> {
    let mut out: Vec<String> = found
        .discovery
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect();
    for s in &found.skipped_servers {
        out.push(format!(
            "plugin {}: server {:?} is not served: {}",
            s.plugin, s.server, s.reason
        ));
    }
    out.extend(found.unmatched.iter().cloned());
    out
}
