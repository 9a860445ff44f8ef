//! `extpool mcp add | remove | list`: the servers of `extpool.yaml` from
//! the command line. The edit is extpool-config's (the entry's lines
//! inserted or removed, every other byte kept); the new text is loaded
//! with every check `config check` applies before it is written, and a
//! running gateway takes the change from its configuration watcher.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, anyhow};
use clap::{Args, ValueEnum};
use extpool_host::McpServerConfig;
use extpool_host::config::edit::{self, EditError};
use extpool_host::config::{ConfigError, ConfigFormat, Loaded, process_env, secrets};
use serde::Serialize;

use crate::context::Ctx;
use crate::invocation::cmd;
use crate::output::shown;
use crate::{Reported, UsageError};

/// `extpool mcp add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name (`[A-Za-z0-9_]`; its tools become
    /// mcp__NAME__TOOL); with --from-registry and no SERVER, the
    /// registry's name of the server (`io.github.user/weather`).
    pub name: String,
    /// A remote server's URL (streamable HTTP).
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// A local server: its command and arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// A header sent to a remote server, `NAME: VALUE` (repeatable); a
    /// literal secret is written as a ${VAR} reference.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// An environment variable of a local server, `KEY=VALUE` (repeatable);
    /// a literal secret is written as a ${VAR} reference.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Add the server the MCP Registry lists as SERVER (default: NAME),
    /// after showing what it will run.
    #[arg(long, value_name = "SERVER", num_args = 0..=1, default_missing_value = "")]
    pub from_registry: Option<String>,
    /// The registry to ask (default: the configuration's registry.url,
    /// else the official one).
    #[arg(long, value_name = "URL", requires = "from_registry")]
    pub registry: Option<String>,
    /// Add a registry server without asking (for scripts).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Which extpool.yaml.
    #[command(flatten)]
    pub target: Target,
}

/// `extpool mcp remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The server's name.
    pub name: String,
    /// Which extpool.yaml.
    #[command(flatten)]
    pub target: Target,
}

/// Which `extpool.yaml` an edit is made in.
#[derive(Debug, Args)]
pub struct Target {
    /// `user` (~/.config/extpool/extpool.yaml, every project) or `project`
    /// (./extpool.yaml). Default: the one --config names, else the
    /// project's when there is one, else the user's.
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<FileScope>,
}

/// `--scope` of an `extpool.yaml` edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileScope {
    /// The user's extpool.yaml.
    User,
    /// The working directory's extpool.yaml.
    Project,
    /// A file named with --config.
    #[value(skip)]
    File,
}

/// The file an edit is made in.
pub struct Chosen {
    /// The file.
    pub path: PathBuf,
    /// Its scope.
    pub scope: FileScope,
}

/// The `extpool.yaml` an `mcp add`/`mcp remove` edits.
pub fn chosen_file(ctx: &Ctx, target: &Target) -> Result<Chosen> {
    let places = &ctx.places;
    let project = || {
        let yml = places.cwd.join("extpool.yml");
        let yaml = places.cwd.join("extpool.yaml");
        if !yaml.exists() && yml.exists() {
            yml
        } else {
            yaml
        }
    };
    let user = || {
        places
            .config_dir()
            .map(|d| d.join("extpool/extpool.yaml"))
            .ok_or_else(|| anyhow!("no home directory: set HOME, or use --scope project"))
    };
    let named: Vec<&PathBuf> = ctx
        .global
        .config
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    Ok(match (target.scope, named.as_slice()) {
        (Some(FileScope::User), _) => Chosen {
            path: user()?,
            scope: FileScope::User,
        },
        (Some(_), _) => Chosen {
            path: project(),
            scope: FileScope::Project,
        },
        (None, [one]) => Chosen {
            path: places.cwd.join(one),
            scope: FileScope::File,
        },
        (None, _) if project().exists() => Chosen {
            path: project(),
            scope: FileScope::Project,
        },
        (None, _) => Chosen {
            path: user()?,
            scope: FileScope::User,
        },
    })
}

/// A file's text, or nothing when it does not exist yet.
pub(super) fn read(ctx: &Ctx, path: &std::path::Path) -> Result<String> {
    if !path.exists() {
        return Ok(String::new());
    }
    let limit = ctx
        .places
        .max_file_bytes
        .unwrap_or(extpool_host::config::read::DEFAULT_MAX_FILE_BYTES);
    Ok(extpool_host::config::read::read_text(
        path,
        &ctx.show_path(path),
        limit,
    )?)
}

/// An edit's refusal, located in the file.
pub(super) fn edit_error(file: &str, e: EditError) -> anyhow::Error {
    match e {
        EditError::Syntax { line, message } => anyhow!("{file}:{line}: invalid YAML: {message}"),
        EditError::Exists { name, line, .. } => UsageError(format!(
            "{file}:{line}: a server named {name:?} is already defined there; remove it first (`{}`) or choose another name",
            cmd(&format!("mcp remove {name}"))
        ))
        .into(),
        e => anyhow!("{file}: {e}"),
    }
}

/// What `mcp add` did, for `--json`.
#[derive(Serialize)]
struct Added<'a> {
    outcome: &'static str,
    name: &'a str,
    file: String,
    scope: FileScope,
    /// Variables to export: the secrets written as references.
    exports: Vec<String>,
}

/// A server entry built from `mcp add`'s own arguments.
fn entry(args: &AddArgs) -> Result<McpServerConfig> {
    let mut config = match (&args.url, args.command.split_first()) {
        (Some(_), Some(_)) => {
            return Err(UsageError("give a URL or a command after `--`, not both".into()).into());
        }
        (Some(url), None) => McpServerConfig::http(url.as_str()),
        (None, Some((command, rest))) => McpServerConfig::stdio(command.as_str(), rest.iter()),
        (None, None) => {
            return Err(UsageError(format!(
                "say what the server is: a URL (`{}`), a command after `--` (`{}`), or --from-registry",
                cmd("mcp add docs https://docs.example/mcp"),
                cmd("mcp add files -- npx -y @modelcontextprotocol/server-filesystem .")
            ))
            .into());
        }
    };
    if !args.headers.is_empty() && config.url.is_none() {
        return Err(UsageError("--header is for a remote server (a URL)".into()).into());
    }
    if !args.env.is_empty() && config.command.is_none() {
        return Err(UsageError("--env is for a local server (a command after `--`)".into()).into());
    }
    config.headers = pairs(&args.headers, ':', "--header", "NAME: VALUE")?;
    config.env = pairs(&args.env, '=', "--env", "KEY=VALUE")?;
    Ok(config)
}

/// `K<sep>V` arguments as a map (values trimmed for headers).
fn pairs(given: &[String], sep: char, flag: &str, shape: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for pair in given {
        let Some((k, v)) = pair.split_once(sep) else {
            return Err(UsageError(format!("{flag} {}: expected {shape}", shown(pair))).into());
        };
        let (k, v) = if sep == ':' {
            (k.trim(), v.trim())
        } else {
            (k, v)
        };
        if k.is_empty() {
            return Err(UsageError(format!("{flag} {}: the name is empty", shown(pair))).into());
        }
        out.insert(k.to_owned(), v.to_owned());
    }
    Ok(out)
}

/// `extpool mcp add`.
pub async fn add(ctx: &mut Ctx, args: AddArgs) -> Result<ExitCode> {
    let (name, config, notes) = match &args.from_registry {
        Some(server) => match super::registry::entry_for(ctx, &args, server).await? {
            Some(found) => found,
            None => return Ok(ExitCode::from(1)),
        },
        None => (args.name.clone(), entry(&args)?, Vec::new()),
    };
    write_server(ctx, &args.target, &name, config, notes)
}

/// Writes server `name` into the chosen `extpool.yaml`, its literal
/// secrets made references, after checking the new file as `config
/// check` would; `notes` are said after.
pub fn write_server(
    ctx: &mut Ctx,
    target: &Target,
    name: &str,
    mut config: McpServerConfig,
    mut notes: Vec<String>,
) -> Result<ExitCode> {
    extpool_host::core::name::check_server_name(name).map_err(|e| {
        UsageError(format!(
            "{e}; a server name is [A-Za-z0-9_], e.g. {:?}",
            extpool_host::core::name::sanitize_server_name(name)
        ))
    })?;
    let mut exports = Vec::new();
    for (var, site) in secrets::to_references(&mut config, name) {
        notes.push(format!(
            "the {} looks like a secret: written as ${{{var}}}; export {var} (with that value) where extpool runs",
            site_words(&site)
        ));
        exports.push(var);
    }
    let chosen = chosen_file(ctx, target)?;
    let file = ctx.show_path(&chosen.path);
    let old = read(ctx, &chosen.path)?;
    let new = edit::yaml::add_server(&old, name, &config).map_err(|e| edit_error(&file, e))?;
    let loaded = check(ctx, &chosen.path, &new)?;
    warn_shadowed(ctx, name, &chosen.path);
    edit::write_atomic(&chosen.path, &new).with_context(|| format!("cannot write {file}"))?;
    for d in loaded.unresolved_variables(&process_env) {
        notes.push(d.message.clone());
    }
    if ctx.global.json {
        ctx.out.json_value(&Added {
            outcome: "added",
            name,
            file,
            scope: chosen.scope,
            exports,
        })?;
    } else {
        ctx.out.line(format!(
            "added MCP server {} to {file}; a running gateway picks it up, `{}` starts it",
            shown(name),
            cmd("list tools"),
        ))?;
        say_notes(ctx, &notes);
    }
    Ok(ExitCode::SUCCESS)
}

fn site_words(site: &secrets::SecretSite) -> String {
    use secrets::SecretSite;
    match site {
        SecretSite::Env(n) => format!("value of {n}"),
        SecretSite::Header(n) => format!("value of header {n}"),
        SecretSite::Arg(n) => format!("value of argument {n}"),
        SecretSite::Url(n) => format!("URL's {n}"),
        SecretSite::OAuthClientSecret => "OAuth client secret".into(),
        SecretSite::EnterpriseClientSecret => {
            "client secret at the server's authorization server".into()
        }
    }
}

fn say_notes(ctx: &Ctx, notes: &[String]) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    for note in notes {
        let _ = writeln!(err, "{}: {}", ctx.err_style.cyan("note"), shown(note));
    }
}

/// The new text loaded as the file, with `config check`'s checks of
/// remote servers: refused with its located problems.
pub(super) fn check(ctx: &Ctx, path: &std::path::Path, text: &str) -> Result<Loaded> {
    let loaded = match extpool_host::config::load_text(path, text, &ctx.places) {
        Ok(loaded) => loaded,
        Err(e) => return Err(refuse(ctx, &e)),
    };
    let problems: Vec<_> = loaded
        .remote_problems(&process_env)
        .into_iter()
        .filter(|d| d.is_error())
        .collect();
    if !problems.is_empty() {
        return Err(refuse(
            ctx,
            &ConfigError::Invalid {
                diagnostics: problems,
            },
        ));
    }
    Ok(loaded)
}

/// Says what the file would have wrong, as `config check` does, and that
/// nothing was written.
fn refuse(ctx: &Ctx, e: &ConfigError) -> anyhow::Error {
    use std::io::Write;
    if e.diagnostics().is_empty() {
        return anyhow!("{e}");
    }
    let mut err = std::io::stderr().lock();
    for d in e.diagnostics() {
        let _ = writeln!(err, "{}", ctx.diagnostic_line(d));
    }
    let _ = writeln!(
        err,
        "{}: not written: the file would have the error{} above",
        ctx.err_style.red("error"),
        if e.diagnostics().len() == 1 { "" } else { "s" }
    );
    Reported.into()
}

/// Warns when a file read before the chosen one defines the name too:
/// that definition is the one used.
fn warn_shadowed(ctx: &Ctx, name: &str, path: &std::path::Path) {
    use std::io::Write;
    let Ok(loaded) = ctx.load_files() else {
        return;
    };
    let Some(src) = loaded
        .server_sources
        .iter()
        .find(|(n, _)| extpool_host::core::name::same_server_name(n, name))
        .map(|(_, s)| s)
    else {
        return;
    };
    let elsewhere = loaded
        .sources
        .iter()
        .find(|s| s.file == src.file)
        .is_some_and(|s| s.path != path);
    if elsewhere {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}: {}:{}: a server named {} is defined there too, and that file is read first: it is the one used",
            ctx.err_style.yellow("warning"),
            shown(&src.file),
            src.pos,
            shown(name)
        );
    }
}

/// `extpool mcp remove`.
pub fn remove(ctx: &mut Ctx, args: RemoveArgs) -> Result<ExitCode> {
    let chosen = chosen_file(ctx, &args.target)?;
    let file = ctx.show_path(&chosen.path);
    let old = read(ctx, &chosen.path)?;
    let (new, written) = match edit::yaml::remove_server(&old, &args.name) {
        Ok(done) => done,
        Err(EditError::NotFound { name }) => return Err(not_here(ctx, &name, &file)),
        Err(e) => return Err(edit_error(&file, e)),
    };
    edit::write_atomic(&chosen.path, &new).with_context(|| format!("cannot write {file}"))?;
    if ctx.global.json {
        ctx.out.json_value(&serde_json::json!({
            "outcome": "removed", "name": written, "file": file, "scope": chosen.scope,
        }))?;
    } else {
        ctx.out.line(format!(
            "removed MCP server {} from {file}; a running gateway stops it",
            shown(&written)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Why a name is not in the chosen file: where it is defined instead, if
/// anywhere.
fn not_here(ctx: &Ctx, name: &str, file: &str) -> anyhow::Error {
    let Ok(loaded) = ctx.load_files() else {
        return UsageError(format!("no MCP server named {} in {file}", shown(name))).into();
    };
    let found = loaded
        .server_sources
        .iter()
        .find(|(n, s)| {
            extpool_host::core::name::same_server_name(n, name)
                || extpool_host::core::name::same_server_name(&s.original_name, name)
        })
        .map(|(_, s)| s);
    let source = found.and_then(|src| loaded.sources.iter().find(|s| s.file == src.file));
    let why = match (found, source) {
        (Some(src), Some(s)) if s.format == ConfigFormat::Extpool => format!(
            "it is defined in {}:{} ({})",
            src.file,
            src.pos,
            if s.project {
                "--scope project"
            } else {
                "--scope user"
            }
        ),
        (Some(src), _) => format!(
            "it is defined in {}:{}, {}'s file, which extpool reads but does not edit",
            src.file,
            src.pos,
            src.origin.label()
        ),
        (None, _) => format!("see `{}`", cmd("mcp list")),
    };
    UsageError(format!(
        "no MCP server named {} in {file}: {why}",
        shown(name)
    ))
    .into()
}
