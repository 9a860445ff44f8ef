//! SkillManagerCap: local skills and child capabilities, instructions and
//! injection, embedded servers, allowed-tools, failures and change events.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use extpool_core::{
    BoxError, Capability, ChangeKind, CommandResource, ExtensionError, McpResource, ParentChain,
    Scope, SkillEntry, SkillResource, TurnContext,
};
use extpool_skills::{
    DiagnosticCode, DiscoveryConfig, EmbeddedServerFactory, ManagerError, SkillManagerCap,
};
use parking_lot::Mutex;
use serde_json::Value;

use crate::fake::FakeServer;
use crate::support::{collect_events, next_event, write_raw, write_skill};

const REMOTE_SKILL: &str =
    "---\nname: remote-review\ndescription: remote\n---\nRemote instructions.\n";

fn local_skills(root: &std::path::Path) {
    write_skill(root, "beta", "beta", "Second skill", "Beta body.\n");
    write_skill(root, "alpha", "alpha", "First skill", "Alpha body.\n");
    write_raw(
        root,
        "quiet",
        "---\nname: quiet\ndescription: User only\ndisable-model-invocation: true\n---\nQuiet body.\n",
    );
    write_raw(
        root,
        "always",
        "---\nname: always\ndescription: Always on\nalways_active: true\nuser-invocable: false\n---\nAlways body.\n",
    );
}

fn manager(root: &std::path::Path, child: Arc<FakeServer>) -> SkillManagerCap {
    SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([root]))
        .watch(false)
        .child(child)
        .build()
        .unwrap()
}

#[tokio::test]
async fn local_skills_come_first_then_the_childrens() {
    let tmp = tempfile::tempdir().unwrap();
    local_skills(tmp.path());
    let remote = FakeServer::with(
        "hub",
        &[],
        &[
            ("remote-review", REMOTE_SKILL),
            (
                "alpha",
                "---\nname: alpha\ndescription: shadow\n---\nRemote alpha.\n",
            ),
            (
                "alpha/billing",
                "---\nname: billing\ndescription: nested\n---\nBilling.\n",
            ),
        ],
        &[],
    );
    let cap = manager(tmp.path(), remote);
    let names: Vec<String> = cap
        .list_skills()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        [
            "alpha",
            "always",
            "beta",
            "quiet",
            "remote-review",
            "alpha",
            "alpha/billing"
        ]
    );
    let alpha = cap
        .read_skill("skill://alpha/SKILL.md")
        .await
        .unwrap()
        .unwrap();
    assert!(
        alpha.as_text().unwrap().contains("Alpha body."),
        "local wins"
    );
    // A remote skill under a local skill's first segment is still reachable.
    let nested = cap
        .read_skill("skill://alpha/billing/SKILL.md")
        .await
        .unwrap()
        .unwrap();
    assert!(nested.as_text().unwrap().contains("Billing."));
    let remote = cap
        .read_skill("skill://remote-review/SKILL.md")
        .await
        .unwrap()
        .unwrap();
    assert!(remote.as_text().unwrap().contains("Remote instructions."));
    assert!(
        cap.skill_exists("skill://remote-review/SKILL.md")
            .await
            .unwrap()
    );
    assert!(!cap.skill_exists("skill://nobody/SKILL.md").await.unwrap());
}

#[tokio::test]
async fn instructions_are_metadata_only() {
    let tmp = tempfile::tempdir().unwrap();
    local_skills(tmp.path());
    let cap = manager(
        tmp.path(),
        FakeServer::with("hub", &[], &[("remote-review", REMOTE_SKILL)], &[]),
    );
    let text = cap.instructions().await.unwrap().unwrap();
    assert_eq!(
        text,
        "<available-skills>\n  - alpha: First skill\n  - always: Always on\n  - beta: Second skill\n  - remote-review: remote remote-review\n</available-skills>"
    );
    let empty = tempfile::tempdir().unwrap();
    let none = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([empty.path()]))
        .build()
        .unwrap();
    assert_eq!(none.instructions().await.unwrap(), None);
}

#[tokio::test]
async fn injection_always_active_then_matched() {
    let tmp = tempfile::tempdir().unwrap();
    local_skills(tmp.path());
    // Without a matcher: only always-active skills.
    let cap = manager(tmp.path(), FakeServer::new("hub", &[]));
    let mut ctx = TurnContext::new(Scope::default(), "please use beta");
    cap.before_model_request(&mut ctx).await.unwrap();
    assert_eq!(ctx.injected().len(), 1);
    assert!(ctx.injected()[0].starts_with("<skill_content name=\"always\">\nAlways body.\n"));
    assert!(
        !ctx.injected()[0].contains("always_active"),
        "frontmatter stripped"
    );

    // With a matcher: the matched skills too, local or remote; the matcher
    // never sees skills hidden from the model.
    let offered: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = offered.clone();
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .child(FakeServer::with(
            "hub",
            &[],
            &[("remote-review", REMOTE_SKILL)],
            &[],
        ))
        .matcher(move |prompt: &str, skills: &[SkillEntry]| {
            *seen.lock() = skills.iter().map(|s| s.name.clone()).collect();
            skills
                .iter()
                .filter(|s| prompt.contains(s.name.as_str()))
                .map(|s| s.name.clone())
                .chain(["quiet".to_owned(), "always".to_owned()])
                .collect()
        })
        .build()
        .unwrap();
    let mut ctx = TurnContext::new(Scope::default(), "use beta and remote-review");
    cap.before_model_request(&mut ctx).await.unwrap();
    let injected = ctx.injected();
    assert_eq!(injected.len(), 3, "{injected:?}");
    assert!(injected[0].contains("Always body."));
    assert!(injected[1].starts_with("<skill_content name=\"beta\">\nBeta body."));
    assert!(
        injected[2].starts_with("<skill_content name=\"remote-review\">\nRemote instructions.")
    );
    assert!(injected[2].contains("skill://remote-review/<path>"));
    assert!(!offered.lock().contains(&"quiet".to_owned()));
}

#[tokio::test]
async fn commands_are_the_local_skills_not_the_childrens_prompts() {
    let tmp = tempfile::tempdir().unwrap();
    local_skills(tmp.path());
    let cap = manager(
        tmp.path(),
        FakeServer::with("hub", &[], &[], &["summarize", "alpha"]),
    );
    let names: Vec<String> = cap
        .list_commands()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    // `always` is not user-invocable; the child's prompts are the child's
    // own commands (a catalog publishes them under its name), not ours.
    assert_eq!(names, ["alpha", "beta", "quiet"]);
    assert!(
        cap.get_command("summarize", &["x".into()])
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        cap.get_command("alpha", &[])
            .await
            .unwrap()
            .ends_with("Alpha body.")
    );
    assert_eq!(cap.kind(), extpool_core::CapabilityKind::SkillManager);
}

#[tokio::test]
async fn child_tools_resources_and_routing() {
    let tmp = tempfile::tempdir().unwrap();
    let a = FakeServer::new("a", &["search", "fetch"]);
    let b = FakeServer::new("b", &["fetch", "write"]);
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .child(a.clone())
        .child(b.clone())
        .build()
        .unwrap();
    let tools: Vec<String> = cap
        .toolset()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(tools, ["search", "fetch", "write"]);
    let r = cap.call_tool("write", Default::default()).await.unwrap();
    assert_eq!(r.joined_text(), "b ran write");
    let r = cap.call_tool("fetch", Default::default()).await.unwrap();
    assert_eq!(r.joined_text(), "a ran fetch", "first child wins a name");
    assert!(
        cap.call_tool("nope", Default::default())
            .await
            .unwrap_err()
            .is_not_found()
    );
    let c = cap.read_resource("mcp://b/readme").await.unwrap().unwrap();
    assert_eq!(c.as_text(), Some("readme of b"));
    assert_eq!(cap.list_resources().await.unwrap().len(), 2);
}

#[tokio::test]
async fn composition_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = DiscoveryConfig::with_paths([tmp.path()]);
    let err = SkillManagerCap::builder("skills")
        .discovery(cfg.clone())
        .child(FakeServer::new("skills", &[]))
        .build()
        .unwrap_err();
    assert!(matches!(err, ManagerError::Circular(_)), "{err}");
    let err = SkillManagerCap::builder("skills")
        .discovery(cfg.clone())
        .child(FakeServer::new("x", &[]))
        .child(FakeServer::new("x", &[]))
        .build()
        .unwrap_err();
    assert!(matches!(err, ManagerError::DuplicateChild(_)));
    let err = SkillManagerCap::builder("skills")
        .discovery(cfg)
        .parent(ParentChain::root("gh").child("agent").unwrap())
        .child(FakeServer::new("gh", &[]))
        .build()
        .unwrap_err();
    assert!(matches!(err, ManagerError::Circular(_)));
}

/// Builds a fake server per declaration; `broken` names fail to build.
#[derive(Default)]
struct Factory {
    built: Mutex<Vec<(String, String, Value)>>,
    servers: Mutex<Vec<Arc<FakeServer>>>,
}

impl EmbeddedServerFactory for Factory {
    fn build(
        &self,
        skill: &extpool_skills::Skill,
        server: &str,
        config: &Value,
    ) -> Result<Arc<dyn Capability>, BoxError> {
        self.built
            .lock()
            .push((skill.meta.name.clone(), server.to_owned(), config.clone()));
        if config.get("broken").is_some() {
            return Err(format!("cannot start {server}: bad command").into());
        }
        let tools: Vec<&str> = config
            .get("tools")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fake = FakeServer::new(&format!("{}.{server}", skill.meta.name), &tools);
        self.servers.lock().push(fake.clone());
        Ok(fake)
    }
}

const REVIEW: &str = "---\nname: review\ndescription: Code review\nallowed-tools: mcp__github__list_* create_pr\nmcp_servers:\n  github:\n    tools: [list_prs, list_issues, create_pr, delete_repo]\n  broken:\n    broken: true\n---\nReview carefully.\n";

#[tokio::test]
async fn embedded_servers_failures_leave_the_skill_usable() {
    let tmp = tempfile::tempdir().unwrap();
    write_raw(tmp.path(), "review", REVIEW);
    write_raw(
        tmp.path(),
        "plain",
        "---\nname: plain\ndescription: p\nmcp_servers: [search]\n---\nPlain.\n",
    );
    let factory = Arc::new(Factory::default());
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .embedded_servers(factory.clone())
        .build()
        .unwrap();
    let built = factory.built.lock().clone();
    assert_eq!(built.len(), 3);
    assert_eq!(
        built[2],
        (
            "review".into(),
            "broken".into(),
            serde_json::json!({"broken": true})
        )
    );
    assert_eq!(built[0], ("plain".into(), "search".into(), Value::Null));

    // The failed server is reported; the skill stays whole.
    let diags = cap.diagnostics();
    let failed: Vec<_> = diags
        .iter()
        .filter(|d| d.code == DiagnosticCode::EmbeddedServer)
        .collect();
    assert_eq!(failed.len(), 1, "{diags:?}");
    assert!(failed[0].message.contains("broken"));
    assert!(failed[0].path.ends_with("review/SKILL.md"));
    assert!(cap.local_skill("review").is_some());
    assert!(
        cap.get_command("review", &[])
            .await
            .unwrap()
            .ends_with("Review carefully.")
    );

    // allowed-tools filters the embedded server's tools.
    let ids: Vec<String> = cap.children().iter().map(|c| c.id().to_owned()).collect();
    assert_eq!(ids, ["plain.search", "review.github"]);
    let tools: Vec<String> = cap
        .toolset()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(tools, ["list_prs", "list_issues", "create_pr"]);
    let denied = cap.children()[1]
        .mcp()
        .unwrap()
        .call_tool("delete_repo", Default::default())
        .await
        .unwrap_err();
    assert!(matches!(denied, ExtensionError::Denied(_)), "{denied}");
    assert!(
        cap.call_tool("delete_repo", Default::default())
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert_eq!(
        cap.call_tool("create_pr", Default::default())
            .await
            .unwrap()
            .joined_text(),
        "review.github ran create_pr"
    );
}

#[tokio::test]
async fn a_failing_child_costs_only_its_tools_and_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    write_raw(tmp.path(), "review", REVIEW);
    let factory = Arc::new(Factory::default());
    let other = FakeServer::new("other", &["ping"]);
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .child(other.clone())
        .embedded_servers(factory.clone())
        .build()
        .unwrap();
    let mut events = extpool_core::ChangeObservable::on_change(&cap).unwrap();
    assert_eq!(cap.toolset().await.unwrap().len(), 4);

    let github = factory.servers.lock()[0].clone();
    github.set_down(true);
    let tools: Vec<String> = cap
        .toolset()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(tools, ["ping"]);
    let failures = cap.child_failures();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].child, "review.github");
    assert_eq!(failures[0].skill.as_deref(), Some("review"));
    assert!(failures[0].error.contains("connection closed"));
    let e = next_event(&mut events, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(e.kind, ChangeKind::ToolsChanged);
    assert_eq!(e.capability_name, "skills");
    assert_eq!(e.source_uri, "mcp://review.github");
    // The skill itself is intact.
    assert!(
        cap.read_skill("skill://review/SKILL.md")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        cap.instructions()
            .await
            .unwrap()
            .unwrap()
            .contains("review: Code review")
    );
    // A second failing listing does not repeat the event; recovery does.
    cap.toolset().await.unwrap();
    github.set_down(false);
    assert_eq!(cap.toolset().await.unwrap().len(), 4);
    assert!(cap.child_failures().is_empty());
    let again = collect_events(&mut events, Duration::from_millis(200)).await;
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].kind, ChangeKind::ToolsChanged);
}

#[tokio::test]
async fn children_events_are_forwarded_and_shutdown_reaches_children() {
    let tmp = tempfile::tempdir().unwrap();
    let child = FakeServer::new("hub", &["t"]);
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .child(child.clone())
        .build()
        .unwrap();
    cap.start().await.unwrap();
    let mut events = extpool_core::ChangeObservable::on_change(&cap).unwrap();
    child.notify(ChangeKind::PromptsChanged);
    let e = next_event(&mut events, Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(e.capability_name, "skills");
    assert_eq!(e.kind, ChangeKind::PromptsChanged);
    assert_eq!(e.source_uri, "mcp://hub");
    cap.shutdown().await.unwrap();
    assert_eq!(child.shutdowns.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_child_found_down_by_a_call_is_hidden_until_it_answers_again() {
    const RETRY: Duration = Duration::from_millis(300);
    let tmp = tempfile::tempdir().unwrap();
    let hub = FakeServer::new("hub", &["ping"]);
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .child(hub.clone())
        .retry_after(RETRY)
        .build()
        .unwrap();
    cap.start().await.unwrap();
    assert_eq!(cap.toolset().await.unwrap().len(), 1);

    // The window is the runtime's clock: paused, it moves only when told.
    tokio::time::pause();
    hub.set_down(true);
    let err = cap.call_tool("ping", Default::default()).await.unwrap_err();
    // Found down during the call: hidden for `RETRY` from now.
    assert!(matches!(err, ExtensionError::Unavailable { .. }));
    assert!(cap.toolset().await.unwrap().is_empty());
    assert_eq!(cap.child_failures().len(), 1);

    // Just before the window ends it is still hidden; once it has passed
    // it is asked again.
    hub.set_down(false);
    tokio::time::advance(RETRY - Duration::from_millis(1)).await;
    assert!(cap.toolset().await.unwrap().is_empty());
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(cap.toolset().await.unwrap().len(), 1);
    assert!(cap.child_failures().is_empty());
    tokio::time::resume();

    // A change reported by the child re-admits it at once.
    hub.set_down(true);
    cap.call_tool("ping", Default::default()).await.unwrap_err();
    assert!(cap.toolset().await.unwrap().is_empty());
    hub.set_down(false);
    let mut events = extpool_core::ChangeObservable::on_change(&cap).unwrap();
    hub.notify(ChangeKind::ToolsChanged);
    next_event(&mut events, Duration::from_secs(2))
        .await
        .unwrap();
    assert!(cap.child_failures().is_empty());
    assert_eq!(cap.toolset().await.unwrap().len(), 1);
    cap.shutdown().await.unwrap();
}
