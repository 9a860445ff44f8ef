//! Command files — the slash commands people write for their hosts — as
//! a source of their own (the RFC's `CommandResource` with a local client):
//!
//! - Claude Code: `.claude/commands/**/*.md` (project), `~/.claude/commands`
//!   (user), a plugin's `commands/`; a subfolder is a namespace
//!   (`frontend/test.md` → `frontend:test`); frontmatter `description`,
//!   `argument-hint`, `allowed-tools`, `model`, `arguments`;
//! - Codex custom prompts: `~/.codex/prompts/*.md` (`$CODEX_HOME/prompts`),
//!   served as `prompts:<name>` as Codex names them;
//! - Gemini CLI: `.gemini/commands/**/*.toml` (project), `~/.gemini/commands`
//!   (user), an extension's `commands/`: `prompt`, `description`; a
//!   subfolder is a namespace (`git/commit.toml` → `git:commit`).
//!
//! A plugin's commands are served as `plugin:command`. Nothing a command
//! asks its host to run is ever run by extpool ([`render`]).

pub(crate) mod parse;
pub mod render;
mod source;

use std::path::PathBuf;

use serde::Serialize;

pub(crate) use parse::{read_folder, read_markdown_command};
pub use render::{RenderError, render};
pub use source::LocalCommandSource;

/// How a command file is written and rendered: each host's own rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Dialect {
    /// Claude Code Markdown: `$ARGUMENTS`, `$ARGUMENTS[N]`, `$N` (0-based,
    /// as Claude Code renders commands and skills alike), named
    /// `arguments`, `${CLAUDE_PLUGIN_ROOT}`; `` !`cmd` ``, ```` ```! ```` and
    /// `@file` are the host's to run.
    ClaudeCode,
    /// Codex custom prompt Markdown: `$1`…`$9`, `$ARGUMENTS`, named `$KEY`
    /// from `KEY=value` arguments, `$$` kept.
    CodexPrompt,
    /// Gemini CLI TOML: `{{args}}`; without it the invocation is appended;
    /// `!{…}` and `@{…}` are the host's to run.
    GeminiToml,
}

/// Where a command comes from (its precedence class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CommandOrigin {
    /// A project's command folder.
    Project,
    /// The user's command folder.
    User,
    /// A plugin.
    Plugin,
}

/// One command read from a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandSpec {
    /// The name it is served under, as typed after `/` (`review`,
    /// `frontend:test`, `prompts:draft`, `plugin:command`).
    pub name: String,
    /// The name as its folder or plugin declares it (without a plugin's prefix).
    pub local_name: String,
    /// How it is rendered.
    pub dialect: Dialect,
    /// What it does (the frontmatter's, else the body's first line).
    pub description: String,
    /// `argument-hint`: display-only text for the argument line.
    pub argument_hint: Option<String>,
    /// `allowed-tools` as written: the tools the host pre-approves while it
    /// runs (extpool grants nothing from it).
    pub allowed_tools: Option<String>,
    /// `model`: the model the host would use for it.
    pub model: Option<String>,
    /// Named positional arguments (Claude Code's `arguments`).
    pub arguments: Vec<String>,
    /// The prompt text, unrendered.
    #[serde(skip)]
    pub body: String,
    /// The file it was read from.
    pub path: PathBuf,
    /// Where it comes from.
    pub origin: CommandOrigin,
    /// The plugin that provides it.
    pub plugin: Option<String>,
    /// That plugin's root (for `${CLAUDE_PLUGIN_ROOT}`).
    #[serde(skip)]
    pub plugin_root: Option<PathBuf>,
}

impl CommandSpec {
    /// Whether its body asks its host to run shell lines or include
    /// files (what extpool shows as text and never runs).
    pub fn asks_host_to_run(&self) -> bool {
        render::asks_host_to_run(self.dialect, &self.body)
    }

    /// The entry `list_commands` gives for it.
    pub fn entry(&self) -> extpool_core::CommandEntry {
        let mut entry = extpool_core::CommandEntry::new(&self.name, &self.description);
        entry.argument_hint = self.argument_hint.clone();
        entry.arguments = self
            .arguments
            .iter()
            .map(|a| extpool_core::CommandArgument {
                name: a.clone(),
                description: None,
                required: false,
            })
            .collect();
        entry
    }
}
