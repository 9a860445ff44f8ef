//! The bounded, breadth-first walk of one root.
//!
//! A directory holding a `SKILL.md` is a skill; the walk does not descend
//! into it (its subdirectories are the skill's supporting files, and a
//! nested SKILL.md is only content). Other directories are listed and their
//! subdirectories queued, skipping dot-directories and `node_modules`, down
//! to the depth bound and up to the directory-count bound.
//!
//! Each level is probed in parallel: probing means opening `SKILL.md`
//! without following a symlink and reading only the head of the file.
//! Results are merged in path order, so the outcome does not depend on
//! thread timing.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, DiagnosticCode};
use crate::frontmatter;
use crate::skill::{Fingerprint, RootKind, SkillMeta};
use crate::validate::{self, ValidationMode};

use super::roots::{DiscoveryConfig, Root};

/// Levels smaller than this are probed on the calling thread.
const PARALLEL_THRESHOLD: usize = 64;

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
}

struct Item {
    path: PathBuf,
    canonical: PathBuf,
    depth: usize,
    /// Reached through a symlink: may repeat a directory seen elsewhere.
    via_symlink: bool,
}

enum Outcome {
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

struct Ctx<'a> {
    root_canonical: &'a Path,
    kind: RootKind,
    mode: ValidationMode,
    parse: bool,
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
        Ok(m) if m.is_file() => Ok(Some((skill_md, file))),
        Ok(_) => Err(Diagnostic::error(
            DiagnosticCode::MissingSkillMd,
            &skill_md,
            None,
            format!("{name} is not a regular file; skill not loaded"),
        )),
        Err(e) => Err(io_diag(&skill_md, &e)),
    }
}

fn probe(item: &Item, ctx: &Ctx<'_>) -> Outcome {
    match open_skill_file(&item.path, &item.canonical, "SKILL.md") {
        Ok(Some((skill_md, f))) => read_skill(item, skill_md, f, ctx),
        Ok(None) => list_dir(item, ctx),
        Err(d) => Outcome::Refused(d),
    }
}

fn io_diag(path: &Path, e: &io::Error) -> Diagnostic {
    Diagnostic::error(DiagnosticCode::Io, path, None, format!("cannot read: {e}"))
}

fn read_skill(item: &Item, skill_md: PathBuf, mut file: File, ctx: &Ctx<'_>) -> Outcome {
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return Outcome::Refused(io_diag(&skill_md, &e)),
    };
    let mut found = Found {
        dir: item.path.clone(),
        canonical_dir: item.canonical.clone(),
        skill_md,
        meta: None,
        fingerprint: fingerprint(&meta),
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
            &file_name(&item.path),
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

fn list_dir(item: &Item, ctx: &Ctx<'_>) -> Outcome {
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
            if ctx.kind == RootKind::Project && !target.starts_with(ctx.root_canonical) {
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
                depth: item.depth + 1,
                via_symlink: true,
            });
        }
    }
    Outcome::Dir(children, diagnostics)
}

fn probe_level(items: &[Item], ctx: &Ctx<'_>, threads: usize) -> Vec<Outcome> {
    if threads <= 1 || items.len() < PARALLEL_THRESHOLD {
        return items.iter().map(|i| probe(i, ctx)).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(|i| probe(i, ctx)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(v) => v,
                // A probe never panics on input; if one did, re-raise it.
                Err(p) => std::panic::resume_unwind(p),
            })
            .collect()
    })
}

/// Walks one root. `parse` false only locates skill directories.
pub(crate) fn walk(root: &Root, cfg: &DiscoveryConfig, parse: bool) -> RootScan {
    let mut scan = RootScan::default();
    let canonical = match fs::canonicalize(&root.path) {
        Ok(c) if c.is_dir() => c,
        Ok(_) => {
            scan.diagnostics.push(Diagnostic::warning(
                DiagnosticCode::NotADirectory,
                &root.path,
                None,
                "skills root is not a directory",
            ));
            return scan;
        }
        Err(e) => {
            if !is_not_found(&e) {
                scan.diagnostics.push(io_diag(&root.path, &e));
            }
            return scan;
        }
    };
    let ctx = Ctx {
        root_canonical: &canonical,
        kind: root.kind,
        mode: cfg.mode,
        parse,
    };
    let threads = cfg.thread_count();
    let mut visited: HashSet<PathBuf> = HashSet::new();
    visited.insert(canonical.clone());
    let mut level = vec![Item {
        path: root.path.clone(),
        canonical: canonical.clone(),
        depth: 0,
        via_symlink: false,
    }];
    let mut enqueued = 1usize;
    let mut truncated = false;
    let mut too_deep = false;
    while !level.is_empty() {
        scan.dirs_visited += level.len();
        let outcomes = probe_level(&level, &ctx, threads);
        let mut next = Vec::new();
        for outcome in outcomes {
            match outcome {
                Outcome::Skill {
                    found,
                    diagnostics,
                    bytes_read,
                } => {
                    if parse {
                        scan.files_parsed += 1;
                    }
                    scan.bytes_read += bytes_read;
                    scan.diagnostics.extend(diagnostics);
                    scan.found.push(*found);
                }
                Outcome::Dir(children, diagnostics) => {
                    scan.diagnostics.extend(diagnostics);
                    for child in children {
                        if child.depth > cfg.max_depth {
                            too_deep = true;
                            continue;
                        }
                        if enqueued >= cfg.max_dirs_per_root {
                            truncated = true;
                            break;
                        }
                        // A tree without symlinks has no cycles; only what a
                        // symlink reaches can repeat.
                        if !child.via_symlink || visited.insert(child.canonical.clone()) {
                            enqueued += 1;
                            next.push(child);
                        }
                    }
                }
                Outcome::Refused(d) => {
                    scan.refused += 1;
                    scan.diagnostics.push(d);
                }
                Outcome::Failed(d) => scan.diagnostics.push(d),
            }
        }
        level = next;
    }
    // A bound that hides skills is said, naming the root (the diagnostic's
    // path) and the bound; the skills found so far are kept.
    if truncated {
        tracing::warn!(root = %root.path.display(), limit = cfg.max_dirs_per_root, "skills scan truncated");
        scan.diagnostics.push(Diagnostic::warning(
            DiagnosticCode::ScanTruncated,
            &root.path,
            None,
            format!(
                "skills scan truncated: this root has more than {} directories (the limit); skills past them are not loaded, so move unrelated directories out of it",
                cfg.max_dirs_per_root
            ),
        ));
    }
    if too_deep {
        scan.diagnostics.push(Diagnostic::warning(
            DiagnosticCode::ScanTruncated,
            &root.path,
            None,
            format!(
                "skills scan truncated: directories more than {} levels below this root (the limit) are not searched for skills",
                cfg.max_depth
            ),
        ));
    }
    scan
}
