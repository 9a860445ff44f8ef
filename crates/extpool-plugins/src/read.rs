//! Reading one plugin folder in a given or detected format.

use std::path::Path;

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::plugin::{Format, Plugin, ReadOptions, Rejection};

/// Reads the plugin in `dir` as `format`, or, when `None`, as the format
/// of the first manifest found ([`Format::detect`]: Agent Plugins'
/// `plugin.json`, then Claude Code's, Codex's, Gemini CLI's). A plugin
/// that loads may still have skipped parts: see its diagnostics.
pub fn read_plugin(
    dir: &Path,
    format: Option<Format>,
    opts: &ReadOptions,
) -> Result<Plugin, Rejection> {
    let Some(format) = format.or_else(|| Format::detect(dir)) else {
        let message = if dir.is_dir() {
            "not a plugin: no plugin.json, .claude-plugin/plugin.json, .codex-plugin/plugin.json or gemini-extension.json"
        } else {
            "not a plugin: no such folder"
        };
        return Err(Rejection {
            format: None,
            reason: "manifest-missing",
            diagnostics: vec![Diagnostic::error(
                DiagnosticKind::PluginRejected,
                dir,
                message,
            )],
        });
    };
    let plugin = match format {
        Format::AgentPlugins => crate::agent::read(dir, opts),
        Format::ClaudeCode => crate::hosts::claude::read(dir, opts),
        Format::Codex => crate::hosts::codex::read(dir, opts),
        Format::GeminiCli => {
            let workspace = opts.project.clone().unwrap_or_else(|| dir.to_path_buf());
            crate::hosts::gemini::read(dir, &workspace, opts)
        }
    }?;
    tracing::debug!(
        plugin = %plugin.name,
        format = format.as_str(),
        skills = plugin.skills.len(),
        servers = plugin.servers.len(),
        commands = plugin.commands.len(),
        diagnostics = plugin.diagnostics.len(),
        "plugin read"
    );
    Ok(plugin)
}
