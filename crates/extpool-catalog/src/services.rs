//! What every revision shares: compiled rules, limits, the fetcher. Built
//! once per catalog and referenced (not copied) by each revision.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::builtins::BuiltinTool;
use crate::config::CatalogConfig;
use crate::fetch::Fetcher;
use crate::jq::JqLimits;
use crate::permissions::{PermissionError, Permissions};
use crate::shaping::ResultLimits;

/// Compiled configuration shared by the revisions of one catalog.
#[derive(Debug)]
pub struct Services {
    /// The permission rules; replaced when the configuration's change
    /// ([`crate::Catalog::set_permissions`]), each revision keeping the
    /// rules it was built with.
    permissions: RwLock<Arc<Permissions>>,
    /// Namespace per server id; changed only by a reconciliation cycle
    /// that publishes servers added with a prefix (see [`crate::Membership`]).
    pub(crate) namespaces: RwLock<BTreeMap<String, String>>,
    pub(crate) resource_tools: bool,
    pub(crate) prompts: bool,
    pub(crate) fetch_tool: bool,
    pub(crate) query_tool: bool,
    pub(crate) limits: ResultLimits,
    pub(crate) jq: JqLimits,
    pub(crate) fetcher: Fetcher,
}

impl Services {
    /// Compiles a configuration.
    pub fn new(config: &CatalogConfig) -> Result<Self, PermissionError> {
        Ok(Self {
            permissions: RwLock::new(Arc::new(Permissions::new(config.permissions.clone())?)),
            namespaces: RwLock::new(config.namespaces.clone()),
            resource_tools: config.resource_tools,
            prompts: config.prompts,
            fetch_tool: config.fetch_tool,
            query_tool: config.query_tool,
            limits: config.limits,
            jq: config.jq,
            fetcher: Fetcher::new(config.fetch.clone()),
        })
    }

    /// The compiled permission rules the next revision is built with.
    pub fn permissions(&self) -> Arc<Permissions> {
        self.permissions.read().clone()
    }

    /// Replaces the permission rules the next revisions are built with.
    pub(crate) fn set_permissions(&self, permissions: Permissions) {
        *self.permissions.write() = Arc::new(permissions);
    }

    /// The result limits.
    pub fn limits(&self) -> &ResultLimits {
        &self.limits
    }

    /// The namespace of a server: its configured prefix, or its id.
    pub fn namespace_of(&self, id: &str) -> String {
        self.namespaces
            .read()
            .get(id)
            .map_or_else(|| id.to_owned(), String::clone)
    }

    /// Sets (or, with `None`, clears) the prefix of server `id`. Called by the
    /// loop right before it builds a revision with that server.
    pub(crate) fn set_namespace(&self, id: &str, prefix: Option<&str>) {
        let mut map = self.namespaces.write();
        match prefix {
            Some(p) => {
                map.insert(id.to_owned(), p.to_owned());
            }
            None => {
                map.remove(id);
            }
        }
    }

    /// Whether a revision with (or without) tools and resources advertises `b`.
    pub(crate) fn advertises(&self, b: BuiltinTool, has_tools: bool, has_resources: bool) -> bool {
        match b {
            BuiltinTool::ListMcpResources | BuiltinTool::ReadMcpResource => {
                self.resource_tools && has_resources
            }
            BuiltinTool::FetchMcpResource => self.fetch_tool && (has_tools || has_resources),
            BuiltinTool::CallMcpWithQuery => self.query_tool && has_tools,
            _ => false,
        }
    }
}

/// Serializes a value through its `Display` (for error enums in reports).
pub(crate) fn display<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}
