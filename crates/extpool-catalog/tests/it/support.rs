//! Shared helpers: registries of real MCP servers, catalog configs sized for tests.

use std::sync::Arc;
use std::time::Duration;

use extpool_catalog::{Catalog, CatalogConfig, ReconcileConfig};
use extpool_core::{Capability, ExtensionRegistry, Scope, ScopeLevel};
use extpool_mcp::{
    ClientOptions, McpServerCap, McpServerConfig, PoolConfig, SessionConnectionPool,
};
use serde_json::{Map, Value};

/// A pool with test-sized timeouts.
pub fn pool() -> SessionConnectionPool {
    SessionConnectionPool::new(PoolConfig {
        client: ClientOptions {
            request_timeout: Duration::from_secs(30),
            startup_timeout: Duration::from_secs(30),
            ..ClientOptions::default()
        },
        ..PoolConfig::default()
    })
}

/// The testkit server over stdio with `args`.
pub fn testkit(args: &[&str]) -> McpServerConfig {
    let cmd = extpool_testkit::stdio_command(args.iter().copied());
    McpServerConfig::stdio(cmd.program.to_string_lossy(), cmd.args)
}

/// `server-everything` over stdio (panics with a fix-it message when the peer is missing).
pub fn everything() -> McpServerConfig {
    let cmd = extpool_testkit::peers::server_everything();
    McpServerConfig::stdio(cmd.program.to_string_lossy(), cmd.args)
}

/// A capability for `config` named `name`.
pub fn cap(
    name: &str,
    config: McpServerConfig,
    pool: &SessionConnectionPool,
) -> Arc<dyn Capability> {
    Arc::new(McpServerCap::new(name, config, pool.clone()).unwrap())
}

/// A registry with `caps` at pool level, and its scope.
pub fn registry(caps: &[Arc<dyn Capability>]) -> (Arc<ExtensionRegistry>, Scope) {
    let registry = Arc::new(ExtensionRegistry::default());
    let scope = Scope::pool("test");
    for c in caps {
        registry
            .register(c.clone(), ScopeLevel::Pool, &scope, None)
            .unwrap();
    }
    (registry, scope)
}

/// A catalog config whose loop reacts quickly.
pub fn config() -> CatalogConfig {
    CatalogConfig {
        reconcile: ReconcileConfig {
            coalesce_ms: 100,
            retry_initial_ms: 100,
            retry_max_ms: 1_000,
            ..ReconcileConfig::default()
        },
        ..CatalogConfig::default()
    }
}

/// Starts a catalog over `caps` and waits for its first revision.
pub async fn started(
    caps: &[Arc<dyn Capability>],
    config: CatalogConfig,
) -> (Catalog, Arc<ExtensionRegistry>, Scope) {
    let (registry, scope) = registry(caps);
    let catalog = Catalog::new(config).unwrap();
    catalog.start(registry.clone(), scope.clone()).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(60), catalog.settled())
        .await
        .expect("the first reconciliation did not finish within 60 s");
    assert!(!status.any_stale(), "a source failed on start: {status:#?}");
    (catalog, registry, scope)
}

/// A JSON object literal as tool arguments.
pub fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// Shuts down every capability in the registry (kills the children).
pub async fn shutdown(catalog: Catalog, registry: Arc<ExtensionRegistry>) {
    catalog.shutdown().await;
    let _ = registry.shutdown().await;
}
