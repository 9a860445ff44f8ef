//! The MCP configs users already have, read unchanged.
//!
//! * `mcpServers` JSON: Claude Code's `.mcp.json` and `~/.claude.json`,
//!   Cursor's `mcp.json`, Claude Desktop's `claude_desktop_config.json`
//!   ([`mcp_servers_json`]);
//! * VS Code's `mcp.json` with `servers` and `inputs` ([`vscode`]);
//! * Codex's `config.toml` with `[mcp_servers.<name>]` ([`codex`]).
//!
//! Each becomes a list of [`ForeignServer`]s holding extpool's own
//! [`McpServerConfig`], plus notes on anything that was renamed, rewritten
//! or ignored. The other programs' variable syntaxes (`${env:X}`,
//! `${input:id}`, `${workspaceFolder}`, `bearer_token_env_var`) are turned
//! into extpool's `${X}` form; nothing is resolved here.

pub mod codex;
pub mod mcp_servers_json;
pub mod typed;
pub mod vscode;

use std::path::{Path, PathBuf};

use extpool_mcp::config::McpServerConfig;

use crate::diagnostics::{Diagnostic, Severity};
use crate::expand;
use crate::locate::Origin;
use crate::model::{is_valid_server_name, sanitize_server_name};
use crate::tree::{Node, Pos};

/// One server read from a foreign config.
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignServer {
    /// The extpool name (`[A-Za-z0-9_]+`).
    pub name: String,
    /// The name as written in the file.
    pub original_name: String,
    /// The converted entry.
    pub config: McpServerConfig,
    /// Where the entry's name is written.
    pub pos: Pos,
}

/// What a foreign config contributes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForeignConfig {
    /// Servers in file order.
    pub servers: Vec<ForeignServer>,
    /// Catalog names to deny (from Codex `disabled_tools`).
    pub deny: Vec<String>,
    /// Notes, warnings and per-entry errors.
    pub diagnostics: Vec<Diagnostic>,
    /// The names taken so far, lower-cased, and the next suffix to try for
    /// each base name: renaming stays linear however many names collide.
    names: Names,
}

/// Server names in use, ignoring case.
#[derive(Debug, Clone, Default, PartialEq)]
struct Names {
    taken: extpool_core::ServerNames<()>,
    next_suffix: extpool_core::ServerNames<usize>,
}

impl Names {
    /// `name` if it is free, else `name_2`, `name_3`, … (the first free one).
    fn claim(&mut self, name: String) -> String {
        if self.taken.claim(&name, ()).is_ok() {
            return name;
        }
        let n = self.next_suffix.entry(&name, || 2);
        loop {
            // The suffix keeps the name within the length limit.
            let suffix = format!("_{n}");
            let keep = name
                .len()
                .min(extpool_core::name::MAX_SERVER_NAME_BYTES.saturating_sub(suffix.len()));
            let candidate = format!("{}{suffix}", name[..keep].trim_end_matches('_'));
            *n += 1;
            if self.taken.claim(&candidate, ()).is_ok() {
                return candidate;
            }
        }
    }
}

/// What a converter needs to know about the file it reads.
#[derive(Debug, Clone)]
pub struct ForeignContext {
    /// The file as shown to the user.
    pub file: String,
    /// The program it belongs to.
    pub origin: Origin,
    /// `${workspaceFolder}`: the project directory the file belongs to.
    pub workspace: PathBuf,
    /// The working directory (for `~/.claude.json`'s per-project entries).
    pub cwd: PathBuf,
    /// The file was named with `--config`: its errors stop extpool, so a
    /// broken entry is not merely skipped.
    pub strict: bool,
}

impl ForeignContext {
    pub(crate) fn diag(
        &self,
        severity: Severity,
        pos: Pos,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::new(severity, self.file.clone(), Some(pos), path, message)
    }

    /// How a broken entry ends its message: in a discovered file the other
    /// servers still run; a file named with `--config` must be valid.
    pub(crate) fn skip_note(&self) -> &'static str {
        if self.strict {
            "; this server is skipped, and because the file was named with --config nothing runs until this entry is fixed or removed"
        } else {
            "; this server is skipped"
        }
    }

    /// `config` when it names exactly one transport and, for a remote
    /// server, the MCP client would start it ([`crate::validate::remote_problem`]);
    /// otherwise an error diagnostic saying the server is skipped, and `None`.
    /// `node` is the entry as written, to locate what is wrong.
    pub(crate) fn with_transport(
        &self,
        config: McpServerConfig,
        node: &Node,
        path: &str,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<McpServerConfig> {
        if let Err(e) = config.transport() {
            diags.push(self.diag(
                Severity::Error,
                node.pos,
                path,
                format!("{e}{}", self.skip_note()),
            ));
            return None;
        }
        if let Some(problem) = crate::validate::remote_problem(&config) {
            diags.push(self.diag(
                Severity::Error,
                node.get(problem.field).map_or(node.pos, |n| n.pos),
                format!("{path}.{}", problem.field),
                format!("{}{}", problem.message, self.skip_note()),
            ));
            return None;
        }
        Some(config)
    }
}

impl ForeignConfig {
    /// Adds a server under a valid, unique name, with a note when renamed.
    pub(crate) fn push_server(
        &mut self,
        ctx: &ForeignContext,
        original: &str,
        pos: Pos,
        path: &str,
        config: McpServerConfig,
    ) {
        let name = self.names.claim(sanitize_server_name(original));
        if name != original {
            let why = if is_valid_server_name(original) {
                "another server already has this name (ignoring case)".to_owned()
            } else {
                "extpool server names use only letters, digits and `_`".to_owned()
            };
            self.diagnostics.push(ctx.diag(
                Severity::Note,
                pos,
                path,
                format!("server {original:?} is available as {name:?} ({why})"),
            ));
        }
        self.servers.push(ForeignServer {
            name,
            original_name: original.to_owned(),
            config,
            pos,
        });
    }
}

/// Rewrites another program's `${…}` variables into extpool's syntax.
///
/// * `${env:X}` → `${X}`; `${userHome}` → `${HOME}`;
/// * `${workspaceFolder}` / `${workspaceRoot}` → the project directory;
/// * `${input:some-id}` → `${SOME_ID}` (the value then comes from the
///   environment; `inputs` notes which);
/// * in files of programs that do not expand variables (Claude Desktop,
///   Codex), a literal `${` is escaped so it stays literal.
pub(crate) fn convert_vars(
    s: &str,
    ctx: &ForeignContext,
    pos: Pos,
    path: &str,
    diags: &mut Vec<Diagnostic>,
) -> String {
    if !ctx.origin.expands_variables() {
        return expand::escape(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let body_start = i + 2;
        let Some(close) = rest[body_start..].find('}') else {
            out.push_str(&expand::escape(&rest[i..]));
            rest = "";
            break;
        };
        let body = &rest[body_start..body_start + close];
        rest = &rest[body_start + close + 1..];
        out.push_str(&convert_one(body, ctx, pos, path, diags));
    }
    out.push_str(rest);
    out
}

/// One server entry of another program's file read as its `T`: a schema
/// error is reported located at `path` and skips the entry (`None`); a
/// key outside `known` and `quiet` gets a note that extpool ignores it.
pub(crate) fn read_entry<'n, T: serde::Deserialize<'n>>(
    ctx: &ForeignContext,
    node: &'n Node,
    path: &str,
    (known, quiet): (&[&str], &[&str]),
    diags: &mut Vec<Diagnostic>,
) -> Option<T> {
    let entry = match crate::de::from_node(node) {
        Ok(e) => e,
        Err(e) => {
            let mut d = Diagnostic::schema(&ctx.file, &e);
            d.path = if d.path.is_empty() {
                path.to_owned()
            } else {
                format!("{path}.{}", d.path)
            };
            d.message.push_str(ctx.skip_note());
            diags.push(d);
            return None;
        }
    };
    if let crate::tree::Value::Map(keys) = &node.value {
        for k in keys {
            if !known.contains(&k.key.as_str()) && !quiet.contains(&k.key.as_str()) {
                diags.push(ctx.diag(
                    Severity::Note,
                    k.key_pos,
                    path,
                    format!("key {:?} is not used by extpool and is ignored", k.key),
                ));
            }
        }
    }
    Some(entry)
}

/// The `command` and `args` of an entry at `path`, their variables
/// converted ([`convert_vars`]), each located at its key.
pub(crate) fn command_and_args<'a>(
    ctx: &ForeignContext,
    node: &Node,
    path: &str,
    (command, args): (Option<&str>, impl Iterator<Item = &'a str>),
    diags: &mut Vec<Diagnostic>,
) -> (Option<String>, Vec<String>) {
    let pos_of = |key: &str| node.get(key).map_or(node.pos, |n| n.pos);
    let command =
        command.map(|c| convert_vars(c, ctx, pos_of("command"), &format!("{path}.command"), diags));
    let args = args
        .map(|a| convert_vars(a, ctx, pos_of("args"), &format!("{path}.args"), diags))
        .collect();
    (command, args)
}

fn convert_one(
    body: &str,
    ctx: &ForeignContext,
    pos: Pos,
    path: &str,
    diags: &mut Vec<Diagnostic>,
) -> String {
    if let Some(var) = body.strip_prefix("env:") {
        return format!("${{{var}}}");
    }
    if let Some(id) = body.strip_prefix("input:") {
        let var = input_env_name(id);
        return format!("${{{var}}}");
    }
    match body {
        "userHome" => return "${HOME}".into(),
        "workspaceFolder" | "workspaceRoot" => {
            return expand::escape(&ctx.workspace.display().to_string());
        }
        "pathSeparator" | "/" => return "/".into(),
        _ => {}
    }
    let literal = format!("${{{body}}}");
    if expand::references(&literal).is_ok() {
        return literal;
    }
    diags.push(ctx.diag(
        Severity::Warning,
        pos,
        path,
        format!("variable ${{{body}}} is not supported by extpool and is kept as literal text"),
    ));
    expand::escape(&literal)
}

pub use crate::secrets::env_name_part;

/// The environment variable that stands in for a VS Code input id
/// (`perplexity-key` → `PERPLEXITY_KEY`).
pub fn input_env_name(id: &str) -> String {
    let mut s = env_name_part(id);
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "INPUT_");
    }
    s
}

/// Resolves a relative path written in a file against that file's directory.
pub(crate) fn relative_to(dir: &Path, p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(origin: Origin) -> ForeignContext {
        ForeignContext {
            file: "f".into(),
            origin,
            workspace: "/ws".into(),
            cwd: "/ws".into(),
            strict: false,
        }
    }

    #[test]
    fn variables_are_converted() {
        let mut d = Vec::new();
        let c = ctx(Origin::VsCode);
        let p = Pos::new(1, 1);
        assert_eq!(convert_vars("${env:GH}", &c, p, "x", &mut d), "${GH}");
        assert_eq!(
            convert_vars("${input:api-key}", &c, p, "x", &mut d),
            "${API_KEY}"
        );
        assert_eq!(
            convert_vars("${workspaceFolder}/x", &c, p, "x", &mut d),
            "/ws/x"
        );
        assert_eq!(
            convert_vars("${userHome}/.x", &c, p, "x", &mut d),
            "${HOME}/.x"
        );
        assert_eq!(convert_vars("${A:-b}", &c, p, "x", &mut d), "${A:-b}");
        assert!(d.is_empty());
        assert_eq!(
            convert_vars("${config:x.y}", &c, p, "x", &mut d),
            "$${config:x.y}"
        );
        assert_eq!(d.len(), 1);
        let desktop = ctx(Origin::ClaudeDesktop);
        assert_eq!(convert_vars("${A}", &desktop, p, "x", &mut d), "$${A}");
    }

    #[test]
    fn colliding_names_get_suffixes_in_linear_time() {
        let c = ctx(Origin::ClaudeCode);
        let mut out = ForeignConfig::default();
        // 4,000 names that all sanitize to `x`, and one already `x_2`.
        out.push_server(&c, "x_2", Pos::new(1, 1), "p", McpServerConfig::default());
        for i in 0..4000u32 {
            let original = format!("x{}", char::from_u32(0x100 + i).unwrap());
            out.push_server(
                &c,
                &original,
                Pos::new(1, 1),
                "p",
                McpServerConfig::default(),
            );
        }
        let names: std::collections::HashSet<String> = out
            .servers
            .iter()
            .map(|s| extpool_core::server_name_key(&s.name))
            .collect();
        assert_eq!(names.len(), 4001, "every name is unique");
        assert_eq!(out.servers[1].name, "x");
        assert_eq!(out.servers[2].name, "x_3");
        assert_eq!(out.servers[4000].name, "x_4001");
        for s in &out.servers {
            assert!(
                extpool_core::name::check_server_name(&s.name).is_ok(),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn a_suffix_keeps_a_long_name_within_the_limit() {
        let c = ctx(Origin::ClaudeCode);
        let mut out = ForeignConfig::default();
        let long = "a".repeat(70);
        for _ in 0..2 {
            out.push_server(&c, &long, Pos::new(1, 1), "p", McpServerConfig::default());
        }
        assert_eq!(out.servers[0].name, "a".repeat(64));
        assert_eq!(out.servers[1].name, format!("{}_2", "a".repeat(62)));
    }

    #[test]
    fn input_names() {
        assert_eq!(input_env_name("perplexity-key"), "PERPLEXITY_KEY");
        assert_eq!(input_env_name("1x"), "INPUT_1X");
    }
}
