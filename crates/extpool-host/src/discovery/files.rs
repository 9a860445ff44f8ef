//! The configuration itself as a discovery source: `extpool.yaml` and the
//! `.mcp.json`, Codex and VS Code files that were read, read again when
//! one of them changes (a file watcher tells the reconciler), so an edit
//! adds, changes and removes servers while the host runs.
//!
//! An invalid edit changes nothing: the files are read again strictly,
//! and an error in a file that changed since the last accepted reading
//! refuses the whole reading, with its `file:line:col`. A file of another
//! program that was already broken when it was last accepted is skipped as
//! at start (its error is not the edit's). `mcp_servers` and `permissions`
//! apply while running (the catalog's next revision is built with the new
//! rules); an edit of another section is noted as needing a restart.
//! Flags given on the command line are applied again over every reading.
//!
//! With plugins served, each reading finds them again too (with the
//! `plugins:` and `commands:` settings the host started with): their
//! servers join the reading's, and their skills and commands are
//! published once the reading is accepted; the hosts' install records,
//! settings files and command folders are watched with the files.

use std::collections::{BTreeMap, hash_map::DefaultHasher};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use extpool_config::diagnostics::display_path;
use extpool_config::{ConfigError, ExtpoolConfig, LoadRequest, Loaded, Places, process_env};
use parking_lot::Mutex;

use super::{CONFIG_SOURCE, Discovered, DiscoveredServer, DiscoveryError, DiscoverySource};
use crate::options::ConfigOverrides;
use crate::servers::{Exclusions, LeftOut};

/// How long the watcher waits for a burst of writes to end.
pub const WATCH_DEBOUNCE: Duration = Duration::from_millis(150);

/// Content fingerprint of each file that may be read, by displayed name.
type Fingerprints = BTreeMap<String, Option<u64>>;

/// The configuration files as a source.
#[derive(Debug, Clone)]
pub struct ConfigFiles {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    files: Vec<PathBuf>,
    places: Places,
    overrides: ConfigOverrides,
    /// The sections other than `mcp_servers` as started (they need a restart).
    started: ExtpoolConfig,
    accepted: Mutex<Fingerprints>,
    timeout: Duration,
    /// What is not started for everyone (each caller's own servers, the
    /// gateway itself).
    exclusions: Exclusions,
    /// The plugins served, found again at every reading.
    plugins: Option<Arc<crate::plugins::Live>>,
    /// The catalog a reading's `permissions` are given to (set once it
    /// runs).
    catalog: std::sync::OnceLock<std::sync::Weak<extpool_catalog::Catalog>>,
    /// The `permissions` in force.
    permissions: Mutex<extpool_config::PermissionsConfig>,
}

impl ConfigFiles {
    /// The source for `files` (none: discovered from `places`), whose
    /// reading at start was `loaded`.
    pub(crate) fn new(
        files: Vec<PathBuf>,
        places: Places,
        overrides: ConfigOverrides,
        loaded: &Loaded,
        timeout: Duration,
        exclusions: Exclusions,
        plugins: Option<Arc<crate::plugins::Live>>,
    ) -> Self {
        let files: Vec<PathBuf> = files
            .into_iter()
            .map(|f| {
                if f.is_absolute() {
                    f
                } else {
                    places.cwd.join(f)
                }
            })
            .collect();
        let mut started = loaded.config.clone();
        started.mcp_servers.clear();
        let permissions = Mutex::new(started.permissions.clone());
        let inner = Inner {
            catalog: std::sync::OnceLock::new(),
            permissions,
            files,
            places,
            overrides,
            started,
            accepted: Mutex::new(Fingerprints::new()),
            timeout,
            exclusions,
            plugins,
        };
        *inner.accepted.lock() = inner.fingerprints();
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Gives the `permissions` of later readings to `catalog`.
    pub(crate) fn apply_permissions_to(&self, catalog: &Arc<extpool_catalog::Catalog>) {
        let _ = self.inner.catalog.set(Arc::downgrade(catalog));
    }

    /// Every file a reading may read (see [`ConfigFiles::new`]).
    pub fn watched(&self) -> Vec<PathBuf> {
        self.inner.watched()
    }
}

impl Inner {
    /// Every file a reading may read: the named ones, or every place a
    /// configuration is looked for. The watcher watches these.
    fn watched(&self) -> Vec<PathBuf> {
        let mut out = self.config_files();
        if let Some(live) = &self.plugins {
            for path in live.found().watched() {
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
        out
    }

    /// The configuration files only (what a reading's fingerprints cover).
    fn config_files(&self) -> Vec<PathBuf> {
        if self.files.is_empty() {
            self.places
                .candidates()
                .into_iter()
                .map(|c| c.path)
                .collect()
        } else {
            self.files.clone()
        }
    }

    fn show(&self, path: &Path) -> String {
        display_path(path, Some(&self.places.cwd), self.places.home.as_deref())
    }

    fn fingerprints(&self) -> Fingerprints {
        self.config_files()
            .into_iter()
            .map(|path| {
                let print = std::fs::read(&path).ok().map(|bytes| {
                    let mut h = DefaultHasher::new();
                    bytes.hash(&mut h);
                    h.finish()
                });
                (self.show(&path), print)
            })
            .collect()
    }

    /// Reads the files again (blocking): the servers, or the refusal.
    fn read(&self) -> Result<Discovered, DiscoveryError> {
        let now = self.fingerprints();
        let changed: Vec<&String> = {
            let accepted = self.accepted.lock();
            now.iter()
                .filter(|(file, print)| accepted.get(*file) != Some(*print))
                .map(|(file, _)| file)
                .collect()
        };
        let request = LoadRequest {
            files: self.files.clone(),
            places: self.places.clone(),
        };
        let mut loaded = match extpool_config::load_strict(&request) {
            Ok(loaded) => loaded,
            Err(e) if blames(&e, &changed) => return Err(DiscoveryError::Config(e)),
            // Only files that were already broken: read them as at start.
            Err(_) => extpool_config::load(&request).map_err(DiscoveryError::Config)?,
        };
        self.overrides
            .apply(&mut loaded, &self.places.cwd)
            .map_err(DiscoveryError::Config)?;
        let found = self.plugins.as_ref().map(|_| {
            let mut found = crate::plugins::discover(&self.started, &self.places);
            crate::plugins::add_servers(&mut found, &mut loaded, &self.places);
            found
        });
        *self.accepted.lock() = now;
        if let (Some(live), Some(found)) = (&self.plugins, found) {
            live.publish(found);
        }
        let mut out = self.discovered(&loaded);
        if let Some(note) = self.apply_permissions(&loaded.config.permissions) {
            out.notes.push(note);
        }
        Ok(out)
    }

    /// Gives changed `permissions` to the catalog: what went wrong, if
    /// anything.
    fn apply_permissions(&self, permissions: &extpool_config::PermissionsConfig) -> Option<String> {
        let mut current = self.permissions.lock();
        if *current == *permissions {
            return None;
        }
        let catalog = self.catalog.get().and_then(std::sync::Weak::upgrade)?;
        match catalog.set_permissions(permissions.clone()) {
            Ok(()) => {
                tracing::info!("discovery: the configuration's permissions changed; applied");
                *current = permissions.clone();
                None
            }
            Err(e) => {
                let note = format!("the changed permissions are not applied: {e}");
                tracing::warn!("{note}");
                Some(note)
            }
        }
    }

    fn endpoint(&self) -> String {
        let files = self.config_files();
        if self.files.is_empty() {
            let found: Vec<String> = files
                .iter()
                .filter(|p| p.is_file())
                .map(|p| self.show(p))
                .collect();
            if found.is_empty() {
                "no configuration file".into()
            } else {
                found.join(", ")
            }
        } else {
            files
                .iter()
                .map(|p| self.show(p))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }

    fn discovered(&self, loaded: &Loaded) -> Discovered {
        let mut out = Discovered::default();
        let mut sections = loaded.config.clone();
        sections.mcp_servers.clear();
        sections.permissions = self.started.permissions.clone();
        if sections != self.started {
            out.notes.push(
                "only mcp_servers and permissions apply while serving; the other sections changed take effect after a restart"
                    .into(),
            );
        }
        for (name, written) in &loaded.config.mcp_servers {
            let source = loaded.server_sources.get(name);
            let origin = source.map(crate::servers::origin_of).unwrap_or_default();
            match self.exclusions.left_out(written) {
                Some(LeftOut::PerCaller) => continue,
                Some(LeftOut::Own(why)) => {
                    let note = format!("server {name:?} ({origin}) left out: {why}");
                    tracing::warn!("{note}");
                    out.notes.push(note);
                    continue;
                }
                None => {}
            }
            let resolved = match loaded.resolve_server(name, &process_env) {
                Some(Ok(config)) => Ok(config),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("not configured".into()),
            };
            out.servers.push(DiscoveredServer {
                name: name.clone(),
                written: written.clone(),
                resolved,
                origin,
                plugin: source.and_then(|s| s.plugin.clone()),
            });
        }
        out
    }
}

/// True when an error of `e` is in one of the `changed` files.
fn blames(e: &ConfigError, changed: &[&String]) -> bool {
    let is_changed = |file: &str| changed.iter().any(|c| c.as_str() == file);
    if let Some(file) = e.unreadable_file() {
        return is_changed(file);
    }
    match e {
        ConfigError::UnknownFormat { file } => is_changed(file),
        ConfigError::Invalid { diagnostics } => diagnostics
            .iter()
            .filter(|d| d.is_error())
            .any(|d| is_changed(&d.file) || d.file.starts_with("--")),
        _ => true,
    }
}

#[async_trait]
impl DiscoverySource for ConfigFiles {
    fn id(&self) -> &str {
        CONFIG_SOURCE
    }

    fn endpoint(&self) -> String {
        self.inner.endpoint()
    }

    fn polled(&self) -> bool {
        false
    }

    async fn consult(&self) -> Result<Discovered, DiscoveryError> {
        let timeout = self.inner.timeout;
        let endpoint = self.inner.endpoint();
        // Reading files blocks; the loop's thread must not.
        let inner = self.inner.clone();
        let read = tokio::task::spawn_blocking(move || inner.read());
        match tokio::time::timeout(timeout, read).await {
            Ok(Ok(result)) => result,
            Ok(Err(join)) => Err(DiscoveryError::Unreachable {
                endpoint,
                reason: join.to_string(),
            }),
            Err(_) => Err(DiscoveryError::Timeout {
                endpoint,
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            }),
        }
    }
}

impl ConfigFiles {
    /// The servers of the configuration read at start, as the source's
    /// first answer (so the start-up set is not read twice).
    pub(crate) fn initial(&self, loaded: &Loaded) -> Discovered {
        self.inner.discovered(loaded)
    }
}
