//! Composition safety: cycles refused at registration, excessive depth warned.

use std::sync::Arc;

use extpool_core::{
    Capability, ExtensionRegistry, RegistryConfig, RegistryError, Scope, ScopeLevel,
};

use crate::support::{TestCap, cap};

fn with_children(id: &str, children: Vec<Arc<dyn Capability>>) -> Arc<TestCap> {
    let c = TestCap::new(id).arc();
    *c.children.lock() = children;
    c
}

#[test]
fn a_cycle_is_refused_at_registration() {
    let reg = ExtensionRegistry::default();
    let skill = TestCap::new("code-review").arc();
    let github = with_children("github", vec![cap(skill.clone())]);
    *skill.children.lock() = vec![cap(github)];
    let err = reg
        .register(
            cap(skill.clone()),
            ScopeLevel::Pool,
            &Scope::pool("p"),
            None,
        )
        .unwrap_err();
    match err {
        RegistryError::Circular(e) => assert_eq!(e.chain, ["code-review", "github", "code-review"]),
        other => panic!("expected a circular composition error, got {other}"),
    }
    assert!(reg.is_empty());
    // Break the Arc cycle so the test does not leak.
    skill.children.lock().clear();
}

#[test]
fn depth_beyond_the_limit_warns_but_registers() {
    let reg = ExtensionRegistry::new(RegistryConfig {
        max_composition_depth: 3,
        ..RegistryConfig::default()
    });
    // skill(1) → mcp(2) → mcp(3): at the limit.
    let three = with_children(
        "skill",
        vec![cap(with_children(
            "mcp-a",
            vec![cap(TestCap::new("mcp-b").arc())],
        ))],
    );
    let r = reg
        .register(cap(three), ScopeLevel::Pool, &Scope::pool("p"), None)
        .unwrap();
    assert_eq!(r.depth, 3);
    assert!(r.depth_warning.is_none());

    // skill(1) → mcp(2) → mcp(3) → mcp(4): beyond it.
    let four = with_children(
        "deep-skill",
        vec![cap(with_children(
            "m1",
            vec![cap(with_children(
                "m2",
                vec![cap(TestCap::new("m3").arc())],
            ))],
        ))],
    );
    let r = reg
        .register(cap(four), ScopeLevel::Pool, &Scope::pool("p"), None)
        .unwrap();
    assert_eq!(r.depth, 4);
    let warning = r.depth_warning.unwrap();
    assert!(
        warning.contains("deep-skill") && warning.contains("limit 3"),
        "{warning}"
    );
    assert_eq!(reg.len(), 2);
}

#[test]
fn siblings_with_the_same_child_are_not_a_cycle() {
    let reg = ExtensionRegistry::default();
    let shared = cap(TestCap::new("github").arc());
    let parent = with_children(
        "skill",
        vec![
            cap(with_children("a", vec![shared.clone()])),
            cap(with_children("b", vec![shared])),
        ],
    );
    let r = reg
        .register(cap(parent), ScopeLevel::Pool, &Scope::pool("p"), None)
        .unwrap();
    assert_eq!(r.depth, 3);
}
