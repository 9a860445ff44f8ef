use std::sync::Arc;

use extpool_core::{Capability, CommandArgument, CommandEntry, ToolEntry};
use serde_json::{Map, json};

use super::*;
use crate::config::CatalogConfig;
use crate::permissions::{DefaultPolicy, PermissionsConfig};
use extpool_testkit::LocalSource;

fn services(config: CatalogConfig) -> Arc<Services> {
    Arc::new(Services::new(&config).unwrap())
}

async fn listing(src: &Arc<LocalSource>) -> SourceListing {
    use extpool_core::{CommandResource, McpResource};
    SourceListing {
        capability: src.clone() as Arc<dyn Capability>,
        tools: src.list_tools().await.unwrap(),
        resources: src.list_resources().await.unwrap(),
        commands: src.list_commands().await.unwrap(),
        skills: Vec::new(),
    }
}

fn tool_names(r: &CatalogRevision) -> Vec<&str> {
    r.tools().iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test]
async fn tools_are_namespaced_and_keep_their_origin() {
    let gh = LocalSource::new("github");
    gh.add_tool("create_issue");
    let linear = LocalSource::new("linear");
    linear.add_tool("search_issues");
    let r = build(
        1,
        vec![listing(&gh).await, listing(&linear).await],
        services(CatalogConfig::default()),
    );
    assert_eq!(
        tool_names(&r),
        ["mcp__github__create_issue", "mcp__linear__search_issues"]
    );
    let Some(ToolRef::Remote(t)) = r.tool("mcp__github__create_issue") else {
        panic!("lookup failed")
    };
    assert_eq!((&*t.server, t.original()), ("github", "create_issue"));
    assert!(r.diagnostics().is_empty());
    // Built-ins are advertised beside the remote tools.
    assert!(matches!(
        r.tool("CallMcpWithQuery"),
        Some(ToolRef::Builtin(_))
    ));
    assert!(r.tool("create_issue").is_none(), "no un-namespaced name");
}

#[tokio::test]
async fn malformed_names_are_diagnostics_and_the_rest_publish() {
    let s = LocalSource::new("srv");
    s.add_tool("good");
    s.add_tool("bad\u{0}nul");
    s.add_tool("esc\u{1b}[31m");
    s.add_tool("lossy\u{fffd}");
    s.add_tool("x".repeat(300));
    s.add_tool("");
    s.add_tool("also_good");
    let r = build(
        1,
        vec![listing(&s).await],
        services(CatalogConfig::default()),
    );
    assert_eq!(tool_names(&r), ["mcp__srv__good", "mcp__srv__also_good"]);
    assert_eq!(r.diagnostics().len(), 5, "{:?}", r.diagnostics());
    assert!(
        r.diagnostics()
            .iter()
            .all(|d| d.problem.is_invalid_name() && d.source == "srv")
    );
}

#[tokio::test]
async fn duplicates_and_namespace_clashes_do_not_shadow() {
    let a = LocalSource::new("github");
    a.add_tool("x");
    a.add_tool("x");
    let b = LocalSource::new("GitHub"); // same namespace, ignoring case
    b.add_tool("evil");
    let c = LocalSource::new("bad__ns");
    c.add_tool("y");
    let r = build(
        1,
        vec![listing(&a).await, listing(&b).await, listing(&c).await],
        services(CatalogConfig::default()),
    );
    assert_eq!(tool_names(&r), ["mcp__github__x"]);
    let problems: Vec<_> = r
        .diagnostics()
        .iter()
        .map(|d| (&d.source[..], &d.problem))
        .collect();
    assert!(
        problems
            .iter()
            .any(|(s, p)| *s == "github" && matches!(p, Problem::DuplicateName { .. }))
    );
    assert!(
        problems
            .iter()
            .any(|(s, p)| *s == "GitHub" && matches!(p, Problem::DuplicateNamespace { .. }))
    );
    assert!(
        problems
            .iter()
            .any(|(s, p)| *s == "bad__ns" && matches!(p, Problem::InvalidNamespace(_)))
    );
    assert!(r.source("GitHub").is_none());
}

#[tokio::test]
async fn configured_prefixes_name_the_namespace() {
    let s = LocalSource::new("server-everything");
    s.add_tool("echo");
    let mut config = CatalogConfig::default();
    config
        .namespaces
        .insert("server-everything".into(), "every".into());
    let r = build(1, vec![listing(&s).await], services(config));
    assert_eq!(tool_names(&r), ["mcp__every__echo"]);
    assert_eq!(
        r.remote_tool("server-everything", "echo").unwrap().name,
        "mcp__every__echo"
    );
}

#[tokio::test]
async fn long_names_get_a_stable_alias_usable_for_calls() {
    let s = LocalSource::new("srv");
    let long = "a_really_long_tool_name_that_goes_on_and_on_past_the_provider_limit";
    s.add_tool(long);
    s.add_tool("dotted.name");
    let svc = services(CatalogConfig::default());
    let r1 = build(1, vec![listing(&s).await], svc.clone());
    let r2 = build(2, vec![listing(&s).await], svc);
    for t in r1.tools() {
        assert!(crate::names::is_provider_safe(&t.alias), "{}", t.alias);
        assert_ne!(t.alias, t.name);
        let again = r2.tools().iter().find(|u| u.name == t.name).unwrap();
        assert_eq!(
            again.alias, t.alias,
            "alias must not change between revisions"
        );
        let Some(ToolRef::Remote(by_alias)) = r1.tool(&t.alias) else {
            panic!("alias lookup")
        };
        assert_eq!(by_alias.name, t.name);
    }
    let alias = r1
        .tools()
        .iter()
        .find(|t| t.original() == long)
        .unwrap()
        .alias
        .clone();
    let mut args = Map::new();
    args.insert("k".into(), json!(1));
    let out = r1.call(&alias, args).await.unwrap();
    assert_eq!(out.joined_text(), "{\"k\":1}");
}

#[tokio::test]
async fn denied_tools_are_hidden_and_say_which_rule() {
    let s = LocalSource::new("github");
    for t in ["get_issue", "list_repos", "create_issue", "delete_repo"] {
        s.add_tool(t);
    }
    let config = CatalogConfig {
        permissions: PermissionsConfig {
            allow: vec![
                "mcp__github__get*".into(),
                "mcp__github__list*".into(),
                "mcp__github__delete*".into(),
            ],
            deny: vec!["mcp__github__delete*".into()],
            default: DefaultPolicy::Deny,
            ..PermissionsConfig::default()
        },
        ..CatalogConfig::default()
    };
    let r = build(1, vec![listing(&s).await], services(config));
    assert_eq!(
        tool_names(&r),
        ["mcp__github__get_issue", "mcp__github__list_repos"]
    );
    let err = r
        .call("mcp__github__delete_repo", Map::new())
        .await
        .unwrap_err();
    assert!(err.is_denied());
    assert!(
        err.to_string()
            .contains("deny rule \"mcp__github__delete*\""),
        "{err}"
    );
    let err = r
        .call("mcp__github__create_issue", Map::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("default policy (deny)"), "{err}");
    // Built-ins fall under the default deny too.
    assert!(r.builtins().is_empty());
    let err = r.call("CallMcpWithQuery", Map::new()).await.unwrap_err();
    assert!(err.is_denied());
    assert_eq!(s.call_count(), 0, "a denied tool never reaches its server");
}

#[tokio::test]
async fn resource_tools_appear_only_with_resources_and_can_be_switched_off() {
    let plain = LocalSource::new("plain");
    plain.add_tool("t");
    let r = build(
        1,
        vec![listing(&plain).await],
        services(CatalogConfig::default()),
    );
    assert!(r.tool("ListMcpResources").is_none());

    let docs = LocalSource::new("docs");
    docs.add_resource("file:///a.txt", "a", "hello");
    let r = build(
        1,
        vec![listing(&docs).await],
        services(CatalogConfig::default()),
    );
    assert!(r.tool("ListMcpResources").is_some() && r.tool("ReadMcpResource").is_some());
    let listed = r.call("ListMcpResources", Map::new()).await.unwrap();
    assert_eq!(
        listed.structured.unwrap()["resources"][0]["uri"],
        "file:///a.txt"
    );
    let mut args = Map::new();
    args.insert("server".into(), json!("docs"));
    args.insert("uri".into(), json!("file:///a.txt"));
    assert_eq!(
        r.call("ReadMcpResource", args).await.unwrap().joined_text(),
        "hello"
    );

    let off = CatalogConfig {
        resource_tools: false,
        ..CatalogConfig::default()
    };
    let r = build(1, vec![listing(&docs).await], services(off));
    assert!(r.tool("ListMcpResources").is_none() && r.resources().is_empty());
}

#[tokio::test]
async fn prompts_become_commands_and_can_be_switched_off() {
    let s = LocalSource::new("srv");
    let mut prompt = CommandEntry::new("greet", "greets");
    prompt.arguments.push(CommandArgument {
        name: "name".into(),
        description: None,
        required: true,
    });
    s.add_prompt(prompt);
    let r = build(
        1,
        vec![listing(&s).await],
        services(CatalogConfig::default()),
    );
    let c = r.command("mcp__srv__greet").unwrap();
    assert_eq!(
        (c.kind, c.original.as_str()),
        (CommandKind::McpPrompt, "greet")
    );
    let out = r
        .run_command("/mcp__srv__greet name=\"Ada L\"")
        .await
        .unwrap();
    assert_eq!(out, "prompt greet: name=Ada L");
    let err = r.run_command("/mcp__srv__greet").await.unwrap_err();
    assert!(err.is_invalid_arguments(), "{err:?}");
    assert!(r.run_command("/greet").await.unwrap_err().is_unknown());

    let off = CatalogConfig {
        prompts: false,
        ..CatalogConfig::default()
    };
    let r = build(1, vec![listing(&s).await], services(off));
    assert!(r.commands().is_empty());
}

#[tokio::test]
async fn structured_results_over_the_limit_are_errors_and_query_filters_them() {
    let s = LocalSource::new("srv");
    let mut entry = ToolEntry::new("big", "big list", json!({"type": "object"}));
    entry.output_schema = Some(Arc::new(json!({"type": "object"})));
    s.add_tool_with(
        entry,
        Arc::new(|_| {
            let items: Vec<_> = (0..1000)
                .map(|i| json!({"id": i, "blob": "x".repeat(200)}))
                .collect();
            let v = json!({ "items": items });
            extpool_core::ToolResult {
                parts: vec![extpool_core::ContentPart::Text {
                    text: v.to_string(),
                }],
                structured: Some(v),
                is_error: false,
                as_sent: None,
            }
        }),
    );
    let r = build(
        1,
        vec![listing(&s).await],
        services(CatalogConfig::default()),
    );
    let result = r.call("mcp__srv__big", Map::new()).await;
    assert!(
        result.as_ref().is_err_and(|e| e.is_structured_too_large()),
        "expected the structured-result error"
    );

    let mut args = Map::new();
    args.insert("server".into(), json!("srv"));
    args.insert("tool".into(), json!("big"));
    args.insert("jq_filter".into(), json!("[.items[] | .id] | length"));
    let out = r.call("CallMcpWithQuery", args.clone()).await.unwrap();
    assert_eq!(out.structured, Some(json!(1000)));

    args.insert("jq_filter".into(), json!(".items[] |"));
    let err = r.call("CallMcpWithQuery", args).await.unwrap_err();
    assert!(err.query_error().unwrap().is_filter_error(), "{err:?}");
    assert!(err.to_string().contains("column"), "{err}");
}

#[tokio::test]
async fn same_content_detects_no_change() {
    let s = LocalSource::with_tools("srv", 3);
    let svc = services(CatalogConfig::default());
    let a = build(1, vec![listing(&s).await], svc.clone());
    let b = build(2, vec![listing(&s).await], svc.clone());
    assert!(a.same_content(&b));
    s.add_tool("new");
    let c = build(3, vec![listing(&s).await], svc.clone());
    assert!(!a.same_content(&c));
    // A replaced runtime with the same tools is a different dispatch target.
    let replacement = LocalSource::with_tools("srv", 3);
    let d = build(4, vec![listing(&replacement).await], svc);
    assert!(!a.same_content(&d));
}

#[tokio::test]
async fn skills_are_listed_once_by_name_the_outer_revision_and_first_source_winning() {
    use extpool_core::SkillEntry;
    let skill =
        |name: &str, by: &str| SkillEntry::new(format!("skill://{name}/SKILL.md"), name, by);
    let (manager, kit) = (LocalSource::new("skills"), LocalSource::new("kit"));
    let mut local = listing(&manager).await;
    local.skills = vec![skill("review", "local")];
    let mut hosted = listing(&kit).await;
    hosted.skills = vec![skill("review", "kit"), skill("deploy", "kit")];
    let pool = Arc::new(build(
        1,
        vec![local, hosted],
        services(CatalogConfig::default()),
    ));
    let rows = |r: &CatalogRevision| -> Vec<(String, String)> {
        r.all_skills()
            .into_iter()
            .map(|s| (s.server.to_string(), s.entry.name.clone()))
            .collect()
    };
    let owned = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        rows(&pool),
        owned(&[("skills", "review"), ("kit", "deploy")])
    );
    // A session's own server cannot take a name the pool's revision lists.
    let own = LocalSource::new("mine");
    let mut mine = listing(&own).await;
    mine.skills = vec![skill("review", "mine"), skill("notes", "mine")];
    let session = build_overlay(1, vec![mine], services(CatalogConfig::default()), pool);
    assert_eq!(
        rows(&session),
        owned(&[("skills", "review"), ("kit", "deploy"), ("mine", "notes")])
    );
}
