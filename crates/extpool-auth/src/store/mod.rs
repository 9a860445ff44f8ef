//! The credential store: one encrypted record per profile and kind.
//!
//! ```text
//! <dir>/store.key            the key (0600), unless the OS keyring holds it
//! <dir>/<profile>.grant      the access grant (tokens, client, endpoints)
//! <dir>/<profile>.registration   a direct-DCR registration, kept apart
//! <dir>/<profile>.lock       the profile's lock file
//! ```
//!
//! Records are JSON sealed with XChaCha20-Poly1305 ([`crypto`]); writes are
//! atomic and files private ([`fsutil`]). [`CredentialStore::lock`] is the
//! cross-process lock every read-modify-write of a profile holds — logins,
//! refreshes and logouts — so two processes never corrupt a record nor
//! refresh the same grant twice.

pub mod crypto;
pub mod fsutil;
mod key;

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crypto::{OpenError, StoreKey};
pub use fsutil::ProfileLock;
pub use key::{KEY_FILE, KeySource};

/// Environment variable naming the default store directory.
pub const STORE_DIR_ENV: &str = "EXTPOOL_CREDENTIALS_DIR";

/// Largest record file read (records are a few KB).
const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// A kind of record, stored as `<profile>.<KIND>`.
pub trait Record: Serialize + DeserializeOwned {
    /// File extension and part of the associated data.
    const KIND: &'static str;
}

/// Failures of the credential store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file operation failed.
    #[error("credential store: {}: {error}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
    /// A record could not be decrypted or parsed.
    #[error("credential record {} cannot be read: {reason}; remove it with `extpool mcp logout {profile}`", path.display())]
    Corrupt {
        /// The record file.
        path: PathBuf,
        /// The profile.
        profile: String,
        /// Why.
        reason: String,
    },
    /// The key file has the wrong size.
    #[error("credential store key {} is not a 32-byte key", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
    },
    /// The OS keyring answered with something unusable.
    #[error("OS keyring: {0}")]
    Keyring(String),
    /// Profile names become file names.
    #[error("{0:?} is not a valid profile name (letters, digits, `_` and `-`, at most 128)")]
    BadProfile(String),
}

impl StoreError {
    /// True when a record exists but cannot be read (tampered, wrong key).
    pub fn is_corrupt(&self) -> bool {
        matches!(self, Self::Corrupt { .. })
    }
}

struct Inner {
    dir: PathBuf,
    key: StoreKey,
    key_source: KeySource,
}

/// An opened credential store; cheap to clone.
#[derive(Clone)]
pub struct CredentialStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CredentialStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialStore")
            .field("dir", &self.inner.dir)
            .field("key", &self.inner.key)
            .field("key_source", &self.inner.key_source)
            .finish()
    }
}

/// The default store directory: `$EXTPOOL_CREDENTIALS_DIR`, else the
/// user's data directory + `extpool/credentials`.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(STORE_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    extpool_core::dirs::data_dir().join("credentials")
}

fn check_profile(profile: &str) -> Result<(), StoreError> {
    let ok = !profile.is_empty()
        && profile.len() <= 128
        && profile
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadProfile(profile.to_owned()))
    }
}

impl CredentialStore {
    /// Opens (creating if needed) the store in `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        fsutil::create_private_dir(&dir).map_err(|source| StoreError::Io {
            path: dir.clone(),
            error: source,
        })?;
        let (key, key_source) = key::load_or_create(&dir)?;
        Ok(Self {
            inner: Arc::new(Inner {
                dir,
                key,
                key_source,
            }),
        })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Where the key came from.
    pub fn key_source(&self) -> KeySource {
        self.inner.key_source
    }

    /// The file of one record.
    pub fn record_path(&self, profile: &str, kind: &str) -> PathBuf {
        self.inner.dir.join(format!("{profile}.{kind}"))
    }

    /// Reads a record; `None` when there is none.
    pub fn load<R: Record>(&self, profile: &str) -> Result<Option<R>, StoreError> {
        check_profile(profile)?;
        let path = self.record_path(profile, R::KIND);
        let sealed = match read_bounded(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io {
                    path,
                    error: source,
                });
            }
        };
        let corrupt = |reason: String| StoreError::Corrupt {
            path: path.clone(),
            profile: profile.to_owned(),
            reason,
        };
        let plain = crypto::open(&self.inner.key, profile, R::KIND, &sealed)
            .map_err(|e| corrupt(e.to_string()))?;
        serde_json::from_slice(&plain)
            .map(Some)
            .map_err(|e| corrupt(format!("not a valid {} record ({e})", R::KIND)))
    }

    /// Writes a record atomically.
    pub fn save<R: Record>(&self, profile: &str, record: &R) -> Result<(), StoreError> {
        check_profile(profile)?;
        let path = self.record_path(profile, R::KIND);
        let io = |source| StoreError::Io {
            path: path.clone(),
            error: source,
        };
        let plain = serde_json::to_vec(record).map_err(|e| io(std::io::Error::other(e)))?;
        let sealed = crypto::seal(&self.inner.key, profile, R::KIND, &plain).map_err(io)?;
        fsutil::write_atomic(&path, &sealed).map_err(io)
    }

    /// Deletes a record; true when there was one.
    pub fn remove(&self, profile: &str, kind: &str) -> Result<bool, StoreError> {
        check_profile(profile)?;
        let path = self.record_path(profile, kind);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StoreError::Io {
                path,
                error: source,
            }),
        }
    }

    /// Takes the profile's exclusive lock, blocking the thread until held.
    pub fn lock(&self, profile: &str) -> Result<ProfileLock, StoreError> {
        check_profile(profile)?;
        let path = self.record_path(profile, "lock");
        ProfileLock::acquire(&path).map_err(|source| StoreError::Io {
            path,
            error: source,
        })
    }

    /// [`CredentialStore::lock`] without blocking the async runtime.
    pub async fn lock_async(&self, profile: &str) -> Result<ProfileLock, StoreError> {
        let store = self.clone();
        let profile = profile.to_owned();
        tokio::task::spawn_blocking(move || store.lock(&profile))
            .await
            .map_err(|e| StoreError::Io {
                path: self.inner.dir.clone(),
                error: std::io::Error::other(e),
            })?
    }

    /// Profiles that have at least one record of `kind`, sorted.
    pub fn profiles(&self, kind: &str) -> Result<Vec<String>, StoreError> {
        let entries = std::fs::read_dir(&self.inner.dir).map_err(|source| StoreError::Io {
            path: self.inner.dir.clone(),
            error: source,
        })?;
        let suffix = format!(".{kind}");
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter_map(|n| n.strip_suffix(&suffix).map(str::to_owned))
            .filter(|n| check_profile(n).is_ok())
            .collect();
        names.sort();
        Ok(names)
    }
}

fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return Err(std::io::Error::other("record larger than 1 MiB"));
    }
    Ok(bytes)
}
