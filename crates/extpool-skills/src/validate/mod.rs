//! Validation of SKILL.md files in two modes.
//!
//! [`ValidationMode::Strict`] applies the specification with the reference
//! validator's rules and messages (what `extpool skills validate --strict`
//! reports). [`ValidationMode::Lenient`] is how skills are loaded: a skill is
//! skipped only when its YAML cannot be parsed or its description is missing;
//! everything else is a warning.
//!
//! Strict mode deliberately goes beyond `skills-ref` in a few places where the
//! specification is explicit and `skills-ref` does not check: an empty
//! `compatibility`, a `metadata` that is not a string map, a non-string
//! `license` or `allowed-tools`, a BOM or blank lines before the frontmatter
//! (which `skills-ref` also refuses, with another message). The fixture
//! corpus documents each of these.

mod lenient;
mod name;
mod strict;

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, DiagnosticCode, Severity, Sink};
use crate::frontmatter::{self, Located, SplitError};
use crate::skill::SkillMeta;
use crate::yaml::{self, Doc, Node};

/// How strictly SKILL.md files are judged (`skills.validation` in
/// `extpool.yaml` is this type).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ValidationMode {
    /// How hosts load skills: skip only what cannot be used (a missing
    /// description, broken YAML), warn about the rest.
    #[default]
    Lenient,
    /// The specification's rules, with the reference validator's messages;
    /// any problem skips the skill.
    Strict,
}

impl ValidationMode {
    /// `"lenient"` or `"strict"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lenient => "lenient",
            Self::Strict => "strict",
        }
    }
}

/// Maps YAML-relative lines to file lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lines {
    /// File line of the opening `---`.
    pub opening: usize,
    /// File line of the first YAML line.
    first: usize,
}

impl Lines {
    fn new(located: &Located) -> Self {
        Self {
            opening: located.opening_line,
            first: located.yaml_first_line(),
        }
    }

    /// The file line of YAML line `yaml_line` (1-based).
    pub fn file(&self, yaml_line: usize) -> usize {
        self.first + yaml_line.saturating_sub(1)
    }
}

/// The outcome of checking one SKILL.md.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillReport {
    /// The skill directory.
    pub dir: PathBuf,
    /// The SKILL.md that was read (or refused), if one was found.
    pub skill_md: Option<PathBuf>,
    /// The metadata, when the skill loads (lenient) or is valid (strict).
    pub meta: Option<SkillMeta>,
    /// Every problem found.
    pub diagnostics: Vec<Diagnostic>,
    /// True for a skill (or a directory checked as one); false for notes
    /// about a directory that was scanned for skills (a bound was hit, a
    /// subdirectory could not be read), which are not skills to count.
    pub skill: bool,
}

impl SkillReport {
    /// True when no diagnostic is an error.
    pub fn is_valid(&self) -> bool {
        !self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The counts of a validation, by skill (not by message).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ValidationSummary {
    /// Skills checked.
    pub checked: usize,
    /// Skills without errors.
    pub valid: usize,
    /// Skills with at least one error.
    pub with_errors: usize,
    /// Skills without errors but with warnings.
    pub with_warnings: usize,
    /// Error diagnostics, over all skills and directories.
    pub errors: usize,
    /// Warning diagnostics, over all skills and directories.
    pub warnings: usize,
}

/// Counts `reports` by skill: "11 checked: 5 valid, 6 with errors".
pub fn summarize(reports: &[SkillReport]) -> ValidationSummary {
    let mut s = ValidationSummary::default();
    for r in reports {
        let errors = r.diagnostics.iter().filter(|d| d.is_error()).count();
        s.errors += errors;
        s.warnings += r.diagnostics.len() - errors;
        if !r.skill {
            continue;
        }
        s.checked += 1;
        if errors > 0 {
            s.with_errors += 1;
        } else {
            s.valid += 1;
            if !r.diagnostics.is_empty() {
                s.with_warnings += 1;
            }
        }
    }
    s
}

pub(crate) fn split_message(e: &SplitError) -> (DiagnosticCode, usize, String) {
    match e {
        SplitError::Missing { line } => (
            DiagnosticCode::MissingFrontmatter,
            *line,
            "SKILL.md must start with YAML frontmatter (---)".into(),
        ),
        SplitError::Unclosed { opening_line } => (
            DiagnosticCode::UnclosedFrontmatter,
            *opening_line,
            "SKILL.md frontmatter not properly closed with ---".into(),
        ),
        SplitError::TooLarge { opening_line } => (
            DiagnosticCode::UnclosedFrontmatter,
            *opening_line,
            format!(
                "SKILL.md frontmatter not properly closed with --- within {} KiB",
                frontmatter::MAX_FRONTMATTER_BYTES / 1024
            ),
        ),
        SplitError::NotUtf8 { line } => (
            DiagnosticCode::NotUtf8,
            *line,
            "SKILL.md is not valid UTF-8".into(),
        ),
    }
}

/// Quotes plain values that contain `: ` on top-level `key: value` lines,
/// the usual cause of "mapping values are not allowed" in hand-written
/// frontmatter. Returns the repaired text and the repaired lines.
fn quote_colon_values(yaml: &str) -> Option<(String, Vec<usize>)> {
    let mut out = String::with_capacity(yaml.len() + 16);
    let mut repaired = Vec::new();
    for (i, line) in yaml.lines().enumerate() {
        let fixed = line
            .split_once(": ")
            .filter(|(key, _)| {
                !key.is_empty()
                    && !key.starts_with([' ', '\t', '#', '-', '"', '\''])
                    && !key.contains(' ')
            })
            .and_then(|(key, value)| {
                let v = value.trim();
                let plain = !v.starts_with(['"', '\'', '|', '>', '[', '{', '&', '*', '!', '#']);
                (plain && v.contains(": ")).then(|| {
                    let escaped = v.replace('\\', "\\\\").replace('"', "\\\"");
                    format!("{key}: \"{escaped}\"")
                })
            });
        match fixed {
            Some(f) => {
                out.push_str(&f);
                repaired.push(i + 1);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    (!repaired.is_empty()).then_some((out, repaired))
}

/// Checks SKILL.md content (`bytes` holds at least the frontmatter).
/// `dir_name` is the skill directory's name, for the name-match rule.
pub(crate) fn check_bytes(
    path: &Path,
    dir_name: &str,
    bytes: &[u8],
    located: Result<Located, SplitError>,
    mode: ValidationMode,
) -> (Option<SkillMeta>, Vec<Diagnostic>) {
    let mut sink = Sink::new(path);
    let meta = check_inner(dir_name, bytes, located, mode, &mut sink);
    let meta = match mode {
        ValidationMode::Strict if sink.has_errors() => None,
        _ => meta,
    };
    (meta, sink.out)
}

fn check_inner(
    dir_name: &str,
    bytes: &[u8],
    located: Result<Located, SplitError>,
    mode: ValidationMode,
    sink: &mut Sink<'_>,
) -> Option<SkillMeta> {
    let strict = mode == ValidationMode::Strict;
    let located = match located {
        Ok(l) => l,
        Err(e) => {
            let (code, line, message) = split_message(&e);
            sink.push(Severity::Error, code, Some(line), message);
            return None;
        }
    };
    if strict && located.had_bom {
        sink.push(
            Severity::Error,
            DiagnosticCode::ByteOrderMark,
            Some(1),
            "SKILL.md must start with YAML frontmatter (---); it starts with a UTF-8 byte order mark",
        );
    }
    if located.leading_blank_lines > 0 {
        sink.push(
            if strict {
                Severity::Error
            } else {
                Severity::Warning
            },
            DiagnosticCode::MissingFrontmatter,
            Some(1),
            "SKILL.md must start with YAML frontmatter (---); blank lines come first",
        );
    }
    let lines = Lines::new(&located);
    let text = match located.yaml_text(bytes) {
        Ok(t) => t,
        Err(e) => {
            let (code, line, message) = split_message(&e);
            sink.push(Severity::Error, code, Some(line), message);
            return None;
        }
    };
    let (doc, repaired) = parse_yaml(&text, &lines, strict, sink)?;
    let source = repaired.as_deref().unwrap_or(&text);
    if strict {
        for q in &doc.quirks {
            sink.push(
                Severity::Error,
                DiagnosticCode::InvalidYaml,
                Some(lines.file(q.line())),
                format!("Invalid YAML in frontmatter: {}", q.message()),
            );
        }
        if !doc.quirks.is_empty() {
            return None;
        }
    } else {
        lenient::report_quirks(&doc.quirks, &lines, sink);
    }
    let root = match doc.root {
        Some(root @ Node::Map { .. }) => root,
        _ => {
            sink.push(
                Severity::Error,
                DiagnosticCode::NotAMapping,
                Some(lines.opening),
                "SKILL.md frontmatter must be a YAML mapping",
            );
            return None;
        }
    };
    if strict {
        strict::check(&root, dir_name, &lines, sink);
        if sink.has_errors() {
            return None;
        }
    }
    // In strict mode this only builds the metadata (no new problems: the
    // strict rules imply the lenient ones).
    let mut scratch = Sink::new(sink.path);
    let target = if strict { &mut scratch } else { sink };
    lenient::load(&root, source, dir_name, &lines, target)
}

/// Parses the YAML; in lenient mode retries with unquoted colons quoted,
/// returning the repaired text with the document.
fn parse_yaml(
    text: &str,
    lines: &Lines,
    strict: bool,
    sink: &mut Sink<'_>,
) -> Option<(Doc, Option<String>)> {
    let error = match yaml::parse(text) {
        Ok(doc) => return Some((doc, None)),
        Err(e) => e,
    };
    if !strict
        && let Some((fixed, repaired)) = quote_colon_values(text)
        && let Ok(doc) = yaml::parse(&fixed)
    {
        for line in repaired {
            sink.push(
                Severity::Warning,
                DiagnosticCode::Repaired,
                Some(lines.file(line)),
                "Invalid YAML in frontmatter: unquoted ': ' in a value; read as a quoted string",
            );
        }
        return Some((doc, Some(fixed)));
    }
    sink.push(
        Severity::Error,
        DiagnosticCode::InvalidYaml,
        Some(lines.file(error.line)),
        format!("Invalid YAML in frontmatter: {error}"),
    );
    None
}

/// Opens the SKILL.md of a directory, `SKILL.md` else `skill.md` (as the
/// reference validator does), under discovery's confinement rules: a
/// symlink that leaves the skill directory, or a file that is not a
/// regular one, is refused (and its target never read).
fn open_skill_md(dir: &Path) -> Result<Option<(PathBuf, File)>, Diagnostic> {
    let canonical = std::fs::canonicalize(dir).map_err(|e| {
        Diagnostic::error(DiagnosticCode::Io, dir, None, format!("cannot read: {e}"))
    })?;
    for name in ["SKILL.md", "skill.md"] {
        if let Some(found) = crate::discover::open_skill_file(dir, &canonical, name)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Checks one skill directory.
pub fn validate_skill_dir(dir: &Path, mode: ValidationMode) -> SkillReport {
    let mut report = SkillReport {
        dir: dir.to_owned(),
        skill_md: None,
        meta: None,
        diagnostics: Vec::new(),
        skill: true,
    };
    let (skill_md, mut file) = match open_skill_md(dir) {
        Ok(Some(found)) => found,
        Ok(None) => {
            report.diagnostics.push(Diagnostic::error(
                DiagnosticCode::MissingSkillMd,
                dir,
                None,
                "Missing required file: SKILL.md",
            ));
            return report;
        }
        Err(refused) => {
            report.skill_md = Some(refused.path.clone());
            report.diagnostics.push(refused);
            return report;
        }
    };
    let mut bytes = Vec::new();
    match frontmatter::read_head(&mut file, &mut bytes, None) {
        Ok(located) => {
            let (meta, diagnostics) = check_bytes(&skill_md, &dir_name(dir), &bytes, located, mode);
            report.meta = meta;
            report.diagnostics = diagnostics;
        }
        Err(e) => report.diagnostics.push(Diagnostic::error(
            DiagnosticCode::Io,
            &skill_md,
            None,
            format!("cannot read SKILL.md: {e}"),
        )),
    }
    report.skill_md = Some(skill_md);
    report
}

/// Checks SKILL.md content held in memory, as if it were in directory `dir_name`.
pub fn validate_content(
    path: &Path,
    dir_name: &str,
    content: &[u8],
    mode: ValidationMode,
) -> SkillReport {
    let (meta, diagnostics) =
        check_bytes(path, dir_name, content, frontmatter::locate(content), mode);
    SkillReport {
        dir: path.parent().map(Path::to_owned).unwrap_or_default(),
        skill_md: Some(path.to_owned()),
        meta,
        diagnostics,
        skill: true,
    }
}

/// Checks what a user points at: a SKILL.md file, a skill directory, or a
/// directory holding skills (every skill below it, as discovery finds them).
pub fn validate_path(path: &Path, mode: ValidationMode) -> Vec<SkillReport> {
    let single = |diag| {
        vec![SkillReport {
            dir: path.to_owned(),
            skill_md: None,
            meta: None,
            diagnostics: vec![diag],
            skill: true,
        }]
    };
    if !path.exists() {
        return single(Diagnostic::error(
            DiagnosticCode::PathNotFound,
            path,
            None,
            format!("Path does not exist: {}", path.display()),
        ));
    }
    if path.is_file() {
        let is_skill_md = path
            .file_name()
            .is_some_and(|n| n == "SKILL.md" || n == "skill.md");
        return match path.parent() {
            Some(parent) if is_skill_md => vec![validate_skill_dir(parent, mode)],
            _ => single(Diagnostic::error(
                DiagnosticCode::NotADirectory,
                path,
                None,
                format!("Not a directory: {}", path.display()),
            )),
        };
    }
    if !matches!(open_skill_md(path), Ok(None)) {
        return vec![validate_skill_dir(path, mode)];
    }
    // A directory of skills: found as discovery finds them, with what the
    // walk refused (each a skill not loaded, with the reason) and its notes
    // (a bound that was hit) kept.
    let (dirs, walk_diagnostics) = crate::discover::skill_dirs_under(path);
    let mut reports: Vec<SkillReport> = dirs.iter().map(|d| validate_skill_dir(d, mode)).collect();
    let mut notes = Vec::new();
    for d in walk_diagnostics {
        let refused_skill_md = d.path.file_name().is_some_and(|n| n == "SKILL.md");
        if refused_skill_md {
            reports.push(SkillReport {
                dir: d.path.parent().map(Path::to_owned).unwrap_or_default(),
                skill_md: Some(d.path.clone()),
                meta: None,
                diagnostics: vec![d],
                skill: true,
            });
        } else {
            notes.push(d);
        }
    }
    reports.sort_by(|a, b| a.dir.cmp(&b.dir));
    if reports.is_empty() {
        reports.push(validate_skill_dir(path, mode));
    }
    if !notes.is_empty() {
        reports.push(SkillReport {
            dir: path.to_owned(),
            skill_md: None,
            meta: None,
            diagnostics: notes,
            skill: false,
        });
    }
    reports
}

/// Checks every path; returns all diagnostics in order.
pub fn validate_paths<P: AsRef<Path>>(paths: &[P], mode: ValidationMode) -> Vec<Diagnostic> {
    paths
        .iter()
        .flat_map(|p| validate_path(p.as_ref(), mode))
        .flat_map(|r| r.diagnostics)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(content: &str, dir: &str, mode: ValidationMode) -> (Option<SkillMeta>, Vec<String>) {
        let path = Path::new("s/SKILL.md");
        let (meta, diags) = check_bytes(
            path,
            dir,
            content.as_bytes(),
            frontmatter::locate(content.as_bytes()),
            mode,
        );
        (meta, diags.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn strict_reports_like_skills_ref_with_lines() {
        let (meta, d) = run(
            "---\nname: Bad_Name\ndescription: ok\nuser-invocable: true\n---\n",
            "bad",
            ValidationMode::Strict,
        );
        assert!(meta.is_none());
        assert_eq!(
            d,
            [
                "s/SKILL.md:4: Unexpected fields in frontmatter: user-invocable. Only ['allowed-tools', 'compatibility', 'description', 'license', 'metadata', 'name'] are allowed.",
                "s/SKILL.md:2: Skill name 'Bad_Name' must be lowercase",
                "s/SKILL.md:2: Skill name 'Bad_Name' contains invalid characters. Only letters, digits, and hyphens are allowed.",
                "s/SKILL.md:2: Directory name 'bad' must match skill name 'Bad_Name'",
            ]
        );
    }

    #[test]
    fn lenient_loads_with_warnings_and_understands_host_fields() {
        let (meta, d) = run(
            "---\nname: Other\ndescription: |\n  Does\n  things\nuser-invocable: false\nalways_active: true\nargument-hint: [issue]\narguments: issue rest\nallowed-tools: Read Bash(git diff *)\nmcp_servers:\n  github:\n    command: gh-mcp\n    timeout: 30\nauthor: me\n---\nbody\n",
            "dir",
            ValidationMode::Lenient,
        );
        let meta = meta.unwrap();
        assert_eq!(meta.name, "Other");
        assert_eq!(meta.description, "Does things");
        assert!(!meta.user_invocable);
        assert!(meta.always_active);
        assert_eq!(meta.argument_hint.as_deref(), Some("[issue]"));
        assert_eq!(meta.arguments, ["issue", "rest"]);
        assert_eq!(
            meta.allowed_tools.as_deref(),
            Some(&["Read".to_owned(), "Bash(git diff *)".to_owned()][..])
        );
        assert_eq!(meta.mcp_servers.len(), 1);
        assert_eq!(
            meta.mcp_servers[0].config,
            serde_json::json!({"command": "gh-mcp", "timeout": 30})
        );
        assert_eq!(
            d,
            [
                "s/SKILL.md:2: Skill name 'Other' must be lowercase",
                "s/SKILL.md:2: Directory name 'dir' must match skill name 'Other'",
                "s/SKILL.md:15: Unknown field 'author' in frontmatter (ignored)",
            ]
        );
    }

    #[test]
    fn lenient_skips_only_missing_description_or_bad_yaml() {
        let (meta, d) = run("---\nname: x\n---\n", "x", ValidationMode::Lenient);
        assert!(meta.is_none());
        assert_eq!(
            d,
            ["s/SKILL.md:1: Missing required field in frontmatter: description"]
        );
        let (meta, _) = run(
            "---\nname: x\ndescription: ''\n---\n",
            "x",
            ValidationMode::Lenient,
        );
        assert!(meta.is_none());
        let (meta, d) = run("---\nname: [x\n---\n", "x", ValidationMode::Lenient);
        assert!(meta.is_none());
        assert!(d[0].starts_with("s/SKILL.md:"), "{d:?}");
        // No name: the directory's name is used.
        let (meta, _) = run(
            "---\ndescription: d\n---\n",
            "dir-name",
            ValidationMode::Lenient,
        );
        assert_eq!(meta.unwrap().name, "dir-name");
    }

    #[test]
    fn lenient_repairs_unquoted_colons() {
        let (meta, d) = run(
            "---\nname: x\ndescription: Use when: the user asks\n---\n",
            "x",
            ValidationMode::Lenient,
        );
        assert_eq!(meta.unwrap().description, "Use when: the user asks");
        assert_eq!(d.len(), 1);
        assert!(d[0].starts_with("s/SKILL.md:3: "), "{d:?}");
        let (meta, d) = run(
            "---\nname: x\ndescription: Use when: the user asks\n---\n",
            "x",
            ValidationMode::Strict,
        );
        assert!(meta.is_none());
        assert!(
            d[0].starts_with("s/SKILL.md:3: Invalid YAML in frontmatter:"),
            "{d:?}"
        );
    }

    #[test]
    fn strict_refuses_bom_and_flow_style() {
        let (_, d) = run(
            "\u{feff}---\nname: x\ndescription: d\n---\n",
            "x",
            ValidationMode::Strict,
        );
        assert_eq!(d.len(), 1);
        assert!(d[0].contains("byte order mark"));
        let (meta, d) = run(
            "\u{feff}---\nname: x\ndescription: d\n---\n",
            "x",
            ValidationMode::Lenient,
        );
        assert!(meta.is_some() && d.is_empty(), "{d:?}");
        let (_, d) = run(
            "---\nname: x\ndescription: d\nallowed-tools: [Read, Write]\n---\n",
            "x",
            ValidationMode::Strict,
        );
        assert_eq!(
            d,
            [
                "s/SKILL.md:4: Invalid YAML in frontmatter: flow style ([...] or {...}) is not allowed; use block style or quote the value"
            ]
        );
    }

    #[test]
    fn colon_repair_leaves_other_lines() {
        let (fixed, lines) = quote_colon_values("a: b\nc: d: e\n  f: g: h\n").unwrap();
        assert_eq!(fixed, "a: b\nc: \"d: e\"\n  f: g: h\n");
        assert_eq!(lines, [2]);
        assert!(quote_colon_values("a: 'b: c'\n").is_none());
    }
}
