//! Gemini CLI extensions, read as Gemini CLI's extension manager reads
//! them (`packages/cli/src/config/extension-manager.ts`):
//!
//! - `gemini-extension.json` with `name` (letters, digits, `-`) and
//!   `version`, both required; every string of it has `${extensionPath}`,
//!   `${workspacePath}`, `${/}` and `${pathSeparator}` substituted (other
//!   `${…}` stay);
//! - `mcpServers`: Gemini's entries (`command`/`args`/`env`/`cwd`, or
//!   `httpUrl` for streamable HTTP, `url` for SSE, `headers`), read by
//!   extpool's `mcpServers` reader (`httpUrl` becomes `url`);
//! - `contextFileName` (a name or a list; `GEMINI.md` by default): the
//!   files that exist, each inside the extension;
//! - `commands/**/*.toml` (served as `extension:…`), `skills/<name>/SKILL.md`,
//!   `agents/*.md`, `hooks/hooks.json`.

use std::path::Path;

use extpool_config::locate::Origin;
use extpool_config::tree::{Node, Value};
use extpool_skills::ValidationMode;

use super::Build;
use crate::command::{CommandOrigin, Dialect};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{Found, relative};
use crate::plugin::{Format, Plugin, ReadOptions, Rejection};

/// Gemini CLI's name rule: letters, digits and `-`.
pub(crate) fn name_ok(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Renames Gemini's `httpUrl` (streamable HTTP) to `url` in each entry.
fn http_url_as_url(servers: &mut Node) {
    if let Value::Map(entries) = &mut servers.value {
        for e in entries {
            if let Value::Map(fields) = &mut e.value.value {
                let has_url = fields.iter().any(|f| f.key == "url");
                for f in fields.iter_mut() {
                    if f.key == "httpUrl" && !has_url {
                        f.key = "url".into();
                    }
                }
            }
        }
    }
}

/// Reads the Gemini CLI extension in `dir`; `workspace` is the project
/// `${workspacePath}` stands for.
pub(crate) fn read(dir: &Path, workspace: &Path, opts: &ReadOptions) -> Result<Plugin, Rejection> {
    let root = super::open_root(dir, Format::GeminiCli)?;
    let file = root.canonical.join(Format::GeminiCli.manifest());
    let reject = |reason, d| super::rejected(Format::GeminiCli, reason, d);
    match root.locate(Format::GeminiCli.manifest()) {
        Ok(Found::File(_)) => {}
        Ok(_) => {
            return Err(reject(
                "manifest-missing",
                Diagnostic::error(
                    DiagnosticKind::PluginRejected,
                    &file,
                    "extension rejected: no gemini-extension.json file",
                ),
            ));
        }
        Err(e) => {
            return Err(reject(
                "manifest-escapes",
                e.diagnostic(DiagnosticKind::PluginRejected, &file),
            ));
        }
    }
    let mut node = crate::json::read(
        &file,
        opts.limits.max_file_bytes,
        DiagnosticKind::PluginRejected,
    )
    .map_err(|d| reject("invalid-manifest", d))?;
    let vars = vec![
        ("extensionPath", root.canonical.display().to_string()),
        ("workspacePath", workspace.display().to_string()),
        ("/", std::path::MAIN_SEPARATOR.to_string()),
        ("pathSeparator", std::path::MAIN_SEPARATOR.to_string()),
    ];
    crate::foreign::substitute(&mut node, &vars);
    let fatal = |line: usize, m: String| {
        reject(
            "invalid-manifest",
            Diagnostic::error(
                DiagnosticKind::PluginRejected,
                &file,
                format!("extension rejected: {m}"),
            )
            .at(line),
        )
    };
    if node.as_map().is_none() {
        return Err(fatal(node.pos.line, "expected a JSON object".into()));
    }
    let name = match node.get("name").and_then(Node::as_str) {
        Some(n) if name_ok(n) => n.to_owned(),
        Some(n) => {
            return Err(fatal(
                node.pos_of(&["name"]).line,
                format!("invalid extension name {n:?}: only letters, digits and `-` are allowed"),
            ));
        }
        None => return Err(fatal(node.pos.line, "missing \"name\"".into())),
    };
    let version = match node.get("version").and_then(Node::as_str) {
        Some(v) => v.to_owned(),
        None => return Err(fatal(node.pos.line, "missing \"version\"".into())),
    };
    let mut b = Build::new(Format::GeminiCli, &name, &root, opts);
    b.plugin.manifest = Some(file.clone());
    b.plugin.version = Some(version);
    b.plugin.description = node
        .get("description")
        .and_then(Node::as_str)
        .map(str::to_owned);
    if let Some(servers) = node.get("mcpServers") {
        let mut servers = servers.clone();
        http_url_as_url(&mut servers);
        let list = crate::foreign::mcp_servers(
            &name,
            &file,
            &servers,
            &[],
            Origin::Other,
            workspace,
            &mut b.diags,
        );
        b.add_servers(list, &file);
    }
    let context_names: Vec<(String, usize)> = match node.get("contextFileName") {
        None => vec![("GEMINI.md".into(), node.pos.line)],
        Some(n) => match &n.value {
            Value::Str(s) => vec![(s.clone(), n.pos.line)],
            Value::Seq(items) => items
                .iter()
                .filter_map(|i| i.as_str().map(|s| (s.to_owned(), i.pos.line)))
                .collect(),
            _ => Vec::new(),
        },
    };
    for (context, line) in context_names {
        match relative(&context).map_err(|e| e.diagnostic(DiagnosticKind::ComponentInvalid, &file))
        {
            Ok(rel) => match root.locate(rel) {
                Ok(Found::File(f)) => b.plugin.context_files.push(f),
                Ok(_) => {}
                Err(e) => b.diags.push(
                    e.diagnostic(DiagnosticKind::ComponentInvalid, &file)
                        .at(line),
                ),
            },
            Err(d) => b.diags.push(d.at(line)),
        }
    }
    for (_, found) in b.locate_default("commands") {
        b.commands_at(found, Dialect::GeminiToml, CommandOrigin::Plugin);
    }
    for (_, found) in b.locate_default("skills") {
        b.skills_at(found, ValidationMode::Lenient);
    }
    for (_, found) in b.locate_default("agents") {
        b.agents_at(found);
    }
    for (_, found) in b.locate_default("hooks/hooks.json") {
        b.hooks_file(found, &vars);
    }
    Ok(b.finish())
}
