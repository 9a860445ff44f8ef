//! Turn-level registration and unregistration while runs query the registry.

use std::sync::Arc;

use extpool_core::{ExtensionRegistry, Scope, ScopeLevel};

use crate::support::{TestCap, cap};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_register_and_unregister_while_others_resolve() {
    let reg = Arc::new(ExtensionRegistry::default());
    let pool = Scope::pool("p");
    reg.register(
        cap(TestCap::new("pool-skills").with_skills(&["shared"]).arc()),
        ScopeLevel::Pool,
        &pool,
        None,
    )
    .unwrap();

    let mut tasks = Vec::new();
    for t in 0..16 {
        let reg = reg.clone();
        tasks.push(tokio::spawn(async move {
            let scope = Scope::pool("p")
                .session("A")
                .agent("coder")
                .turn(format!("t{t}"));
            for round in 0..50 {
                let id = format!("turn-cap-{t}");
                let skill = format!("turn-skill-{t}");
                reg.register(
                    cap(TestCap::new(&id).with_skills(&[&skill]).arc()),
                    ScopeLevel::Turn,
                    &scope,
                    None,
                )
                .unwrap();
                // This turn sees the pool and its own capability, never another turn's.
                let ids = reg.get_visible_capabilities(&scope).ids();
                assert_eq!(
                    ids,
                    vec!["pool-skills".to_owned(), id.clone()],
                    "turn {t} round {round}"
                );
                let own = reg
                    .resolve_uri(&format!("skill://{skill}/SKILL.md"), &scope)
                    .await
                    .unwrap();
                assert_eq!(own.as_text(), Some(format!("{skill} from {id}").as_str()));
                reg.resolve_uri("skill://shared/SKILL.md", &scope)
                    .await
                    .unwrap();
                let other = format!("skill://turn-skill-{}/SKILL.md", (t + 1) % 16);
                assert!(
                    reg.resolve_uri(&other, &scope)
                        .await
                        .unwrap_err()
                        .is_not_found()
                );
                reg.unregister(&id, ScopeLevel::Turn, &scope).unwrap();
                tokio::task::yield_now().await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(reg.len(), 1);
}
