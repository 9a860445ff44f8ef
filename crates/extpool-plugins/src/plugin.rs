//! A plugin as read: what it provides (skills, MCP servers, commands,
//! subagents, hooks) and what was wrong with it, whatever its format.

use std::path::{Path, PathBuf};

use extpool_config::McpServerConfig;
use extpool_skills::SkillMeta;
use serde::{Deserialize, Serialize};

use crate::agents::AgentSpec;
use crate::command::CommandSpec;
use crate::diag::Diagnostic;
use crate::hooks::HookSpec;
pub use crate::names::{qualified, server_name};

/// A plugin format, each read as its own host reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// Agent Plugins 1.0: root `plugin.json`, `skills/`, `mcp.json`.
    AgentPlugins,
    /// Claude Code: `.claude-plugin/plugin.json`.
    ClaudeCode,
    /// Codex: `.codex-plugin/plugin.json` (or Claude Code's manifest).
    Codex,
    /// Gemini CLI: `gemini-extension.json`.
    GeminiCli,
}

impl Format {
    /// Every format, in the order a folder is probed.
    pub const ALL: [Format; 4] = [
        Format::AgentPlugins,
        Format::ClaudeCode,
        Format::Codex,
        Format::GeminiCli,
    ];

    /// The kebab-case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AgentPlugins => "agent-plugins",
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
        }
    }

    /// The manifest's path below the plugin root.
    pub fn manifest(self) -> &'static str {
        match self {
            Self::AgentPlugins => "plugin.json",
            Self::ClaudeCode => ".claude-plugin/plugin.json",
            Self::Codex => ".codex-plugin/plugin.json",
            Self::GeminiCli => "gemini-extension.json",
        }
    }

    /// The format of the plugin in `dir`, by the first manifest found in
    /// [`Format::ALL`] order; `None` when there is none.
    pub fn detect(dir: &Path) -> Option<Format> {
        Self::ALL
            .into_iter()
            .find(|f| dir.join(f.manifest()).is_file())
    }
}

/// The transport a plugin declared for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Transport {
    /// A child process over stdio.
    Stdio,
    /// MCP streamable HTTP.
    StreamableHttp,
    /// The deprecated HTTP+SSE transport (MCP 2024-11-05), which extpool's
    /// client does not speak: an Agent Plugins entry declaring it is valid
    /// but must not be started with another transport (§7.2.1), so the
    /// host skips it and says why.
    Sse,
}

/// One MCP server a plugin provides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginServer {
    /// Its name as the plugin declares it.
    pub name: String,
    /// The extpool server name it is served under (`plugin_<plugin>_<server>`,
    /// as Claude Code names plugin servers, made a valid server name).
    pub server_name: String,
    /// The declared transport.
    pub transport: Transport,
    /// extpool's entry for it: `${…}` of the plugin's own variables already
    /// substituted (and escaped), process variables kept as `${VAR}` when
    /// the host expands them.
    #[serde(skip)]
    pub config: McpServerConfig,
}

impl PluginServer {
    /// Whether extpool's client can start it.
    pub fn startable(&self) -> bool {
        self.transport != Transport::Sse
    }
}

/// One skill a plugin provides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginSkill {
    /// The skill's own name (its folder's).
    pub name: String,
    /// The name it is served under: `plugin:skill`, as Claude Code and
    /// Codex name plugin skills.
    pub qualified: String,
    /// The plugin's name (the namespace).
    pub plugin: String,
    /// The plugin's root (resolved): `${CLAUDE_PLUGIN_ROOT}`.
    pub plugin_root: PathBuf,
    /// The skill folder (resolved).
    pub dir: PathBuf,
    /// Its SKILL.md.
    pub skill_md: PathBuf,
    /// The frontmatter.
    #[serde(skip)]
    pub meta: SkillMeta,
}

/// What became of a plugin's MCP configuration (Agent Plugins §6.2, §7.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McpOutcome {
    /// The plugin has none.
    Absent,
    /// It was refused as a whole (a diagnostic says why).
    Disabled,
    /// It was read; bad entries were skipped one by one.
    Configured,
}

/// A plugin that loaded (parts of it may have been skipped).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plugin {
    /// Its format.
    pub format: Format,
    /// Its name: the namespace of its skills, commands and servers.
    pub name: String,
    /// `version`, when given.
    pub version: Option<String>,
    /// `description`, when given.
    pub description: Option<String>,
    /// The plugin root (resolved).
    pub root: PathBuf,
    /// The manifest read, when there is one (a Claude Code plugin may have none).
    pub manifest: Option<PathBuf>,
    /// Skills, in name order.
    pub skills: Vec<PluginSkill>,
    /// What became of its MCP configuration.
    pub mcp: McpOutcome,
    /// MCP servers, in declaration order.
    pub servers: Vec<PluginServer>,
    /// Commands, in name order.
    pub commands: Vec<CommandSpec>,
    /// Subagent definitions, in name order.
    pub agents: Vec<AgentSpec>,
    /// Hooks: listed, never run by extpool.
    pub hooks: Vec<HookSpec>,
    /// Context files (Gemini CLI's `contextFileName`, default `GEMINI.md`) that exist.
    pub context_files: Vec<PathBuf>,
    /// The persistent data folder of this plugin instance (`PLUGIN_DATA`):
    /// the host creates it before starting one of its servers.
    pub data_dir: PathBuf,
    /// Everything found wrong, in reading order.
    pub diagnostics: Vec<Diagnostic>,
}

/// A plugin that did not load: its manifest is missing or invalid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// The format it was read as, when one was found.
    pub format: Option<Format>,
    /// Why, as a code (`manifest-missing`, `invalid-manifest`,
    /// `unsupported-schema`, `manifest-escapes`, `not-a-directory`).
    pub reason: &'static str,
    /// The diagnostics (the first says why it was rejected).
    pub diagnostics: Vec<Diagnostic>,
}

/// Options for reading plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// Bounds on what is read.
    pub limits: crate::Limits,
    /// Where plugin data folders live: a plugin's is
    /// `<data_root>/<format>/<name>` (its `PLUGIN_DATA`).
    pub data_root: PathBuf,
    /// The project the plugin is read for (Gemini CLI's `${workspacePath}`);
    /// the plugin's own root when `None`.
    pub project: Option<PathBuf>,
}

impl ReadOptions {
    /// Default bounds, data under `data_root`.
    pub fn new(data_root: impl Into<PathBuf>) -> Self {
        Self {
            limits: crate::Limits::default(),
            data_root: data_root.into(),
            project: None,
        }
    }

    /// The data folder of plugin `name` of `format`.
    pub fn data_dir(&self, format: Format, name: &str) -> PathBuf {
        self.data_root.join(format.as_str()).join(name)
    }
}
