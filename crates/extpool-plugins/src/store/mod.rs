//! extpool's own plugin manager, for people who use extpool without a
//! host: plugins installed into extpool's data directory, each with a
//! lock record (its source, the commit it resolved to, the digest of its
//! files), enabled or not; and the marketplaces plugins can be named from.
//!
//! Layout under the store's folder (`<data dir>/plugins`):
//!
//! - `lock.json` — the records: what is installed is what it lists, so
//!   it is written last, whole, by a rename (an interrupted install leaves
//!   no record and so nothing installed);
//! - `installed/<name>@<digest>/` — each plugin's files, copied;
//! - `marketplaces.json`, `marketplaces/<name>/` — the marketplaces added
//!   (a local one is read where it is, a git one is cloned here);
//! - `.staging/` — installs in progress; what an interrupted one left is
//!   removed by the next install (as is a folder moved into `installed/`
//!   whose record was never written), once an hour old.
//!
//! An install is two steps so that a front end can say what the plugin
//! will run before anything is installed: [`Store::prepare`] fetches and
//! reads it into the staging folder, [`Store::commit`] moves it into
//! place and writes the record. Nothing here runs what a plugin contains.

mod copy;
pub mod git;
mod lock;
mod market;
pub mod source;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub use copy::{CopyLimits, copy_tree, digest};
pub use lock::{MarketplaceRecord, Record};
pub use source::{Source, parse as parse_source};

use crate::plugin::{Plugin, ReadOptions, Rejection};

/// Leftovers of an interrupted install older than this are removed.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// What was given to install from is not usable.
    #[error("cannot install from {spec:?}: {reason}")]
    BadSource {
        /// As given.
        spec: String,
        /// Why.
        reason: String,
    },
    /// A plugin or marketplace name is not one the store accepts.
    #[error(
        "invalid name {name:?}: 1 to 64 letters, digits, `.`, `_` or `-`, not starting with `.` or `-`"
    )]
    BadName {
        /// As given.
        name: String,
    },
    /// A file of the plugin refused the install.
    #[error("{}: {reason}; nothing was installed", path.display())]
    Refused {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The folder fetched is not a plugin that loads.
    #[error("{} is not a plugin that loads ({reason}); nothing was installed", path.display())]
    NotAPlugin {
        /// The folder.
        path: PathBuf,
        /// The rejection's reason code.
        reason: &'static str,
        /// What the reader found.
        rejection: Box<Rejection>,
    },
    /// `git` failed.
    #[error("{what}: {reason}")]
    Git {
        /// What it was doing.
        what: String,
        /// git's message.
        reason: String,
    },
    /// No plugin of that name is installed.
    #[error("no plugin named {name:?} is installed in extpool")]
    NotInstalled {
        /// The name.
        name: String,
    },
    /// No marketplace of that name was added.
    #[error("no marketplace named {name:?} was added")]
    NoMarketplace {
        /// The name.
        name: String,
    },
    /// The marketplace has no plugin of that name.
    #[error("marketplace {marketplace:?} lists no plugin named {plugin:?}")]
    NotInMarketplace {
        /// The plugin.
        plugin: String,
        /// The marketplace.
        marketplace: String,
    },
    /// The marketplace could not be read.
    #[error("{}: {message}", path.display())]
    BadMarketplace {
        /// Its file or folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A record file is not what the store writes.
    #[error("{}: {message}", path.display())]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The failure (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
}

impl StoreError {
    pub(crate) fn io(path: &Path, error: std::io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            error,
        }
    }

    /// True when the name given is not installed or not known.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Self::NotInstalled { .. } | Self::NoMarketplace { .. } | Self::NotInMarketplace { .. }
        )
    }
}

/// extpool's plugin store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    dir: PathBuf,
    limits: CopyLimits,
}

/// A plugin fetched and read, not installed yet (see [`Store::commit`]).
/// Dropping it removes what was fetched.
#[derive(Debug)]
pub struct Prepared {
    /// The plugin as it will be served (its paths in the staging folder
    /// until committed).
    pub plugin: Plugin,
    /// Where it comes from.
    pub source: Source,
    /// The commit it resolved to (git sources).
    pub commit: Option<String>,
    /// The digest of its files.
    pub digest: String,
    /// True when the same plugin (name, commit and digest) is installed
    /// already: committing it changes nothing.
    pub unchanged: bool,
    /// The record it replaces (another version of the same name).
    pub replaces: Option<Record>,
    staging: PathBuf,
    files: PathBuf,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

impl Store {
    /// The store of extpool data directory `data_dir` (its `plugins`
    /// folder; nothing is created until something is installed).
    pub fn new(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.join("plugins"),
            limits: CopyLimits::default(),
        }
    }

    /// The same store with other copy bounds.
    pub fn with_limits(mut self, limits: CopyLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The lock file (the records of what is installed).
    pub fn lock_file(&self) -> PathBuf {
        self.dir.join("lock.json")
    }

    /// The files the store's state is in (what a watcher watches).
    pub fn watched(&self) -> Vec<PathBuf> {
        vec![self.lock_file()]
    }

    /// Every installed plugin's record, by name.
    pub fn records(&self) -> Result<Vec<Record>, StoreError> {
        lock::read(&self.lock_file())
    }

    /// The record of plugin `name`.
    pub fn record(&self, name: &str) -> Result<Record, StoreError> {
        self.records()?
            .into_iter()
            .find(|r| r.name == name)
            .ok_or_else(|| StoreError::NotInstalled {
                name: name.to_owned(),
            })
    }

    /// The folder of an installed plugin.
    pub fn path_of(&self, record: &Record) -> PathBuf {
        self.dir.join(&record.path)
    }

    fn staging_dir(&self) -> Result<PathBuf, StoreError> {
        let base = self.dir.join(".staging");
        std::fs::create_dir_all(&base).map_err(|e| StoreError::io(&base, e))?;
        self.sweep(&base, &[]);
        // A folder moved into place whose record was never written.
        if let Ok(records) = self.records() {
            let kept: Vec<PathBuf> = records.iter().map(|r| self.path_of(r)).collect();
            self.sweep(&self.dir.join("installed"), &kept);
        }
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = base.join(format!("{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
        Ok(dir)
    }

    /// Removes what interrupted installs left in `dir` (older than an
    /// hour, so an install running meanwhile keeps its folder), but never
    /// one of `kept`.
    fn sweep(&self, dir: &Path, kept: &[PathBuf]) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(Result::ok) {
            if kept.contains(&e.path()) {
                continue;
            }
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > STALE_AFTER);
            if old {
                tracing::info!(path = %e.path().display(), "removing what an interrupted install left");
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }

    /// Fetches `source` into a staging folder and reads it (Step 1 of an
    /// install; see [`Store::commit`]). `opts` are the bounds and the
    /// plugin data root the plugin is read with.
    pub fn prepare(&self, source: Source, opts: &ReadOptions) -> Result<Prepared, StoreError> {
        let staging = self.staging_dir()?;
        let files = staging.join("plugin");
        let mut prepared = Prepared {
            plugin: placeholder(&files),
            source: source.clone(),
            commit: None,
            digest: String::new(),
            unchanged: false,
            replaces: None,
            staging,
            files,
        };
        prepared.commit = self.fetch(&source, &prepared.files, &prepared.staging)?;
        prepared.digest = digest(&prepared.files)?;
        let plugin = crate::read::read_plugin(&prepared.files, None, opts).map_err(|r| {
            StoreError::NotAPlugin {
                path: source_path(&source, &prepared.files),
                reason: r.reason,
                rejection: Box::new(r),
            }
        })?;
        source::check_name(&plugin.name)?;
        let existing = self.records()?.into_iter().find(|r| r.name == plugin.name);
        prepared.unchanged = existing
            .as_ref()
            .is_some_and(|r| r.digest == prepared.digest && r.commit == prepared.commit);
        prepared.replaces = existing;
        prepared.plugin = plugin;
        Ok(prepared)
    }

    /// Fetches `source` into `files`; the commit, for git.
    fn fetch(
        &self,
        source: &Source,
        files: &Path,
        staging: &Path,
    ) -> Result<Option<String>, StoreError> {
        match source {
            Source::Path { path } => {
                copy_tree(path, files, &self.limits)?;
                Ok(None)
            }
            Source::Git {
                url,
                reference,
                subdir,
            } => {
                let clone = staging.join("clone");
                let commit = git::clone_at(url, reference.as_deref(), &clone)?;
                let from = match subdir {
                    Some(sub) => {
                        let rel = crate::fsx::relative(sub).map_err(|e| StoreError::BadSource {
                            spec: source.to_string(),
                            reason: e.to_string(),
                        })?;
                        clone.join(rel)
                    }
                    None => clone.clone(),
                };
                let root = std::fs::canonicalize(&clone).map_err(|e| StoreError::io(&clone, e))?;
                let real = std::fs::canonicalize(&from).map_err(|e| StoreError::io(&from, e))?;
                if !real.starts_with(&root) {
                    return Err(StoreError::Refused {
                        path: from,
                        reason: "the plugin's folder leads outside the repository".into(),
                    });
                }
                copy_tree(&real, files, &self.limits)?;
                let _ = std::fs::remove_dir_all(&clone);
                Ok(Some(commit))
            }
            Source::Marketplace {
                plugin,
                marketplace,
            } => {
                let entry = self.marketplace_entry(plugin, marketplace)?;
                self.fetch(&entry, files, staging)
            }
        }
    }

    /// Step 2 of an install: moves the prepared plugin into place and
    /// writes its record (`enabled` or not), replacing another version of
    /// the same name. Nothing changes when it is [`Prepared::unchanged`].
    pub fn commit(&self, mut prepared: Prepared, enabled: bool) -> Result<Record, StoreError> {
        if prepared.unchanged
            && let Some(existing) = prepared.replaces.take()
        {
            return Ok(existing);
        }
        let rel = installed_rel(&prepared);
        let dest = self.dir.join(&rel);
        let parent = self.dir.join("installed");
        std::fs::create_dir_all(&parent).map_err(|e| StoreError::io(&parent, e))?;
        if dest.exists() {
            // Left by an install interrupted after its move: the same files.
            std::fs::remove_dir_all(&dest).map_err(|e| StoreError::io(&dest, e))?;
        }
        std::fs::rename(&prepared.files, &dest).map_err(|e| StoreError::io(&dest, e))?;
        let record = Record {
            name: prepared.plugin.name.clone(),
            format: prepared.plugin.format,
            version: prepared.plugin.version.clone(),
            source: prepared.source.clone(),
            commit: prepared.commit.clone(),
            digest: prepared.digest.clone(),
            path: rel,
            enabled,
            installed_at: extpool_core::time::rfc3339(SystemTime::now()),
        };
        let mut records = self.records()?;
        let old = records.iter().position(|r| r.name == record.name);
        let replaced = old.map(|i| records.remove(i));
        records.push(record.clone());
        lock::write(&self.lock_file(), &records)?;
        if let Some(old) = replaced
            && old.path != record.path
        {
            let _ = std::fs::remove_dir_all(self.dir.join(&old.path));
        }
        Ok(record)
    }

    /// The folder `prepared` is served from once committed (the installed
    /// one's, when it is unchanged).
    pub fn install_path(&self, prepared: &Prepared) -> PathBuf {
        match &prepared.replaces {
            Some(existing) if prepared.unchanged => self.path_of(existing),
            _ => self.dir.join(installed_rel(prepared)),
        }
    }

    /// Enables or disables plugin `name`; its record, as changed.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<Record, StoreError> {
        let mut records = self.records()?;
        let record = records.iter_mut().find(|r| r.name == name).ok_or_else(|| {
            StoreError::NotInstalled {
                name: name.to_owned(),
            }
        })?;
        record.enabled = enabled;
        let out = record.clone();
        lock::write(&self.lock_file(), &records)?;
        Ok(out)
    }

    /// Removes plugin `name`: its record first (from then on it is not
    /// installed), then its files.
    pub fn remove(&self, name: &str) -> Result<Record, StoreError> {
        let mut records = self.records()?;
        let i = records.iter().position(|r| r.name == name).ok_or_else(|| {
            StoreError::NotInstalled {
                name: name.to_owned(),
            }
        })?;
        let record = records.remove(i);
        lock::write(&self.lock_file(), &records)?;
        let _ = std::fs::remove_dir_all(self.path_of(&record));
        Ok(record)
    }
}

/// Where `prepared` is installed, relative to the store: its name and the
/// start of its digest.
fn installed_rel(prepared: &Prepared) -> String {
    let short = prepared
        .digest
        .trim_start_matches("sha256:")
        .chars()
        .take(16)
        .collect::<String>();
    format!("installed/{}@{short}", prepared.plugin.name)
}

/// The folder named in a refusal: the source's own when it has one.
fn source_path(source: &Source, files: &Path) -> PathBuf {
    match source {
        Source::Path { path } => path.clone(),
        _ => files.to_owned(),
    }
}

/// An empty plugin, until the real one is read.
fn placeholder(root: &Path) -> Plugin {
    Plugin {
        format: crate::plugin::Format::AgentPlugins,
        name: String::new(),
        version: None,
        description: None,
        root: root.to_owned(),
        manifest: None,
        skills: Vec::new(),
        mcp: crate::plugin::McpOutcome::Absent,
        servers: Vec::new(),
        commands: Vec::new(),
        agents: Vec::new(),
        hooks: Vec::new(),
        context_files: Vec::new(),
        data_dir: PathBuf::new(),
        diagnostics: Vec::new(),
    }
}
