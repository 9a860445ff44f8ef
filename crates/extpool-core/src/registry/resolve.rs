//! URI routing (RFC "URI Routing"): scheme → protocol → owner.
//!
//! `skill://` goes to skill resources, `mcp://` to MCP resources, any other
//! scheme to the capabilities that claimed it — and, when none claimed it,
//! to MCP resources (servers name their resources with schemes of their own:
//! `file://`, `demo://`, …), whose `resource_exists` consults a cached listing. The owner of a
//! `(scheme, authority)` pair is remembered once found, so resolving a known
//! URI asks exactly one capability (`*_exists`, then read) instead of probing
//! every visible one.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use super::ExtensionRegistry;
use crate::{Capability, ExtUri, ExtensionError, ResourceContent, Scope, ScopeKey, UriError};

/// Why a URI could not be resolved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The URI itself is malformed or tries to traverse.
    #[error(transparent)]
    Uri(#[from] UriError),
    /// No capability visible from this scope handles the scheme.
    #[error(
        "unknown URI scheme {scheme:?} in {uri:?}: no visible capability claims it and no visible MCP server lists this resource"
    )]
    UnknownScheme {
        /// The scheme.
        scheme: String,
        /// The URI as given.
        uri: String,
    },
    /// The scheme is known but no visible capability has this URI.
    #[error("no visible capability has {uri:?}")]
    NotFound {
        /// The URI as given.
        uri: String,
    },
    /// The owning capability failed. Its error is in the message and not
    /// a `source()`, so a chain printer shows it once; it names what failed
    /// (an MCP server, a skill file), the capability's id would not.
    #[error("cannot read {uri}: {error}")]
    Capability {
        /// The owner's id.
        capability: String,
        /// The URI.
        uri: String,
        /// What it reported.
        error: ExtensionError,
    },
}

impl ResolveError {
    /// True when the URI is well-formed but nothing visible has it.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }
}

#[derive(Clone, Copy)]
enum Facet {
    Skill,
    Mcp,
    /// A claimed scheme: whichever protocol the capability implements.
    Claimed,
    /// A scheme nobody claimed: MCP resources, which name their own schemes.
    Unclaimed,
}

impl Facet {
    async fn exists(self, cap: &dyn Capability, uri: &str) -> Result<bool, ExtensionError> {
        match self.pick(cap) {
            Some(Picked::Skill) => match cap.skills() {
                Some(s) => s.skill_exists(uri).await,
                None => Ok(false),
            },
            Some(Picked::Mcp) => match cap.mcp() {
                Some(m) => m.resource_exists(uri).await,
                None => Ok(false),
            },
            None => Ok(false),
        }
    }

    async fn read(
        self,
        cap: &dyn Capability,
        uri: &str,
    ) -> Result<Option<ResourceContent>, ExtensionError> {
        match self.pick(cap) {
            Some(Picked::Skill) => match cap.skills() {
                Some(s) => s.read_skill(uri).await,
                None => Ok(None),
            },
            Some(Picked::Mcp) => match cap.mcp() {
                Some(m) => m.read_resource(uri).await,
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    fn pick(self, cap: &dyn Capability) -> Option<Picked> {
        match self {
            Facet::Skill => cap.skills().map(|_| Picked::Skill),
            Facet::Mcp | Facet::Unclaimed => cap.mcp().map(|_| Picked::Mcp),
            Facet::Claimed => cap
                .mcp()
                .map(|_| Picked::Mcp)
                .or_else(|| cap.skills().map(|_| Picked::Skill)),
        }
    }
}

enum Picked {
    Skill,
    Mcp,
}

/// Remembered owners of `(scheme, authority)` pairs.
#[derive(Default)]
pub(crate) struct OwnerIndex {
    map: RwLock<HashMap<(String, String), Owners>>,
}

/// Known owners of one `(scheme, authority)`: (slot, capability id).
type Owners = Vec<(ScopeKey, String)>;

impl OwnerIndex {
    pub(crate) fn clear(&self) {
        self.map.write().clear();
    }

    pub(crate) fn forget(&self, key: &ScopeKey, id: &str) {
        let mut map = self.map.write();
        for owners in map.values_mut() {
            owners.retain(|(k, i)| !(k == key && i == id));
        }
        map.retain(|_, owners| !owners.is_empty());
    }

    fn remember(&self, scheme: &str, authority: &str, key: ScopeKey, id: &str) {
        let mut map = self.map.write();
        let owners = map
            .entry((scheme.to_owned(), authority.to_owned()))
            .or_default();
        if !owners.iter().any(|(k, i)| k == &key && i == id) {
            owners.push((key, id.to_owned()));
        }
    }

    /// The known owner that comes first in `keys` (outermost level first).
    fn find(&self, scheme: &str, authority: &str, keys: &[ScopeKey]) -> Option<(ScopeKey, String)> {
        let map = self.map.read();
        let owners = map.get(&(scheme.to_owned(), authority.to_owned()))?;
        keys.iter()
            .find_map(|k| owners.iter().find(|(ok, _)| ok == k).cloned())
    }
}

impl ExtensionRegistry {
    /// Reads `uri` from the capability that owns it, as visible from `scope`.
    ///
    /// Malformed URIs, traversal and schemes no visible capability handles are
    /// typed errors. The owner is checked with its cheap `*_exists` before the
    /// read, and remembered for next time.
    pub async fn resolve_uri(
        &self,
        uri: &str,
        scope: &Scope,
    ) -> Result<ResourceContent, ResolveError> {
        let parsed = ExtUri::parse(uri)?;
        let keys = scope.visible_keys();
        let claimed = self.inner.read().schemes.contains_key(&parsed.scheme);
        let facet = match parsed.scheme.as_str() {
            "skill" => Facet::Skill,
            "mcp" => Facet::Mcp,
            _ if claimed => Facet::Claimed,
            _ => Facet::Unclaimed,
        };

        if let Some((key, id)) = self.owners.find(&parsed.scheme, parsed.authority, &keys)
            && let Some(cap) = self.lookup(&key, &id)
        {
            match self.try_owner(facet, &cap, uri).await? {
                Some(content) => return Ok(content),
                None => self.owners.forget(&key, &id),
            }
        }

        let candidates = self.candidates(facet, &parsed, &keys);
        if candidates.is_empty() && matches!(facet, Facet::Claimed) {
            return Err(ResolveError::UnknownScheme {
                scheme: parsed.scheme,
                uri: uri.to_owned(),
            });
        }
        for (key, cap) in candidates {
            if let Some(content) = self.try_owner(facet, &cap, uri).await? {
                self.owners
                    .remember(&parsed.scheme, parsed.authority, key, cap.id());
                return Ok(content);
            }
        }
        if matches!(facet, Facet::Unclaimed) {
            return Err(ResolveError::UnknownScheme {
                scheme: parsed.scheme,
                uri: uri.to_owned(),
            });
        }
        Err(ResolveError::NotFound {
            uri: uri.to_owned(),
        })
    }

    /// Asks one capability: exists? then read. `None` when it does not have the URI.
    async fn try_owner(
        &self,
        facet: Facet,
        cap: &Arc<dyn Capability>,
        uri: &str,
    ) -> Result<Option<ResourceContent>, ResolveError> {
        let fail = |error| ResolveError::Capability {
            capability: cap.id().to_owned(),
            uri: uri.to_owned(),
            error,
        };
        if !facet.exists(cap.as_ref(), uri).await.map_err(fail)? {
            return Ok(None);
        }
        facet.read(cap.as_ref(), uri).await.map_err(fail)
    }

    /// Capabilities to probe, in walk order, with their slots.
    fn candidates(
        &self,
        facet: Facet,
        parsed: &ExtUri<'_>,
        keys: &[ScopeKey],
    ) -> Vec<(ScopeKey, Arc<dyn Capability>)> {
        let inner = self.inner.read();
        match facet {
            Facet::Claimed => {
                let Some(routes) = inner.schemes.get(&parsed.scheme) else {
                    return Vec::new();
                };
                keys.iter()
                    .flat_map(|k| routes.iter().filter(move |(rk, _)| rk == k))
                    .filter_map(|(k, id)| {
                        let cap = inner.slots.get(k)?.by_id.get(id)?.clone();
                        Some((k.clone(), cap))
                    })
                    .collect()
            }
            Facet::Skill | Facet::Mcp | Facet::Unclaimed => keys
                .iter()
                .filter_map(|k| inner.slots.get(k).map(|s| (k, s)))
                .flat_map(|(k, slot)| {
                    slot.ordered
                        .iter()
                        .filter(|r| facet.pick(r.cap.as_ref()).is_some())
                        .map(move |r| (k.clone(), r.cap.clone()))
                })
                .collect(),
        }
    }
}
