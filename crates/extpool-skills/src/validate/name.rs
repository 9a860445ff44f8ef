//! The `name` rules of the specification, as the reference validator applies
//! them: stripped, NFKC-normalised, counted in code points.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Longest allowed name, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// What is wrong with a name (each with skills-ref's message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NameProblem {
    /// Empty after stripping.
    Empty,
    /// Longer than 64 characters.
    TooLong(String, usize),
    /// Has upper-case letters.
    NotLowercase(String),
    /// Starts or ends with `-`.
    EdgeHyphen,
    /// Contains `--`.
    DoubleHyphen,
    /// Contains something other than letters, digits and `-`.
    InvalidChars(String),
    /// Differs from its directory's name.
    DirMismatch {
        /// The directory name as found.
        dir: String,
        /// The normalised skill name.
        name: String,
    },
}

impl NameProblem {
    /// The reference validator's message.
    pub fn message(&self) -> String {
        match self {
            Self::Empty => "Field 'name' must be a non-empty string".into(),
            Self::TooLong(n, len) => {
                format!("Skill name '{n}' exceeds {MAX_NAME_CHARS} character limit ({len} chars)")
            }
            Self::NotLowercase(n) => format!("Skill name '{n}' must be lowercase"),
            Self::EdgeHyphen => "Skill name cannot start or end with a hyphen".into(),
            Self::DoubleHyphen => "Skill name cannot contain consecutive hyphens".into(),
            Self::InvalidChars(n) => format!(
                "Skill name '{n}' contains invalid characters. Only letters, digits, and hyphens are allowed."
            ),
            Self::DirMismatch { dir, name } => {
                format!("Directory name '{dir}' must match skill name '{name}'")
            }
        }
    }

    /// True for the directory-mismatch problem (its own diagnostic code).
    pub fn is_mismatch(&self) -> bool {
        matches!(self, Self::DirMismatch { .. })
    }
}

/// Python's `str.isalnum()` for one character, closely enough: letters and
/// numbers, but not the combining marks Rust counts as alphabetic.
fn python_isalnum(c: char) -> bool {
    c.is_alphanumeric() && !is_combining_mark(c)
}

/// NFKC normalisation, as `unicodedata.normalize("NFKC", s)`.
pub(crate) fn nfkc(s: &str) -> String {
    if s.is_ascii() {
        // NFKC leaves ASCII unchanged.
        return s.to_owned();
    }
    s.nfkc().collect()
}

/// `name != name.lower()` in Python.
fn has_upper(name: &str) -> bool {
    if name.is_ascii() {
        return name.bytes().any(|b| b.is_ascii_uppercase());
    }
    name != name.to_lowercase()
}

/// Every problem with `raw` as the name of a skill in directory `dir`
/// (`None` skips the directory check).
pub(crate) fn check(raw: &str, dir: Option<&str>) -> Vec<NameProblem> {
    let stripped = raw.trim();
    if stripped.is_empty() {
        return vec![NameProblem::Empty];
    }
    let name = nfkc(stripped);
    let same_as_dir = |dir: &str| {
        if dir.is_ascii() {
            dir == name
        } else {
            nfkc(dir) == name
        }
    };
    let mut problems = Vec::new();
    let len = name.chars().count();
    if len > MAX_NAME_CHARS {
        problems.push(NameProblem::TooLong(name.clone(), len));
    }
    if has_upper(&name) {
        problems.push(NameProblem::NotLowercase(name.clone()));
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push(NameProblem::EdgeHyphen);
    }
    if name.contains("--") {
        problems.push(NameProblem::DoubleHyphen);
    }
    if !name.chars().all(|c| python_isalnum(c) || c == '-') {
        problems.push(NameProblem::InvalidChars(name.clone()));
    }
    if let Some(dir) = dir
        && !same_as_dir(dir)
    {
        problems.push(NameProblem::DirMismatch {
            dir: dir.to_owned(),
            name,
        });
    }
    problems
}

/// Whether a name can identify a skill in `skill://<name>/...` URIs and
/// `/name` commands, even when it breaks the naming rules.
pub(crate) fn usable_as_identifier(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && !name.chars().any(|c| {
            c.is_whitespace() || c.is_control() || matches!(c, '/' | '\\' | '?' | '#' | '%')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(raw: &str, dir: &str) -> Vec<String> {
        check(raw, Some(dir))
            .iter()
            .map(NameProblem::message)
            .collect()
    }

    #[test]
    fn valid_names() {
        assert!(msgs("pdf-tools", "pdf-tools").is_empty());
        assert!(msgs("  pdf  ", "pdf").is_empty());
        // Unicode lower-case letters pass, as in the reference validator.
        assert!(msgs("技能", "技能").is_empty());
        assert!(msgs("мой-навык", "мой-навык").is_empty());
        // NFKC: a full-width digit equals the ASCII one.
        assert!(msgs("v\u{ff11}", "v1").is_empty());
    }

    #[test]
    fn each_rule_has_its_message() {
        assert_eq!(msgs("", "x"), ["Field 'name' must be a non-empty string"]);
        assert_eq!(msgs("Pdf", "Pdf"), ["Skill name 'Pdf' must be lowercase"]);
        assert_eq!(
            msgs("-pdf", "-pdf"),
            ["Skill name cannot start or end with a hyphen"]
        );
        assert_eq!(
            msgs("a--b", "a--b"),
            ["Skill name cannot contain consecutive hyphens"]
        );
        assert_eq!(
            msgs("my_skill", "my_skill"),
            [
                "Skill name 'my_skill' contains invalid characters. Only letters, digits, and hyphens are allowed."
            ]
        );
        assert_eq!(
            msgs("a", "b"),
            ["Directory name 'b' must match skill name 'a'"]
        );
        let long = "a".repeat(65);
        assert_eq!(
            msgs(&long, &long),
            [format!(
                "Skill name '{long}' exceeds 64 character limit (65 chars)"
            )]
        );
        assert_eq!(
            msgs("НАВЫК", "НАВЫК"),
            ["Skill name 'НАВЫК' must be lowercase"]
        );
    }

    #[test]
    fn identifiers() {
        assert!(usable_as_identifier("My_Skill"));
        assert!(!usable_as_identifier("a/b"));
        assert!(!usable_as_identifier("a b"));
        assert!(!usable_as_identifier(".."));
    }
}
