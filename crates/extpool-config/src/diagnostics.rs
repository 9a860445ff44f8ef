//! Located diagnostics: `file:line:column: severity: key.path: message`,
//! plus a "did you mean" when a key or value is close to an accepted one.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::de::{DeError, DeErrorKind};
use crate::tree::{Pos, SyntaxError};

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The configuration cannot be used.
    Error,
    /// Something is ignored or likely wrong; the rest works.
    Warning,
    /// Information about how a foreign config was understood.
    Note,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Note => "note",
        }
    }
}

/// One finding about a configuration file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// How bad it is.
    pub severity: Severity,
    /// The file, as it should be shown to the user (home shortened to `~`).
    pub file: String,
    /// Line and column, when known.
    pub pos: Option<Pos>,
    /// The key path (`mcp_servers.github.args`), or empty.
    pub path: String,
    /// What is wrong, and what was expected.
    pub message: String,
    /// A suggestion (`did you mean "command"?`).
    pub help: Option<String>,
}

impl serde::Serialize for Pos {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Pos", 2)?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("column", &self.column)?;
        st.end()
    }
}

impl Diagnostic {
    /// A diagnostic.
    pub fn new(
        severity: Severity,
        file: impl Into<String>,
        pos: Option<Pos>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity,
            file: file.into(),
            pos,
            path: path.into(),
            message: message.into(),
            help: None,
        }
    }

    /// Adds a suggestion.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// A syntax error of a file.
    pub fn syntax(file: &str, format: &str, e: &SyntaxError) -> Self {
        Self::new(
            Severity::Error,
            file,
            Some(e.pos),
            "",
            format!("invalid {format}: {}", e.message),
        )
    }

    /// A schema error of a file.
    pub fn schema(file: &str, e: &DeError) -> Self {
        let mut d = Self::new(
            Severity::Error,
            file,
            e.pos,
            e.path_string(),
            e.kind.to_string(),
        );
        match &e.kind {
            DeErrorKind::UnknownKey { key, expected } => {
                let mut help = match did_you_mean(key, expected.iter().copied()) {
                    Some(s) => format!("did you mean {s:?}? "),
                    None => String::new(),
                };
                if expected.is_empty() {
                    help.push_str("no keys are allowed here");
                } else {
                    help.push_str("expected one of: ");
                    help.push_str(&expected.join(", "));
                }
                d.help = Some(help);
            }
            DeErrorKind::UnknownVariant { value, expected } => {
                if let Some(s) = did_you_mean(value, expected.iter().copied()) {
                    d.help = Some(format!("did you mean {s:?}?"));
                }
            }
            _ => {}
        }
        d
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(pos) = self.pos {
            write!(f, ":{}:{}", pos.line, pos.column)?;
        }
        write!(f, ": {}: ", self.severity.as_str())?;
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// The closest candidate to `word`, when one is close enough to be a typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// How a path is shown: relative to the working directory when inside it,
/// with the home directory written `~`, otherwise as given.
pub fn display_path(path: &Path, cwd: Option<&Path>, home: Option<&Path>) -> String {
    if let Some(cwd) = cwd
        && let Ok(rel) = path.strip_prefix(cwd)
        && !rel.as_os_str().is_empty()
    {
        return rel.display().to_string();
    }
    if let Some(home) = home
        && let Ok(rel) = path.strip_prefix(home)
    {
        return PathBuf::from("~").join(rel).display().to_string();
    }
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let keys = ["command", "args", "env", "cwd", "url", "headers"];
        assert_eq!(did_you_mean("comand", keys), Some("command"));
        assert_eq!(did_you_mean("header", keys), Some("headers"));
        assert_eq!(did_you_mean("ARGS", keys), Some("args"));
        assert_eq!(did_you_mean("zzz", keys), None);
    }

    #[test]
    fn renders_location_path_and_help() {
        let d = Diagnostic::new(
            Severity::Error,
            "extpool.yaml",
            Some(Pos::new(4, 5)),
            "mcp_servers.github",
            "unknown key \"comand\"",
        )
        .with_help("did you mean \"command\"?");
        assert_eq!(
            d.to_string(),
            "extpool.yaml:4:5: error: mcp_servers.github: unknown key \"comand\"\n  help: did you mean \"command\"?"
        );
    }

    #[test]
    fn paths_are_shortened() {
        let home = Path::new("/home/u");
        let cwd = Path::new("/home/u/proj");
        assert_eq!(
            display_path(Path::new("/home/u/proj/.mcp.json"), Some(cwd), Some(home)),
            ".mcp.json"
        );
        assert_eq!(
            display_path(Path::new("/home/u/.claude.json"), Some(cwd), Some(home)),
            "~/.claude.json"
        );
        assert_eq!(
            display_path(Path::new("/etc/x"), Some(cwd), Some(home)),
            "/etc/x"
        );
    }
}
