//! The bounds on everything a plugin, a host record or a command folder
//! controls: an outside party writes these files, so every read and every
//! walk stops at a limit and says so.

/// Bounds on one read of plugins and command folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest manifest, command, agent, hooks or host record file read, in
    /// bytes (SKILL.md files have extpool-skills' own bound).
    pub max_file_bytes: u64,
    /// Most files and folders looked at in one plugin (commands, agents,
    /// skill folders); the rest is skipped with a diagnostic.
    pub max_files_per_plugin: usize,
    /// Most plugins read from one root (a host's install record, an
    /// extensions folder, a marketplace).
    pub max_plugins_per_root: usize,
    /// Deepest folder level searched for command files below a command
    /// folder (a file directly in it is level 1).
    pub max_command_depth: usize,
    /// Most command files read from one command folder.
    pub max_commands_per_folder: usize,
}

/// 1 MiB: far above any real manifest or command file.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 20;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_files_per_plugin: 2000,
            max_plugins_per_root: 500,
            max_command_depth: 6,
            max_commands_per_folder: 2000,
        }
    }
}
