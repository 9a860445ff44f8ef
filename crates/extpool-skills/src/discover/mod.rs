//! Discovery: every skill under every root, with precedence applied, and
//! every problem found on the way.
//!
//! [`discover`] never fails: an unreadable root, a broken SKILL.md or a
//! shadowed duplicate becomes a [`Diagnostic`] beside the skills that did
//! load. Only metadata is read; bodies stay on disk.

mod roots;
mod walk;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::diagnostic::{Diagnostic, DiagnosticCode};
use crate::skill::{RootKind, Skill};

pub use roots::{DEFAULT_MAX_DEPTH, DEFAULT_MAX_DIRS_PER_ROOT, DiscoveryConfig, Root};
pub(crate) use walk::{is_symlink_refusal, open_nofollow, open_skill_file};

/// Counters of one discovery run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiscoveryStats {
    /// Roots that existed and were scanned.
    pub roots_scanned: usize,
    /// Directories visited, skill directories included.
    pub dirs_visited: usize,
    /// SKILL.md files parsed.
    pub files_parsed: usize,
    /// Bytes read from SKILL.md files (heads only: bodies are not read).
    pub bytes_read: u64,
    /// Skills found but not loaded because of an error (a SKILL.md that
    /// does not parse, is refused or cannot be read); each has an error
    /// diagnostic, and `extpool skills validate` shows them.
    pub skills_skipped: usize,
    /// Skills not loaded because one of the same name comes first.
    pub skills_shadowed: usize,
    /// Roots whose scan stopped at a bound (each has a diagnostic).
    pub roots_truncated: usize,
}

/// The result of a discovery: the skills that load and every problem found.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Loaded skills, highest precedence first, one per name.
    pub skills: Vec<Arc<Skill>>,
    /// Problems, in root order (errors mean a skill was not loaded).
    pub diagnostics: Vec<Diagnostic>,
    /// The roots that were considered, highest precedence first.
    pub roots: Vec<Root>,
    /// Counters.
    pub stats: DiscoveryStats,
}

impl Discovery {
    /// The skill with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.skills.iter().find(|s| s.name() == name)
    }
}

/// Scans every root of `config` and resolves duplicate names by precedence.
pub fn discover(config: &DiscoveryConfig) -> Discovery {
    let roots = config.roots();
    let mut out = Discovery {
        roots: roots.clone(),
        ..Discovery::default()
    };
    // name -> index in out.skills
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for root in &roots {
        let scan = walk::walk(root, config, true);
        if scan.dirs_visited > 0 {
            out.stats.roots_scanned += 1;
        }
        out.stats.dirs_visited += scan.dirs_visited;
        out.stats.files_parsed += scan.files_parsed;
        out.stats.bytes_read += scan.bytes_read;
        out.stats.skills_skipped += scan.refused;
        if scan
            .diagnostics
            .iter()
            .any(|d| d.code == DiagnosticCode::ScanTruncated)
        {
            out.stats.roots_truncated += 1;
        }
        out.diagnostics.extend(scan.diagnostics);
        for found in scan.found {
            let Some(meta) = found.meta else {
                out.stats.skills_skipped += 1;
                continue;
            };
            if let Some(&i) = by_name.get(&meta.name) {
                let winner = &out.skills[i];
                if winner.canonical_dir != found.canonical_dir {
                    out.stats.skills_shadowed += 1;
                    out.diagnostics.push(Diagnostic::warning(
                        DiagnosticCode::Shadowed,
                        &found.skill_md,
                        None,
                        format!(
                            "skill '{}' is shadowed by {} (higher precedence); not loaded",
                            meta.name,
                            winner.skill_md.display()
                        ),
                    ));
                }
                continue;
            }
            by_name.insert(meta.name.clone(), out.skills.len());
            out.skills.push(Arc::new(Skill {
                meta,
                dir: found.dir,
                canonical_dir: found.canonical_dir,
                skill_md: found.skill_md,
                root: root.path.clone(),
                kind: root.kind,
                fingerprint: found.fingerprint,
            }));
        }
    }
    tracing::debug!(
        skills = out.skills.len(),
        diagnostics = out.diagnostics.len(),
        dirs = out.stats.dirs_visited,
        "skills discovered"
    );
    out
}

/// Skill directories (holding a SKILL.md) below `path`, within the default
/// bounds, and what the walk found wrong on the way (refused SKILL.md
/// files, a bound that was hit, unreadable directories).
pub(crate) fn skill_dirs_under(path: &Path) -> (Vec<PathBuf>, Vec<Diagnostic>) {
    let root = Root {
        path: path.to_owned(),
        kind: RootKind::Configured,
    };
    let scan = walk::walk(&root, &DiscoveryConfig::default(), false);
    (
        scan.found.into_iter().map(|f| f.dir).collect(),
        scan.diagnostics,
    )
}
