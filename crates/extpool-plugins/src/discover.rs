//! Everything the user already has, from `$HOME` and a project folder,
//! with no configuration: the plugins extpool, Claude Code, Codex and
//! Gemini CLI installed (enabled or not, by each host's rules), every
//! host's command folders and skill folders, and every problem found —
//! good entries and errors together, one broken file never hiding the
//! rest.
//!
//! One precedence, the first definition of a name wins and every later
//! one is reported as shadowed:
//!
//! - commands: the project's `.claude/commands`, then its
//!   `.gemini/commands`; the user's `~/.claude/commands`,
//!   `~/.codex/prompts` (as `prompts:<name>`), `~/.gemini/commands`; then
//!   the enabled plugins' commands (`plugin:command`) — extpool's own,
//!   then Claude Code's plugins, Codex's, Gemini CLI's extensions, each
//!   in id order;
//! - skills: every host's project and user skill folder as extpool-skills
//!   orders them (the owner of that list), then the enabled plugins'
//!   skills (`plugin:skill`) in the same plugin order.

use std::path::{Path, PathBuf};

use extpool_skills::DiscoveryConfig;

use crate::command::parse::Context;
use crate::command::{CommandOrigin, CommandSpec, Dialect, LocalCommandSource, read_folder};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::installed::{self, HostDirs, InstalledPlugin};
use crate::limits::Limits;
use crate::plugin::{PluginSkill, ReadOptions};
use crate::store::Store;

/// A host's reader of what it installed.
type HostReader = fn(&HostDirs, &ReadOptions) -> (Vec<InstalledPlugin>, Vec<Diagnostic>);

/// What to discover from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverRequest {
    /// Where the hosts keep their records.
    pub dirs: HostDirs,
    /// Where plugin data folders (`PLUGIN_DATA`) live.
    pub data_root: PathBuf,
    /// Bounds.
    pub limits: Limits,
    /// Read what Claude Code, Codex and Gemini CLI installed.
    pub hosts: bool,
    /// Read every host's command folders.
    pub command_folders: bool,
    /// Discover every host's skill folders too ([`Discovery::skills`]).
    pub skill_folders: bool,
    /// extpool's own store, when its plugins are read.
    pub store: Option<Store>,
}

impl DiscoverRequest {
    /// From `home` and `project`, with the hosts' default folders.
    pub fn new(
        home: impl Into<PathBuf>,
        project: Option<PathBuf>,
        data_root: impl Into<PathBuf>,
    ) -> Self {
        Self {
            dirs: HostDirs::new(home, project),
            data_root: data_root.into(),
            limits: Limits::default(),
            hosts: true,
            command_folders: true,
            skill_folders: true,
            store: None,
        }
    }

    /// The files and folders whose change can change what [`discover`]
    /// finds: the hosts' install records and settings, every command
    /// folder, extpool's lock record (a watcher watches these).
    pub fn watched(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(store) = &self.store {
            out.extend(store.watched());
        }
        if self.hosts {
            out.push(self.dirs.claude.join("plugins/installed_plugins.json"));
            out.extend(installed::claude::settings_files(&self.dirs));
            out.push(self.dirs.codex.join("config.toml"));
            out.push(self.dirs.gemini.join("extensions"));
        }
        if self.command_folders {
            out.extend(command_folders(&self.dirs).into_iter().map(|f| f.0));
        }
        out
    }

    /// From the environment as the hosts read it: `HOME`,
    /// `CLAUDE_CONFIG_DIR`, `CODEX_HOME`. `None` without a home folder.
    pub fn from_env(project: Option<PathBuf>, data_root: impl Into<PathBuf>) -> Option<Self> {
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map(PathBuf::from)?;
        let mut req = Self::new(home, project, data_root);
        if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR") {
            req.dirs.claude = PathBuf::from(dir);
        }
        if let Some(dir) = std::env::var_os("CODEX_HOME") {
            req.dirs.codex = PathBuf::from(dir);
        }
        Some(req)
    }
}

/// Everything discovered.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// Every installed plugin, enabled or not: Claude Code's, Codex's,
    /// Gemini CLI's.
    pub plugins: Vec<InstalledPlugin>,
    /// The commands served, one per name, in precedence order.
    pub commands: Vec<CommandSpec>,
    /// The skills of every host's skill folders (extpool-skills' discovery).
    pub skills: extpool_skills::Discovery,
    /// The enabled plugins' skills, one per qualified name.
    pub plugin_skills: Vec<PluginSkill>,
    /// Every problem: host records, command files, shadowed names (each
    /// plugin's own are in the plugin).
    pub diagnostics: Vec<Diagnostic>,
}

impl Discovery {
    /// The enabled plugins that loaded: those whose servers may start.
    pub fn enabled(&self) -> impl Iterator<Item = &InstalledPlugin> {
        self.plugins
            .iter()
            .filter(|p| p.enabled && p.plugin.is_some())
    }

    /// The commands as one `CommandResource` (and `Capability`) named `id`.
    pub fn command_source(&self, id: &str) -> LocalCommandSource {
        LocalCommandSource::new(id, self.commands.clone())
    }
}

/// The command folders of `dirs`, highest precedence first.
pub fn command_folders(
    dirs: &HostDirs,
) -> Vec<(PathBuf, Dialect, CommandOrigin, Option<&'static str>)> {
    let mut out = Vec::new();
    if let Some(project) = &dirs.project
        && !same(project, &dirs.home)
    {
        out.push((
            project.join(".claude/commands"),
            Dialect::ClaudeCode,
            CommandOrigin::Project,
            None,
        ));
        out.push((
            project.join(".gemini/commands"),
            Dialect::GeminiToml,
            CommandOrigin::Project,
            None,
        ));
    }
    out.push((
        dirs.claude.join("commands"),
        Dialect::ClaudeCode,
        CommandOrigin::User,
        None,
    ));
    out.push((
        dirs.codex.join("prompts"),
        Dialect::CodexPrompt,
        CommandOrigin::User,
        Some("prompts"),
    ));
    out.push((
        dirs.gemini.join("commands"),
        Dialect::GeminiToml,
        CommandOrigin::User,
        None,
    ));
    out
}

fn same(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Adds `specs` to `commands`, a name already served reported as shadowed.
fn add_commands(
    commands: &mut Vec<CommandSpec>,
    specs: Vec<CommandSpec>,
    diags: &mut Vec<Diagnostic>,
) {
    for s in specs {
        match commands.iter().find(|c| c.name == s.name) {
            Some(first) => diags.push(Diagnostic::warning(
                DiagnosticKind::Shadowed,
                &s.path,
                format!(
                    "command /{} is already defined by {}; this one is not served",
                    s.name,
                    first.path.display()
                ),
            )),
            None => commands.push(s),
        }
    }
}

/// Discovers everything of `req` (see the module's documentation).
pub fn discover(req: &DiscoverRequest) -> Discovery {
    let mut opts = ReadOptions::new(&req.data_root);
    opts.limits = req.limits;
    opts.project = req.dirs.project.clone();
    let mut diagnostics = Vec::new();
    let mut plugins = Vec::new();
    if let Some(store) = &req.store {
        let (mut found, diags) = installed::extpool::installed(store, &opts);
        found.sort_by(|a, b| a.id.cmp(&b.id));
        plugins.extend(found);
        diagnostics.extend(diags);
    }
    let hosts: &[HostReader] = if req.hosts {
        &[
            installed::claude::installed,
            installed::codex::installed,
            installed::gemini::installed,
        ]
    } else {
        &[]
    };
    for read in hosts {
        let (mut found, diags) = read(&req.dirs, &opts);
        found.sort_by(|a, b| a.id.cmp(&b.id));
        plugins.extend(found);
        diagnostics.extend(diags);
    }
    let mut commands = Vec::new();
    let folders = if req.command_folders {
        command_folders(&req.dirs)
    } else {
        Vec::new()
    };
    for (dir, dialect, origin, prefix) in folders {
        if !dir.is_dir() {
            continue;
        }
        let ctx = Context {
            origin,
            plugin: None,
            prefix,
        };
        let (specs, diags) = read_folder(&dir, dialect, &ctx, None, &req.limits);
        diagnostics.extend(diags);
        add_commands(&mut commands, specs, &mut diagnostics);
    }
    let mut plugin_skills: Vec<PluginSkill> = Vec::new();
    for p in plugins.iter().filter(|p| p.enabled) {
        let Some(plugin) = &p.plugin else { continue };
        add_commands(&mut commands, plugin.commands.clone(), &mut diagnostics);
        for s in &plugin.skills {
            match plugin_skills.iter().find(|k| k.qualified == s.qualified) {
                Some(first) => diagnostics.push(Diagnostic::warning(
                    DiagnosticKind::Shadowed,
                    &s.skill_md,
                    format!(
                        "skill {} is already defined by {}; this one is not served",
                        s.qualified,
                        first.skill_md.display()
                    ),
                )),
                None => plugin_skills.push(s.clone()),
            }
        }
    }
    let skills = if req.skill_folders {
        extpool_skills::discover(&DiscoveryConfig {
            cwd: req.dirs.project.clone(),
            home: Some(req.dirs.home.clone()),
            ..DiscoveryConfig::default()
        })
    } else {
        extpool_skills::Discovery::default()
    };
    tracing::debug!(
        plugins = plugins.len(),
        commands = commands.len(),
        skills = skills.skills.len(),
        plugin_skills = plugin_skills.len(),
        diagnostics = diagnostics.len(),
        "plugins and command folders discovered"
    );
    Discovery {
        plugins,
        commands,
        skills,
        plugin_skills,
        diagnostics,
    }
}
