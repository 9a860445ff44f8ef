//! Hot reload through the filesystem watcher: create, edit, delete, rename,
//! a burst of edits, supporting files, and a root that appears later.

use std::path::Path;
use std::time::Duration;

use extpool_core::{
    Capability, ChangeEvent, ChangeKind, ChangeObservable, ChangeStream, SkillResource,
};
use extpool_skills::{DiscoveryConfig, SkillManagerCap};

use crate::support::{collect_events, next_event, write_raw, write_skill};

/// Long enough for the 500 ms debounce and a slow machine; never a speed check.
const WAIT: Duration = Duration::from_secs(10);

async fn started(root: &Path) -> (SkillManagerCap, ChangeStream) {
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([root]))
        .build()
        .unwrap();
    cap.start().await.unwrap();
    assert!(cap.is_watching());
    let events = cap.on_change().unwrap();
    (cap, events)
}

/// Waits for the next `skills_changed` event, skipping the others.
async fn skills_changed(events: &mut ChangeStream) -> ChangeEvent {
    loop {
        let e = next_event(events, WAIT)
            .await
            .expect("no skills_changed event within the wait");
        if e.kind == ChangeKind::SkillsChanged {
            return e;
        }
    }
}

fn names(cap: &SkillManagerCap) -> Vec<String> {
    let mut v: Vec<String> = cap
        .local_skills()
        .iter()
        .map(|s| s.name().to_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_edit_delete() {
    let tmp = tempfile::tempdir().unwrap();
    write_skill(tmp.path(), "first", "first", "First", "one\n");
    let (cap, mut events) = started(tmp.path()).await;

    write_skill(tmp.path(), "second", "second", "Second", "two\n");
    let e = skills_changed(&mut events).await;
    assert_eq!(e.capability_name, "skills");
    assert_eq!(e.source_uri, "skill://second");
    assert_eq!(names(&cap), ["first", "second"]);

    // Each change also announces resources and commands.
    let rest = collect_events(&mut events, Duration::from_millis(300)).await;
    let kinds: Vec<ChangeKind> = rest.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [ChangeKind::ResourcesChanged, ChangeKind::CommandsChanged]
    );

    write_skill(tmp.path(), "first", "first", "First, edited", "one v2\n");
    let e = skills_changed(&mut events).await;
    assert_eq!(e.source_uri, "skill://first");
    assert_eq!(
        cap.local_skill("first").unwrap().description(),
        "First, edited"
    );
    let body = cap
        .read_skill("skill://first/SKILL.md")
        .await
        .unwrap()
        .unwrap();
    assert!(body.as_text().unwrap().ends_with("one v2\n"));

    std::fs::remove_dir_all(tmp.path().join("second")).unwrap();
    let e = skills_changed(&mut events).await;
    assert_eq!(e.source_uri, "skill://second");
    assert_eq!(names(&cap), ["first"]);
    assert!(
        cap.read_skill("skill://second/SKILL.md")
            .await
            .unwrap()
            .is_none()
    );
    cap.shutdown().await.unwrap();
    assert!(!cap.is_watching());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_directory_and_file() {
    let tmp = tempfile::tempdir().unwrap();
    // No name in the frontmatter: the directory names the skill.
    write_raw(
        tmp.path(),
        "old",
        "---\ndescription: Renamed later\n---\nbody\n",
    );
    write_skill(tmp.path(), "keep", "keep", "Keep", "");
    let (cap, mut events) = started(tmp.path()).await;

    std::fs::rename(tmp.path().join("old"), tmp.path().join("new")).unwrap();
    let e = skills_changed(&mut events).await;
    assert_eq!(e.source_uri, "", "two skills changed: no single source");
    assert_eq!(names(&cap), ["keep", "new"]);

    std::fs::rename(
        tmp.path().join("keep/SKILL.md"),
        tmp.path().join("keep/SKILL.md.bak"),
    )
    .unwrap();
    let e = skills_changed(&mut events).await;
    assert_eq!(e.source_uri, "skill://keep");
    assert_eq!(names(&cap), ["new"]);
    cap.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_edits_is_one_event() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_skill(tmp.path(), "busy", "busy", "v0", "");
    let (cap, mut events) = started(tmp.path()).await;

    const EDITS: usize = 100;
    for i in 1..=EDITS {
        std::fs::write(
            &path,
            format!("---\nname: busy\ndescription: v{i}\n---\nedit {i}\n"),
        )
        .unwrap();
    }
    // Wait until the last edit is loaded, counting the events on the way.
    // A burst written within the debounce window is one event; on a loaded
    // machine the writes themselves may straddle a window, so a few events
    // are still a coalesced burst (one per edit would not be).
    let mut bursts = 0;
    loop {
        let e = skills_changed(&mut events).await;
        assert_eq!(e.source_uri, "skill://busy");
        bursts += 1;
        if cap.local_skill("busy").unwrap().description() == format!("v{EDITS}") {
            break;
        }
    }
    assert!(
        bursts <= 3,
        "{bursts} events for one burst of {EDITS} edits"
    );

    // Nothing more comes of the burst: the next event is about another
    // skill, alone (a late event for `busy` would come first, or share it).
    write_skill(tmp.path(), "sentinel", "sentinel", "After the burst", "");
    let next = skills_changed(&mut events).await;
    assert_eq!(next.source_uri, "skill://sentinel");
    assert_eq!(names(&cap), ["busy", "sentinel"]);
    assert_eq!(cap.local_skill("busy").unwrap().description(), "v100");
    cap.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supporting_files_announce_resources_only() {
    let tmp = tempfile::tempdir().unwrap();
    write_skill(tmp.path(), "docs", "docs", "Docs", "See references/a.md\n");
    std::fs::create_dir_all(tmp.path().join("docs/references")).unwrap();
    std::fs::write(tmp.path().join("docs/references/a.md"), "v1").unwrap();
    let (cap, mut events) = started(tmp.path()).await;

    std::fs::write(tmp.path().join("docs/references/a.md"), "v2").unwrap();
    let e = next_event(&mut events, WAIT).await.expect("no event");
    assert_eq!(e.kind, ChangeKind::ResourcesChanged);
    assert_eq!(e.source_uri, "skill://docs");
    let c = cap
        .read_skill("skill://docs/references/a.md")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.as_text(), Some("v2"));
    let more = collect_events(&mut events, Duration::from_millis(800)).await;
    assert!(more.is_empty(), "{more:?}");
    cap.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_that_appears_later_is_picked_up() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("later/.agents/skills");
    let (cap, mut events) = started(&root).await;
    assert!(names(&cap).is_empty());

    write_skill(&root, "arrived", "arrived", "Came later", "");
    let e = skills_changed(&mut events).await;
    assert_eq!(e.source_uri, "skill://arrived");
    assert_eq!(names(&cap), ["arrived"]);

    // And once it exists, it is watched recursively.
    write_skill(&root, "second", "second", "Another", "");
    skills_changed(&mut events).await;
    assert_eq!(names(&cap), ["arrived", "second"]);

    // Removed and recreated: still watched.
    std::fs::remove_dir_all(tmp.path().join("later")).unwrap();
    skills_changed(&mut events).await;
    assert!(names(&cap).is_empty());
    write_skill(&root, "back", "back", "Back again", "");
    skills_changed(&mut events).await;
    assert_eq!(names(&cap), ["back"]);
    cap.shutdown().await.unwrap();
}
