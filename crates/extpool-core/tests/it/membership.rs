//! Membership events: every way a slot's members change wakes the
//! watchers of that slot — after the change is visible — and no other.

use extpool_core::{ExtensionRegistry, MembershipWatch, Scope, ScopeLevel};
use futures::FutureExt;

use crate::support::{TestCap, cap};

/// True when `watch` fired (and takes the change as seen).
fn fired(watch: &mut MembershipWatch) -> bool {
    watch.changed().now_or_never().is_some()
}

#[tokio::test]
async fn register_unregister_replace_and_shutdown_each_wake_the_slots_watchers() {
    let reg = ExtensionRegistry::default();
    let pool = Scope::pool("p");
    let session = pool.clone().session("s");
    let mut pool_watch = reg.watch_slots(pool.visible_keys());
    let mut session_watch = reg.watch_slots(session.visible_keys());
    let mut other = reg.watch_slots(pool.clone().session("t").key_at(ScopeLevel::Session));
    assert!(!fired(&mut pool_watch) && !fired(&mut session_watch));

    reg.register(cap(TestCap::new("a").arc()), ScopeLevel::Pool, &pool, None)
        .unwrap();
    assert!(fired(&mut pool_watch));
    assert!(fired(&mut session_watch), "a session sees the pool");
    assert!(!fired(&mut other));

    reg.register(
        cap(TestCap::new("own").arc()),
        ScopeLevel::Session,
        &session,
        None,
    )
    .unwrap();
    assert!(!fired(&mut pool_watch), "the pool does not see a session");
    assert!(fired(&mut session_watch));
    assert!(!fired(&mut other), "another session does not either");

    reg.replace(
        ScopeLevel::Pool,
        &pool,
        &["a"],
        vec![cap(TestCap::new("b").arc())],
    )
    .unwrap();
    assert!(fired(&mut pool_watch) && fired(&mut session_watch));

    reg.unregister("b", ScopeLevel::Pool, &pool).unwrap();
    assert!(fired(&mut pool_watch));

    reg.shutdown_session("p", "s").await;
    assert!(fired(&mut session_watch) && !fired(&mut pool_watch));
    assert!(reg.get_visible_capabilities(&session).is_empty());
    assert!(!fired(&mut other));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_woken_watcher_reads_the_new_member() {
    let reg = std::sync::Arc::new(ExtensionRegistry::default());
    let pool = Scope::pool("p");
    let mut watch = reg.watch_slots(pool.visible_keys());
    let writer = {
        let (reg, pool) = (reg.clone(), pool.clone());
        tokio::spawn(async move {
            reg.register(
                cap(TestCap::new("late").arc()),
                ScopeLevel::Pool,
                &pool,
                None,
            )
            .unwrap();
        })
    };
    watch.changed().await;
    assert_eq!(reg.get_visible_capabilities(&pool).ids(), ["late"]);
    writer.await.unwrap();
}
