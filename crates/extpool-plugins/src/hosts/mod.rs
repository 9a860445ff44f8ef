//! The plugin formats of Claude Code, Codex and Gemini CLI, each read as
//! its host reads it, and what they share: building a [`Plugin`] from
//! locations inside its root, every path confined, every part's failure
//! a located diagnostic that skips only that part.

pub mod claude;
pub mod codex;
pub mod gemini;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use extpool_config::tree::Node;
use extpool_skills::ValidationMode;

use crate::command::{CommandOrigin, Dialect, read_folder, read_markdown_command};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{Found, Root};
use crate::plugin::{Format, McpOutcome, Plugin, PluginServer, ReadOptions, Rejection};

/// A rejection of a plugin of `format`.
pub(crate) fn rejected(format: Format, reason: &'static str, d: Diagnostic) -> Rejection {
    Rejection {
        format: Some(format),
        reason,
        diagnostics: vec![d],
    }
}

/// The resolved root of the plugin in `dir`.
pub(crate) fn open_root(dir: &Path, format: Format) -> Result<Root, Rejection> {
    Root::open(dir).map_err(|e| {
        rejected(
            format,
            "not-a-directory",
            Diagnostic::error(
                DiagnosticKind::PluginRejected,
                dir,
                format!("cannot read the plugin folder: {e}"),
            ),
        )
    })
}

/// A plugin being read.
pub(crate) struct Build<'a> {
    /// What has been read so far.
    pub plugin: Plugin,
    /// What was found wrong so far.
    pub diags: Vec<Diagnostic>,
    root: &'a Root,
    opts: &'a ReadOptions,
    /// Files and folders the plugin may still have read.
    budget: usize,
}

impl<'a> Build<'a> {
    /// An empty plugin `name` of `format` rooted at `root`.
    pub fn new(format: Format, name: &str, root: &'a Root, opts: &'a ReadOptions) -> Self {
        Self {
            plugin: Plugin {
                format,
                name: name.to_owned(),
                version: None,
                description: None,
                root: root.canonical.clone(),
                manifest: None,
                skills: Vec::new(),
                mcp: McpOutcome::Absent,
                servers: Vec::new(),
                commands: Vec::new(),
                agents: Vec::new(),
                hooks: Vec::new(),
                context_files: Vec::new(),
                data_dir: opts.data_dir(format, name),
                diagnostics: Vec::new(),
            },
            diags: Vec::new(),
            root,
            opts,
            budget: opts.limits.max_files_per_plugin,
        }
    }

    /// A default location: nothing when absent, a diagnostic when it
    /// resolves outside the root.
    pub fn locate_default(&mut self, rel: &str) -> Vec<(String, Found)> {
        match self.root.locate(rel) {
            Ok(Found::Missing) => Vec::new(),
            Ok(found) => vec![(rel.to_owned(), found)],
            Err(e) => {
                self.diags.push(e.diagnostic(
                    DiagnosticKind::ComponentInvalid,
                    &self.root.canonical.join(rel),
                ));
                Vec::new()
            }
        }
    }

    /// A `./` path a manifest (`file`, at `line`) names: a diagnostic when
    /// it is not a relative path inside the root, or does not exist.
    pub fn locate_configured(
        &mut self,
        raw: &str,
        file: &Path,
        line: usize,
    ) -> Option<(String, Found)> {
        match claude::configured(self.root, raw) {
            Ok(Found::Missing) => {
                self.diags.push(
                    Diagnostic::warning(
                        DiagnosticKind::ComponentInvalid,
                        file,
                        format!("{raw:?} does not exist in the plugin; ignored"),
                    )
                    .at(line),
                );
                None
            }
            Ok(found) => Some((raw.to_owned(), found)),
            Err(e) => {
                self.diags.push(
                    e.diagnostic(DiagnosticKind::ComponentInvalid, file)
                        .at(line),
                );
                None
            }
        }
    }

    fn take_budget(&mut self, n: usize) -> usize {
        let granted = n.min(self.budget);
        self.budget -= granted;
        granted
    }

    /// Commands in a file or a folder of the plugin, named `plugin:…`.
    pub fn commands_at(&mut self, found: Found, dialect: Dialect, origin: CommandOrigin) {
        let name = self.plugin.name.clone();
        let ctx = crate::command::parse::Context {
            origin,
            plugin: Some((&name, &self.root.canonical)),
            prefix: None,
        };
        let mut limits = self.opts.limits;
        limits.max_commands_per_folder = self.budget.min(limits.max_commands_per_folder);
        let (specs, diags) = match found {
            Found::Dir(dir) => read_folder(&dir, dialect, &ctx, Some(self.root), &limits),
            Found::File(file) => {
                let stem = file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                match read_markdown_command(&file, &stem, dialect, &ctx, &limits) {
                    Ok(s) => (vec![s], Vec::new()),
                    Err(d) => (Vec::new(), vec![d]),
                }
            }
            Found::Missing | Found::Other(_) => return,
        };
        self.take_budget(specs.len());
        self.diags.extend(diags);
        for s in specs {
            if let Some(first) = self.plugin.commands.iter().find(|c| c.name == s.name) {
                self.diags.push(Diagnostic::warning(
                    DiagnosticKind::Shadowed,
                    &s.path,
                    format!(
                        "command {} is already defined by {}; this one is not loaded",
                        s.name,
                        first.path.display()
                    ),
                ));
            } else {
                self.plugin.commands.push(s);
            }
        }
    }

    /// Agents in a file or a folder of the plugin.
    pub fn agents_at(&mut self, found: Found) {
        let mut limits = self.opts.limits;
        limits.max_files_per_plugin = self.budget;
        let agents = match found {
            Found::Dir(dir) => crate::agents::read_agents(
                &dir,
                self.root,
                &self.plugin.name,
                &limits,
                &mut self.diags,
            ),
            Found::File(file) => {
                let stem = file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                match crate::agents::read_agent(&file, &stem, &self.plugin.name, &limits) {
                    Ok(a) => vec![a],
                    Err(d) => {
                        self.diags.push(d);
                        Vec::new()
                    }
                }
            }
            Found::Missing | Found::Other(_) => return,
        };
        self.take_budget(agents.len());
        self.plugin.agents.extend(agents);
    }

    /// Skills in the immediate child folders of a folder of the plugin.
    pub fn skills_at(&mut self, found: Found, mode: ValidationMode) {
        let Found::Dir(dir) = found else {
            if let Found::File(f) | Found::Other(f) = found {
                self.diags.push(Diagnostic::error(
                    DiagnosticKind::ComponentInvalid,
                    &f,
                    "a skills location must be a folder; ignored",
                ));
            }
            return;
        };
        let skills = crate::skills::read_children(
            self.root,
            &dir,
            &self.plugin.name,
            mode,
            &mut self.budget,
            &mut self.diags,
        );
        self.add_skills(skills);
    }

    /// Adds skills, a name already taken reported as shadowed.
    pub fn add_skills(&mut self, skills: Vec<crate::plugin::PluginSkill>) {
        for s in skills {
            if self.plugin.skills.iter().any(|k| k.name == s.name) {
                self.diags.push(Diagnostic::warning(
                    DiagnosticKind::Shadowed,
                    &s.skill_md,
                    format!(
                        "skill {} is already defined in this plugin; this one is not loaded",
                        s.qualified
                    ),
                ));
            } else {
                self.plugin.skills.push(s);
            }
        }
    }

    /// A JSON file of the plugin, parsed; `None` (with a diagnostic of
    /// `kind`) when it cannot be.
    pub fn json_file(&mut self, found: Found, kind: DiagnosticKind) -> Option<(PathBuf, Node)> {
        let file = match found {
            Found::File(f) => f,
            Found::Dir(f) | Found::Other(f) => {
                self.diags.push(Diagnostic::error(
                    DiagnosticKind::ComponentInvalid,
                    &f,
                    "not a regular file; ignored",
                ));
                return None;
            }
            Found::Missing => return None,
        };
        match crate::json::read(&file, self.opts.limits.max_file_bytes, kind) {
            Ok(node) => Some((file, node)),
            Err(d) => {
                if kind == DiagnosticKind::McpDisabled {
                    self.plugin.mcp = McpOutcome::Disabled;
                }
                self.diags.push(d);
                None
            }
        }
    }

    /// Hooks of a hooks file of the plugin, its variables substituted.
    pub fn hooks_file(&mut self, found: Found, vars: &[(&str, String)]) {
        if let Some((file, mut node)) = self.json_file(found, DiagnosticKind::HooksSkipped) {
            crate::foreign::substitute(&mut node, vars);
            let hooks = crate::hooks::read(&node, &file, &mut self.diags);
            self.plugin.hooks.extend(hooks);
        }
    }

    /// Adds servers read from `file`; a name already taken is reported.
    pub fn add_servers(&mut self, servers: Vec<PluginServer>, file: &Path) {
        if self.plugin.mcp == McpOutcome::Absent {
            self.plugin.mcp = McpOutcome::Configured;
        }
        for s in servers {
            if self.plugin.servers.iter().any(|k| k.name == s.name) {
                self.diags.push(Diagnostic::warning(
                    DiagnosticKind::Shadowed,
                    file,
                    format!(
                        "server {:?} is already defined by this plugin; this one is not loaded",
                        s.name
                    ),
                ));
            } else {
                self.plugin.servers.push(s);
            }
        }
    }

    /// The plugin, its lists in name order, its diagnostics attached.
    pub fn finish(mut self) -> Plugin {
        self.plugin.commands.sort_by(|a, b| a.name.cmp(&b.name));
        self.plugin.skills.sort_by(|a, b| a.name.cmp(&b.name));
        self.plugin.agents.sort_by(|a, b| a.name.cmp(&b.name));
        if self.budget == 0 {
            self.diags.push(Diagnostic::warning(
                DiagnosticKind::Bound,
                &self.plugin.root,
                format!(
                    "the plugin has more than {} files; the rest are not read",
                    self.opts.limits.max_files_per_plugin
                ),
            ));
        }
        let mut seen = HashSet::new();
        self.diags.retain(|d| seen.insert(d.clone()));
        self.plugin.diagnostics = self.diags;
        self.plugin
    }
}
