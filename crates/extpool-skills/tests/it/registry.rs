//! SkillManagerCap registered in extpool-core's ExtensionRegistry: URI
//! routing, the merged change stream, and shutdown.

use std::sync::Arc;
use std::time::Duration;

use extpool_core::{ChangeKind, ExtensionRegistry, RegistryConfig, Scope, ScopeLevel};
use extpool_skills::{DiscoveryConfig, SkillManagerCap};
use futures::StreamExt;

use crate::support::write_skill;

#[tokio::test]
async fn skills_resolve_and_changes_flow_through_the_registry() {
    let tmp = tempfile::tempdir().unwrap();
    write_skill(tmp.path(), "pdf", "pdf", "PDF tools", "Use pdftotext.\n");
    let cap = SkillManagerCap::builder("skills:agent-1")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .build()
        .unwrap();
    let registry = ExtensionRegistry::new(RegistryConfig::default());
    let scope = Scope::pool("p").session("s").agent("agent-1");
    registry
        .register(Arc::new(cap.clone()), ScopeLevel::Agent, &scope, None)
        .unwrap();
    assert_eq!(registry.get_skill_resources(&scope).len(), 1);
    assert_eq!(registry.get_command_resources(&scope).len(), 1);

    let content = registry
        .resolve_uri("skill://pdf/SKILL.md", &scope)
        .await
        .unwrap();
    assert!(content.as_text().unwrap().ends_with("Use pdftotext.\n"));
    let err = registry
        .resolve_uri("skill://pdf/../../etc/passwd", &scope)
        .await
        .unwrap_err();
    assert!(!err.is_not_found(), "{err}");
    // Another agent does not see this agent's skills.
    let other = Scope::pool("p").session("s").agent("agent-2");
    assert!(
        registry
            .resolve_uri("skill://pdf/SKILL.md", &other)
            .await
            .unwrap_err()
            .is_not_found()
    );

    let mut changes = registry.merge_change_streams(&scope).unwrap();
    write_skill(tmp.path(), "csv", "csv", "CSV tools", "");
    let summary = cap.reload();
    assert_eq!(summary.added, ["csv"]);
    let event = tokio::time::timeout(Duration::from_secs(5), changes.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.kind, ChangeKind::SkillsChanged);
    assert_eq!(event.capability_name, "skills:agent-1");
    assert!(
        registry
            .resolve_uri("skill://csv/SKILL.md", &scope)
            .await
            .is_ok()
    );
    // Nothing changed: no event, empty summary.
    assert!(cap.reload().is_empty());

    let report = registry.shutdown().await;
    assert_eq!(report.entries.len(), 1, "{report:?}");
}
