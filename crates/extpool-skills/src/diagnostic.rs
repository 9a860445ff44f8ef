//! Problems found while loading or validating skills, each tied to a file
//! and, when known, a line.
//!
//! A broken SKILL.md is never a panic and never an `Err` that hides the
//! other skills: it is a [`Diagnostic`] returned beside the skills that did
//! load. Front ends print them as `path:line: message`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// The skill loads, but something is off (lenient mode) or a skill was shadowed.
    Warning,
    /// The skill is invalid (strict mode) or was skipped (lenient mode).
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Warning => "warning",
            Self::Error => "error",
        })
    }
}

/// What kind of problem a diagnostic reports, for callers that branch on it
/// (nobody should match on message strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DiagnosticCode {
    /// A file or directory could not be read.
    Io,
    /// The path given to the validator does not exist.
    PathNotFound,
    /// The path given to the validator is not a directory.
    NotADirectory,
    /// A directory has no SKILL.md.
    MissingSkillMd,
    /// SKILL.md is not valid UTF-8.
    NotUtf8,
    /// SKILL.md starts with a UTF-8 byte order mark.
    ByteOrderMark,
    /// SKILL.md does not start with a `---` line.
    MissingFrontmatter,
    /// The frontmatter has no closing `---` line.
    UnclosedFrontmatter,
    /// The frontmatter is not valid YAML (or uses YAML the spec's validator refuses).
    InvalidYaml,
    /// The frontmatter is valid YAML but not a mapping.
    NotAMapping,
    /// Fields outside the specification (strict mode).
    UnexpectedFields,
    /// A field a host does not know (lenient mode; ignored).
    UnknownField,
    /// `name` or `description` is missing.
    MissingField,
    /// `name` breaks a naming rule.
    InvalidName,
    /// `name` differs from the directory name.
    NameMismatch,
    /// `description` is empty or too long.
    InvalidDescription,
    /// `compatibility` is not a string or too long.
    InvalidCompatibility,
    /// Another field has the wrong type or shape.
    InvalidField,
    /// A value was repaired so the skill could load (lenient mode).
    Repaired,
    /// A skill with the same name in a lower-precedence root was not loaded.
    Shadowed,
    /// A discovery root hit the depth or directory-count bound.
    ScanTruncated,
    /// A skill-embedded MCP server could not be built or failed.
    EmbeddedServer,
}

/// One problem with one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// What kind of problem.
    pub code: DiagnosticCode,
    /// The file (usually a SKILL.md) or directory concerned.
    pub path: PathBuf,
    /// 1-based line in `path`, when the problem has one.
    pub line: Option<usize>,
    /// The message, in words for people (strict mode uses skills-ref's wording).
    pub message: String,
}

impl Diagnostic {
    /// An error diagnostic.
    pub fn error(
        code: DiagnosticCode,
        path: impl Into<PathBuf>,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity: Severity::Error,
            code,
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    /// A warning diagnostic.
    pub fn warning(
        code: DiagnosticCode,
        path: impl Into<PathBuf>,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(code, path, line, message)
        }
    }

    /// True for [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The same diagnostic with another severity (lenient mode demotes strict errors).
    pub(crate) fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }
}

/// Prints `path:line: message`, or `path: message` when there is no line.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.path.display(), line, self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Collects diagnostics for one file.
#[derive(Debug)]
pub(crate) struct Sink<'a> {
    pub path: &'a Path,
    pub out: Vec<Diagnostic>,
}

impl<'a> Sink<'a> {
    pub fn new(path: &'a Path) -> Self {
        Self {
            path,
            out: Vec::new(),
        }
    }

    pub fn push(
        &mut self,
        severity: Severity,
        code: DiagnosticCode,
        line: Option<usize>,
        message: impl Into<String>,
    ) {
        self.out
            .push(Diagnostic::error(code, self.path, line, message).with_severity(severity));
    }

    pub fn has_errors(&self) -> bool {
        self.out.iter().any(Diagnostic::is_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_path_line_message() {
        let d = Diagnostic::error(
            DiagnosticCode::MissingField,
            "skills/x/SKILL.md",
            Some(3),
            "Missing required field in frontmatter: description",
        );
        assert_eq!(
            d.to_string(),
            "skills/x/SKILL.md:3: Missing required field in frontmatter: description"
        );
        let d = Diagnostic::warning(DiagnosticCode::Io, "skills/x", None, "cannot read");
        assert_eq!(d.to_string(), "skills/x: cannot read");
        assert!(!d.is_error());
    }
}
