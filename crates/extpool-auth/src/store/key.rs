//! Where the store key lives: the OS keyring where one exists (macOS
//! Keychain, Windows Credential Manager, through the `keyring` crate),
//! otherwise a key file created 0600 beside the records.
//!
//! Linux has no keyring that survives a reboot without a desktop session
//! (the Secret Service needs D-Bus and an unlocked login keyring; kernel
//! keyrings are lost at reboot), so servers and CI use the key file there.

use std::io::{ErrorKind, Read, Write};
use std::path::Path;

use super::StoreError;
use super::crypto::StoreKey;
use super::fsutil::create_private_file;

/// Name of the key file inside the store directory.
pub const KEY_FILE: &str = "store.key";

/// Where a store's key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The OS keyring.
    Keyring,
    /// The 0600 key file in the store directory.
    File,
}

/// Loads the store key, creating it on first use.
pub(crate) fn load_or_create(dir: &Path) -> Result<(StoreKey, KeySource), StoreError> {
    if let Some(key) = keyring_key(dir)? {
        return Ok((key, KeySource::Keyring));
    }
    file_key(dir).map(|key| (key, KeySource::File))
}

fn file_key(dir: &Path) -> Result<StoreKey, StoreError> {
    let path = dir.join(KEY_FILE);
    let io = |source| StoreError::Io {
        path: path.clone(),
        error: source,
    };
    match std::fs::File::open(&path) {
        Ok(mut file) => {
            let mut bytes = Vec::with_capacity(32);
            Read::by_ref(&mut file)
                .take(33)
                .read_to_end(&mut bytes)
                .map_err(io)?;
            let bytes: [u8; 32] = bytes
                .try_into()
                .map_err(|_| StoreError::BadKey { path: path.clone() })?;
            Ok(StoreKey::from_bytes(bytes))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let key = StoreKey::generate().map_err(io)?;
            match create_private_file(&path) {
                Ok(mut file) => {
                    file.write_all(key.bytes()).map_err(io)?;
                    file.sync_all().map_err(io)?;
                    tracing::info!(path = %path.display(), "created the credential store key file (0600)");
                    Ok(key)
                }
                // Another process created it first: use theirs.
                Err(e) if e.kind() == ErrorKind::AlreadyExists => file_key(dir),
                Err(e) => Err(io(e)),
            }
        }
        Err(e) => Err(io(e)),
    }
}

#[cfg(any(target_os = "macos", target_os = "windows"))]
fn keyring_key(dir: &Path) -> Result<Option<StoreKey>, StoreError> {
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    let account = dir.display().to_string();
    let entry = match keyring::Entry::new("extpool-credential-store", &account) {
        Ok(entry) => entry,
        Err(e) => {
            tracing::debug!("no OS keyring ({e}); using the key file");
            return Ok(None);
        }
    };
    match entry.get_password() {
        Ok(encoded) => {
            let bytes = engine
                .decode(encoded.trim())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| {
                    StoreError::Keyring("the keyring entry is not a store key".into())
                })?;
            Ok(Some(StoreKey::from_bytes(bytes)))
        }
        Err(keyring::Error::NoEntry) => {
            if dir.join(KEY_FILE).exists() {
                // A store created with a key file keeps using it.
                return Ok(None);
            }
            let key = StoreKey::generate().map_err(|e| StoreError::Keyring(e.to_string()))?;
            match entry.set_password(&engine.encode(key.bytes())) {
                Ok(()) => Ok(Some(key)),
                Err(e) => {
                    tracing::debug!("cannot write the OS keyring ({e}); using the key file");
                    Ok(None)
                }
            }
        }
        Err(e) => {
            tracing::debug!("OS keyring unavailable ({e}); using the key file");
            Ok(None)
        }
    }
}

#[cfg(not(any(target_os = "macos", target_os = "windows")))]
fn keyring_key(_dir: &Path) -> Result<Option<StoreKey>, StoreError> {
    Ok(None)
}
