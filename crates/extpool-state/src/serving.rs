//! One gateway per SQLite file.
//!
//! Replicas share their state through PostgreSQL, whose `NOTIFY` tells
//! each replica the others' writes ([`crate::StoreEvent`]). An SQLite
//! file's events reach the handles of one process only, so two gateways
//! serving one file would each serve sessions from copies the other
//! changes under it. A handle opened to serve a gateway
//! ([`crate::OpenOptions::serve`]) therefore holds an exclusive lock on
//! the file beside the database, `<file>.lock`, for as long as it lives;
//! the operating system releases it when the process ends, however it
//! ends, so a gateway killed outright leaves nothing to clean up. A second
//! gateway is refused before it touches the database. Commands that only
//! read or write the store (API keys) open it beside a gateway as before.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::error::StateError;
use crate::location::StoreUrl;

/// The lock a gateway serving an SQLite file holds while it lives.
#[derive(Debug)]
pub(crate) struct ServingLock {
    /// The locked file; closing it releases the lock.
    _file: std::fs::File,
}

/// The lock file of SQLite database `db`.
fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the serving lock of SQLite database `db` (the store `url`), or
/// says which process holds it. The file's directory must exist.
pub(crate) fn claim(db: &Path, url: &StoreUrl) -> Result<ServingLock, StateError> {
    let path = lock_path(db);
    let failed = |detail: String| StateError::Open {
        url: url.masked(),
        detail,
    };
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&path)
        .map_err(|e| failed(format!("cannot open its lock file {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(StateError::InUse {
                url: url.masked(),
                holder: holder(&mut file),
            });
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(failed(format!(
                "cannot lock its lock file {}: {e}",
                path.display()
            )));
        }
    }
    // Who holds it, for the message a second gateway shows.
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()));
    if let Err(e) = written {
        tracing::debug!("cannot note this process in {}: {e}", path.display());
    }
    Ok(ServingLock { _file: file })
}

/// The process id the holder of a lock file wrote in it, if readable.
fn holder(file: &mut std::fs::File) -> Option<u32> {
    let mut text = String::new();
    Read::take(&*file, 32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_is_refused_naming_the_holder_and_the_first_release_frees_it() {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("state.db");
        let url: StoreUrl = format!("sqlite:{}", db.display()).parse().expect("url");
        let first = claim(&db, &url).expect("first");
        let e = claim(&db, &url).expect_err("second");
        assert!(
            matches!(e, StateError::InUse { holder: Some(pid), .. } if pid == std::process::id()),
            "{e:?}"
        );
        drop(first);
        claim(&db, &url).expect("free again");
        assert!(lock_path(&db).ends_with("state.db.lock"));
    }
}
