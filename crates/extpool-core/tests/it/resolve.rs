//! URI routing: schemes, malformed URIs, traversal, the owner index.

use extpool_core::{ExtensionRegistry, ResolveError, Scope, ScopeLevel, UriError};

use crate::support::{TestCap, cap};

#[tokio::test]
async fn skill_uris_go_to_the_skill_resource_that_has_them() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p").session("A");
    let a = TestCap::new("local").with_skills(&["alpha"]).arc();
    let b = TestCap::new("remote").with_skills(&["beta"]).arc();
    reg.register(cap(a.clone()), ScopeLevel::Pool, &s, None)
        .unwrap();
    reg.register(cap(b.clone()), ScopeLevel::Session, &s, None)
        .unwrap();
    let c = reg.resolve_uri("skill://beta/SKILL.md", &s).await.unwrap();
    assert_eq!(c.as_text(), Some("beta from remote"));
    // Session B cannot reach A's session-level skill.
    let err = reg
        .resolve_uri("skill://beta/SKILL.md", &Scope::pool("p").session("B"))
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

#[tokio::test]
async fn mcp_and_claimed_schemes_route_to_their_owners() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    reg.register(
        cap(TestCap::new("gh")
            .with_resources(&["mcp://gh/issues"])
            .arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("docs")
            .with_resources(&["docs://guide/intro"])
            .arc()),
        ScopeLevel::Pool,
        &s,
        Some("docs"),
    )
    .unwrap();
    assert_eq!(
        reg.resolve_uri("mcp://gh/issues", &s)
            .await
            .unwrap()
            .as_text(),
        Some("mcp://gh/issues from gh")
    );
    assert_eq!(
        reg.resolve_uri("docs://guide/intro", &s)
            .await
            .unwrap()
            .as_text(),
        Some("docs://guide/intro from docs")
    );
}

#[tokio::test]
async fn an_unclaimed_scheme_routes_to_the_mcp_resource_that_lists_it() {
    // MCP servers name resources with schemes of their own; nobody claims
    // `demo`, so the registry asks the visible MCP resources (cheap exists
    // checks), in walk order, and only the owner is read.
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    let other = TestCap::new("other").with_resources(&["file:///x"]).arc();
    let owner = TestCap::new("everything")
        .with_resources(&["demo://resource/static/document/a.md"])
        .arc();
    reg.register(cap(other.clone()), ScopeLevel::Pool, &s, None)
        .unwrap();
    reg.register(cap(owner.clone()), ScopeLevel::Pool, &s, None)
        .unwrap();
    let content = reg
        .resolve_uri("demo://resource/static/document/a.md", &s)
        .await
        .unwrap();
    assert_eq!(
        content.as_text(),
        Some("demo://resource/static/document/a.md from everything")
    );
    // Nobody lists it: the scheme is unknown here, said as such.
    let err = reg
        .resolve_uri("demo://resource/static/document/missing.md", &s)
        .await
        .unwrap_err();
    assert!(matches!(err, ResolveError::UnknownScheme { .. }), "{err}");
    assert!(
        err.to_string().contains("no visible MCP server lists"),
        "{err}"
    );
}

#[tokio::test]
async fn unknown_scheme_is_a_typed_error() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p").session("A");
    // A scheme claimed in session A is unknown from session B.
    reg.register(
        cap(TestCap::new("docs").with_resources(&["docs://x/y"]).arc()),
        ScopeLevel::Session,
        &s,
        Some("docs"),
    )
    .unwrap();
    for (uri, scope) in [
        ("gopher://x/y", s.clone()),
        ("docs://x/y", Scope::pool("p").session("B")),
    ] {
        let err = reg.resolve_uri(uri, &scope).await.unwrap_err();
        assert!(
            matches!(err, ResolveError::UnknownScheme { .. }),
            "{uri}: {err}"
        );
    }
}

#[tokio::test]
async fn malformed_and_traversal_uris_are_refused_before_any_capability_is_asked() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    let owner = TestCap::new("local").with_skills(&["alpha"]).arc();
    reg.register(cap(owner.clone()), ScopeLevel::Pool, &s, None)
        .unwrap();
    for uri in ["skill:/alpha", "alpha/SKILL.md", "", "skill://alpha/\u{0}x"] {
        let err = reg.resolve_uri(uri, &s).await.unwrap_err();
        assert!(
            matches!(err, ResolveError::Uri(UriError::Malformed { .. })),
            "{uri:?}: {err}"
        );
    }
    for uri in [
        "skill://alpha/../beta/SKILL.md",
        "skill://alpha/%2e%2e/%2e%2e/etc/passwd",
        "skill://../alpha/SKILL.md",
    ] {
        let err = reg.resolve_uri(uri, &s).await.unwrap_err();
        assert!(
            matches!(err, ResolveError::Uri(UriError::Traversal { .. })),
            "{uri}: {err}"
        );
    }
    assert_eq!(owner.exists_calls(), 0);
}

#[tokio::test]
async fn reserved_and_invalid_scheme_claims_are_refused() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    for scheme in ["skill", "mcp", "MCP"] {
        let err = reg
            .register(
                cap(TestCap::new("x").arc()),
                ScopeLevel::Pool,
                &s,
                Some(scheme),
            )
            .unwrap_err();
        assert!(
            matches!(err, extpool_core::RegistryError::ReservedScheme(_)),
            "{err}"
        );
    }
    let err = reg
        .register(
            cap(TestCap::new("x").arc()),
            ScopeLevel::Pool,
            &s,
            Some("9bad"),
        )
        .unwrap_err();
    assert!(
        matches!(err, extpool_core::RegistryError::InvalidScheme(_)),
        "{err}"
    );
}

#[tokio::test]
async fn a_known_owner_is_asked_alone() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    let others: Vec<_> = (0..50)
        .map(|i| {
            TestCap::new(&format!("other-{i}"))
                .with_skills(&[&format!("s{i}")])
                .arc()
        })
        .collect();
    for o in &others {
        reg.register(cap(o.clone()), ScopeLevel::Pool, &s, None)
            .unwrap();
    }
    let owner = TestCap::new("owner").with_skills(&["target"]).arc();
    reg.register(cap(owner.clone()), ScopeLevel::Pool, &s, None)
        .unwrap();

    // First resolution probes in order until the owner answers.
    reg.resolve_uri("skill://target/SKILL.md", &s)
        .await
        .unwrap();
    let probes_first: usize = others.iter().map(|o| o.exists_calls()).sum();
    assert_eq!(probes_first, 50);

    // Later resolutions of the same owner ask the owner only.
    for path in ["SKILL.md", "references/a.md", "SKILL.md"] {
        reg.resolve_uri(&format!("skill://target/{path}"), &s)
            .await
            .unwrap();
    }
    let probes_after: usize = others.iter().map(|o| o.exists_calls()).sum();
    assert_eq!(probes_after, 50, "no other capability was probed again");
    assert_eq!(owner.exists_calls(), 4);
}

#[tokio::test]
async fn the_owner_index_forgets_unregistered_owners() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p").session("A");
    reg.register(
        cap(TestCap::new("first").with_skills(&["x"]).arc()),
        ScopeLevel::Session,
        &s,
        None,
    )
    .unwrap();
    reg.resolve_uri("skill://x/SKILL.md", &s).await.unwrap();
    reg.unregister("first", ScopeLevel::Session, &s).unwrap();
    let err = reg.resolve_uri("skill://x/SKILL.md", &s).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    reg.register(
        cap(TestCap::new("second").with_skills(&["x"]).arc()),
        ScopeLevel::Session,
        &s,
        None,
    )
    .unwrap();
    let c = reg.resolve_uri("skill://x/SKILL.md", &s).await.unwrap();
    assert_eq!(c.as_text(), Some("x from second"));
}

#[tokio::test]
async fn pool_owner_wins_over_a_session_owner_of_the_same_name() {
    // RFC order: walk pool → session → agent → turn; the first owner wins.
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p").session("A");
    reg.register(
        cap(TestCap::new("session").with_skills(&["x"]).arc()),
        ScopeLevel::Session,
        &s,
        None,
    )
    .unwrap();
    assert_eq!(
        reg.resolve_uri("skill://x/SKILL.md", &s)
            .await
            .unwrap()
            .as_text(),
        Some("x from session")
    );
    reg.register(
        cap(TestCap::new("pool").with_skills(&["x"]).arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    assert_eq!(
        reg.resolve_uri("skill://x/SKILL.md", &s)
            .await
            .unwrap()
            .as_text(),
        Some("x from pool")
    );
}
