//! Where configurations are found, and what format a file is in.
//!
//! Without `--config`, extpool reads every config below that exists, in
//! this order (the first definition of a server name wins):
//!
//! | # | file | format |
//! |---|------|--------|
//! | 1 | `./extpool.yaml` (or `.yml`) | extpool |
//! | 2 | `./.mcp.json` | Claude Code project (`mcpServers`) |
//! | 3 | `./.cursor/mcp.json` | Cursor project (`mcpServers`) |
//! | 4 | `./.vscode/mcp.json` | VS Code workspace (`servers`) |
//! | 5 | `./.codex/config.toml` | Codex project (`[mcp_servers.<name>]`) |
//! | 6 | `$XDG_CONFIG_HOME/extpool/extpool.yaml` (`~/.config/…`) | extpool |
//! | 7 | `~/.claude.json` | Claude Code user (`mcpServers`, and `projects.<cwd>.mcpServers`) |
//! | 8 | `~/.cursor/mcp.json` | Cursor user |
//! | 9 | Claude Desktop's `claude_desktop_config.json` | Claude Desktop |
//! | 10 | VS Code's user `mcp.json` | VS Code user |
//! | 11 | `$CODEX_HOME/config.toml` (`~/.codex/config.toml`) | Codex user |
//!
//! All locations are computed from a [`Places`] value so tests (and
//! embedders) can point them anywhere.

use std::path::{Path, PathBuf};

/// The formats extpool reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigFormat {
    /// `extpool.yaml`.
    Extpool,
    /// A JSON file with `mcpServers` (Claude Code `.mcp.json`, Cursor, Claude Desktop).
    McpServersJson,
    /// Claude Code's user file `~/.claude.json` (`mcpServers` plus per-project entries).
    ClaudeUserJson,
    /// VS Code's `mcp.json` (`servers`, `inputs`).
    VsCodeJson,
    /// Codex's `config.toml` (`[mcp_servers.<name>]`).
    CodexToml,
}

impl ConfigFormat {
    /// Short name for messages and `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Extpool => "extpool",
            Self::McpServersJson => "mcp-servers-json",
            Self::ClaudeUserJson => "claude-user-json",
            Self::VsCodeJson => "vscode-json",
            Self::CodexToml => "codex-toml",
        }
    }

    /// Name of the file's syntax, for syntax errors.
    pub fn syntax_name(self) -> &'static str {
        match self {
            Self::Extpool => "YAML",
            Self::McpServersJson | Self::ClaudeUserJson | Self::VsCodeJson => "JSON",
            Self::CodexToml => "TOML",
        }
    }
}

/// Which program a found config belongs to (shown to the user).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// extpool's own file.
    Extpool,
    /// Claude Code.
    ClaudeCode,
    /// Claude Desktop.
    ClaudeDesktop,
    /// Cursor.
    Cursor,
    /// VS Code.
    VsCode,
    /// Codex.
    Codex,
    /// A file named with `--config` whose program is not known.
    Other,
}

impl Origin {
    /// The program's name.
    pub fn label(self) -> &'static str {
        match self {
            Self::Extpool => "extpool",
            Self::ClaudeCode => "Claude Code",
            Self::ClaudeDesktop => "Claude Desktop",
            Self::Cursor => "Cursor",
            Self::VsCode => "VS Code",
            Self::Codex => "Codex",
            Self::Other => "MCP config",
        }
    }

    /// Whether the program expands `${VAR}` in its config (so extpool does too).
    pub fn expands_variables(self) -> bool {
        !matches!(self, Self::ClaudeDesktop | Self::Codex)
    }
}

/// A config location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: ConfigFormat,
    /// The program it belongs to.
    pub origin: Origin,
    /// Project (working directory) or user location.
    pub project: bool,
}

/// The directories configs are looked up in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Places {
    /// The working directory.
    pub cwd: PathBuf,
    /// The home directory (`HOME`, or `USERPROFILE` on Windows).
    pub home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME` when set.
    pub xdg_config_home: Option<PathBuf>,
    /// `APPDATA` (Windows) when set.
    pub appdata: Option<PathBuf>,
    /// `CODEX_HOME` when set.
    pub codex_home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR` when set (Claude Code's folder, else `~/.claude`).
    pub claude_config_dir: Option<PathBuf>,
    /// The largest file read, in bytes (`EXTPOOL_MAX_CONFIG_BYTES`; `None`:
    /// [`crate::read::DEFAULT_MAX_FILE_BYTES`]).
    pub max_file_bytes: Option<u64>,
    /// extpool's own data directory (the plugins it installed, plugins'
    /// data folders); `None`: the one of [`Places::home`] (see
    /// [`Places::data_dir`]).
    pub data_dir: Option<PathBuf>,
}

impl Places {
    /// The places of this process (working directory and environment).
    pub fn from_env() -> Self {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Self {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            home: var("HOME").or_else(|| var("USERPROFILE")),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            appdata: var("APPDATA"),
            codex_home: var("CODEX_HOME"),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            max_file_bytes: Some(crate::read::limit_from_env()),
            data_dir: Some(extpool_core::dirs::data_dir()),
        }
    }

    /// extpool's data directory: [`Places::data_dir`] when set, else the
    /// platform's rule (`extpool_core::dirs`) applied to [`Places::home`];
    /// `None` without either.
    pub fn data_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.data_dir {
            return Some(dir.clone());
        }
        let home = self.home.as_ref()?;
        Some(extpool_core::dirs::data_dir_from(|name| {
            (name == "HOME").then(|| home.clone().into_os_string())
        }))
    }

    /// The user's configuration directory (`$XDG_CONFIG_HOME`, else `~/.config`).
    pub fn config_dir(&self) -> Option<PathBuf> {
        self.xdg_config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")))
    }

    /// Every location in precedence order, whether or not the file exists.
    pub fn candidates(&self) -> Vec<Candidate> {
        let mut out = Vec::new();
        let mut add = |path: PathBuf, format, origin, project| {
            out.push(Candidate {
                path,
                format,
                origin,
                project,
            })
        };
        let cwd = &self.cwd;
        let yaml = cwd.join("extpool.yaml");
        let yml = cwd.join("extpool.yml");
        let local = if !yaml.exists() && yml.exists() {
            yml
        } else {
            yaml
        };
        add(local, ConfigFormat::Extpool, Origin::Extpool, true);
        add(
            cwd.join(".mcp.json"),
            ConfigFormat::McpServersJson,
            Origin::ClaudeCode,
            true,
        );
        add(
            cwd.join(".cursor/mcp.json"),
            ConfigFormat::McpServersJson,
            Origin::Cursor,
            true,
        );
        add(
            cwd.join(".vscode/mcp.json"),
            ConfigFormat::VsCodeJson,
            Origin::VsCode,
            true,
        );
        add(
            cwd.join(".codex/config.toml"),
            ConfigFormat::CodexToml,
            Origin::Codex,
            true,
        );

        if let Some(dir) = self.config_dir() {
            add(
                dir.join("extpool/extpool.yaml"),
                ConfigFormat::Extpool,
                Origin::Extpool,
                false,
            );
        }
        if let Some(home) = &self.home {
            add(
                home.join(".claude.json"),
                ConfigFormat::ClaudeUserJson,
                Origin::ClaudeCode,
                false,
            );
            add(
                home.join(".cursor/mcp.json"),
                ConfigFormat::McpServersJson,
                Origin::Cursor,
                false,
            );
        }
        for path in self.app_config_files("Claude", "claude_desktop_config.json") {
            add(
                path,
                ConfigFormat::McpServersJson,
                Origin::ClaudeDesktop,
                false,
            );
        }
        for path in self.app_config_files("Code/User", "mcp.json") {
            add(path, ConfigFormat::VsCodeJson, Origin::VsCode, false);
        }
        let codex = self
            .codex_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".codex")));
        if let Some(dir) = codex {
            add(
                dir.join("config.toml"),
                ConfigFormat::CodexToml,
                Origin::Codex,
                false,
            );
        }
        out
    }

    /// The candidates whose file exists (a FIFO or a device there is kept,
    /// so that reading it reports what it is rather than passing silently;
    /// a directory is not a config file and is left out).
    pub fn existing(&self) -> Vec<Candidate> {
        self.candidates()
            .into_iter()
            .filter(|c| c.path.exists() && !c.path.is_dir())
            .collect()
    }

    /// An application's config file on this platform, where it writes
    /// its settings: `%APPDATA%` on Windows, `~/Library/Application
    /// Support` on macOS, the configuration directory elsewhere.
    pub fn app_config_file(&self, app: &str, file: &str) -> Option<PathBuf> {
        let dir = if cfg!(windows) {
            self.appdata.clone()
        } else if cfg!(target_os = "macos") {
            self.home
                .as_ref()
                .map(|h| h.join("Library/Application Support"))
        } else {
            self.config_dir()
        }?;
        Some(dir.join(app).join(file))
    }

    /// An application's config file on Linux, macOS and Windows (deduplicated).
    fn app_config_files(&self, app: &str, file: &str) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(d) = self.config_dir() {
            dirs.push(d);
        }
        if let Some(h) = &self.home {
            dirs.push(h.join("Library/Application Support"));
        }
        if let Some(a) = &self.appdata {
            dirs.push(a.clone());
        }
        let mut out: Vec<PathBuf> = Vec::new();
        for d in dirs {
            let p = d.join(app).join(file);
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }
}

/// What a file named with `--config` is, from its name and (for JSON) its keys.
pub fn detect(path: &Path, text: &str) -> Option<(ConfigFormat, Origin)> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "yaml" | "yml" => return Some((ConfigFormat::Extpool, Origin::Extpool)),
        "toml" => return Some((ConfigFormat::CodexToml, Origin::Codex)),
        "json" => {}
        _ => return None,
    }
    if name == ".claude.json" {
        return Some((ConfigFormat::ClaudeUserJson, Origin::ClaudeCode));
    }
    if name == "claude_desktop_config.json" {
        return Some((ConfigFormat::McpServersJson, Origin::ClaudeDesktop));
    }
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|p| p.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    // Decide by the top-level key: `servers` is VS Code, `mcpServers` everyone else.
    let has_servers = text.contains("\"servers\"");
    let has_mcp_servers = text.contains("\"mcpServers\"");
    if !has_mcp_servers && (has_servers || parent == ".vscode") {
        return Some((ConfigFormat::VsCodeJson, Origin::VsCode));
    }
    let origin = match parent.as_str() {
        ".cursor" => Origin::Cursor,
        _ if name == ".mcp.json" => Origin::ClaudeCode,
        _ => Origin::Other,
    };
    Some((ConfigFormat::McpServersJson, origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_in_precedence_order() {
        let places = Places {
            cwd: "/p".into(),
            home: Some("/h".into()),
            ..Places::default()
        };
        let c: Vec<String> = places
            .candidates()
            .iter()
            .map(|c| c.path.display().to_string())
            .collect();
        assert_eq!(
            c,
            [
                "/p/extpool.yaml",
                "/p/.mcp.json",
                "/p/.cursor/mcp.json",
                "/p/.vscode/mcp.json",
                "/p/.codex/config.toml",
                "/h/.config/extpool/extpool.yaml",
                "/h/.claude.json",
                "/h/.cursor/mcp.json",
                "/h/.config/Claude/claude_desktop_config.json",
                "/h/Library/Application Support/Claude/claude_desktop_config.json",
                "/h/.config/Code/User/mcp.json",
                "/h/Library/Application Support/Code/User/mcp.json",
                "/h/.codex/config.toml",
            ]
        );
    }

    #[test]
    fn detects_formats() {
        let d = |p: &str, t: &str| detect(Path::new(p), t).map(|(f, _)| f);
        assert_eq!(d("x/extpool.yaml", ""), Some(ConfigFormat::Extpool));
        assert_eq!(d("x/config.toml", ""), Some(ConfigFormat::CodexToml));
        assert_eq!(
            d("x/.mcp.json", "{\"mcpServers\":{}}"),
            Some(ConfigFormat::McpServersJson)
        );
        assert_eq!(
            d("x/mcp.json", "{\"servers\":{}}"),
            Some(ConfigFormat::VsCodeJson)
        );
        assert_eq!(
            d("x/.vscode/mcp.json", "{}"),
            Some(ConfigFormat::VsCodeJson)
        );
        assert_eq!(
            d("/h/.claude.json", "{}"),
            Some(ConfigFormat::ClaudeUserJson)
        );
        assert_eq!(d("x/config.ini", ""), None);
    }
}
