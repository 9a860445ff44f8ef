//! `ExtensionRegistry::replace`: several capabilities of one slot swapped
//! in one step — what a reconciliation publishing additions and removals
//! together relies on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use extpool_core::{ExtensionRegistry, RegistryError, Scope, ScopeLevel};

use crate::support::{TestCap, cap};

fn ids(reg: &ExtensionRegistry, scope: &Scope) -> Vec<String> {
    reg.get_visible_capabilities(scope).ids()
}

#[test]
fn a_replacement_keeps_its_place_and_new_ones_go_last() {
    let reg = ExtensionRegistry::default();
    let pool = Scope::pool("p");
    for id in ["a", "b", "c"] {
        reg.register(cap(TestCap::new(id).arc()), ScopeLevel::Pool, &pool, None)
            .unwrap();
    }
    let removed = reg
        .replace(
            ScopeLevel::Pool,
            &pool,
            &["b", "c", "missing"],
            vec![cap(TestCap::new("d").arc()), cap(TestCap::new("b").arc())],
        )
        .unwrap();
    assert_eq!(
        removed.iter().map(|c| c.id()).collect::<Vec<_>>(),
        ["b", "c"]
    );
    assert_eq!(ids(&reg, &pool), ["a", "b", "d"]);
    // The b visible now is the new one, not the one removed.
    let visible = reg.get_visible_capabilities(&pool).to_vec();
    assert!(!Arc::ptr_eq(&visible[1], &removed[0]));
}

#[test]
fn a_duplicate_refuses_the_whole_replacement() {
    let reg = ExtensionRegistry::default();
    let pool = Scope::pool("p");
    for id in ["a", "b"] {
        reg.register(cap(TestCap::new(id).arc()), ScopeLevel::Pool, &pool, None)
            .unwrap();
    }
    let err = reg
        .replace(
            ScopeLevel::Pool,
            &pool,
            &["b"],
            vec![cap(TestCap::new("c").arc()), cap(TestCap::new("a").arc())],
        )
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::Duplicate { ref id, .. } if id == "a"),
        "{err}"
    );
    assert_eq!(ids(&reg, &pool), ["a", "b"]);
    let err = reg
        .replace(
            ScopeLevel::Pool,
            &pool,
            &[],
            vec![cap(TestCap::new("c").arc()), cap(TestCap::new("c").arc())],
        )
        .unwrap_err();
    assert!(matches!(err, RegistryError::Duplicate { .. }), "{err}");
    assert_eq!(ids(&reg, &pool), ["a", "b"]);
}

#[test]
fn readers_never_see_a_replacement_half_done() {
    let reg = Arc::new(ExtensionRegistry::default());
    let pool = Scope::pool("p");
    for id in ["keep", "old1", "old2"] {
        reg.register(cap(TestCap::new(id).arc()), ScopeLevel::Pool, &pool, None)
            .unwrap();
    }
    let done = Arc::new(AtomicBool::new(false));
    // The reader says when it has read once, and the replacements start
    // only then: the reader is running while they happen, however the
    // threads are scheduled.
    let (reading, started) = std::sync::mpsc::channel();
    let reader = {
        let (reg, pool, done) = (reg.clone(), pool.clone(), done.clone());
        std::thread::spawn(move || {
            let mut seen = 0u64;
            loop {
                let now = ids(&reg, &pool);
                assert!(
                    now == ["keep", "old1", "old2"] || now == ["keep", "new1", "new2"],
                    "half a replacement: {now:?}"
                );
                seen += 1;
                if seen == 1 {
                    let _ = reading.send(());
                }
                if done.load(Ordering::Acquire) {
                    return seen;
                }
            }
        })
    };
    started.recv().expect("the reader read once");
    for _ in 0..500 {
        reg.replace(
            ScopeLevel::Pool,
            &pool,
            &["old1", "old2"],
            vec![
                cap(TestCap::new("new1").arc()),
                cap(TestCap::new("new2").arc()),
            ],
        )
        .unwrap();
        reg.replace(
            ScopeLevel::Pool,
            &pool,
            &["new1", "new2"],
            vec![
                cap(TestCap::new("old1").arc()),
                cap(TestCap::new("old2").arc()),
            ],
        )
        .unwrap();
    }
    done.store(true, Ordering::Release);
    assert!(reader.join().unwrap() > 0);
}
