//! Loading: read the named or discovered files, convert the foreign ones,
//! check, and merge into one [`Loaded`] configuration.
//!
//! Merging is by precedence: the first file that defines a server name
//! (ignoring case) wins and later definitions are reported as shadowed. The
//! `skills`, `permissions` and `extensions` sections come from the first
//! `extpool.yaml`; skill paths of later ones are added after its own.
//!
//! Files named with `--config` must be valid: any error fails the load.
//! Discovered files of other programs are the user's, not ours: their errors
//! become warnings and their usable servers are kept, so one broken
//! `~/.claude.json` never stops extpool.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use extpool_mcp::config::McpServerConfig;

use crate::diagnostics::{Diagnostic, Severity, display_path};
use crate::error::{ConfigError, ResolveError};
use crate::expand;
use crate::foreign::{self, ForeignConfig, ForeignContext};
use crate::locate::{Candidate, ConfigFormat, Origin, Places, detect};
use crate::model::ExtpoolConfig;
use crate::read::{DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_VAR, read_text};
use crate::tree::{self, Node, Pos};
use crate::validate::check_document;

/// One file that was read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceFile {
    /// The file as shown to the user.
    pub file: String,
    /// The file.
    #[serde(skip)]
    pub path: PathBuf,
    /// Its format.
    pub format: ConfigFormat,
    /// The program it belongs to.
    pub origin: Origin,
    /// Found in the project (working directory) rather than the user's home.
    pub project: bool,
    /// Servers it contributed (extpool names), in file order.
    pub servers: Vec<String>,
}

/// Where a server of the merged configuration was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSource {
    /// The file as shown to the user.
    pub file: String,
    /// Directory that relative `command` and `cwd` paths are resolved against.
    pub dir: PathBuf,
    /// Position of the server's name in the file.
    pub pos: Pos,
    /// The name as written there.
    pub original_name: String,
    /// The program the file belongs to.
    pub origin: Origin,
    /// The plugin that provides the server (its id, as its host names it),
    /// when a plugin does.
    pub plugin: Option<String>,
}

/// The effective configuration and where each part came from.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The merged configuration, exactly as written (`${VAR}` unexpanded,
    /// relative paths as written).
    pub config: ExtpoolConfig,
    /// Where each server is defined.
    pub server_sources: BTreeMap<String, ServerSource>,
    /// The skill roots of `skills.paths`, resolved against their files.
    pub skill_paths: Vec<PathBuf>,
    /// Every file read, in precedence order.
    pub sources: Vec<SourceFile>,
    /// Warnings and notes; errors fail the load, except those of discovered
    /// foreign files, which are skipped (see [`Loaded::errors`]).
    pub diagnostics: Vec<Diagnostic>,
    /// Each server name as defined, by the name-uniqueness key, to find a
    /// clash in constant time.
    names_ignoring_case: extpool_core::ServerNames<String>,
}

/// What to load.
#[derive(Debug, Clone, Default)]
pub struct LoadRequest {
    /// Files named with `--config`; when empty, configs are discovered.
    pub files: Vec<PathBuf>,
    /// Where to discover (and how to shorten paths for display).
    pub places: Places,
}

/// Loads the named files, or discovers configs when none are named.
pub fn load(request: &LoadRequest) -> Result<Loaded, ConfigError> {
    load_with(request, false)
}

/// [`load`], but the errors of discovered files of other programs fail the
/// load too instead of skipping the file or entry: a reload while serving
/// uses it to tell an invalid edit of such a file (refused, with its
/// location) from one that is fine.
pub fn load_strict(request: &LoadRequest) -> Result<Loaded, ConfigError> {
    load_with(request, true)
}

fn load_with(request: &LoadRequest, all_strict: bool) -> Result<Loaded, ConfigError> {
    let places = &request.places;
    let mut loaded = Loaded::default();
    let mut errors = Vec::new();
    let limit = places.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES);
    if request.files.is_empty() {
        for candidate in places.existing() {
            // Our own file must be right; the files of other programs are
            // the user's: one that cannot be read is skipped, with an error
            // that `config check` reports.
            let strict = all_strict || candidate.format == ConfigFormat::Extpool;
            let shown = show(&candidate.path, places);
            let text = match read_text(&candidate.path, &shown, limit) {
                Ok(text) => text,
                Err(e) if strict => return Err(e),
                Err(e) => {
                    loaded.diagnostics.push(skipped(&shown, &e));
                    continue;
                }
            };
            read_into(&candidate, &text, places, strict, &mut loaded, &mut errors);
        }
    } else {
        for path in &request.files {
            let path = if path.is_absolute() {
                path.clone()
            } else {
                places.cwd.join(path)
            };
            let shown = show(&path, places);
            let text = read_text(&path, &shown, limit)?;
            let Some((format, origin)) = detect(&path, &text) else {
                return Err(ConfigError::UnknownFormat { file: shown });
            };
            let candidate = Candidate {
                path,
                format,
                origin,
                project: true,
            };
            read_into(&candidate, &text, places, true, &mut loaded, &mut errors);
        }
    }
    if errors.is_empty() {
        Ok(loaded)
    } else {
        errors.extend(loaded.diagnostics);
        Err(ConfigError::Invalid {
            diagnostics: errors,
        })
    }
}

/// Loads a configuration given as a value (an embedding program's own),
/// checked exactly like an `extpool.yaml` file: relative paths resolve
/// against `dir`, and `label` names it in diagnostics.
pub fn load_value(config: &ExtpoolConfig, dir: &Path, label: &str) -> Result<Loaded, ConfigError> {
    let text = crate::tree::to_yaml(config).map_err(|e| ConfigError::Invalid {
        diagnostics: vec![Diagnostic::new(
            Severity::Error,
            label,
            None,
            String::new(),
            format!("cannot render the configuration: {e}"),
        )],
    })?;
    let places = Places {
        cwd: dir.to_path_buf(),
        ..Places::default()
    };
    load_text(&dir.join(label), &text, &places)
}

/// Loads `text` as the `extpool.yaml` at `path` would be loaded if it
/// held it (named with `--config`): how an edit is checked before it is
/// written, with every check `config check` applies.
pub fn load_text(path: &Path, text: &str, places: &Places) -> Result<Loaded, ConfigError> {
    let candidate = Candidate {
        path: path.to_path_buf(),
        format: ConfigFormat::Extpool,
        origin: Origin::Extpool,
        project: true,
    };
    let mut loaded = Loaded::default();
    let mut errors = Vec::new();
    read_into(&candidate, text, places, true, &mut loaded, &mut errors);
    if errors.is_empty() {
        Ok(loaded)
    } else {
        Err(ConfigError::Invalid {
            diagnostics: errors,
        })
    }
}

/// Loads one file as if named with `--config`.
pub fn load_file(path: &Path, places: &Places) -> Result<Loaded, ConfigError> {
    load(&LoadRequest {
        files: vec![path.to_path_buf()],
        places: places.clone(),
    })
}

fn show(path: &Path, places: &Places) -> String {
    display_path(path, Some(&places.cwd), places.home.as_deref())
}

/// The error diagnostic of a discovered file that could not be read.
fn skipped(file: &str, e: &ConfigError) -> Diagnostic {
    let why = match e {
        ConfigError::Read { error: source, .. } => format!("cannot read it: {source}"),
        ConfigError::NotRegular { kind, .. } => format!("it is {kind}, not a regular file"),
        ConfigError::TooLarge { limit, .. } => format!(
            "it is larger than {limit} bytes (the limit; set {MAX_FILE_BYTES_VAR} to change it)"
        ),
        ConfigError::InvalidUtf8 { offset, .. } => {
            format!("invalid UTF-8 (byte {offset} of the file)")
        }
        other => other.to_string(),
    };
    Diagnostic::new(
        Severity::Error,
        file,
        e.pos(),
        "",
        format!("{why}; the file is skipped"),
    )
}

fn parse(
    text: &str,
    format: ConfigFormat,
    origin: Origin,
    file: &str,
) -> Result<(Node, Vec<Diagnostic>), tree::SyntaxError> {
    match format {
        ConfigFormat::Extpool => tree::parse_yaml(text).map(|n| (n, Vec::new())),
        ConfigFormat::CodexToml => tree::parse_toml(text).map(|n| (n, Vec::new())),
        // VS Code's `mcp.json` is JSONC; the other programs parse strict JSON.
        ConfigFormat::VsCodeJson => tree::parse_json(text).map(|n| (n, Vec::new())),
        ConfigFormat::McpServersJson | ConfigFormat::ClaudeUserJson => {
            let doc = tree::parse_json_document(text)?;
            let warn = |pos, what: &str| {
                Diagnostic::new(
                    Severity::Warning,
                    file,
                    Some(pos),
                    "",
                    format!(
                        "{what}: extpool accepts it, but {} reads this file as strict JSON and rejects it",
                        origin.label()
                    ),
                )
            };
            let mut lenient = Vec::new();
            if let Some(pos) = doc.trailing_comma {
                lenient.push(warn(pos, "trailing comma"));
            }
            if let Some(pos) = doc.comment {
                lenient.push(warn(pos, "comment"));
            }
            Ok((doc.root, lenient))
        }
    }
}

/// Reads one file's `text` into `loaded`. `strict`: its errors fail the
/// load; otherwise an entry with errors is skipped, and a file that does
/// not parse is skipped whole, each with its located error (so that
/// `config check` fails: what runs is not what the file says) while
/// everything else is used.
fn read_into(
    candidate: &Candidate,
    text: &str,
    places: &Places,
    strict: bool,
    loaded: &mut Loaded,
    errors: &mut Vec<Diagnostic>,
) {
    let file = show(&candidate.path, places);
    let dir = candidate
        .path
        .parent()
        .map_or_else(|| places.cwd.clone(), Path::to_path_buf);
    let mut report = |d: Diagnostic, loaded: &mut Loaded| {
        if d.is_error() && strict {
            errors.push(d);
        } else {
            loaded.diagnostics.push(d);
        }
    };
    let root = match parse(text, candidate.format, candidate.origin, &file) {
        Ok((root, lenient)) => {
            loaded.diagnostics.extend(lenient);
            root
        }
        Err(e) => {
            let mut d = Diagnostic::syntax(&file, candidate.format.syntax_name(), &e);
            if strict {
                errors.push(d);
            } else {
                d.message.push_str("; the file is skipped");
                loaded.diagnostics.push(d);
            }
            return;
        }
    };
    let mut source = SourceFile {
        file: file.clone(),
        path: candidate.path.clone(),
        format: candidate.format,
        origin: candidate.origin,
        project: candidate.project,
        servers: Vec::new(),
    };
    if candidate.format == ConfigFormat::Extpool {
        let (config, found) = check_document(&root, &file, &dir);
        for d in found {
            report(d, loaded);
        }
        let Some(config) = config else {
            return;
        };
        let first_extpool = !loaded
            .sources
            .iter()
            .any(|s| s.format == ConfigFormat::Extpool);
        for p in &config.skills.paths {
            loaded.skill_paths.push(foreign::relative_to(&dir, p));
        }
        if first_extpool {
            let mut sections = config.clone();
            sections.mcp_servers.clear();
            for entry in sections.plugins.sandbox.values_mut() {
                if let crate::sandbox::PluginSandbox::Widened(profile) = entry {
                    crate::sandbox::resolve_relative(profile, &dir);
                }
            }
            let deny = std::mem::take(&mut loaded.config.permissions.deny);
            let servers = std::mem::take(&mut loaded.config.mcp_servers);
            loaded.config = sections;
            loaded.config.mcp_servers = servers;
            loaded.config.permissions.deny.extend(deny);
        } else {
            loaded
                .config
                .skills
                .paths
                .extend(config.skills.paths.clone());
        }
        let keys = root.get("mcp_servers").map(Node::keys).unwrap_or_default();
        let fallback = root.pos_of(&["mcp_servers"]);
        for (name, server) in config.mcp_servers {
            let pos = keys.get(name.as_str()).map_or(fallback, |e| e.key_pos);
            add_server(loaded, &mut source, &dir, name.clone(), &name, pos, server);
        }
    } else {
        let ctx = ForeignContext {
            file: file.clone(),
            origin: candidate.origin,
            workspace: workspace_of(&candidate.path, &dir),
            cwd: places.cwd.clone(),
            strict,
        };
        let foreign: ForeignConfig = match candidate.format {
            ConfigFormat::McpServersJson => foreign::mcp_servers_json::read(&root, &ctx, false),
            ConfigFormat::ClaudeUserJson => foreign::mcp_servers_json::read(&root, &ctx, true),
            ConfigFormat::VsCodeJson => foreign::vscode::read(&root, &ctx),
            ConfigFormat::CodexToml => foreign::codex::read(&root, &ctx),
            ConfigFormat::Extpool => ForeignConfig::default(),
        };
        for d in foreign.diagnostics {
            report(d, loaded);
        }
        for rule in foreign.deny {
            if !loaded.config.permissions.deny.contains(&rule) {
                loaded.config.permissions.deny.push(rule);
            }
        }
        for s in foreign.servers {
            let dir = if candidate.origin == Origin::VsCode
                || candidate.path.ends_with(".cursor/mcp.json")
            {
                ctx.workspace.clone()
            } else {
                dir.clone()
            };
            add_server(
                loaded,
                &mut source,
                &dir,
                s.name,
                &s.original_name,
                s.pos,
                s.config,
            );
        }
    }
    loaded.sources.push(source);
}

/// The project directory of a file in `.vscode/` or `.cursor/` is its parent.
fn workspace_of(path: &Path, dir: &Path) -> PathBuf {
    let parent_name = dir.file_name().map(|n| n.to_string_lossy().to_string());
    match parent_name.as_deref() {
        Some(".vscode" | ".cursor" | ".codex") if path.is_file() || !path.exists() => dir
            .parent()
            .map_or_else(|| dir.to_path_buf(), Path::to_path_buf),
        _ => dir.to_path_buf(),
    }
}

fn add_server(
    loaded: &mut Loaded,
    source: &mut SourceFile,
    dir: &Path,
    name: String,
    original: &str,
    pos: Pos,
    config: McpServerConfig,
) {
    let existing = loaded
        .names_ignoring_case
        .get(&name)
        .and_then(|n| loaded.server_sources.get_key_value(n));
    if let Some((existing, first)) = existing {
        let where_ = match first.pos {
            p if first.file == source.file => format!("line {}", p.line),
            p => format!("{}:{}", first.file, p),
        };
        loaded.diagnostics.push(Diagnostic::new(
            Severity::Note,
            source.file.clone(),
            Some(pos),
            format!("mcp_servers.{original}"),
            format!("server {original:?} is shadowed by {existing:?} defined first at {where_}"),
        ));
        return;
    }
    source.servers.push(name.clone());
    // Free: a clash returned above.
    loaded.names_ignoring_case.entry(&name, || name.clone());
    loaded.server_sources.insert(
        name.clone(),
        ServerSource {
            file: source.file.clone(),
            dir: dir.to_path_buf(),
            pos,
            original_name: original.to_owned(),
            origin: source.origin,
            plugin: None,
        },
    );
    loaded.config.mcp_servers.insert(name, config);
}

impl Loaded {
    /// Adds a server given on the command line (`--mcp-server NAME=URL`):
    /// the name is checked by the one server-name rule, and the flag wins
    /// over a server of the same name (ignoring case) from a file, with a
    /// note saying so. `flag` names it in messages; relative paths resolve
    /// against `cwd`.
    pub fn add_flag_server(
        &mut self,
        name: &str,
        config: McpServerConfig,
        flag: &str,
        cwd: &Path,
    ) -> Result<(), ConfigError> {
        if let Err(e) = extpool_core::check_server_name(name) {
            return Err(ConfigError::Invalid {
                diagnostics: vec![Diagnostic::new(
                    Severity::Error,
                    flag,
                    None,
                    "",
                    e.to_string(),
                )],
            });
        }
        if let Some(problem) = crate::validate::remote_problem(&config) {
            return Err(ConfigError::Invalid {
                diagnostics: vec![Diagnostic::new(
                    Severity::Error,
                    flag,
                    None,
                    problem.field,
                    problem.message,
                )],
            });
        }
        if let Some(existing) = self.names_ignoring_case.remove(name) {
            let first = self.server_sources.remove(&existing);
            self.config.mcp_servers.remove(&existing);
            let from = first.map_or_else(String::new, |f| format!(" from {}:{}", f.file, f.pos));
            self.diagnostics.push(Diagnostic::new(
                Severity::Note,
                flag,
                None,
                "",
                format!("server {name:?} replaces {existing:?}{from}"),
            ));
        }
        // Free: a clash was removed above.
        self.names_ignoring_case.entry(name, || name.to_owned());
        self.server_sources.insert(
            name.to_owned(),
            ServerSource {
                file: flag.to_owned(),
                dir: cwd.to_path_buf(),
                pos: Pos::new(1, 1),
                original_name: name.to_owned(),
                origin: Origin::Extpool,
                plugin: None,
            },
        );
        self.config.mcp_servers.insert(name.to_owned(), config);
        Ok(())
    }

    /// Adds server `name` that plugin `plugin` provides (defined in `file`,
    /// as shown; relative paths resolve against `dir`, the plugin's root):
    /// after every configuration file, so a server of the same name
    /// (ignoring case) defined in one wins. Refused, with the reason, when
    /// the name is taken or invalid, or its URL is plain `http://` off
    /// loopback.
    pub fn add_plugin_server(
        &mut self,
        name: &str,
        config: McpServerConfig,
        plugin: &str,
        file: &str,
        dir: &Path,
        origin: Origin,
    ) -> Result<(), String> {
        extpool_core::check_server_name(name).map_err(|e| e.to_string())?;
        if let Some(problem) = crate::validate::remote_problem(&config) {
            return Err(format!("{}: {}", problem.field, problem.message));
        }
        if let Some(existing) = self.names_ignoring_case.get(name) {
            let at = self
                .server_sources
                .get(existing)
                .map_or_else(String::new, |f| format!(" at {}:{}", f.file, f.pos));
            return Err(format!(
                "the name {name:?} is taken by server {existing:?} defined first{at}"
            ));
        }
        self.names_ignoring_case.entry(name, || name.to_owned());
        self.server_sources.insert(
            name.to_owned(),
            ServerSource {
                file: file.to_owned(),
                dir: dir.to_path_buf(),
                pos: Pos::new(1, 1),
                original_name: name.to_owned(),
                origin,
                plugin: Some(plugin.to_owned()),
            },
        );
        self.config.mcp_servers.insert(name.to_owned(), config);
        Ok(())
    }

    /// The errors of a load that still succeeded: discovered files of other
    /// programs that were skipped (unreadable, not UTF-8, bad syntax) and
    /// entries of theirs that were (a wrong type, no transport). `config
    /// check` fails when there is one; other commands show them and exit 1.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    /// The files found but skipped whole (unreadable, not UTF-8, bad
    /// syntax), each once, in the order of their errors: they were there,
    /// so "no configuration found" must not be said of them.
    pub fn skipped_files(&self) -> Vec<&str> {
        let mut files: Vec<&str> = Vec::new();
        for d in self.errors() {
            let read = self.sources.iter().any(|s| s.file == d.file);
            if !read && !files.contains(&d.file.as_str()) {
                files.push(&d.file);
            }
        }
        files
    }

    /// True when no file was found or named.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The servers that are enabled, by name.
    pub fn enabled_servers(&self) -> impl Iterator<Item = (&String, &McpServerConfig)> {
        self.config.mcp_servers.iter().filter(|(_, c)| c.enabled)
    }

    /// The runnable config of a server: `${VAR}` expanded with `lookup`,
    /// and relative `command` (one with a `/`) and `cwd` made absolute
    /// against the directory of the file that defines the server.
    pub fn resolve_server(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Result<McpServerConfig, ResolveError>> {
        let config = self.config.mcp_servers.get(name)?;
        let source = self.server_sources.get(name)?;
        Some(resolve(name, config, source, lookup))
    }

    /// Every enabled server resolved with `lookup`; a server that cannot be
    /// resolved is returned as its error, the others are unaffected.
    pub fn resolve_enabled(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<(String, Result<McpServerConfig, ResolveError>)> {
        self.enabled_servers()
            .filter_map(|(name, _)| self.resolve_server(name, lookup).map(|r| (name.clone(), r)))
            .collect()
    }

    /// Variables referenced by enabled servers that `lookup` cannot resolve
    /// (as warnings for `config check`).
    pub fn unresolved_variables(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<Diagnostic> {
        self.resolve_enabled(lookup)
            .into_iter()
            .filter_map(|(_, r)| r.err())
            .map(|e| {
                Diagnostic::new(
                    Severity::Warning,
                    e.file.clone(),
                    Some(e.pos),
                    format!("mcp_servers.{}.{}", e.server, e.error.field),
                    e.error.error.to_string(),
                )
            })
            .collect()
    }
}

impl Loaded {
    /// What the MCP client would refuse when it starts each enabled remote
    /// server whose URL or headers hold a `${VAR}`, with the values `lookup`
    /// gives them (as warnings for `config check`: the values are the
    /// environment's, not the file's). Entries without variables are
    /// checked as the files are read ([`crate::validate::remote_problem`]).
    pub fn remote_problems(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for (name, config) in self.enabled_servers() {
            let Some(url) = config.url.as_deref() else {
                continue;
            };
            let has_variables = expand::has_references(url)
                || config.headers.values().any(|v| expand::has_references(v));
            if config.command.is_some() || !has_variables {
                continue;
            }
            let (Some(Ok(resolved)), Some(source)) = (
                self.resolve_server(name, lookup),
                self.server_sources.get(name),
            ) else {
                continue;
            };
            if let Some(problem) = crate::validate::resolved_remote_problem(&resolved, url) {
                out.push(Diagnostic::new(
                    Severity::Warning,
                    source.file.clone(),
                    Some(source.pos),
                    format!("mcp_servers.{name}.{}", problem.field),
                    format!(
                        "with the values its variables have here, the server will not start: {}",
                        problem.message
                    ),
                ));
            }
        }
        out
    }
}

fn resolve(
    name: &str,
    config: &McpServerConfig,
    source: &ServerSource,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<McpServerConfig, ResolveError> {
    let out = expand::expand_server(config, lookup).map_err(|source_err| ResolveError {
        server: name.to_owned(),
        file: source.file.clone(),
        pos: source.pos,
        error: source_err,
    })?;
    Ok(resolve_paths(out, &source.dir))
}

/// Makes a server's relative `command` (one with a path separator, so
/// `npx` is still looked up on `PATH`), `cwd` and sandbox `read` and
/// `write` paths absolute against `dir`: the directory of the file that
/// defines the server (or the skill that embeds it).
pub fn resolve_paths(mut config: McpServerConfig, dir: &Path) -> McpServerConfig {
    if let Some(sandbox) = config.sandbox.as_mut() {
        for path in sandbox.read.iter_mut().chain(sandbox.write.iter_mut()) {
            if Path::new(path.as_str()).is_relative() {
                *path = dir.join(path.as_str()).display().to_string();
            }
        }
    }
    if let Some(cmd) = &config.command
        && (cmd.contains('/') || cmd.contains('\\'))
        && Path::new(cmd).is_relative()
    {
        config.command = Some(dir.join(cmd).display().to_string());
    }
    if let Some(cwd) = &config.cwd
        && Path::new(cwd).is_relative()
    {
        config.cwd = Some(dir.join(cwd).display().to_string());
    }
    config
}

/// The process environment, for [`Loaded::resolve_server`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
