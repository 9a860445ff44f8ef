//! The store's record files: `lock.json` (one record per installed
//! plugin) and `marketplaces.json`, read whole and written whole through
//! a temporary file and a rename, so a reader sees the old file or the
//! new one, never half of one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::StoreError;
use super::source::Source;
use crate::plugin::Format;

/// The largest record file read.
const MAX_RECORD_BYTES: u64 = 8 << 20;

/// One installed plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Its name (unique in the store).
    pub name: String,
    /// Its format.
    pub format: Format,
    /// Its version, when it declares one.
    #[serde(default)]
    pub version: Option<String>,
    /// Where it was installed from.
    pub source: Source,
    /// The commit it resolved to (git sources).
    #[serde(default)]
    pub commit: Option<String>,
    /// The digest of its files (`sha256:<hex>`).
    pub digest: String,
    /// Its folder, relative to the store.
    pub path: String,
    /// Whether it is served (its servers started).
    pub enabled: bool,
    /// When it was installed (RFC 3339).
    pub installed_at: String,
}

/// One marketplace added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarketplaceRecord {
    /// Its name (from its marketplace file).
    pub name: String,
    /// Where it comes from.
    pub source: Source,
    /// Its folder: the local folder itself, or its clone relative to the store.
    pub path: PathBuf,
    /// The commit its clone resolved to (git sources).
    #[serde(default)]
    pub commit: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct LockFile {
    version: u32,
    #[serde(default)]
    plugins: Vec<Record>,
}

#[derive(Serialize, Deserialize)]
struct MarketplacesFile {
    version: u32,
    #[serde(default)]
    marketplaces: Vec<MarketplaceRecord>,
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, StoreError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    if meta.len() > MAX_RECORD_BYTES {
        return Err(StoreError::BadRecord {
            path: path.to_owned(),
            message: format!("larger than {MAX_RECORD_BYTES} bytes"),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| StoreError::io(path, e))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| StoreError::BadRecord {
            path: path.to_owned(),
            message: format!("line {}: {e}", e.line()),
        })
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let mut text = serde_json::to_string_pretty(value).map_err(|e| StoreError::BadRecord {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    text.push('\n');
    let tmp: PathBuf = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| StoreError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        StoreError::io(path, e)
    })
}

/// The records of `lock.json` (none when it does not exist).
pub(crate) fn read(path: &Path) -> Result<Vec<Record>, StoreError> {
    Ok(read_json::<LockFile>(path)?
        .map(|f| f.plugins)
        .unwrap_or_default())
}

/// Writes `lock.json` whole, by name.
pub(crate) fn write(path: &Path, records: &[Record]) -> Result<(), StoreError> {
    let mut plugins = records.to_vec();
    plugins.sort_by(|a, b| a.name.cmp(&b.name));
    write_json(
        path,
        &LockFile {
            version: 1,
            plugins,
        },
    )
}

/// The records of `marketplaces.json`.
pub(crate) fn read_marketplaces(path: &Path) -> Result<Vec<MarketplaceRecord>, StoreError> {
    Ok(read_json::<MarketplacesFile>(path)?
        .map(|f| f.marketplaces)
        .unwrap_or_default())
}

/// Writes `marketplaces.json` whole, by name.
pub(crate) fn write_marketplaces(
    path: &Path,
    records: &[MarketplaceRecord],
) -> Result<(), StoreError> {
    let mut marketplaces = records.to_vec();
    marketplaces.sort_by(|a, b| a.name.cmp(&b.name));
    write_json(
        path,
        &MarketplacesFile {
            version: 1,
            marketplaces,
        },
    )
}
