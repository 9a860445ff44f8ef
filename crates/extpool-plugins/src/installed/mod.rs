//! What each host installed and enabled, read from the host's own records
//! — nothing is configured in extpool:
//!
//! - Claude Code ([`claude`]): `~/.claude/plugins/installed_plugins.json`
//!   and `enabledPlugins` of the user, project and local settings;
//! - Codex ([`codex`]): `[plugins."name@marketplace"]` of
//!   `~/.codex/config.toml` and its plugin cache;
//! - Gemini CLI ([`gemini`]): `~/.gemini/extensions/<name>/` and
//!   `extension-enablement.json`;
//! - extpool itself ([`extpool`]): the lock record of its own store
//!   ([`crate::store`]).
//!
//! Records change between host versions: they are read defensively
//! (unknown keys ignored, a missing file means nothing installed, a broken
//! one is a located diagnostic and the other hosts still load).

pub mod claude;
pub mod codex;
pub mod extpool;
pub mod gemini;

use std::path::PathBuf;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::plugin::Plugin;

/// A host that installs plugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Host {
    /// extpool itself (`extpool plugins add`).
    Extpool,
    /// Claude Code.
    ClaudeCode,
    /// Codex.
    Codex,
    /// Gemini CLI.
    GeminiCli,
}

impl Host {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Extpool => "extpool",
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
        }
    }
}

/// One plugin a host installed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstalledPlugin {
    /// The host that installed it.
    pub host: Host,
    /// Its id in the host's records (`plugin@marketplace`, or a Gemini
    /// extension's name).
    pub id: String,
    /// The install scope (`user`, `project`, `local`).
    pub scope: String,
    /// Where the host installed it (what runs).
    pub install_path: PathBuf,
    /// Whether the host has it enabled (for this project): only enabled
    /// plugins' servers may be started.
    pub enabled: bool,
    /// What decided `enabled`, in words (the file and entry, or the default).
    pub enabled_by: String,
    /// The plugin as read; `None` when it could not be (see `diagnostics`).
    pub plugin: Option<Plugin>,
    /// What was wrong with its record or its folder (the plugin's own
    /// diagnostics are in `plugin`).
    pub diagnostics: Vec<Diagnostic>,
}

/// Where the hosts keep their records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostDirs {
    /// The home folder.
    pub home: PathBuf,
    /// The project (working directory); `None` reads user records only.
    pub project: Option<PathBuf>,
    /// Claude Code's configuration folder (`CLAUDE_CONFIG_DIR`, else `~/.claude`).
    pub claude: PathBuf,
    /// Codex's home (`CODEX_HOME`, else `~/.codex`).
    pub codex: PathBuf,
    /// Gemini CLI's user folder (`~/.gemini`).
    pub gemini: PathBuf,
}

impl HostDirs {
    /// The default folders under `home`.
    pub fn new(home: impl Into<PathBuf>, project: Option<PathBuf>) -> Self {
        let home = home.into();
        Self {
            claude: home.join(".claude"),
            codex: home.join(".codex"),
            gemini: home.join(".gemini"),
            home,
            project,
        }
    }
}
