//! [`CatalogConfig`]: everything a catalog is told, in one serializable
//! struct (front ends map their configuration files onto it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::fetch::FetchConfig;
use crate::jq::JqLimits;
use crate::permissions::PermissionsConfig;
use crate::shaping::ResultLimits;

/// Configuration of one catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CatalogConfig {
    /// Allow / deny rules over catalog names.
    pub permissions: PermissionsConfig,
    /// Namespace per server id, when it is not the id itself
    /// (`McpServerConfig::prefix`): tools become `mcp__<prefix>__<tool>`.
    pub namespaces: BTreeMap<String, String>,
    /// Register `ListMcpResources` / `ReadMcpResource` when a server has resources.
    pub resource_tools: bool,
    /// Publish MCP prompts as `/mcp__<server>__<prompt>` commands (prompts can steer the model).
    pub prompts: bool,
    /// Register `FetchMcpResource`.
    pub fetch_tool: bool,
    /// Register `CallMcpWithQuery`.
    pub query_tool: bool,
    /// Size limits of results.
    pub limits: ResultLimits,
    /// Bounds of `CallMcpWithQuery` filters.
    pub jq: JqLimits,
    /// Limits of `FetchMcpResource`.
    pub fetch: FetchConfig,
    /// Timing of the reconciliation loop.
    pub reconcile: ReconcileConfig,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        Self {
            permissions: PermissionsConfig::default(),
            namespaces: BTreeMap::new(),
            resource_tools: true,
            prompts: true,
            fetch_tool: true,
            query_tool: true,
            limits: ResultLimits::default(),
            jq: JqLimits::default(),
            fetch: FetchConfig::default(),
            reconcile: ReconcileConfig::default(),
        }
    }
}

/// Timing of the reconciliation loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReconcileConfig {
    /// After the first change notification, how long to gather more before
    /// reconciling once for the whole burst, in milliseconds. An explicit
    /// request ([`crate::Catalog::reconcile_now`]) does not wait for it.
    pub coalesce_ms: u64,
    /// How long one source may take to list its tools, resources and prompts.
    pub source_timeout_ms: u64,
    /// First retry delay after a failed reconciliation; doubles up to `retry_max_ms`.
    pub retry_initial_ms: u64,
    /// Longest retry delay.
    pub retry_max_ms: u64,
    /// Sources listed at the same time.
    pub max_concurrent_sources: usize,
}

impl Default for ReconcileConfig {
    fn default() -> Self {
        Self {
            coalesce_ms: 100,
            source_timeout_ms: 30_000,
            retry_initial_ms: 1_000,
            retry_max_ms: 30_000,
            max_concurrent_sources: 16,
        }
    }
}
