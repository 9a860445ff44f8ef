//! Where skills are looked for, and in which order.
//!
//! Precedence, highest first (a name found earlier wins; later copies are
//! reported as shadowed):
//!
//! 1. configured paths, in the order given;
//! 2. project roots: every host's project folder ([`PROJECT_SKILL_DIRS`]:
//!    `.agents/skills`, `.claude/skills`, `.codex/skills`, `.gemini/skills`,
//!    `.github/skills`, `.cursor/skills`, in that order) in the working
//!    directory, then in each parent up to the git root (the nearest
//!    ancestor with a `.git`; without one, the working directory alone) —
//!    the closer to the working directory, the higher;
//! 3. user roots: every host's user folder ([`USER_SKILL_DIRS`]:
//!    `~/.agents/skills`, `~/.claude/skills`, `~/.codex/skills`,
//!    `~/.gemini/skills`, `~/.copilot/skills`, `~/.cursor/skills`).
//!
//! Project over user follows the agentskills.io client guide ("project
//! overrides user"); nearer over farther follows how Claude Code and Codex
//! treat nested project directories. Within one directory the cross-host
//! folder (`.agents/skills`) comes first, then the hosts' own folders.
//! The folders are each host's documented ones: Claude Code
//! (`.claude/skills`, `~/.claude/skills`), Codex (`.agents/skills`,
//! `.codex/skills`, `~/.codex/skills`), Gemini CLI (`.gemini/skills`,
//! `~/.gemini/skills`), GitHub Copilot (`.github/skills`,
//! `~/.copilot/skills`), Cursor (`.cursor/skills`, `~/.cursor/skills`).

use std::path::{Path, PathBuf};

use crate::skill::RootKind;
use crate::validate::ValidationMode;

/// Deepest directory level searched below a root (the client guide's bound).
pub const DEFAULT_MAX_DEPTH: usize = 6;
/// Most directories visited per root (the client guide's bound, as Codex).
pub const DEFAULT_MAX_DIRS_PER_ROOT: usize = 2000;

/// Every host's skill folder in a project directory, in precedence order.
pub const PROJECT_SKILL_DIRS: [&str; 6] = [
    ".agents/skills",
    ".claude/skills",
    ".codex/skills",
    ".gemini/skills",
    ".github/skills",
    ".cursor/skills",
];

/// Every host's skill folder in the home directory, in precedence order.
pub const USER_SKILL_DIRS: [&str; 6] = [
    ".agents/skills",
    ".claude/skills",
    ".codex/skills",
    ".gemini/skills",
    ".copilot/skills",
    ".cursor/skills",
];

/// What to scan and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryConfig {
    /// Configured roots (highest precedence), in order.
    pub paths: Vec<PathBuf>,
    /// Working directory for project roots; `None` disables project roots.
    pub cwd: Option<PathBuf>,
    /// Home directory for user roots; `None` disables user roots.
    pub home: Option<PathBuf>,
    /// Deepest level searched below a root (a skill directly in a root is level 1).
    pub max_depth: usize,
    /// Most directories visited per root; the rest is reported as truncated.
    pub max_dirs_per_root: usize,
    /// How SKILL.md files are judged (lenient when loading).
    pub mode: ValidationMode,
    /// Worker threads for parsing; 0 picks the number of cores (at most 4).
    pub threads: usize,
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self {
            paths: Vec::new(),
            cwd: None,
            home: None,
            max_depth: DEFAULT_MAX_DEPTH,
            max_dirs_per_root: DEFAULT_MAX_DIRS_PER_ROOT,
            mode: ValidationMode::Lenient,
            threads: 0,
        }
    }
}

/// One directory that is scanned for skills.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Root {
    /// The directory.
    pub path: PathBuf,
    /// Its precedence class.
    pub kind: RootKind,
}

impl DiscoveryConfig {
    /// Only the given paths (no project or user roots).
    pub fn with_paths<I, P>(paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Self {
            paths: paths.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Configured paths plus the project roots of the current directory and
    /// the user roots of `$HOME`.
    pub fn from_env<I, P>(paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Self {
            cwd: std::env::current_dir().ok(),
            home: std::env::var_os("HOME")
                .or_else(|| std::env::var_os("USERPROFILE"))
                .map(PathBuf::from),
            ..Self::with_paths(paths)
        }
    }

    /// Every root, highest precedence first, without duplicates. Roots that
    /// do not exist (yet) are included: the watcher picks them up later.
    pub fn roots(&self) -> Vec<Root> {
        let mut roots: Vec<Root> = Vec::new();
        let mut push = |path: PathBuf, kind| {
            if !roots.iter().any(|r| r.path == path) {
                roots.push(Root { path, kind });
            }
        };
        for p in &self.paths {
            push(p.clone(), RootKind::Configured);
        }
        if let Some(cwd) = &self.cwd {
            for dir in project_dirs(cwd) {
                for sub in PROJECT_SKILL_DIRS {
                    push(dir.join(sub), RootKind::Project);
                }
            }
        }
        if let Some(home) = &self.home {
            for sub in USER_SKILL_DIRS {
                push(home.join(sub), RootKind::User);
            }
        }
        roots
    }

    pub(crate) fn thread_count(&self) -> usize {
        if self.threads > 0 {
            return self.threads;
        }
        std::thread::available_parallelism()
            .map(|n| n.get().min(4))
            .unwrap_or(1)
    }
}

/// The working directory and its parents up to the git root, nearest first.
fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.to_owned());
        if dir.join(".git").exists() {
            return dirs;
        }
    }
    // No git root: the working directory alone.
    dirs.truncate(1);
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_follow_the_documented_precedence() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let cwd = repo.join("a/b");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let home = tmp.path().join("home");
        let cfg = DiscoveryConfig {
            paths: vec![tmp.path().join("conf")],
            cwd: Some(cwd.clone()),
            home: Some(home.clone()),
            ..DiscoveryConfig::default()
        };
        let roots: Vec<_> = cfg.roots().into_iter().map(|r| (r.path, r.kind)).collect();
        let p = RootKind::Project;
        let mut want = vec![(tmp.path().join("conf"), RootKind::Configured)];
        for dir in [cwd.clone(), repo.join("a"), repo.clone()] {
            for sub in PROJECT_SKILL_DIRS {
                want.push((dir.join(sub), p));
            }
        }
        for sub in USER_SKILL_DIRS {
            want.push((home.join(sub), RootKind::User));
        }
        assert_eq!(roots, want);
        assert_eq!(roots[1].0, cwd.join(".agents/skills"));
        assert_eq!(roots[2].0, cwd.join(".claude/skills"));
        assert!(roots.contains(&(repo.join(".github/skills"), p)));
        assert!(roots.contains(&(home.join(".copilot/skills"), RootKind::User)));
        assert!(!roots.contains(&(home.join(".github/skills"), RootKind::User)));
    }

    #[test]
    fn without_git_only_the_working_directory_is_a_project() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("x/y");
        std::fs::create_dir_all(&cwd).unwrap();
        let cfg = DiscoveryConfig {
            cwd: Some(cwd.clone()),
            ..DiscoveryConfig::default()
        };
        let roots = cfg.roots();
        assert_eq!(roots.len(), PROJECT_SKILL_DIRS.len());
        assert_eq!(roots[0].path, cwd.join(".agents/skills"));
    }
}
