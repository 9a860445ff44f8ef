//! What each skill root gave: the skills loaded from it, the skills that
//! were not (their SKILL.md has errors) and a scan bound it hit — so a
//! front end can say how many were skipped and where to look, instead of
//! leaving a missing skill unexplained.

use std::path::{Path, PathBuf};

use extpool_skills::{Diagnostic, DiagnosticCode};
use serde::Serialize;

use crate::shared::HostInner;

/// One skill root and what came of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillRootReport {
    /// The root, as searched.
    pub root: PathBuf,
    /// Named in `skills.paths` (else a default root).
    pub configured: bool,
    /// The root is a directory.
    pub exists: bool,
    /// Skills loaded from it.
    pub loaded: usize,
    /// Skill directories found but not loaded because of errors, each once
    /// however many errors it has (`extpool skills validate ROOT` shows them).
    pub skipped: Vec<PathBuf>,
    /// The bounds hit while scanning it, in words (skills past them are not
    /// loaded).
    pub truncated: Vec<String>,
}

/// True for an error that kept a skill from loading (not a bound, not an
/// embedded server).
fn skips_a_skill(d: &Diagnostic) -> bool {
    d.is_error()
        && !matches!(
            d.code,
            DiagnosticCode::ScanTruncated | DiagnosticCode::EmbeddedServer
        )
}

/// The skill directory a diagnostic is about (its SKILL.md's directory).
fn skill_dir(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|n| n == "SKILL.md") {
        path.parent().unwrap_or(path).to_path_buf()
    } else {
        path.to_path_buf()
    }
}

/// The reports of every root of `host`, highest precedence first.
pub(crate) fn reports(host: &HostInner) -> Vec<SkillRootReport> {
    let roots = host.skill_roots();
    let configured = &host.loaded.skill_paths;
    let skills = host.manager.local_skills();
    let diagnostics = host.manager.diagnostics();
    // A path belongs to the deepest root it lies under.
    let owner = |path: &Path| {
        roots
            .iter()
            .enumerate()
            .filter(|(_, r)| path.starts_with(r))
            .max_by_key(|(_, r)| r.components().count())
            .map(|(i, _)| i)
    };
    let mut out: Vec<SkillRootReport> = roots
        .iter()
        .map(|root| SkillRootReport {
            root: root.clone(),
            configured: configured.contains(root),
            exists: root.is_dir(),
            loaded: 0,
            skipped: Vec::new(),
            truncated: Vec::new(),
        })
        .collect();
    for skill in &skills {
        if let Some(i) = out.iter().position(|r| r.root == skill.root) {
            out[i].loaded += 1;
        }
    }
    for d in &diagnostics {
        if d.code == DiagnosticCode::ScanTruncated {
            if let Some(r) = out.iter_mut().find(|r| r.root == d.path) {
                r.truncated.push(d.message.clone());
            }
        } else if skips_a_skill(d)
            && let Some(i) = owner(&d.path)
        {
            let dir = skill_dir(&d.path);
            if !out[i].skipped.contains(&dir) {
                out[i].skipped.push(dir);
            }
        }
    }
    out
}
