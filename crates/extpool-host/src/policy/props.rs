//! Property test of the compiled table: over random servers, permission
//! rules, a caller's rules (`permissions.principals`, for a caller whose
//! claims match or not), grants, filters, degraded servers, naming and
//! deferral, what a
//! model is listed is callable, what it may call beyond the list is only
//! the deferred tools, and every catalog tool is either a row or refused
//! for the reason its layers give. `EXTPOOL_FUZZ_CASES` sets the cases
//! (default 256).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use extpool_catalog::permissions::{DefaultPolicy, PermissionsConfig, PrincipalRulesConfig};
use extpool_catalog::{BuiltinTool, CatalogConfig, CatalogRevision, Services, SourceListing};
use extpool_core::{Capability, McpResource, Principal, Scope};
use proptest::prelude::*;

use super::compile::{Context, compile, refine};
use super::{CatalogFilter, Grants, Naming, Refusal, Resolved, ToolTable, ViewPolicy};
use crate::health::Degraded;
use crate::info::ModelTool;
use crate::search::DeferralConfig;

const SERVERS: [&str; 4] = ["gh", "fs", "kit", "web"];
const TOOLS: [&str; 7] = [
    "get_issue",
    "list_repos",
    "read",
    "write",
    "files.read",
    "echo",
    "a/b",
];
const PATTERNS: [&str; 7] = [
    "mcp__gh__*",
    "mcp__*__read",
    "mcp__fs__write",
    "*__get_*",
    "CallMcpWithQuery",
    "mcp__kit__echo",
    "ListMcpResources",
];

/// One random case.
#[derive(Debug, Clone)]
struct Case {
    servers: Vec<(usize, Vec<usize>)>,
    allow: Vec<usize>,
    deny: Vec<usize>,
    default_deny: bool,
    grants: Option<(bool, Vec<usize>)>,
    drop: Vec<usize>,
    degraded: Vec<usize>,
    own: Vec<usize>,
    client: bool,
    unprefixed: Vec<usize>,
    deferral: Option<(bool, bool)>,
    probes: Vec<String>,
    /// A caller's rules: deny patterns, an allow list, and whether the
    /// caller's claims match them.
    caller: Option<(Vec<usize>, Option<Vec<usize>>, bool)>,
}

fn case() -> impl Strategy<Value = Case> {
    let servers = proptest::collection::btree_map(
        0..SERVERS.len(),
        proptest::collection::btree_set(0..TOOLS.len(), 0..5),
        1..4,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(s, t)| (s, t.into_iter().collect()))
            .collect::<Vec<_>>()
    });
    let idx = |n: usize| proptest::collection::vec(0..n, 0..4);
    (
        servers,
        (idx(PATTERNS.len()), idx(PATTERNS.len()), any::<bool>()),
        proptest::option::of((any::<bool>(), idx(SERVERS.len() * TOOLS.len()))),
        (
            idx(SERVERS.len() * TOOLS.len()),
            idx(SERVERS.len()),
            idx(SERVERS.len()),
        ),
        (any::<bool>(), idx(SERVERS.len())),
        proptest::option::of((any::<bool>(), any::<bool>())),
        proptest::collection::vec("[a-zA-Z_.]{0,12}", 0..4),
        proptest::option::of((
            idx(PATTERNS.len()),
            proptest::option::of(idx(PATTERNS.len())),
            any::<bool>(),
        )),
    )
        .prop_map(
            |(
                servers,
                (allow, deny, default_deny),
                grants,
                (drop, degraded, own),
                (client, unprefixed),
                deferral,
                probes,
                caller,
            )| Case {
                servers,
                allow,
                deny,
                default_deny,
                grants,
                drop,
                degraded,
                own,
                client,
                unprefixed,
                deferral,
                probes,
                caller,
            },
        )
}

/// The catalog name of tool `t` of server `s` (indices into the tables).
fn catalog_name(s: usize, t: usize) -> String {
    extpool_catalog::names::compose(SERVERS[s], TOOLS[t])
}

fn revision(case: &Case) -> Arc<CatalogRevision> {
    let config = CatalogConfig {
        permissions: PermissionsConfig {
            allow: case.allow.iter().map(|&i| PATTERNS[i].to_owned()).collect(),
            deny: case.deny.iter().map(|&i| PATTERNS[i].to_owned()).collect(),
            default: if case.default_deny {
                DefaultPolicy::Deny
            } else {
                DefaultPolicy::Allow
            },
            principals: case
                .caller
                .iter()
                .map(|(deny, allow, _)| PrincipalRulesConfig {
                    claims: [("groups".to_owned(), "eng".to_owned())].into(),
                    allow: allow
                        .as_ref()
                        .map(|a| a.iter().map(|&i| PATTERNS[i].to_owned()).collect()),
                    deny: deny.iter().map(|&i| PATTERNS[i].to_owned()).collect(),
                })
                .collect(),
        },
        ..CatalogConfig::default()
    };
    let services = Arc::new(Services::new(&config).unwrap_or_else(|e| panic!("{e}")));
    let listings = case
        .servers
        .iter()
        .map(|(s, tools)| {
            let source = extpool_testkit::LocalSource::new(SERVERS[*s]);
            for &t in tools {
                source.add_tool(TOOLS[t]);
            }
            let tools = futures::executor::block_on(source.list_tools()).unwrap_or_default();
            SourceListing {
                capability: source as Arc<dyn Capability>,
                tools,
                resources: Vec::new(),
                commands: Vec::new(),
                skills: Vec::new(),
            }
        })
        .collect();
    Arc::new(extpool_catalog::revision::build(1, listings, services))
}

fn policy(case: &Case) -> Arc<ViewPolicy> {
    let dropped: HashSet<String> = case
        .drop
        .iter()
        .map(|&i| catalog_name(i / TOOLS.len(), i % TOOLS.len()))
        .collect();
    let filter: Arc<dyn CatalogFilter> = Arc::new(move |_: &Scope, tools: &mut Vec<ModelTool>| {
        tools.retain(|t| !dropped.contains(&t.name));
        tools.reverse();
    });
    let policy = ViewPolicy::builder()
        .grants(case.grants.as_ref().map(|(auto_grant, granted)| {
            let auto_grant = *auto_grant;
            let granted: HashSet<String> = granted
                .iter()
                .map(|&i| catalog_name(i / TOOLS.len(), i % TOOLS.len()))
                .collect();
            Grants::new(move |name| auto_grant || granted.contains(name))
        }))
        .own_servers(case.own.iter().map(|&i| SERVERS[i].to_owned()))
        .exclude_degraded(true)
        .filter(filter)
        .naming(if case.client {
            Naming::Client
        } else {
            Naming::Provider
        })
        .unprefixed(case.unprefixed.iter().map(|&i| SERVERS[i].to_owned()))
        .front_tools([BuiltinTool::ListMcpSources, BuiltinTool::RefreshMcpSources])
        .deferral(case.deferral.map(|(tight, keep)| DeferralConfig {
            budget_bytes: if tight { 0 } else { usize::MAX },
            keep: if keep {
                vec!["mcp__gh__*".into()]
            } else {
                Vec::new()
            },
            max_results: 5,
        }))
        .build();
    match &case.caller {
        Some((_, _, in_group)) => policy.for_principal(&Arc::new(caller(*in_group))),
        None => policy,
    }
}

/// A caller from an identity provider, in group `eng` or not.
fn caller(in_group: bool) -> Principal {
    let group = if in_group { "eng" } else { "sales" };
    Principal {
        issuer: "https://idp.example".into(),
        subject: "alice".into(),
        claims: [("groups".to_owned(), vec![group.to_owned()])].into(),
        operator: false,
    }
}

/// Whether pattern `i` matches `name` (`*` any run of characters).
fn pattern_matches(i: usize, name: &str) -> bool {
    let rules = extpool_catalog::permissions::Permissions::new(PermissionsConfig {
        deny: vec![PATTERNS[i].to_owned()],
        ..PermissionsConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    !rules.decide(name).is_allowed()
}

fn table(case: &Case, rev: &Arc<CatalogRevision>, policy: &ViewPolicy) -> ToolTable {
    let degraded: Vec<Degraded> = case
        .degraded
        .iter()
        .map(|&i| Degraded {
            capability: SERVERS[i].to_owned(),
            reason: "down".into(),
            since: std::time::SystemTime::UNIX_EPOCH,
        })
        .collect();
    let shared = compile(
        policy.layers(),
        &Context {
            revision: rev,
            scope: &Scope::pool("p"),
            degraded: &degraded,
        },
    );
    match policy.refinement() {
        Some(refinement) => refine(&shared, refinement),
        None => shared,
    }
}

/// What the layers, read one by one, say about `name` of `server`: the
/// shared ones (degraded servers, the filter), then the view's own
/// (grants, its servers' names).
fn expected(case: &Case, policy: &ViewPolicy, server: &str, name: &str) -> Option<&'static str> {
    if case.degraded.iter().any(|&i| SERVERS[i] == server) {
        return Some("degraded");
    }
    let dropped = case
        .drop
        .iter()
        .any(|&i| catalog_name(i / TOOLS.len(), i % TOOLS.len()) == name);
    if dropped {
        return Some("filtered");
    }
    if policy.grants().is_some_and(|g| !g.allows(name)) {
        return Some("not granted");
    }
    let own = policy
        .refinement()
        .is_some_and(|r| r.own_servers.iter().any(|s| s == server));
    if own {
        return Some("shadowed");
    }
    for_caller(case, name)
}

/// What the caller's rules say of `name`, when its claims match them: the
/// only layer of a view that takes out one of the catalog's built-ins.
fn for_caller(case: &Case, name: &str) -> Option<&'static str> {
    let Some((deny, allow, true)) = &case.caller else {
        return None;
    };
    let denied = deny.iter().any(|&i| pattern_matches(i, name));
    let unlisted = allow
        .as_ref()
        .is_some_and(|a| !a.iter().any(|&i| pattern_matches(i, name)));
    (denied || unlisted).then_some("not for this caller")
}

fn word(refusal: &Refusal) -> &'static str {
    match refusal {
        Refusal::Denied { .. } => "denied",
        Refusal::NotGranted { .. } => "not granted",
        Refusal::Shadowed { .. } => "shadowed",
        Refusal::Filtered { .. } => "filtered",
        Refusal::Degraded { .. } => "degraded",
        Refusal::DeniedForPrincipal { .. } | Refusal::PromptDeniedForPrincipal { .. } => {
            "not for this caller"
        }
    }
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let rev = revision(case);
    let policy = policy(case);
    let t = table(case, &rev, &policy);
    let none = |_: &str| false;
    let listed: Vec<usize> = t.listed(none).map(|(i, _)| i).collect();
    // What is listed is callable, under each of its names, as that row.
    for &i in &listed {
        let row = &t.rows()[i];
        for name in [&row.listed, &row.tool.name, &row.tool.alias] {
            match t.resolve(name) {
                Resolved::Tool(found) => prop_assert_eq!(&found.tool.name, &row.tool.name),
                other => prop_assert!(false, "{name} is listed but resolves to {other:?}"),
            }
        }
    }
    // What is callable and not listed is deferred, never a built-in.
    let listed_set: BTreeSet<usize> = listed.iter().copied().collect();
    for (i, row) in t.visible() {
        prop_assert!(
            listed_set.contains(&i) || t.is_deferred(row),
            "{} neither listed nor deferred",
            row.tool.name
        );
        prop_assert!(
            !(listed_set.contains(&i) && t.is_deferred(row)),
            "{} is deferred and listed",
            row.tool.name
        );
        // Deferred exactly as the budget says: all but built-ins and kept
        // tools above it, none within it.
        let defers = match case.deferral {
            Some((true, keep)) => {
                !(row.tool.builtin || keep && row.tool.name.starts_with("mcp__gh__"))
            }
            _ => false,
        };
        prop_assert_eq!(t.is_deferred(row), defers, "{}", row.tool.name);
        prop_assert!(
            !(t.is_deferred(row) && row.tool.builtin),
            "{} is a deferred built-in",
            row.tool.name
        );
    }
    let deferring = t.visible().any(|(_, r)| t.is_deferred(r));
    prop_assert_eq!(deferring, t.row("ToolSearch").is_some());
    // Every listed name is listed once.
    let names: Vec<&str> = listed
        .iter()
        .map(|&i| t.rows()[i].listed.as_str())
        .collect();
    let unique: HashSet<&str> = names.iter().copied().collect();
    prop_assert_eq!(names.len(), unique.len(), "{:?}", names);
    // Every catalog tool is a row or refused for its layers' reason, and a
    // built-in reaches it no further.
    for tool in rev.all_tools() {
        let want = expected(case, &policy, &tool.server, &tool.name);
        for name in [&tool.name, &tool.alias] {
            match (t.resolve(name), want) {
                (Resolved::Tool(_), None) => {}
                (Resolved::Refused(r), Some(w)) => prop_assert_eq!(word(&r), w, "{}", name),
                (got, want) => prop_assert!(false, "{name}: got {got:?}, the layers say {want:?}"),
            }
        }
        prop_assert_eq!(
            t.refusal_through(&tool.server, tool.original()).is_some(),
            want.is_some()
        );
    }
    // The catalog's built-ins are under the caller's rules as under the
    // gateway's own (which leave out those they deny).
    for b in BuiltinTool::CATALOG {
        let name = b.name();
        if rev.denied(name).is_some() || rev.tool(name).is_none() {
            continue;
        }
        match (t.resolve(name), for_caller(case, name)) {
            (Resolved::Tool(_), None) => {}
            (Resolved::Refused(r), Some(w)) => prop_assert_eq!(word(&r), w, "{}", name),
            (got, want) => prop_assert!(
                false,
                "{name}: got {got:?}, the caller's rules say {want:?}"
            ),
        }
    }
    // A name the rules deny is refused saying so; unknown names are unknown.
    for probe in case
        .probes
        .iter()
        .map(String::as_str)
        .chain(["mcp__gh__read", "ListMcpResources"])
    {
        let denied = rev.denied(probe).is_some();
        match t.resolve(probe) {
            Resolved::Refused(r) if denied => prop_assert_eq!(word(&r), "denied"),
            _ if denied => prop_assert!(false, "{probe} is denied but not refused"),
            Resolved::Tool(row) => {
                prop_assert!(t.visible().any(|(_, r)| r.tool.name == row.tool.name))
            }
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn listed_is_callable_and_callable_beyond_it_is_deferred() {
    let cases = std::env::var("EXTPOOL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(case in case())| check(&case)?);
}
