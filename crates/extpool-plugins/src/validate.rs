//! `validate(path)`: one plugin folder checked, as one JSON object — the
//! interface of `extpool plugins validate PATH --json`.

use std::path::Path;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::plugin::{Format, McpOutcome, Plugin, ReadOptions, Rejection};

/// Whether the plugin loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It loads (some parts may have been skipped: see `diagnostics`).
    Loaded,
    /// It does not load at all.
    Rejected,
}

/// The result of checking one plugin folder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `loaded` or `rejected`.
    pub outcome: Outcome,
    /// Why it was rejected, as a code (`manifest-missing`,
    /// `invalid-manifest`, `unsupported-schema`, …); `null` when loaded.
    pub reason: Option<&'static str>,
    /// The format it was read as, when one was found.
    pub format: Option<Format>,
    /// Its name, when it loaded.
    pub name: Option<String>,
    /// Its version, when it declares one.
    pub version: Option<String>,
    /// What became of its MCP configuration, when it loaded.
    pub mcp: Option<McpOutcome>,
    /// Its skills, by the names the plugin declares (folder names), in order.
    pub skills: Vec<String>,
    /// Its MCP servers, by the names the plugin declares, in declaration order.
    pub servers: Vec<String>,
    /// Its commands, by the names the plugin declares (`review`, `git:commit`).
    pub commands: Vec<String>,
    /// Its subagents, by name.
    pub agents: Vec<String>,
    /// The host events its hooks are for (listed; never run by extpool).
    pub hooks: Vec<String>,
    /// Everything found wrong.
    pub diagnostics: Vec<Diagnostic>,
}

impl Report {
    /// The report of a read.
    pub fn of(read: &Result<Plugin, Rejection>) -> Self {
        match read {
            Ok(p) => Self {
                outcome: Outcome::Loaded,
                reason: None,
                format: Some(p.format),
                name: Some(p.name.clone()),
                version: p.version.clone(),
                mcp: Some(p.mcp),
                skills: p.skills.iter().map(|s| s.name.clone()).collect(),
                servers: p.servers.iter().map(|s| s.name.clone()).collect(),
                commands: p.commands.iter().map(|c| c.local_name.clone()).collect(),
                agents: p.agents.iter().map(|a| a.name.clone()).collect(),
                hooks: p.hooks.iter().map(|h| h.event.clone()).collect(),
                diagnostics: p.diagnostics.clone(),
            },
            Err(r) => Self {
                outcome: Outcome::Rejected,
                reason: Some(r.reason),
                format: r.format,
                name: None,
                version: None,
                mcp: None,
                skills: Vec::new(),
                servers: Vec::new(),
                commands: Vec::new(),
                agents: Vec::new(),
                hooks: Vec::new(),
                diagnostics: r.diagnostics.clone(),
            },
        }
    }
}

/// Checks the plugin in `path` (its format detected) with default bounds.
pub fn validate(path: &Path) -> Report {
    validate_with(
        path,
        None,
        &ReadOptions::new(std::env::temp_dir().join("extpool-plugin-data")),
    )
}

/// Checks the plugin in `path` as `format` (detected when `None`).
pub fn validate_with(path: &Path, format: Option<Format>, opts: &ReadOptions) -> Report {
    Report::of(&crate::read::read_plugin(path, format, opts))
}
