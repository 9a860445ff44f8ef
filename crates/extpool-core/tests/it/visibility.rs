//! The visibility matrix across all four levels and two sessions, and
//! attempts to escalate a capability's scope.

use extpool_core::{ExtensionRegistry, RegistryError, Scope, ScopeLevel};

use crate::support::{TestCap, cap};

fn scope_a() -> Scope {
    Scope::pool("p").session("A").agent("coder").turn("t1")
}

/// Registers one capability per level in session A and one per level in session B.
fn populated() -> ExtensionRegistry {
    let reg = ExtensionRegistry::default();
    let a = scope_a();
    let b = Scope::pool("p").session("B").agent("coder").turn("t1");
    reg.register(cap(TestCap::new("pool").arc()), ScopeLevel::Pool, &a, None)
        .unwrap();
    for (scope, tag) in [(&a, "A"), (&b, "B")] {
        reg.register(
            cap(TestCap::new(&format!("session-{tag}")).arc()),
            ScopeLevel::Session,
            scope,
            None,
        )
        .unwrap();
        reg.register(
            cap(TestCap::new(&format!("agent-{tag}")).arc()),
            ScopeLevel::Agent,
            scope,
            None,
        )
        .unwrap();
        reg.register(
            cap(TestCap::new(&format!("turn-{tag}")).arc()),
            ScopeLevel::Turn,
            scope,
            None,
        )
        .unwrap();
    }
    reg
}

#[test]
fn visibility_matrix() {
    let reg = populated();
    let cases: Vec<(Scope, Vec<&str>)> = vec![
        (Scope::pool("p"), vec!["pool"]),
        (Scope::pool("p").session("A"), vec!["pool", "session-A"]),
        (Scope::pool("p").session("B"), vec!["pool", "session-B"]),
        (
            Scope::pool("p").session("A").agent("coder"),
            vec!["pool", "session-A", "agent-A"],
        ),
        (scope_a(), vec!["pool", "session-A", "agent-A", "turn-A"]),
        (
            Scope::pool("p").session("B").agent("coder").turn("t1"),
            vec!["pool", "session-B", "agent-B", "turn-B"],
        ),
        // Another turn of the same agent sees nothing of turn t1.
        (
            Scope::pool("p").session("A").agent("coder").turn("t2"),
            vec!["pool", "session-A", "agent-A"],
        ),
        // Another agent in session A sees the session but not agent "coder".
        (
            Scope::pool("p").session("A").agent("reviewer"),
            vec!["pool", "session-A"],
        ),
        // A session that registered nothing sees the pool only.
        (
            Scope::pool("p").session("C").agent("coder").turn("t1"),
            vec!["pool"],
        ),
        // Another pool sees nothing.
        (
            Scope::pool("q").session("A").agent("coder").turn("t1"),
            vec![],
        ),
    ];
    for (scope, expected) in cases {
        assert_eq!(
            reg.get_visible_capabilities(&scope).ids(),
            expected,
            "{scope:?}"
        );
    }
}

#[test]
fn same_agent_name_in_two_sessions_shares_nothing() {
    let reg = populated();
    let from_a = reg.get_visible_capabilities(&Scope::pool("p").session("A").agent("coder"));
    assert!(!from_a.ids().contains(&"agent-B".to_owned()));
}

#[test]
fn a_turn_id_replayed_without_its_session_sees_nothing_of_it() {
    let reg = populated();
    // Same turn id and agent, but no session: the turn slot of A is a different key.
    let ids = reg
        .get_visible_capabilities(&Scope::pool("p").agent("coder").turn("t1"))
        .ids();
    assert_eq!(ids, vec!["pool"]);
}

#[test]
fn registering_at_a_level_the_scope_does_not_name_is_refused() {
    let reg = ExtensionRegistry::default();
    let err = reg
        .register(
            cap(TestCap::new("x").arc()),
            ScopeLevel::Turn,
            &Scope::pool("p").session("A"),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::Scope(ref e) if e.field == "turn_id"),
        "{err}"
    );
    let err = reg
        .register(
            cap(TestCap::new("x").arc()),
            ScopeLevel::Session,
            &Scope::pool("p"),
            None,
        )
        .unwrap_err();
    assert!(matches!(err, RegistryError::Scope(_)), "{err}");
    assert!(reg.is_empty());
}

#[test]
fn turn_capability_never_escapes_to_outer_scopes() {
    let reg = ExtensionRegistry::default();
    let turn = Scope::pool("p").session("A").agent("coder").turn("t1");
    reg.register(
        cap(TestCap::new("secret").with_skills(&["secret"]).arc()),
        ScopeLevel::Turn,
        &turn,
        None,
    )
    .unwrap();
    for outer in [
        Scope::pool("p"),
        Scope::pool("p").session("A"),
        Scope::pool("p").session("A").agent("coder"),
    ] {
        assert!(reg.get_visible_capabilities(&outer).is_empty(), "{outer:?}");
        assert!(reg.get_skill_resources(&outer).is_empty());
    }
    assert_eq!(reg.get_skill_resources(&turn).len(), 1);
}

#[test]
fn duplicate_ids_are_refused_per_slot_but_allowed_across_slots() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p").session("A");
    reg.register(
        cap(TestCap::new("github").arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("github").arc()),
        ScopeLevel::Session,
        &s,
        None,
    )
    .unwrap();
    let err = reg
        .register(
            cap(TestCap::new("github").arc()),
            ScopeLevel::Session,
            &s,
            None,
        )
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::Duplicate { ref id, .. } if id == "github"),
        "{err}"
    );
    assert_eq!(reg.get_visible_capabilities(&s).len(), 2);
}

#[test]
fn unregister_removes_only_from_its_slot() {
    let reg = populated();
    let a = scope_a();
    reg.unregister("agent-A", ScopeLevel::Agent, &a).unwrap();
    assert_eq!(
        reg.get_visible_capabilities(&a).ids(),
        vec!["pool", "session-A", "turn-A"]
    );
    let err = reg
        .unregister("agent-A", ScopeLevel::Agent, &a)
        .unwrap_err();
    assert!(matches!(err, RegistryError::NotRegistered { .. }), "{err}");
    // Unregistering "pool" from session level fails: it lives in the pool slot.
    assert!(reg.unregister("pool", ScopeLevel::Session, &a).is_err());
}

#[test]
fn protocol_queries_filter_by_capability_accessors() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    reg.register(
        cap(TestCap::new("skills").with_skills(&["a"]).arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("mcp").with_resources(&["x://1"]).arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("obs").with_changes(|| None).arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    reg.register(cap(TestCap::new("plain").arc()), ScopeLevel::Pool, &s, None)
        .unwrap();
    let ids = |v: Vec<std::sync::Arc<dyn extpool_core::Capability>>| {
        v.iter().map(|c| c.id().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(ids(reg.get_skill_resources(&s)), ["skills"]);
    assert_eq!(ids(reg.get_mcp_resources(&s)), ["mcp"]);
    assert_eq!(ids(reg.get_observable_capabilities(&s)), ["obs"]);
    assert!(reg.get_command_resources(&s).is_empty());
}
