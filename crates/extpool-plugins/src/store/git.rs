//! Git through the real `git` program: a clone of a checked URL at a
//! checked ref, and the commit it resolved to.
//!
//! Every argument that comes from outside is checked first
//! ([`super::source::check_url`], [`super::source::check_ref`]) and
//! passed after `--` or `--end-of-options`; git is told to use only the
//! transports that fetch (`GIT_ALLOW_PROTOCOL`) and never to ask for
//! credentials on a terminal (`GIT_TERMINAL_PROMPT=0`); the user's own git
//! configuration (credential helpers, `insteadOf`) applies, as it does
//! when the hosts clone a marketplace.

use std::path::Path;
use std::process::{Command, Stdio};

use super::StoreError;
use super::source::{check_ref, check_url};

/// The transports git may use for a plugin's repository.
const ALLOWED_PROTOCOLS: &str = "file:git:http:https:ssh";
/// The most of git's error output kept for a message.
const MAX_STDERR: usize = 2000;

fn git(dir: Option<&Path>) -> Command {
    let mut cmd = Command::new("git");
    if let Some(dir) = dir {
        cmd.arg("-C").arg(dir);
    }
    cmd.env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null());
    cmd
}

/// Runs `cmd`; its stdout, or git's error in words.
fn run(mut cmd: Command, what: &str) -> Result<String, StoreError> {
    let out = cmd.output().map_err(|e| StoreError::Git {
        what: what.to_owned(),
        reason: if e.kind() == std::io::ErrorKind::NotFound {
            "the `git` program is not installed (or not on PATH)".to_owned()
        } else {
            e.to_string()
        },
    })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    let mut err = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    if err.len() > MAX_STDERR {
        let mut cut = MAX_STDERR;
        while !err.is_char_boundary(cut) {
            cut -= 1;
        }
        err.truncate(cut);
        err.push('…');
    }
    Err(StoreError::Git {
        what: what.to_owned(),
        reason: if err.is_empty() {
            out.status.to_string()
        } else {
            err
        },
    })
}

/// Clones `url` into `into` (which must not exist) and checks out
/// `reference` (a branch, a tag or a commit; the default branch when
/// `None`), detached; returns the commit checked out. The clone's `.git`
/// stays in `into`: the caller copies the tree out.
pub(crate) fn clone_at(
    url: &str,
    reference: Option<&str>,
    into: &Path,
) -> Result<String, StoreError> {
    check_url(url)?;
    if let Some(r) = reference {
        check_ref(r)?;
    }
    let mut clone = git(None);
    clone
        .args(["clone", "--quiet", "--no-checkout", "--"])
        .arg(url)
        .arg(into);
    run(clone, &format!("cloning {url}"))?;
    let commit = match reference {
        None => run(
            rev_parse(into, "HEAD"),
            &format!("reading the default branch of {url}"),
        )?,
        Some(r) => {
            // A branch is `origin/<r>` after a clone; a tag or a commit is
            // itself.
            let remote = format!("refs/remotes/origin/{r}");
            run(rev_parse(into, &remote), "")
                .or_else(|_| run(rev_parse(into, r), ""))
                .map_err(|_| StoreError::Git {
                    what: format!("checking out {r:?} of {url}"),
                    reason: "no branch, tag or commit of that name".to_owned(),
                })?
        }
    };
    let mut checkout = git(Some(into));
    checkout
        .args([
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "--quiet",
            "--detach",
        ])
        .arg(&commit)
        .arg("--");
    run(checkout, &format!("checking out {commit} of {url}"))?;
    Ok(commit)
}

fn rev_parse(dir: &Path, what: &str) -> Command {
    let mut cmd = git(Some(dir));
    cmd.args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{what}^{{commit}}"));
    cmd
}
