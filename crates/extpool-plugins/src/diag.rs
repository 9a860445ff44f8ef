//! What reading a plugin or a command folder found wrong, each tied to a
//! file and, when known, a line.
//!
//! A broken manifest, a missing folder or a bad command file is never a
//! panic and never an `Err` that hides the rest: it is a [`Diagnostic`]
//! beside everything that did load. Front ends print them as
//! `path:line: message`; programs branch on [`DiagnosticKind`], never on
//! the message.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// How something was understood; nothing is lost.
    Note,
    /// Something is ignored or shadowed; the rest loads.
    Warning,
    /// A part (a skill, a server, a command, the whole plugin) was not loaded.
    Error,
}

/// What kind of problem a diagnostic reports.
///
/// The first six are Agent Plugins 1.0's report conditions, spelled as the
/// specification's conformance corpus spells them (`expected.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// An unknown top-level manifest field, reported and ignored (§5.2).
    UnknownManifestField,
    /// A non-object `extensions`, reported and ignored (§8.1).
    ExtensionsIgnored,
    /// A component location exists but is unusable (§6.2, §4.1).
    ComponentInvalid,
    /// A skill was not loaded (§7.1).
    SkillSkipped,
    /// One MCP server entry was not loaded (§7.2.2).
    ServerSkipped,
    /// The plugin's whole MCP configuration was not loaded (§7.2.2).
    McpDisabled,
    /// The plugin was not loaded at all (its manifest is missing or invalid).
    PluginRejected,
    /// A path of the plugin resolves outside its root and was refused.
    PathEscape,
    /// A file was over the size bound, or a folder over a count bound.
    Bound,
    /// A command file was not loaded.
    CommandSkipped,
    /// A subagent definition was not loaded.
    AgentSkipped,
    /// A hooks file was not read.
    HooksSkipped,
    /// A host's record (installed plugins, settings, enablement) could not be read.
    HostRecord,
    /// A name defined earlier wins; this definition is not loaded.
    Shadowed,
    /// How a server entry of another host's format was converted.
    Converted,
}

impl DiagnosticKind {
    /// The kebab-case code, as serialized.
    pub fn code(self) -> &'static str {
        match self {
            Self::UnknownManifestField => "unknown-manifest-field",
            Self::ExtensionsIgnored => "extensions-ignored",
            Self::ComponentInvalid => "component-invalid",
            Self::SkillSkipped => "skill-skipped",
            Self::ServerSkipped => "server-skipped",
            Self::McpDisabled => "mcp-disabled",
            Self::PluginRejected => "plugin-rejected",
            Self::PathEscape => "path-escape",
            Self::Bound => "bound",
            Self::CommandSkipped => "command-skipped",
            Self::AgentSkipped => "agent-skipped",
            Self::HooksSkipped => "hooks-skipped",
            Self::HostRecord => "host-record",
            Self::Shadowed => "shadowed",
            Self::Converted => "converted",
        }
    }
}

/// One problem with one file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Diagnostic {
    /// Error, warning or note.
    pub severity: Severity,
    /// What kind of problem.
    pub kind: DiagnosticKind,
    /// The file or folder concerned.
    pub path: PathBuf,
    /// 1-based line in `path`, when known.
    pub line: Option<usize>,
    /// What is wrong, in words for people.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic.
    pub fn new(
        severity: Severity,
        kind: DiagnosticKind,
        path: impl Into<PathBuf>,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity,
            kind,
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    /// An error diagnostic without a line.
    pub fn error(kind: DiagnosticKind, path: &Path, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, kind, path, None, message)
    }

    /// A warning diagnostic without a line.
    pub fn warning(kind: DiagnosticKind, path: &Path, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, kind, path, None, message)
    }

    /// The same diagnostic located at `line`.
    pub fn at(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// The same diagnostic located at `line`, when there is one.
    pub fn with_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    /// True for [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Prints `path:line: message`, or `path: message` without a line.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.path.display(), line, self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Converts another extpool crate's located finding (a server entry read
/// by `extpool-config`, a SKILL.md checked by `extpool-skills`).
pub(crate) fn from_config(
    d: &extpool_config::Diagnostic,
    path: &Path,
    kind_on_error: DiagnosticKind,
) -> Diagnostic {
    let (severity, kind) = match d.severity {
        extpool_config::Severity::Error => (Severity::Error, kind_on_error),
        extpool_config::Severity::Warning => (Severity::Warning, DiagnosticKind::Converted),
        _ => (Severity::Note, DiagnosticKind::Converted),
    };
    let message = if d.path.is_empty() {
        d.message.clone()
    } else {
        format!("{}: {}", d.path, d.message)
    };
    Diagnostic::new(severity, kind, path, d.pos.map(|p| p.line), message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_path_line_message() {
        let d = Diagnostic::error(
            DiagnosticKind::CommandSkipped,
            Path::new("cmds/x.toml"),
            "bad",
        )
        .at(3);
        assert_eq!(d.to_string(), "cmds/x.toml:3: bad");
        let d = Diagnostic::warning(DiagnosticKind::Shadowed, Path::new("a"), "b");
        assert_eq!(d.to_string(), "a: b");
        assert_eq!(
            serde_json::to_value(DiagnosticKind::ServerSkipped).unwrap(),
            "server-skipped"
        );
        assert_eq!(DiagnosticKind::ServerSkipped.code(), "server-skipped");
    }
}
