//! A membership provider (discovery) feeding the reconciliation loop:
//! additions and removals published together in one revision, a change
//! whose new source cannot be listed applied nowhere, and the loop waking
//! when the provider is due.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use extpool_catalog::{
    Catalog, CatalogRevision, ChangeOutcome, Membership, MembershipChange, MembershipWaker,
};
use extpool_core::{Capability, ExtensionRegistry, Scope};
use extpool_testkit::LocalSource;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::support::{config, registry};

/// Hands out queued changes; reports each outcome on a channel.
struct Provider {
    queue: Mutex<VecDeque<MembershipChange>>,
    due: Mutex<Option<Instant>>,
    waker: Mutex<Option<MembershipWaker>>,
    told: mpsc::UnboundedSender<(MembershipChange, ChangeOutcome)>,
}

impl Provider {
    /// Moves the due time, and tells the loop so.
    fn due_at(&self, at: Instant) {
        *self.due.lock() = Some(at);
        if let Some(waker) = self.waker.lock().as_ref() {
            waker.due_changed();
        }
    }
}

#[async_trait]
impl Membership for Provider {
    fn next_due(&self) -> Option<Instant> {
        *self.due.lock()
    }

    fn attach(&self, waker: MembershipWaker) {
        *self.waker.lock() = Some(waker);
    }

    async fn prepare(&self) -> MembershipChange {
        *self.due.lock() = None;
        self.queue.lock().pop_front().unwrap_or_default()
    }

    async fn finished(&self, change: MembershipChange, outcome: ChangeOutcome) {
        if !change.is_empty() {
            let _ = self.told.send((change, outcome));
        }
    }
}

fn provider() -> (
    Arc<Provider>,
    mpsc::UnboundedReceiver<(MembershipChange, ChangeOutcome)>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let p = Arc::new(Provider {
        queue: Mutex::new(VecDeque::new()),
        due: Mutex::new(None),
        waker: Mutex::new(None),
        told: tx,
    });
    (p, rx)
}

fn source(id: &str, tool: &str) -> Arc<LocalSource> {
    let s = LocalSource::new(id);
    s.add_tool(tool);
    s
}

fn dynamic(s: &Arc<LocalSource>) -> Arc<dyn Capability> {
    s.clone()
}

fn names(rev: &CatalogRevision) -> Vec<String> {
    rev.tools()
        .iter()
        .filter(|t| t.name.starts_with("mcp__"))
        .map(|t| t.name.to_string())
        .collect()
}

async fn started(
    caps: &[Arc<dyn Capability>],
    membership: Arc<Provider>,
) -> (Catalog, Arc<ExtensionRegistry>, Scope) {
    let (registry, scope) = registry(caps);
    let catalog = Catalog::new(config()).unwrap();
    catalog
        .start_with_membership(registry.clone(), scope.clone(), Some(membership))
        .unwrap();
    catalog.settled().await;
    (catalog, registry, scope)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn additions_and_removals_are_published_together() {
    let (a, b, c) = (source("a", "one"), source("b", "two"), source("c", "three"));
    let (provider, mut told) = provider();
    let (catalog, registry, scope) = started(&[dynamic(&a), dynamic(&b)], provider.clone()).await;
    assert_eq!(names(&catalog.current()), ["mcp__a__one", "mcp__b__two"]);
    let before = catalog.current().number();
    let mut revisions = catalog.subscribe();
    revisions.borrow_and_update();
    provider.queue.lock().push_back(MembershipChange {
        add: vec![dynamic(&c)],
        remove: vec!["b".into()],
        namespaces: vec![("c".into(), Some("cc".into()))],
    });
    let outcome = catalog.reconcile_now().await;
    assert!(outcome.ok && outcome.changed, "{outcome:?}");
    // One new revision, with the addition and without the removal.
    assert_eq!(*revisions.borrow_and_update(), before + 1);
    assert_eq!(names(&catalog.current()), ["mcp__a__one", "mcp__cc__three"]);
    assert_eq!(registry.get_visible_capabilities(&scope).ids(), ["a", "c"]);
    let (change, result) = told.recv().await.unwrap();
    assert_eq!(change.remove, ["b"]);
    assert!(result.published && result.failed.is_empty(), "{result:?}");
    assert_eq!(result.revision, before + 1);
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_new_source_fails_is_applied_nowhere() {
    let (a, b, c) = (source("a", "one"), source("b", "two"), source("c", "three"));
    c.set_failing(true);
    let (provider, mut told) = provider();
    let (catalog, registry, scope) = started(&[dynamic(&a), dynamic(&b)], provider.clone()).await;
    let before = catalog.current();
    provider.queue.lock().push_back(MembershipChange {
        add: vec![dynamic(&c)],
        remove: vec!["b".into()],
        namespaces: Vec::new(),
    });
    let outcome = catalog.reconcile_now().await;
    assert!(!outcome.ok && !outcome.changed, "{outcome:?}");
    assert_eq!(catalog.current().number(), before.number());
    assert_eq!(names(&catalog.current()), ["mcp__a__one", "mcp__b__two"]);
    assert_eq!(registry.get_visible_capabilities(&scope).ids(), ["a", "b"]);
    let (_, result) = told.recv().await.unwrap();
    assert!(!result.published, "{result:?}");
    assert_eq!(result.failed.len(), 1);
    assert_eq!(result.failed[0].0, "c");
    // The sources in the registry still answer.
    let call = catalog
        .call("mcp__b__two", serde_json::Map::new())
        .await
        .unwrap();
    assert!(!call.is_error);
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_wakes_when_its_provider_is_due() {
    let (a, c) = (source("a", "one"), source("c", "three"));
    let (provider, mut told) = provider();
    let (catalog, _registry, _scope) = started(&[dynamic(&a)], provider.clone()).await;
    provider.queue.lock().push_back(MembershipChange {
        add: vec![dynamic(&c)],
        remove: Vec::new(),
        namespaces: Vec::new(),
    });
    // Nobody asks for a cycle: the provider's due time alone brings it
    // (the provider says it moved; the loop then waits for it).
    let cycles = catalog.status().reconciliations;
    let at = Instant::now() + Duration::from_millis(20);
    provider.due_at(at);
    let (_, result) = tokio::time::timeout(Duration::from_secs(60), told.recv())
        .await
        .expect("the loop never consulted its provider")
        .unwrap();
    assert!(result.published);
    assert!(Instant::now() >= at, "the cycle waited for the due time");
    assert_eq!(catalog.status().reconciliations, cycles + 1);
    assert_eq!(names(&catalog.current()), ["mcp__a__one", "mcp__c__three"]);
    catalog.shutdown().await;
}
