//! Discovery: every skill under every root, with precedence applied, and
//! every problem found on the way.
//!
//! [`discover`] never fails: an unreadable root, a broken SKILL.md or a
//! shadowed duplicate becomes a [`Diagnostic`] beside the skills that did
//! load. Only metadata is read; bodies stay on disk.

mod roots;
mod walk;
mod walked;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diagnostic::Diagnostic;
use crate::skill::{RootKind, Skill};

use walked::Walked;

pub use roots::{
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_DIRS_PER_ROOT, DiscoveryConfig, PROJECT_SKILL_DIRS, Root,
    USER_SKILL_DIRS,
};
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
    /// The walk this came from, for [`rediscover`].
    walked: Option<Arc<Walked>>,
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
    let scans = walk::walk_all(&roots, config, true);
    let out = Arc::new(Walked::new(&roots, scans)).merge();
    tracing::debug!(
        skills = out.skills.len(),
        diagnostics = out.diagnostics.len(),
        dirs = out.stats.dirs_visited,
        "skills discovered"
    );
    out
}

/// `previous` with the changes the watcher reported at `paths` applied:
/// only the skill directories whose SKILL.md changed are read again, when
/// that is enough to know the result (see `walked`); otherwise a full
/// [`discover`]. Either way the result is what `discover` would return.
pub(crate) fn rediscover(
    config: &DiscoveryConfig,
    previous: &Discovery,
    paths: &[PathBuf],
) -> Discovery {
    let updated = previous
        .walked
        .as_ref()
        .filter(|w| w.roots_match(&config.roots()))
        .and_then(|w| w.update(paths, config));
    match updated {
        Some((walked, probed)) => {
            // Paths that concern no skill (a log file beside them) say
            // nothing: a line per batch of them would feed such a log.
            if probed > 0 {
                tracing::debug!(
                    paths = paths.len(),
                    probed,
                    "skills updated without a full walk"
                );
            }
            Arc::new(walked).merge()
        }
        None => discover(config),
    }
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
