//! What a walk found, kept beside the [`Discovery`] it became, so that a
//! change the watcher reports inside known skill directories is applied by
//! probing those directories again instead of walking every root.
//!
//! [`Walked::merge`] is the one place precedence is applied (a name found
//! earlier wins; later copies are reported as shadowed): a full discovery
//! and an updated one go through it alike. [`Walked::update`] answers
//! `None` whenever only a full walk can tell what changed — a path outside
//! every known skill, a skill directory itself created, removed or renamed,
//! a SKILL.md that is no longer a loadable file, a skill whose name changed
//! (precedence may move) — so an update yields exactly what a full walk of
//! the same tree would.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::diagnostic::{Diagnostic, DiagnosticCode};
use crate::skill::Skill;

use super::Discovery;
use super::roots::{DiscoveryConfig, Root};
use super::walk::{Ctx, Found, Item, Outcome, RootScan, probe};

/// A batch larger than this is applied by a full walk.
const MAX_UPDATE_PATHS: usize = 1024;

/// One skill directory of a root, in walk order.
#[derive(Debug, Clone)]
struct Probed {
    what: Loaded,
    /// Where its own diagnostics sit in the root's list.
    diagnostics: Range<usize>,
    bytes_read: u64,
}

#[derive(Debug, Clone)]
enum Loaded {
    Skill(Arc<Skill>),
    /// A SKILL.md that does not load (its diagnostics say why).
    Skipped {
        dir: PathBuf,
        canonical_dir: PathBuf,
    },
}

impl Probed {
    fn dir(&self) -> &Path {
        match &self.what {
            Loaded::Skill(s) => &s.dir,
            Loaded::Skipped { dir, .. } => dir,
        }
    }

    fn canonical_dir(&self) -> &Path {
        match &self.what {
            Loaded::Skill(s) => &s.canonical_dir,
            Loaded::Skipped { canonical_dir, .. } => canonical_dir,
        }
    }

    fn name(&self) -> Option<&str> {
        match &self.what {
            Loaded::Skill(s) => Some(s.name()),
            Loaded::Skipped { .. } => None,
        }
    }

    fn new(found: Found, root: &Root) -> Self {
        let what = match found.meta {
            Some(meta) => Loaded::Skill(Arc::new(Skill {
                meta,
                dir: found.dir,
                canonical_dir: found.canonical_dir,
                skill_md: found.skill_md,
                root: root.path.clone(),
                kind: root.kind,
                fingerprint: found.fingerprint,
            })),
            None => Loaded::Skipped {
                dir: found.dir,
                canonical_dir: found.canonical_dir,
            },
        };
        Self {
            what,
            diagnostics: found.diagnostics,
            bytes_read: found.bytes_read,
        }
    }
}

/// What the walk found in one root.
#[derive(Debug, Clone)]
struct RootWalked {
    root: Root,
    canonical: PathBuf,
    /// The walk's diagnostics, in walk order.
    diagnostics: Vec<Diagnostic>,
    probed: Vec<Probed>,
    dirs_visited: usize,
    files_parsed: usize,
    /// SKILL.md files refused or unreadable (not in `probed`).
    refused: usize,
}

/// Every root's walk, in precedence order.
#[derive(Clone)]
pub(crate) struct Walked {
    roots: Vec<RootWalked>,
    /// Skill directories by where they are, built on the first update and
    /// shared by the walks updated from this one (they have the same
    /// directories).
    index: Arc<OnceLock<Option<DirIndex>>>,
}

/// Skill directories (as found and with symlinks resolved) → (root, index),
/// keyed by a hash of the path's bytes; each hit is checked against the
/// directory itself. A path spelled differently from how the walk found it
/// is not found (a full walk follows, which is only slower).
struct DirIndex(HashMap<u64, (usize, usize)>);

fn path_key(path: &Path) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::hash::DefaultHasher>::default()
        .hash_one(path.as_os_str().as_encoded_bytes())
}

impl DirIndex {
    /// `None` when one directory belongs to two roots (nested roots) or two
    /// directories share a key: a full walk sorts that out.
    fn build(roots: &[RootWalked]) -> Option<Self> {
        let mut map = HashMap::new();
        for (r, walked) in roots.iter().enumerate() {
            for (i, probed) in walked.probed.iter().enumerate() {
                for dir in [probed.dir(), probed.canonical_dir()] {
                    match map.insert(path_key(dir), (r, i)) {
                        Some(other) if other != (r, i) => return None,
                        _ => {}
                    }
                }
            }
        }
        Some(Self(map))
    }

    fn get(&self, roots: &[RootWalked], dir: &Path) -> Option<(usize, usize)> {
        let &(r, i) = self.0.get(&path_key(dir))?;
        let probed = &roots[r].probed[i];
        (probed.dir() == dir || probed.canonical_dir() == dir).then_some((r, i))
    }
}

impl std::fmt::Debug for Walked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walked")
            .field("roots", &self.roots.len())
            .finish_non_exhaustive()
    }
}

impl Walked {
    /// The walk's scans of `roots` (one each, in order).
    pub fn new(roots: &[Root], scans: Vec<RootScan>) -> Self {
        let roots = roots
            .iter()
            .zip(scans)
            .map(|(root, scan)| RootWalked {
                probed: scan
                    .found
                    .into_iter()
                    .map(|f| Probed::new(f, root))
                    .collect(),
                root: root.clone(),
                canonical: scan.canonical,
                diagnostics: scan.diagnostics,
                dirs_visited: scan.dirs_visited,
                files_parsed: scan.files_parsed,
                refused: scan.refused,
            })
            .collect();
        Self {
            roots,
            index: Arc::default(),
        }
    }

    /// The discovery: skills by precedence (one per name), every
    /// diagnostic in root order, the counters.
    pub fn merge(self: &Arc<Self>) -> Discovery {
        let mut out = Discovery {
            roots: self.roots.iter().map(|r| r.root.clone()).collect(),
            walked: Some(self.clone()),
            ..Discovery::default()
        };
        // name -> index in out.skills
        let mut by_name: HashMap<&str, usize> = HashMap::new();
        for walked in &self.roots {
            let stats = &mut out.stats;
            if walked.dirs_visited > 0 {
                stats.roots_scanned += 1;
            }
            stats.dirs_visited += walked.dirs_visited;
            stats.files_parsed += walked.files_parsed;
            stats.bytes_read += walked.probed.iter().map(|p| p.bytes_read).sum::<u64>();
            stats.skills_skipped += walked.refused;
            if walked
                .diagnostics
                .iter()
                .any(|d| d.code == DiagnosticCode::ScanTruncated)
            {
                stats.roots_truncated += 1;
            }
            out.diagnostics.extend(walked.diagnostics.iter().cloned());
            for probed in &walked.probed {
                let skill = match &probed.what {
                    Loaded::Skill(skill) => skill,
                    Loaded::Skipped { .. } => {
                        out.stats.skills_skipped += 1;
                        continue;
                    }
                };
                if let Some(&i) = by_name.get(skill.name()) {
                    let winner: &Arc<Skill> = &out.skills[i];
                    if winner.canonical_dir != skill.canonical_dir {
                        out.stats.skills_shadowed += 1;
                        let message = format!(
                            "skill '{}' is shadowed by {} (higher precedence); not loaded",
                            skill.name(),
                            winner.skill_md.display()
                        );
                        out.diagnostics.push(Diagnostic::warning(
                            DiagnosticCode::Shadowed,
                            &skill.skill_md,
                            None,
                            message,
                        ));
                    }
                    continue;
                }
                by_name.insert(skill.name(), out.skills.len());
                out.skills.push(skill.clone());
            }
        }
        out
    }

    /// True when this walk covered exactly `roots`.
    pub fn roots_match(&self, roots: &[Root]) -> bool {
        self.roots.len() == roots.len() && self.roots.iter().zip(roots).all(|(w, r)| &w.root == r)
    }

    /// This walk with the changes at `paths` applied, by probing again the
    /// skill directories whose SKILL.md they name, and how many it probed
    /// again; `None` when only a full walk can tell (see the module docs).
    pub fn update(&self, paths: &[PathBuf], config: &DiscoveryConfig) -> Option<(Walked, usize)> {
        if paths.is_empty() || paths.len() > MAX_UPDATE_PATHS {
            return None;
        }
        let changed = self.changed_skills(paths)?;
        let mut next = self.clone();
        for &(r, i) in &changed {
            next.reprobe(r, i, config)?;
        }
        Some((next, changed.len()))
    }

    /// The skills whose SKILL.md is among `paths` (root, index); `None`
    /// when a path lies outside every skill or is a skill directory itself,
    /// unless it is a file no walk can find ([`Walked::unrelated_file`]).
    fn changed_skills(&self, paths: &[PathBuf]) -> Option<BTreeSet<(usize, usize)>> {
        let index = self
            .index
            .get_or_init(|| DirIndex::build(&self.roots))
            .as_ref()?;
        let mut changed = BTreeSet::new();
        for path in paths {
            if index.get(&self.roots, path).is_some() {
                return None;
            }
            let inside = path
                .ancestors()
                .skip(1)
                .find_map(|a| index.get(&self.roots, a).map(|at| (a, at)));
            let Some((dir, at)) = inside else {
                if self.unrelated_file(path) {
                    continue;
                }
                return None;
            };
            if path.parent() == Some(dir) && path.file_name() == Some("SKILL.md".as_ref()) {
                changed.insert(at);
            }
        }
        Some(changed)
    }

    /// True when `path`, outside every known skill, cannot change what a
    /// walk finds: a regular file (outside skills a walk lists directories
    /// and links only) other than a SKILL.md, where no skill directory or
    /// problem was found (a directory replaced by a file changes them). A
    /// log file or an editor's file beside the skills is one; a batch of
    /// such files alone changes nothing and reads nothing.
    fn unrelated_file(&self, path: &Path) -> bool {
        let skill_md = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"));
        let plain = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
        let below = |p: &Path| p.starts_with(path);
        !skill_md
            && plain
            && !self.roots.iter().any(|w| {
                w.probed
                    .iter()
                    .any(|p| below(p.dir()) || below(p.canonical_dir()))
                    || w.diagnostics.iter().any(|d| below(&d.path))
            })
    }

    /// Probes skill `i` of root `r` again; `None` when the outcome is not
    /// the same skill (gone, refused, renamed, loaded where it was skipped
    /// or the other way round).
    fn reprobe(&mut self, r: usize, i: usize, config: &DiscoveryConfig) -> Option<()> {
        let walked = &mut self.roots[r];
        let old = &walked.probed[i];
        let ctx = Ctx {
            root_canonical: walked.canonical.clone(),
            kind: walked.root.kind,
            mode: config.mode,
            parse: true,
        };
        let item = Item {
            path: old.dir().to_owned(),
            canonical: old.canonical_dir().to_owned(),
            root: r,
            depth: 0,
            via_symlink: false,
        };
        let Outcome::Skill {
            mut found,
            diagnostics,
            bytes_read,
        } = probe(item, &ctx)
        else {
            return None;
        };
        if old.name() != found.meta.as_ref().map(|m| m.name.as_str()) {
            return None;
        }
        // Splice the new diagnostics in where the old ones were; the later
        // skills' ranges move by the difference.
        let old_range = old.diagnostics.clone();
        let (removed, added) = (old_range.len(), diagnostics.len());
        found.diagnostics = old_range.start..old_range.start + added;
        found.bytes_read = bytes_read;
        walked.diagnostics.splice(old_range, diagnostics);
        walked.probed[i] = Probed::new(*found, &walked.root);
        for later in &mut walked.probed[i + 1..] {
            let r = &mut later.diagnostics;
            *r = (r.start + added - removed)..(r.end + added - removed);
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::{discover, rediscover};

    /// Writes `<root>/<dir>/SKILL.md` with `front` as its frontmatter.
    fn write(root: &Path, dir: &str, front: &str) -> PathBuf {
        let dir = root.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("SKILL.md");
        std::fs::write(&path, format!("---\n{front}---\nBody.\n")).unwrap();
        path
    }

    /// Two roots: `one` with alpha, beta and a broken gamma; `two` with a
    /// second alpha (shadowed) and delta.
    fn tree() -> (tempfile::TempDir, DiscoveryConfig) {
        let tmp = tempfile::tempdir().unwrap();
        let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
        write(&one, "alpha", "name: alpha\ndescription: A\n");
        write(&one, "beta", "name: beta\ndescription: B\n");
        write(&one, "gamma", "name: gamma\n");
        write(&two, "alpha", "name: alpha\ndescription: A too\n");
        write(&two, "delta", "name: delta\ndescription: D\n");
        let config = DiscoveryConfig::with_paths([one, two]);
        (tmp, config)
    }

    fn assert_same(updated: &Discovery, walked: &Discovery) {
        assert_eq!(updated.skills, walked.skills);
        assert_eq!(updated.diagnostics, walked.diagnostics);
        assert_eq!(updated.stats, walked.stats);
        assert_eq!(updated.roots, walked.roots);
    }

    fn can_update(before: &Discovery, paths: &[PathBuf], config: &DiscoveryConfig) -> bool {
        let walked = before.walked.as_ref().expect("discover keeps its walk");
        walked.update(paths, config).is_some()
    }

    #[test]
    fn edits_inside_known_skills_are_read_alone_and_give_what_a_walk_gives() {
        let (tmp, config) = tree();
        let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
        let before = discover(&config);
        assert_eq!(before.skills.len(), 3);
        // beta gains a warning between the others' diagnostics, gamma stays
        // broken in another way, delta's supporting file changes.
        let paths = vec![
            write(
                &one,
                "beta",
                "name: beta\ndescription: B, edited\ncolour: red\n",
            ),
            write(&one, "gamma", "name: gamma\ndescription:\n"),
            two.join("delta/notes.md"),
        ];
        std::fs::write(&paths[2], "notes").unwrap();
        assert!(can_update(&before, &paths, &config));
        let updated = rediscover(&config, &before, &paths);
        assert_same(&updated, &discover(&config));
        assert_eq!(updated.get("beta").unwrap().description(), "B, edited");
        assert!(updated.diagnostics.len() > before.diagnostics.len());
        // An update of an update is one too.
        let again = vec![write(&one, "beta", "name: beta\ndescription: B\n")];
        assert!(can_update(&updated, &again, &config));
        assert_same(&rediscover(&config, &updated, &again), &discover(&config));
    }

    #[test]
    fn files_beside_the_skills_read_nothing_and_a_skill_replaced_by_a_file_is_walked() {
        let (tmp, config) = tree();
        let one = tmp.path().join("one");
        std::fs::create_dir_all(one.join("notes")).unwrap();
        let before = discover(&config);
        let walked = before.walked.as_ref().unwrap();
        // A log in the root and a file in a directory without skills.
        let beside = vec![one.join("extpool.log"), one.join("notes/todo.txt")];
        for path in &beside {
            std::fs::write(path, "a line\n").unwrap();
        }
        let (_, probed) = walked.update(&beside, &config).expect("no walk");
        assert_eq!(probed, 0);
        assert_same(&rediscover(&config, &before, &beside), &discover(&config));
        // A SKILL.md in the root itself, and a skill directory replaced by
        // a file, can only be told by a walk.
        let root_skill = one.join("SKILL.md");
        std::fs::write(&root_skill, "---\nname: one\ndescription: O\n---\n").unwrap();
        assert!(!can_update(
            &before,
            std::slice::from_ref(&root_skill),
            &config
        ));
        std::fs::remove_file(&root_skill).unwrap();
        std::fs::rename(one.join("beta"), tmp.path().join("beta-moved")).unwrap();
        std::fs::write(one.join("beta"), "now a file").unwrap();
        let replaced = vec![one.join("beta")];
        assert!(!can_update(&before, &replaced, &config));
        assert_same(&rediscover(&config, &before, &replaced), &discover(&config));
    }

    #[test]
    fn what_only_a_walk_can_tell_is_walked() {
        type Change = fn(&Path, &Path) -> Vec<PathBuf>;
        let changes: [(&str, Change); 5] = [
            ("a renamed skill", |one, _| {
                vec![write(one, "beta", "name: beta2\ndescription: B\n")]
            }),
            ("a loaded skill that breaks", |one, _| {
                vec![write(one, "beta", "name: beta\n")]
            }),
            ("a removed SKILL.md over a nested skill", |one, _| {
                write(one, "beta/inner", "name: inner\ndescription: I\n");
                std::fs::remove_file(one.join("beta/SKILL.md")).unwrap();
                vec![one.join("beta/SKILL.md"), one.join("beta/inner/SKILL.md")]
            }),
            ("a new skill directory", |_, two| {
                vec![
                    two.join("epsilon"),
                    write(two, "epsilon", "name: epsilon\ndescription: E\n"),
                ]
            }),
            ("a removed skill directory", |_, two| {
                std::fs::remove_dir_all(two.join("delta")).unwrap();
                vec![two.join("delta"), two.join("delta/SKILL.md")]
            }),
        ];
        for (what, change) in changes {
            let (tmp, config) = tree();
            let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
            let before = discover(&config);
            let paths = change(&one, &two);
            assert!(!can_update(&before, &paths, &config), "{what}");
            assert_same(&rediscover(&config, &before, &paths), &discover(&config));
        }
        let (_tmp, config) = tree();
        let before = discover(&config);
        assert!(
            !can_update(&before, &[], &config),
            "an empty batch (overflow)"
        );
    }
}
