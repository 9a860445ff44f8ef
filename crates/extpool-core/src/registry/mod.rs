//! [`ExtensionRegistry`]: scoped storage of capabilities, the queries by
//! resource protocol, URI routing, the merged change stream, membership
//! events ([`MembershipWatch`]) and shutdown.
//!
//! Storage is copy-on-write per scope slot: a query takes a few `Arc`s (one
//! per visible level) under a short read lock and never copies a slot, so
//! its cost does not grow with the number of registered capabilities. No lock
//! is ever held across an `.await`, which is what makes turn-level
//! registration safe while runs are in flight.

mod merge;
mod resolve;
mod shutdown;
mod watch;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use crate::composition::{self, CircularCompositionError};
use crate::{Capability, Scope, ScopeError, ScopeKey, ScopeLevel, UriError};

pub use merge::MergedChanges;
pub use resolve::ResolveError;
pub use shutdown::{ShutdownEntry, ShutdownOutcome, ShutdownReport};
pub use watch::MembershipWatch;

/// Limits of the registry.
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    /// How long each capability gets to shut down before it is cancelled (RFC: 5 s).
    pub shutdown_timeout: Duration,
    /// Root-inclusive nesting depth beyond which registration logs a warning (RFC: 3).
    pub max_composition_depth: usize,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        Self {
            shutdown_timeout: Duration::from_secs(5),
            max_composition_depth: 3,
        }
    }
}

/// Why a registration or unregistration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The scope does not name the level asked for.
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// The same id is already registered in this slot.
    #[error("capability {id:?} is already registered at {slot}")]
    Duplicate {
        /// The capability id.
        id: String,
        /// The slot, as `level:pool/session/agent/turn`.
        slot: String,
    },
    /// No capability with this id in this slot.
    #[error("capability {id:?} is not registered at {slot}")]
    NotRegistered {
        /// The capability id.
        id: String,
        /// The slot, as `level:pool/session/agent/turn`.
        slot: String,
    },
    /// The capability's children form a cycle.
    #[error(transparent)]
    Circular(#[from] CircularCompositionError),
    /// `skill` and `mcp` are routed by protocol and cannot be claimed.
    #[error("URI scheme {0:?} is reserved")]
    ReservedScheme(String),
    /// The scheme is not a valid URI scheme.
    #[error("invalid URI scheme {0:?}")]
    InvalidScheme(String),
    /// The id is empty or unprintable.
    #[error("invalid capability id {0:?}")]
    InvalidId(String),
}

impl From<UriError> for RegistryError {
    fn from(e: UriError) -> Self {
        match e {
            UriError::Malformed { uri, .. } | UriError::Traversal { uri } => {
                Self::InvalidScheme(uri)
            }
        }
    }
}

/// What a successful registration produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The slot the capability now lives in.
    pub key: ScopeKey,
    /// Its composition depth, root-inclusive.
    pub depth: usize,
    /// Set when `depth` exceeds `max_composition_depth` (also logged).
    pub depth_warning: Option<String>,
}

#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) cap: Arc<dyn Capability>,
}

/// One scope slot: registration order plus an id index.
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) ordered: Arc<[Registered]>,
    pub(crate) by_id: HashMap<String, Arc<dyn Capability>>,
}

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) slots: HashMap<ScopeKey, Slot>,
    /// Custom scheme → routes (slot, capability id) in registration order.
    pub(crate) schemes: HashMap<String, Vec<(ScopeKey, String)>>,
}

/// The central registry of extension capabilities (RFC `ExtensionRegistry`).
pub struct ExtensionRegistry {
    pub(crate) inner: RwLock<Inner>,
    pub(crate) owners: resolve::OwnerIndex,
    pub(crate) config: RegistryConfig,
    pub(crate) watchers: Arc<watch::Watchers>,
}

impl Default for ExtensionRegistry {
    fn default() -> Self {
        Self::new(RegistryConfig::default())
    }
}

/// The capabilities visible from one scope: one shared snapshot per level,
/// outermost level first, registration order within a level.
#[derive(Clone, Default)]
pub struct Visible {
    levels: Vec<Arc<[Registered]>>,
}

impl Visible {
    /// Iterates pool → session → agent → turn.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Capability>> {
        self.levels.iter().flat_map(|l| l.iter().map(|r| &r.cap))
    }

    /// Number of visible capabilities.
    pub fn len(&self) -> usize {
        self.levels.iter().map(|l| l.len()).sum()
    }

    /// True when nothing is visible.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies the capabilities into a vector.
    pub fn to_vec(&self) -> Vec<Arc<dyn Capability>> {
        self.iter().cloned().collect()
    }

    /// Ids in visibility order.
    pub fn ids(&self) -> Vec<String> {
        self.iter().map(|c| c.id().to_owned()).collect()
    }
}

impl ExtensionRegistry {
    /// An empty registry.
    pub fn new(config: RegistryConfig) -> Self {
        Self {
            inner: RwLock::new(Inner::default()),
            owners: resolve::OwnerIndex::default(),
            config,
            watchers: Arc::default(),
        }
    }

    /// The registry's limits.
    pub fn config(&self) -> &RegistryConfig {
        &self.config
    }

    /// Registers `cap` at `level` of `scope`, optionally claiming a URI scheme.
    ///
    /// Refuses a duplicate id in the same slot, a scope that does not name the
    /// level, and composition cycles; warns (and allows) excessive depth.
    pub fn register(
        &self,
        cap: Arc<dyn Capability>,
        level: ScopeLevel,
        scope: &Scope,
        uri_scheme: Option<&str>,
    ) -> Result<Registration, RegistryError> {
        let id = cap.id().to_owned();
        if id.is_empty() || id.chars().any(char::is_control) {
            return Err(RegistryError::InvalidId(id));
        }
        let key = scope.key_at(level)?;
        let scheme = uri_scheme.map(normalize_scheme).transpose()?;
        let depth = composition::check(&cap)?;
        let depth_warning = (depth > self.config.max_composition_depth).then(|| {
            let msg = format!(
                "capability {id:?} nests {depth} levels deep (limit {}); deep composition can hide what runs",
                self.config.max_composition_depth
            );
            tracing::warn!(capability = %id, depth, "{msg}");
            msg
        });
        {
            let mut inner = self.inner.write();
            let slot = inner.slots.entry(key.clone()).or_default();
            if slot.by_id.contains_key(&id) {
                return Err(RegistryError::Duplicate {
                    id,
                    slot: key.to_string(),
                });
            }
            slot.by_id.insert(id.clone(), cap.clone());
            let mut ordered = slot.ordered.to_vec();
            ordered.push(Registered { cap });
            slot.ordered = ordered.into();
            if let Some(scheme) = scheme {
                inner
                    .schemes
                    .entry(scheme)
                    .or_default()
                    .push((key.clone(), id.clone()));
            }
        }
        // A new capability outside the turn level may now come first in some
        // walk; a turn-level one always comes last, so cached owners stay right.
        if level != ScopeLevel::Turn {
            self.owners.clear();
        }
        self.watchers.changed(&key);
        tracing::debug!(capability = %id, slot = %key, "registered");
        Ok(Registration {
            key,
            depth,
            depth_warning,
        })
    }

    /// Removes a capability from a slot and returns it (without shutting it down).
    pub fn unregister(
        &self,
        cap_id: &str,
        level: ScopeLevel,
        scope: &Scope,
    ) -> Result<Arc<dyn Capability>, RegistryError> {
        let key = scope.key_at(level)?;
        let removed = {
            let mut inner = self.inner.write();
            let Some(slot) = inner.slots.get_mut(&key) else {
                return Err(RegistryError::NotRegistered {
                    id: cap_id.to_owned(),
                    slot: key.to_string(),
                });
            };
            let Some(cap) = slot.by_id.remove(cap_id) else {
                return Err(RegistryError::NotRegistered {
                    id: cap_id.to_owned(),
                    slot: key.to_string(),
                });
            };
            slot.ordered = slot
                .ordered
                .iter()
                .filter(|r| r.cap.id() != cap_id)
                .cloned()
                .collect();
            if slot.by_id.is_empty() {
                inner.slots.remove(&key);
            }
            for routes in inner.schemes.values_mut() {
                routes.retain(|(k, id)| !(k == &key && id == cap_id));
            }
            inner.schemes.retain(|_, routes| !routes.is_empty());
            cap
        };
        self.owners.forget(&key, cap_id);
        self.watchers.changed(&key);
        tracing::debug!(capability = %cap_id, slot = %key, "unregistered");
        Ok(removed)
    }

    /// Replaces capabilities of one slot in a single step: removes the ids of
    /// `remove` (those not registered are skipped), then registers `add`. A
    /// reader sees the slot before or after, never in between — what lets a
    /// reconciliation publish additions and removals together. Refused as a
    /// whole (nothing changes) when an added id would be a duplicate or a
    /// composition is circular. Returns the removed capabilities, not shut
    /// down.
    pub fn replace(
        &self,
        level: ScopeLevel,
        scope: &Scope,
        remove: &[&str],
        add: Vec<Arc<dyn Capability>>,
    ) -> Result<Vec<Arc<dyn Capability>>, RegistryError> {
        let key = scope.key_at(level)?;
        for cap in &add {
            let id = cap.id();
            if id.is_empty() || id.chars().any(char::is_control) {
                return Err(RegistryError::InvalidId(id.to_owned()));
            }
            composition::check(cap)?;
        }
        let removed = {
            let mut inner = self.inner.write();
            let before: Vec<Registered> = inner
                .slots
                .get(&key)
                .map(|slot| slot.ordered.to_vec())
                .unwrap_or_default();
            let kept = |id: &str| before.iter().any(|r| r.cap.id() == id) && !remove.contains(&id);
            for (i, cap) in add.iter().enumerate() {
                let id = cap.id();
                if kept(id) || add[..i].iter().any(|c| c.id() == id) {
                    return Err(RegistryError::Duplicate {
                        id: id.to_owned(),
                        slot: key.to_string(),
                    });
                }
            }
            let slot = inner.slots.entry(key.clone()).or_default();
            let mut removed = Vec::new();
            for id in remove {
                if let Some(cap) = slot.by_id.remove(*id) {
                    removed.push(cap);
                }
            }
            // A replacement takes the place of the capability it replaces;
            // anything new goes last, as with `register`.
            let mut add: Vec<Option<Arc<dyn Capability>>> = add.into_iter().map(Some).collect();
            let mut take = |id: &str| {
                add.iter_mut()
                    .find(|c| c.as_ref().is_some_and(|c| c.id() == id))
                    .and_then(Option::take)
            };
            let mut ordered: Vec<Registered> = Vec::with_capacity(before.len());
            for r in before {
                if !remove.contains(&r.cap.id()) {
                    ordered.push(r);
                } else if let Some(cap) = take(r.cap.id()) {
                    ordered.push(Registered { cap });
                }
            }
            ordered.extend(add.into_iter().flatten().map(|cap| Registered { cap }));
            for r in &ordered {
                slot.by_id.insert(r.cap.id().to_owned(), r.cap.clone());
            }
            slot.ordered = ordered.into();
            if slot.by_id.is_empty() {
                inner.slots.remove(&key);
            }
            for routes in inner.schemes.values_mut() {
                routes.retain(|(k, id)| !(k == &key && remove.contains(&id.as_str())));
            }
            inner.schemes.retain(|_, routes| !routes.is_empty());
            removed
        };
        if level == ScopeLevel::Turn {
            for cap in &removed {
                self.owners.forget(&key, cap.id());
            }
        } else {
            self.owners.clear();
        }
        self.watchers.changed(&key);
        tracing::debug!(slot = %key, removed = removed.len(), "replaced capabilities");
        Ok(removed)
    }

    /// Unregisters a capability and shuts it down within the configured timeout.
    pub async fn unregister_and_shutdown(
        &self,
        cap_id: &str,
        level: ScopeLevel,
        scope: &Scope,
    ) -> Result<ShutdownEntry, RegistryError> {
        let key = scope.key_at(level)?;
        let cap = self.unregister(cap_id, level, scope)?;
        Ok(shutdown::shutdown_one(cap, key, self.config.shutdown_timeout).await)
    }

    /// Wakes when the capabilities registered in any of `slots` change
    /// (registered, unregistered, replaced, shut down): what a catalog's
    /// reconciliation loop waits on instead of polling. Watch
    /// `scope.visible_keys()` for everything a scope sees.
    pub fn watch_slots(&self, slots: impl IntoIterator<Item = ScopeKey>) -> MembershipWatch {
        self.watchers.subscribe(slots)
    }

    /// Every capability visible from `scope` (pool → session → agent → turn).
    pub fn get_visible_capabilities(&self, scope: &Scope) -> Visible {
        let keys = scope.visible_keys();
        let inner = self.inner.read();
        let levels = keys
            .iter()
            .filter_map(|k| inner.slots.get(k).map(|s| s.ordered.clone()))
            .collect();
        Visible { levels }
    }

    /// Visible capabilities that implement [`crate::SkillResource`].
    pub fn get_skill_resources(&self, scope: &Scope) -> Vec<Arc<dyn Capability>> {
        self.filter_visible(scope, |c| c.skills().is_some())
    }

    /// Visible capabilities that implement [`crate::McpResource`].
    pub fn get_mcp_resources(&self, scope: &Scope) -> Vec<Arc<dyn Capability>> {
        self.filter_visible(scope, |c| c.mcp().is_some())
    }

    /// Visible capabilities that implement [`crate::CommandResource`].
    pub fn get_command_resources(&self, scope: &Scope) -> Vec<Arc<dyn Capability>> {
        self.filter_visible(scope, |c| c.commands().is_some())
    }

    /// Visible capabilities that implement [`crate::ChangeObservable`].
    pub fn get_observable_capabilities(&self, scope: &Scope) -> Vec<Arc<dyn Capability>> {
        self.filter_visible(scope, |c| c.observable().is_some())
    }

    /// Total number of registrations, across all slots.
    pub fn len(&self) -> usize {
        self.inner
            .read()
            .slots
            .values()
            .map(|s| s.by_id.len())
            .sum()
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn filter_visible(
        &self,
        scope: &Scope,
        keep: impl Fn(&dyn Capability) -> bool,
    ) -> Vec<Arc<dyn Capability>> {
        self.get_visible_capabilities(scope)
            .iter()
            .filter(|c| keep(c.as_ref()))
            .cloned()
            .collect()
    }

    /// The capability `id` in slot `key`, if registered.
    pub(crate) fn lookup(&self, key: &ScopeKey, id: &str) -> Option<Arc<dyn Capability>> {
        self.inner.read().slots.get(key)?.by_id.get(id).cloned()
    }
}

fn normalize_scheme(raw: &str) -> Result<String, RegistryError> {
    let scheme = raw.trim_end_matches("://").to_ascii_lowercase();
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid {
        return Err(RegistryError::InvalidScheme(raw.to_owned()));
    }
    if scheme == "skill" || scheme == "mcp" {
        return Err(RegistryError::ReservedScheme(scheme));
    }
    Ok(scheme)
}
