//! The bounded, breadth-first walk of one root.
//!
//! A directory holding a `SKILL.md` is a skill; the walk does not descend
//! into it (its subdirectories are the skill's supporting files, and a
//! nested SKILL.md is only content). Other directories are listed and their
//! subdirectories queued, skipping dot-directories and `node_modules`, down
//! to the depth bound and up to the directory-count bound.
//!
//! Every root is walked at once, level by level: one level holds the
//! directories of that depth in every root, and is probed in parallel by
//! a few threads that take batches of it as they come free (a thread the
//! machine does not schedule holds up nothing). Probing means opening
//! `SKILL.md` without following a symlink, one `fstat`, and reading only
//! the head of the file. Outcomes are merged in root order and path order,
//! each root with its own bounds, so the result is the same as walking the
//! roots one by one and does not depend on thread timing.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::diagnostic::{Diagnostic, DiagnosticCode};
use crate::frontmatter;
use crate::skill::{Fingerprint, RootKind, SkillMeta};
use crate::validate::{self, ValidationMode};

use super::roots::{DiscoveryConfig, Root};

/// Levels smaller than this are probed on the calling thread.
const PARALLEL_THRESHOLD: usize = 64;
/// Directories a probing thread takes from a level at a time.
const BATCH: usize = 32;

thread_local! {
    /// The head buffer of this thread, reused for every file it reads.
    static HEAD: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(8192));
}

/// A skill directory found in a root.
#[derive(Debug)]
pub(crate) struct Found {
    pub dir: PathBuf,
    pub canonical_dir: PathBuf,
    pub skill_md: PathBuf,
    /// `None` when parsing was not asked for, or the skill was skipped.
    pub meta: Option<SkillMeta>,
    pub fingerprint: Fingerprint,
    /// Where this skill's own diagnostics sit in the root's list.
    pub diagnostics: Range<usize>,
    /// Bytes of SKILL.md read.
    pub bytes_read: u64,
}

/// Everything one root yielded.
#[derive(Debug, Default)]
pub(crate) struct RootScan {
    pub found: Vec<Found>,
    pub diagnostics: Vec<Diagnostic>,
    pub dirs_visited: usize,
    pub files_parsed: usize,
    pub bytes_read: u64,
    /// SKILL.md files refused (a symlink out of the skill, not a regular
    /// file) or unreadable.
    pub refused: usize,
    /// The root with symlinks resolved (empty when it was not walked).
    pub canonical: PathBuf,
}

pub(crate) struct Item {
    pub path: PathBuf,
    pub canonical: PathBuf,
    /// Index of the root (in the walk's list) this directory belongs to.
    pub root: usize,
    pub depth: usize,
    /// Reached through a symlink: may repeat a directory seen elsewhere.
    pub via_symlink: bool,
}

pub(crate) enum Outcome {
    Skill {
        found: Box<Found>,
        diagnostics: Vec<Diagnostic>,
        bytes_read: u64,
    },
    Dir(Vec<Item>, Vec<Diagnostic>),
    /// A SKILL.md was found but refused or unreadable: a skill not loaded.
    Refused(Diagnostic),
    /// A directory could not be listed.
    Failed(Diagnostic),
}

pub(crate) struct Ctx {
    pub root_canonical: PathBuf,
    pub kind: RootKind,
    pub mode: ValidationMode,
    pub parse: bool,
}

/// Opens a file without following a symlink in its last component, and
/// without blocking (a FIFO named SKILL.md must not hang discovery: it is
/// opened, found not to be a regular file, and refused).
pub(crate) fn open_nofollow(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    {
        if fs::symlink_metadata(path)?.file_type().is_symlink() {
            return Err(io::Error::other("is a symbolic link"));
        }
    }
    options.open(path)
}

/// True when an open failed because the last component is a symlink.
pub(crate) fn is_symlink_refusal(e: &io::Error, path: &Path) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return true;
    }
    let _ = e;
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

fn is_not_found(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::NotFound {
        return true;
    }
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ENOTDIR) {
        return true;
    }
    false
}

fn fingerprint(meta: &fs::Metadata) -> Fingerprint {
    Fingerprint {
        len: meta.len(),
        modified: meta.modified().ok(),
    }
}

fn file_name(path: &Path) -> std::borrow::Cow<'_, str> {
    path.file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default()
}

/// Opens the `name` file (`SKILL.md`) of a skill directory under the
/// confinement rules: never through a symlink that leaves the directory
/// (`canonical_dir` is where it really is), never blocking on a FIFO.
/// `Ok(None)`: there is no such file. The error says why the skill is not
/// loaded, without quoting what a refused link points at.
pub(crate) fn open_skill_file(
    dir: &Path,
    canonical_dir: &Path,
    name: &str,
) -> Result<Option<(PathBuf, File)>, Diagnostic> {
    Ok(open_skill_file_with_meta(dir, canonical_dir, name)?.map(|(path, file, _)| (path, file)))
}

/// [`open_skill_file`], with the file's metadata (its one `fstat`).
fn open_skill_file_with_meta(
    dir: &Path,
    canonical_dir: &Path,
    name: &str,
) -> Result<Option<(PathBuf, File, fs::Metadata)>, Diagnostic> {
    let skill_md = dir.join(name);
    let file = match open_nofollow(&skill_md) {
        Ok(f) => f,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) if is_symlink_refusal(&e, &skill_md) => {
            // A symlinked SKILL.md is fine while it stays inside the skill.
            match fs::canonicalize(&skill_md) {
                Ok(target) if target.starts_with(canonical_dir) => {
                    open_nofollow(&target).map_err(|e| io_diag(&skill_md, &e))?
                }
                Ok(_) => {
                    return Err(Diagnostic::error(
                        DiagnosticCode::Io,
                        &skill_md,
                        None,
                        format!(
                            "{name} is a symbolic link that resolves outside the skill directory; skill not loaded"
                        ),
                    ));
                }
                Err(e) => return Err(io_diag(&skill_md, &e)),
            }
        }
        Err(e) => return Err(io_diag(&skill_md, &e)),
    };
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(Some((skill_md, file, m))),
        Ok(_) => Err(Diagnostic::error(
            DiagnosticCode::MissingSkillMd,
            &skill_md,
            None,
            format!("{name} is not a regular file; skill not loaded"),
        )),
        Err(e) => Err(io_diag(&skill_md, &e)),
    }
}

pub(crate) fn probe(item: Item, ctx: &Ctx) -> Outcome {
    match open_skill_file_with_meta(&item.path, &item.canonical, "SKILL.md") {
        Ok(Some((skill_md, f, meta))) => read_skill(item, skill_md, f, &meta, ctx),
        Ok(None) => list_dir(&item, ctx),
        Err(d) => Outcome::Refused(d),
    }
}

fn io_diag(path: &Path, e: &io::Error) -> Diagnostic {
    Diagnostic::error(DiagnosticCode::Io, path, None, format!("cannot read: {e}"))
}

fn read_skill(
    item: Item,
    skill_md: PathBuf,
    mut file: File,
    meta: &fs::Metadata,
    ctx: &Ctx,
) -> Outcome {
    let mut found = Found {
        dir: item.path,
        canonical_dir: item.canonical,
        skill_md,
        meta: None,
        fingerprint: fingerprint(meta),
        diagnostics: 0..0,
        bytes_read: 0,
    };
    if !ctx.parse {
        return Outcome::Skill {
            found: Box::new(found),
            diagnostics: Vec::new(),
            bytes_read: 0,
        };
    }
    let len = found.fingerprint.len;
    let checked = HEAD.with_borrow_mut(|buf| {
        let located = frontmatter::read_head(&mut file, buf, Some(len))?;
        let (meta, diagnostics) = validate::check_bytes(
            &found.skill_md,
            &file_name(&found.dir),
            buf,
            located,
            ctx.mode,
        );
        Ok::<_, io::Error>((meta, diagnostics, buf.len() as u64))
    });
    let (meta, diagnostics, bytes_read) = match checked {
        Ok(c) => c,
        Err(e) => return Outcome::Refused(io_diag(&found.skill_md, &e)),
    };
    found.meta = meta;
    Outcome::Skill {
        found: Box::new(found),
        diagnostics,
        bytes_read,
    }
}

fn list_dir(item: &Item, ctx: &Ctx) -> Outcome {
    let entries = match fs::read_dir(&item.path) {
        Ok(e) => e,
        Err(e) => return Outcome::Failed(io_diag(&item.path, &e)),
    };
    let mut names: Vec<(std::ffi::OsString, fs::FileType)> = entries
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let b = n.as_encoded_bytes();
            !b.starts_with(b".") && b != b"node_modules"
        })
        .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
        .filter(|(_, t)| t.is_dir() || t.is_symlink())
        .collect();
    names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut children = Vec::with_capacity(names.len());
    let mut diagnostics = Vec::new();
    for (name, file_type) in names {
        let path = item.path.join(&name);
        if file_type.is_dir() {
            children.push(Item {
                canonical: item.canonical.join(&name),
                path,
                root: item.root,
                depth: item.depth + 1,
                via_symlink: false,
            });
        } else {
            let Ok(target) = fs::canonicalize(&path) else {
                continue; // dangling
            };
            if !target.is_dir() {
                continue;
            }
            if item.canonical.starts_with(&target) {
                continue; // a link back to an ancestor
            }
            if ctx.kind == RootKind::Project && !target.starts_with(&ctx.root_canonical) {
                diagnostics.push(Diagnostic::warning(
                    DiagnosticCode::Io,
                    &path,
                    None,
                    "symbolic link resolves outside the project's skills directory; not followed",
                ));
                continue;
            }
            children.push(Item {
                canonical: target,
                path,
                root: item.root,
                depth: item.depth + 1,
                via_symlink: true,
            });
        }
    }
    Outcome::Dir(children, diagnostics)
}

/// Probes every directory of a level; outcomes in the level's order.
fn probe_level(items: Vec<Item>, ctxs: &[Ctx], threads: usize) -> Vec<(usize, Outcome)> {
    let run = |item: Item| {
        let root = item.root;
        (root, probe(item, &ctxs[root]))
    };
    if threads <= 1 || items.len() < PARALLEL_THRESHOLD {
        return items.into_iter().map(run).collect();
    }
    let total = items.len();
    // Numbered, so the outcomes can be put back in order.
    let queue = Mutex::new(items.into_iter().enumerate());
    let work = || {
        let mut done = Vec::new();
        loop {
            let batch: Vec<(usize, Item)> = queue.lock().by_ref().take(BATCH).collect();
            if batch.is_empty() {
                return done;
            }
            done.extend(batch.into_iter().map(|(i, item)| (i, run(item))));
        }
    };
    let mut numbered = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        // The calling thread works too.
        let mut all = work();
        for helper in helpers {
            match helper.join() {
                Ok(v) => all.extend(v),
                // A probe never panics on input; if one did, re-raise it.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        all
    });
    debug_assert_eq!(numbered.len(), total);
    numbered.sort_unstable_by_key(|(i, _)| *i);
    numbered.into_iter().map(|(_, outcome)| outcome).collect()
}

/// One root's walk: its bounds and what it yielded so far.
struct RootWalk {
    scan: RootScan,
    visited: HashSet<PathBuf>,
    enqueued: usize,
    truncated: bool,
    too_deep: bool,
}

impl RootWalk {
    /// Takes in the outcome of one of this root's directories; queues its
    /// subdirectories on `next` within the root's bounds.
    fn absorb(
        &mut self,
        outcome: Outcome,
        cfg: &DiscoveryConfig,
        parse: bool,
        next: &mut Vec<Item>,
    ) {
        match outcome {
            Outcome::Skill {
                mut found,
                diagnostics,
                bytes_read,
            } => {
                if parse {
                    self.scan.files_parsed += 1;
                }
                self.scan.bytes_read += bytes_read;
                let start = self.scan.diagnostics.len();
                self.scan.diagnostics.extend(diagnostics);
                found.diagnostics = start..self.scan.diagnostics.len();
                found.bytes_read = bytes_read;
                self.scan.found.push(*found);
            }
            Outcome::Dir(children, diagnostics) => {
                self.scan.diagnostics.extend(diagnostics);
                for child in children {
                    if child.depth > cfg.max_depth {
                        self.too_deep = true;
                        continue;
                    }
                    if self.enqueued >= cfg.max_dirs_per_root {
                        self.truncated = true;
                        break;
                    }
                    // A tree without symlinks has no cycles; only what a
                    // symlink reaches can repeat.
                    if !child.via_symlink || self.visited.insert(child.canonical.clone()) {
                        self.enqueued += 1;
                        next.push(child);
                    }
                }
            }
            Outcome::Refused(d) => {
                self.scan.refused += 1;
                self.scan.diagnostics.push(d);
            }
            Outcome::Failed(d) => self.scan.diagnostics.push(d),
        }
    }

    /// The scan, with a diagnostic for each bound that hid something.
    fn finish(mut self, root: &Root, cfg: &DiscoveryConfig) -> RootScan {
        // A bound that hides skills is said, naming the root (the
        // diagnostic's path) and the bound; the skills found so far are kept.
        if self.truncated {
            tracing::warn!(root = %root.path.display(), limit = cfg.max_dirs_per_root, "skills scan truncated");
            self.scan.diagnostics.push(Diagnostic::warning(
                DiagnosticCode::ScanTruncated,
                &root.path,
                None,
                format!(
                    "skills scan truncated: this root has more than {} directories (the limit); skills past them are not loaded, so move unrelated directories out of it",
                    cfg.max_dirs_per_root
                ),
            ));
        }
        if self.too_deep {
            self.scan.diagnostics.push(Diagnostic::warning(
                DiagnosticCode::ScanTruncated,
                &root.path,
                None,
                format!(
                    "skills scan truncated: directories more than {} levels below this root (the limit) are not searched for skills",
                    cfg.max_depth
                ),
            ));
        }
        self.scan
    }
}

/// The root as a directory to walk, or why it is not one.
fn open_root(root: &Root) -> Result<PathBuf, Option<Diagnostic>> {
    match fs::canonicalize(&root.path) {
        Ok(c) if c.is_dir() => Ok(c),
        Ok(_) => Err(Some(Diagnostic::warning(
            DiagnosticCode::NotADirectory,
            &root.path,
            None,
            "skills root is not a directory",
        ))),
        Err(e) if is_not_found(&e) => Err(None),
        Err(e) => Err(Some(io_diag(&root.path, &e))),
    }
}

/// Walks every root; one scan per root, in the roots' order. `parse`
/// false only locates skill directories.
pub(crate) fn walk_all(roots: &[Root], cfg: &DiscoveryConfig, parse: bool) -> Vec<RootScan> {
    let mut ctxs = Vec::with_capacity(roots.len());
    let mut walks = Vec::with_capacity(roots.len());
    let mut level = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let mut walk = RootWalk {
            scan: RootScan::default(),
            visited: HashSet::new(),
            enqueued: 1,
            truncated: false,
            too_deep: false,
        };
        let canonical = match open_root(root) {
            Ok(c) => Some(c),
            Err(d) => {
                walk.scan.diagnostics.extend(d);
                None
            }
        };
        if let Some(canonical) = &canonical {
            walk.scan.canonical = canonical.clone();
            walk.visited.insert(canonical.clone());
            level.push(Item {
                path: root.path.clone(),
                canonical: canonical.clone(),
                root: i,
                depth: 0,
                via_symlink: false,
            });
        }
        ctxs.push(Ctx {
            root_canonical: canonical.unwrap_or_default(),
            kind: root.kind,
            mode: cfg.mode,
            parse,
        });
        walks.push(walk);
    }
    let threads = cfg.thread_count();
    while !level.is_empty() {
        for item in &level {
            walks[item.root].scan.dirs_visited += 1;
        }
        let outcomes = probe_level(level, &ctxs, threads);
        // Children are queued per root, then the roots' queues joined in
        // root order: each root's next level keeps its own path order.
        let mut next: Vec<Vec<Item>> = (0..roots.len()).map(|_| Vec::new()).collect();
        for (root, outcome) in outcomes {
            walks[root].absorb(outcome, cfg, parse, &mut next[root]);
        }
        level = next.into_iter().flatten().collect();
    }
    walks
        .into_iter()
        .zip(roots)
        .map(|(walk, root)| walk.finish(root, cfg))
        .collect()
}

/// Walks one root. `parse` false only locates skill directories.
pub(crate) fn walk(root: &Root, cfg: &DiscoveryConfig, parse: bool) -> RootScan {
    walk_all(std::slice::from_ref(root), cfg, parse)
        .pop()
        .unwrap_or_default()
}
