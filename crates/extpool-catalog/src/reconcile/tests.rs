use std::sync::Arc;
use std::time::Duration;

use extpool_core::{Capability, ChangeKind, ExtensionRegistry, Scope, ScopeLevel};
use serde_json::Map;

use crate::config::{CatalogConfig, ReconcileConfig};
use crate::{Catalog, ReconcileState};
use extpool_testkit::LocalSource;

fn fast() -> CatalogConfig {
    CatalogConfig {
        reconcile: ReconcileConfig {
            coalesce_ms: 30,
            retry_initial_ms: 50,
            retry_max_ms: 200,
            ..ReconcileConfig::default()
        },
        ..CatalogConfig::default()
    }
}

fn registry_with(sources: &[Arc<LocalSource>]) -> (Arc<ExtensionRegistry>, Scope) {
    let registry = Arc::new(ExtensionRegistry::default());
    let scope = Scope::pool("p");
    for s in sources {
        registry
            .register(
                s.clone() as Arc<dyn Capability>,
                ScopeLevel::Pool,
                &scope,
                None,
            )
            .unwrap();
    }
    (registry, scope)
}

#[tokio::test]
async fn first_cycle_publishes_revision_1() {
    let a = LocalSource::with_tools("a", 2);
    let (registry, scope) = registry_with(&[a]);
    let catalog = Catalog::new(fast()).unwrap();
    assert_eq!(catalog.current().number(), 0);
    catalog.start(registry.clone(), scope.clone()).unwrap();
    assert!(matches!(
        catalog.start(registry, scope),
        Err(crate::CatalogError::AlreadyStarted)
    ));
    let rev = catalog.wait_for_revision(1).await;
    assert_eq!(rev.number(), 1);
    assert_eq!(rev.tools().len(), 2);
    let status = catalog.settled().await;
    assert_eq!(status.state, ReconcileState::Idle);
    assert_eq!(status.source("a").unwrap().revision, Some(1));
    catalog.shutdown().await;
    assert_eq!(catalog.status().state, ReconcileState::Stopped);
}

#[tokio::test]
async fn a_pinned_revision_survives_a_publication() {
    let a = LocalSource::with_tools("a", 1);
    let (registry, scope) = registry_with(std::slice::from_ref(&a));
    let catalog = Catalog::new(fast()).unwrap();
    catalog.start(registry, scope).unwrap();
    let pinned = catalog.wait_for_revision(1).await;

    a.add_tool("added");
    a.notify(ChangeKind::ToolsChanged);
    let next = catalog.wait_for_revision(2).await;
    assert!(next.tool("mcp__a__added").is_some());
    // The pinned run still sees revision 1: old names, old schemas.
    assert_eq!(pinned.number(), 1);
    assert!(pinned.tool("mcp__a__added").is_none());
    assert!(
        pinned
            .call("mcp__a__added", Map::new())
            .await
            .unwrap_err()
            .is_unknown_tool()
    );
    assert!(pinned.call("mcp__a__tool_0", Map::new()).await.is_ok());
}

#[tokio::test]
async fn a_failing_source_keeps_the_revision_and_reports_stale() {
    let a = LocalSource::with_tools("a", 1);
    let b = LocalSource::with_tools("b", 1);
    let (registry, scope) = registry_with(&[a.clone(), b.clone()]);
    let catalog = Catalog::new(fast()).unwrap();
    catalog.start(registry, scope).unwrap();
    catalog.wait_for_revision(1).await;

    b.set_failing(true);
    a.add_tool("new_in_a");
    a.notify(ChangeKind::ToolsChanged);
    // Wait for the failed cycle.
    let status = loop {
        let s = catalog.status();
        if s.failures > 0 {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(
        status.revision, 1,
        "nothing is published while a source fails"
    );
    let sb = status.source("b").unwrap();
    assert!(sb.stale);
    assert_eq!(sb.revision, Some(1));
    let err = sb.last_error.as_ref().unwrap();
    assert!(err.extension_error().is_some(), "{err}");
    assert!(!status.source("a").unwrap().stale);
    assert!(
        catalog.current().tool("mcp__a__new_in_a").is_none(),
        "no partial publication"
    );
    assert!(
        catalog.current().tool("mcp__b__tool_0").is_some(),
        "last good tools stay"
    );

    // The retry publishes once the source recovers.
    b.set_failing(false);
    let rev = catalog.wait_for_revision(2).await;
    assert!(rev.tool("mcp__a__new_in_a").is_some());
    let status = catalog.settled().await;
    assert!(!status.any_stale());
    assert!(status.source("b").unwrap().last_error.is_none());
}

#[tokio::test]
async fn a_burst_of_notifications_costs_few_cycles() {
    let a = LocalSource::with_tools("a", 1);
    let (registry, scope) = registry_with(std::slice::from_ref(&a));
    let config = CatalogConfig {
        reconcile: ReconcileConfig {
            coalesce_ms: 200,
            ..ReconcileConfig::default()
        },
        ..CatalogConfig::default()
    };
    let catalog = Catalog::new(config).unwrap();
    catalog.start(registry, scope).unwrap();
    catalog.wait_for_revision(1).await;
    let before = catalog.settled().await.reconciliations;
    let lists_before = a.list_count();

    a.add_tool("x");
    for _ in 0..100 {
        a.notify(ChangeKind::ToolsChanged);
    }
    let rev = catalog.wait_for_revision(2).await;
    assert!(rev.tool("mcp__a__x").is_some());
    let status = catalog.settled().await;
    let cycles = status.reconciliations - before;
    assert!(
        (1..=3).contains(&cycles),
        "100 notifications took {cycles} cycles"
    );
    assert!(a.list_count() - lists_before <= 3);
    assert_eq!(status.events, 100);
}

#[tokio::test]
async fn registry_changes_are_picked_up_and_replaced_runtimes_are_ignored() {
    let a = LocalSource::with_tools("a", 1);
    let (registry, scope) = registry_with(std::slice::from_ref(&a));
    let catalog = Catalog::new(fast()).unwrap();
    catalog.start(registry.clone(), scope.clone()).unwrap();
    catalog.wait_for_revision(1).await;

    // Replace the runtime: same id, new instance.
    registry.unregister("a", ScopeLevel::Pool, &scope).unwrap();
    let a2 = LocalSource::with_tools("a", 2);
    registry
        .register(
            a2.clone() as Arc<dyn Capability>,
            ScopeLevel::Pool,
            &scope,
            None,
        )
        .unwrap();
    let rev = catalog.wait_for_revision(2).await;
    assert_eq!(rev.tools().len(), 2);
    catalog.settled().await;

    // The retired runtime's notifications change nothing.
    let cycles = catalog.status().reconciliations;
    a.add_tool("ghost");
    a.notify(ChangeKind::ToolsChanged);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let status = catalog.settled().await;
    assert_eq!(status.revision, 2);
    assert_eq!(status.reconciliations, cycles);
    assert!(catalog.current().tool("mcp__a__ghost").is_none());

    // A removal publishes a revision without the tools.
    registry.unregister("a", ScopeLevel::Pool, &scope).unwrap();
    let rev = catalog.wait_for_revision(3).await;
    assert!(rev.tools().is_empty());
}

#[tokio::test]
async fn request_reconcile_and_unchanged_content_keep_the_number() {
    let a = LocalSource::with_tools("a", 1);
    let (registry, scope) = registry_with(std::slice::from_ref(&a));
    let catalog = Catalog::new(fast()).unwrap();
    catalog.start(registry, scope).unwrap();
    catalog.wait_for_revision(1).await;
    let before = catalog.settled().await.reconciliations;
    catalog.request_reconcile();
    loop {
        let s = catalog.settled().await;
        if s.reconciliations > before {
            assert_eq!(
                s.revision, 1,
                "an identical candidate is not a new revision"
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_session_overlay_shares_the_pool_revision() {
    let pool_src = LocalSource::with_tools("a", 100);
    let (registry, pool_scope) = registry_with(std::slice::from_ref(&pool_src));
    let session = pool_scope.clone().session("s1");
    let own = LocalSource::with_tools("mine", 1);
    registry
        .register(
            own.clone() as Arc<dyn Capability>,
            ScopeLevel::Session,
            &session,
            None,
        )
        .unwrap();
    // A session server may not take a pool server's namespace.
    let shadow = LocalSource::with_tools("A", 1);
    registry
        .register(
            shadow as Arc<dyn Capability>,
            ScopeLevel::Session,
            &session,
            None,
        )
        .unwrap();

    let base = Catalog::new(fast()).unwrap();
    base.start(registry.clone(), pool_scope).unwrap();
    let pool_rev = base.wait_for_revision(1).await;
    let overlay = Catalog::new(fast()).unwrap();
    overlay.start_overlay(&base, registry, session).unwrap();
    let view = overlay.wait_for_revision(1).await;

    // The view resolves both, but owns only its own table.
    let own: Vec<_> = view.tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(
        own,
        ["mcp__mine__tool_0"],
        "{:?} parent {:?}",
        view.diagnostics(),
        view.parent().map(|p| p.number())
    );
    assert_eq!(view.all_tools().count(), 101);
    assert!(Arc::ptr_eq(view.parent().unwrap(), &pool_rev));
    assert!(view.tool("mcp__mine__tool_0").is_some());
    assert!(view.tool("mcp__a__tool_99").is_some());
    assert!(view.call("mcp__a__tool_0", Map::new()).await.is_ok());
    assert!(view.call("mcp__mine__tool_0", Map::new()).await.is_ok());
    assert!(
        view.diagnostics()
            .iter()
            .any(|d| d.source == "A" && d.problem.is_collision()),
        "{:?}",
        view.diagnostics()
    );
    assert!(view.source("A").is_none());
    // The pool revision knows nothing of the session.
    assert!(pool_rev.tool("mcp__mine__tool_0").is_none());

    // A new pool revision republishes the view over it.
    pool_src.add_tool("late");
    pool_src.notify(ChangeKind::ToolsChanged);
    base.wait_for_revision(2).await;
    let view2 = overlay.wait_for_revision(2).await;
    assert!(view2.tool("mcp__a__late").is_some());
    assert!(
        view.tool("mcp__a__late").is_none(),
        "the old view stays pinned"
    );
    assert_eq!(view2.tools().len(), 1);
}

#[tokio::test]
async fn a_hung_source_times_out_and_is_reported_stale() {
    let ok = LocalSource::with_tools("ok", 1);
    let slow = LocalSource::with_tools("slow", 1);
    slow.set_list_delay(Duration::from_secs(3600));
    let (registry, scope) = registry_with(&[ok, slow]);
    let mut config = fast();
    config.reconcile.source_timeout_ms = 50;
    let catalog = Catalog::new(config).unwrap();
    catalog.start(registry, scope).unwrap();
    let status = catalog.settled().await;
    assert_eq!(
        status.revision, 0,
        "nothing is published while a source hangs"
    );
    let slow = status.source("slow").unwrap();
    assert!(slow.stale);
    assert!(slow.last_error.as_ref().unwrap().is_timeout());
    assert!(matches!(
        status.state,
        ReconcileState::RetryScheduled { .. }
    ));
    catalog.shutdown().await;
}

/// A source of plain commands (like a skill manager): no tools, no namespace.
struct Commands;

#[async_trait::async_trait]
impl extpool_core::CommandResource for Commands {
    async fn list_commands(
        &self,
    ) -> Result<Vec<extpool_core::CommandEntry>, extpool_core::ExtensionError> {
        Ok(vec![extpool_core::CommandEntry::new(
            "ponytail",
            "a skill command",
        )])
    }

    async fn get_command(
        &self,
        name: &str,
        args: &[String],
    ) -> Result<String, extpool_core::ExtensionError> {
        Ok(format!("{name} {}", args.join(" ")))
    }
}

#[async_trait::async_trait]
impl Capability for Commands {
    fn id(&self) -> &str {
        "skills:agent"
    }

    fn commands(&self) -> Option<&dyn extpool_core::CommandResource> {
        Some(self)
    }
}

#[tokio::test]
async fn plain_commands_keep_their_names_and_prompts_are_namespaced() {
    let a = LocalSource::with_tools("a", 1);
    a.add_prompt(extpool_core::CommandEntry::new("review", "a prompt"));
    let (registry, scope) = registry_with(std::slice::from_ref(&a));
    registry
        .register(
            Arc::new(Commands) as Arc<dyn Capability>,
            ScopeLevel::Pool,
            &scope,
            None,
        )
        .unwrap();
    let catalog = Catalog::new(fast()).unwrap();
    catalog.start(registry, scope).unwrap();
    let rev = catalog.wait_for_revision(1).await;
    let names: Vec<_> = rev
        .commands()
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("mcp__a__review", crate::CommandKind::McpPrompt),
            ("ponytail", crate::CommandKind::Command)
        ]
    );
    assert_eq!(
        rev.run_command("/ponytail tie it").await.unwrap(),
        "ponytail tie it"
    );
    assert!(rev.diagnostics().is_empty(), "{:?}", rev.diagnostics());
}

/// A skill-manager-like capability: commands of its own, tools that are
/// only its children's merged (which the catalog must not list twice), and
/// children that are sources of their own.
struct Parent {
    children: Vec<Arc<dyn Capability>>,
}

#[async_trait::async_trait]
impl Capability for Parent {
    fn id(&self) -> &str {
        "skills"
    }
    fn kind(&self) -> extpool_core::CapabilityKind {
        extpool_core::CapabilityKind::SkillManager
    }
    fn children(&self) -> Vec<Arc<dyn Capability>> {
        self.children.clone()
    }
    fn mcp(&self) -> Option<&dyn extpool_core::McpResource> {
        Some(self)
    }
    fn commands(&self) -> Option<&dyn extpool_core::CommandResource> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl extpool_core::McpResource for Parent {
    async fn list_tools(
        &self,
    ) -> Result<Vec<extpool_core::ToolEntry>, extpool_core::ExtensionError> {
        Ok(vec![extpool_core::ToolEntry::new(
            "merged",
            "the children's tools, merged",
            serde_json::json!({"type": "object"}),
        )])
    }
    async fn call_tool(
        &self,
        name: &str,
        _: Map<String, serde_json::Value>,
    ) -> Result<extpool_core::ToolResult, extpool_core::ExtensionError> {
        Err(extpool_core::ExtensionError::not_found("tool", name))
    }
    async fn list_resources(
        &self,
    ) -> Result<Vec<extpool_core::ResourceEntry>, extpool_core::ExtensionError> {
        Ok(Vec::new())
    }
    async fn read_resource(
        &self,
        _: &str,
    ) -> Result<Option<extpool_core::ResourceContent>, extpool_core::ExtensionError> {
        Ok(None)
    }
    async fn resource_exists(&self, _: &str) -> Result<bool, extpool_core::ExtensionError> {
        Ok(false)
    }
}

#[async_trait::async_trait]
impl extpool_core::CommandResource for Parent {
    async fn list_commands(
        &self,
    ) -> Result<Vec<extpool_core::CommandEntry>, extpool_core::ExtensionError> {
        Ok(vec![extpool_core::CommandEntry {
            name: "review".into(),
            description: "a skill".into(),
            arguments: Vec::new(),
            argument_hint: None,
            icons: None,
        }])
    }
    async fn get_command(
        &self,
        name: &str,
        _: &[String],
    ) -> Result<String, extpool_core::ExtensionError> {
        Ok(format!("skill {name}"))
    }
}

fn parent_registry(children: &[Arc<LocalSource>]) -> (Arc<ExtensionRegistry>, Scope) {
    let registry = Arc::new(ExtensionRegistry::default());
    let scope = Scope::pool("p");
    let parent = Parent {
        children: children
            .iter()
            .map(|c| c.clone() as Arc<dyn Capability>)
            .collect(),
    };
    registry
        .register(Arc::new(parent), ScopeLevel::Pool, &scope, None)
        .unwrap();
    (registry, scope)
}

#[tokio::test]
async fn a_skill_manager_gives_its_commands_and_its_children_their_own_names() {
    let child = LocalSource::with_tools("code_review_testkit", 2);
    let (registry, scope) = parent_registry(std::slice::from_ref(&child));
    let catalog = Catalog::new(fast()).unwrap();
    catalog.start(registry, scope).unwrap();
    let rev = catalog.wait_for_revision(1).await;
    let mut names: Vec<&str> = rev.tools().iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "mcp__code_review_testkit__tool_0",
            "mcp__code_review_testkit__tool_1"
        ],
        "the manager's merged tools are not listed again under its id"
    );
    let review = rev.command("review").expect("skill command, as named");
    assert_eq!(review.kind, crate::CommandKind::Command);
    assert_eq!(
        rev.render_command("review", &[]).await.unwrap(),
        "skill review"
    );
    // The child is callable under its own namespace.
    assert!(
        rev.call("mcp__code_review_testkit__tool_0", Map::new())
            .await
            .is_ok()
    );
    let status = catalog.settled().await;
    assert!(status.source("code_review_testkit").unwrap().optional);
    assert!(!status.source("skills").unwrap().optional);
}

#[tokio::test]
async fn a_failing_child_is_left_out_and_everything_else_is_published() {
    let good = LocalSource::with_tools("good", 1);
    let bad = LocalSource::with_tools("bad", 1);
    bad.set_failing(true);
    let (registry, scope) = parent_registry(&[good.clone(), bad.clone()]);
    let catalog = Catalog::new(fast()).unwrap();
    catalog.start(registry, scope).unwrap();
    let rev = catalog.wait_for_revision(1).await;
    assert!(rev.tool("mcp__good__tool_0").is_some());
    assert!(rev.tool("mcp__bad__tool_0").is_none());
    assert!(rev.command("review").is_some());
    let status = catalog.status();
    let sb = status.source("bad").unwrap();
    assert!(sb.optional && !sb.available && !sb.stale, "{sb:?}");
    assert!(sb.last_error.is_some());
    assert!(!status.any_stale(), "a left-out child is not stale");

    // It is retried, and joins once it lists again.
    bad.set_failing(false);
    let rev = catalog.wait_for_revision(2).await;
    assert!(rev.tool("mcp__bad__tool_0").is_some());
    let status = catalog.settled().await;
    assert!(status.source("bad").unwrap().available);
}

#[tokio::test]
async fn reconcile_now_runs_a_cycle_that_sees_the_change() {
    let a = LocalSource::with_tools("a", 1);
    let (registry, scope) = registry_with(std::slice::from_ref(&a));
    let catalog = Catalog::new(fast()).unwrap();
    // Not started: returns at once, nothing done.
    assert!(!catalog.reconcile_now().await.ok);
    catalog.start(registry, scope).unwrap();
    catalog.wait_for_revision(1).await;
    // A change nobody announced: only an explicit cycle finds it.
    a.add_tool("quiet");
    let outcome = catalog.reconcile_now().await;
    assert!(outcome.ok && outcome.changed, "{outcome:?}");
    assert_eq!(outcome.revision, 2);
    assert!(catalog.current().tool("mcp__a__quiet").is_some());
    // Nothing new: the cycle runs and says so.
    let again = catalog.reconcile_now().await;
    assert!(again.ok && !again.changed, "{again:?}");
    assert_eq!(again.revision, 2);
    catalog.shutdown().await;
    // Stopped: returns at once.
    let _ = catalog.reconcile_now().await;
}

/// A catalog config with the given coalescing window and otherwise the
/// defaults.
fn window(coalesce_ms: u64) -> CatalogConfig {
    CatalogConfig {
        reconcile: ReconcileConfig {
            coalesce_ms,
            ..ReconcileConfig::default()
        },
        ..CatalogConfig::default()
    }
}

/// A catalog over `a` alone with a `coalesce_ms` window, its first
/// revision published and the loop settled; its registry and scope.
async fn settled_over(
    a: &Arc<LocalSource>,
    coalesce_ms: u64,
) -> (Catalog, Arc<ExtensionRegistry>, Scope) {
    let (registry, scope) = registry_with(std::slice::from_ref(a));
    let catalog = Catalog::new(window(coalesce_ms)).unwrap();
    catalog.start(registry.clone(), scope.clone()).unwrap();
    catalog.wait_for_revision(1).await;
    catalog.settled().await;
    (catalog, registry, scope)
}

#[tokio::test(start_paused = true)]
async fn an_explicit_refresh_starts_its_cycle_at_once() {
    let a = LocalSource::with_tools("a", 1);
    let (catalog, _, _) = settled_over(&a, 10_000).await;

    a.add_tool("quiet");
    let t0 = tokio::time::Instant::now();
    let outcome = catalog.reconcile_now().await;
    assert!(outcome.ok && outcome.changed, "{outcome:?}");
    assert_eq!(
        t0.elapsed(),
        Duration::ZERO,
        "the cycle did not wait for the 10 s window"
    );

    // A burst pending in its window: the explicit cycle does not wait for
    // the window either, and covers the burst's change.
    a.add_tool("loud");
    for _ in 0..10 {
        a.notify(ChangeKind::ToolsChanged);
    }
    tokio::task::yield_now().await;
    let t0 = tokio::time::Instant::now();
    let outcome = catalog.reconcile_now().await;
    assert!(outcome.changed, "{outcome:?}");
    assert!(catalog.current().tool("mcp__a__loud").is_some());
    assert_eq!(t0.elapsed(), Duration::ZERO);
    catalog.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_notifications_waits_its_window_and_costs_one_cycle() {
    let a = LocalSource::with_tools("a", 1);
    let (catalog, _, _) = settled_over(&a, 100).await;
    let before = catalog.status().reconciliations;

    a.add_tool("x");
    let t0 = tokio::time::Instant::now();
    for _ in 0..100 {
        a.notify(ChangeKind::ToolsChanged);
    }
    let rev = catalog.wait_for_revision(2).await;
    let waited = t0.elapsed();
    assert!(rev.tool("mcp__a__x").is_some());
    assert!(
        waited >= Duration::from_millis(100) && waited < Duration::from_millis(110),
        "published after {waited:?}, not at the end of the window"
    );
    let status = catalog.settled().await;
    assert_eq!(
        status.reconciliations - before,
        1,
        "one cycle for the burst"
    );
    assert_eq!(status.events, 100);
    catalog.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_registered_capability_is_published_without_a_poll() {
    let a = LocalSource::with_tools("a", 1);
    // The default timing: a 100 ms window (the registry was polled every
    // 250 ms before its events).
    let (catalog, registry, scope) = settled_over(&a, 100).await;

    let t0 = tokio::time::Instant::now();
    let b = LocalSource::with_tools("b", 1);
    registry
        .register(b as Arc<dyn Capability>, ScopeLevel::Pool, &scope, None)
        .unwrap();
    let rev = catalog.wait_for_revision(2).await;
    let waited = t0.elapsed();
    assert!(rev.tool("mcp__b__tool_0").is_some());
    assert!(
        waited < Duration::from_millis(110),
        "published {waited:?} after the registration: more than the window"
    );

    // A removal, the same way.
    let t0 = tokio::time::Instant::now();
    registry.unregister("a", ScopeLevel::Pool, &scope).unwrap();
    let rev = catalog.wait_for_revision(3).await;
    assert!(rev.tool("mcp__a__tool_0").is_none());
    assert!(t0.elapsed() < Duration::from_millis(110));

    // Nothing changes while nothing happens: no cycle runs on its own.
    let cycles = catalog.settled().await.reconciliations;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(catalog.status().reconciliations, cycles);
    catalog.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_overlay_lists_its_own_slot_and_leaves_the_pools_to_its_base() {
    let pool_src = LocalSource::with_tools("a", 1);
    let (registry, pool) = registry_with(std::slice::from_ref(&pool_src));
    let session = pool.clone().session("s1");
    let base = Catalog::new(window(100)).unwrap();
    base.start(registry.clone(), pool.clone()).unwrap();
    base.wait_for_revision(1).await;
    let overlay = Catalog::new(window(100)).unwrap();
    overlay
        .start_overlay(&base, registry.clone(), session.clone())
        .unwrap();
    overlay.settled().await;
    let first = overlay.current().number();

    // A session's own server: published by the overlay at its window.
    let t0 = tokio::time::Instant::now();
    let own = LocalSource::with_tools("mine", 1);
    registry
        .register(
            own as Arc<dyn Capability>,
            ScopeLevel::Session,
            &session,
            None,
        )
        .unwrap();
    let view = overlay.wait_for_revision(first + 1).await;
    assert!(view.tool("mcp__mine__tool_0").is_some());
    assert!(t0.elapsed() < Duration::from_millis(110));
    assert_eq!(base.current().number(), 1, "the pool knows nothing of it");

    // A pool server: listed once, by the base; the overlay republishes
    // over the base's revision without listing it itself.
    let late = LocalSource::with_tools("late", 1);
    registry
        .register(
            late.clone() as Arc<dyn Capability>,
            ScopeLevel::Pool,
            &pool,
            None,
        )
        .unwrap();
    base.wait_for_revision(2).await;
    let view = overlay.wait_for_revision(first + 2).await;
    assert!(view.tool("mcp__late__tool_0").is_some());
    assert_eq!(view.tools().len(), 1, "only the session's own tool is its");
    overlay.settled().await;
    assert_eq!(late.list_count(), 1, "listed by the base only");
}
