//! Discovery: precedence, duplicates, bounds, skipped directories, symlinks
//! and lazy bodies.

use std::path::Path;

use extpool_core::{Capability, CommandResource, SkillResource};
use extpool_skills::{
    DiagnosticCode, DiscoveryConfig, RootKind, Severity, SkillManagerCap, discover,
};

use crate::support::{write_raw, write_skill};

fn names(d: &extpool_skills::Discovery) -> Vec<String> {
    d.skills.iter().map(|s| s.name().to_owned()).collect()
}

#[test]
fn precedence_configured_then_project_nearest_first_then_user() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let conf = t.join("conf");
    let repo = t.join("repo");
    let cwd = repo.join("pkg");
    let home = t.join("home");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();

    write_skill(&conf, "dup", "dup", "from configured", "");
    write_skill(
        &cwd.join(".agents/skills"),
        "dup",
        "dup",
        "from project",
        "",
    );
    write_skill(
        &cwd.join(".claude/skills"),
        "near",
        "near",
        "near .claude",
        "",
    );
    write_skill(
        &repo.join(".agents/skills"),
        "near",
        "near",
        "repo root",
        "",
    );
    write_skill(
        &repo.join(".claude/skills"),
        "repo-only",
        "repo-only",
        "repo",
        "",
    );
    write_skill(&home.join(".agents/skills"), "dup", "dup", "from user", "");
    write_skill(
        &home.join(".claude/skills"),
        "mine",
        "mine",
        "user only",
        "",
    );
    write_skill(
        &home.join(".claude/skills"),
        "repo-only",
        "repo-only",
        "user copy",
        "",
    );

    let cfg = DiscoveryConfig {
        paths: vec![conf.clone()],
        cwd: Some(cwd.clone()),
        home: Some(home.clone()),
        ..DiscoveryConfig::default()
    };
    let d = discover(&cfg);
    assert_eq!(names(&d), ["dup", "near", "repo-only", "mine"]);
    assert_eq!(d.get("dup").unwrap().description(), "from configured");
    assert_eq!(d.get("dup").unwrap().kind, RootKind::Configured);
    assert_eq!(d.get("near").unwrap().description(), "near .claude");
    assert_eq!(d.get("repo-only").unwrap().kind, RootKind::Project);
    assert_eq!(d.get("mine").unwrap().kind, RootKind::User);

    let shadowed: Vec<_> = d
        .diagnostics
        .iter()
        .filter(|x| x.code == DiagnosticCode::Shadowed)
        .collect();
    assert_eq!(shadowed.len(), 4, "{:?}", d.diagnostics);
    assert!(shadowed.iter().all(|x| x.severity == Severity::Warning));
    let project_dup = cwd.join(".agents/skills/dup/SKILL.md");
    let report = shadowed.iter().find(|x| x.path == project_dup).unwrap();
    assert!(
        report
            .message
            .contains(&conf.join("dup/SKILL.md").display().to_string()),
        "{}",
        report.message
    );
    // Nothing else went wrong.
    assert_eq!(d.diagnostics.len(), 4);
}

#[test]
fn the_same_directory_through_two_roots_is_one_skill() {
    let tmp = tempfile::tempdir().unwrap();
    write_skill(tmp.path(), "one", "one", "d", "");
    std::fs::create_dir(tmp.path().join("x")).unwrap();
    let d = discover(&DiscoveryConfig::with_paths([
        tmp.path().to_owned(),
        tmp.path().join("x/.."),
    ]));
    assert_eq!(names(&d), ["one"]);
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
}

#[test]
fn nested_layouts_depth_and_skipped_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write_skill(root, "top", "top", "d", "");
    write_skill(root, "category/inner", "inner", "d", "");
    // A SKILL.md inside a skill is supporting content, not a skill.
    write_skill(root, "top/references/nested", "nested", "d", "");
    write_skill(root, "a/b/c/d/e/six", "six", "d", "");
    write_skill(root, "a/b/c/d/e/f/seven", "seven", "d", "");
    write_skill(root, ".hidden/secret", "secret", "d", "");
    write_skill(root, "node_modules/pkg", "pkg", "d", "");
    write_skill(root, "x/.git/hooks", "hooks", "d", "");
    let d = discover(&DiscoveryConfig::with_paths([root]));
    let mut found = names(&d);
    found.sort();
    assert_eq!(found, ["inner", "six", "top"]);
}

#[test]
fn directory_count_bound_truncates_and_reports() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..30 {
        write_skill(
            tmp.path(),
            &format!("s{i:02}"),
            &format!("s{i:02}"),
            "d",
            "",
        );
    }
    let cfg = DiscoveryConfig {
        max_dirs_per_root: 11,
        ..DiscoveryConfig::with_paths([tmp.path()])
    };
    let d = discover(&cfg);
    // The root counts as one directory.
    assert_eq!(d.skills.len(), 10);
    assert_eq!(d.skills[0].name(), "s00");
    let truncated: Vec<_> = d
        .diagnostics
        .iter()
        .filter(|x| x.code == DiagnosticCode::ScanTruncated)
        .collect();
    assert_eq!(truncated.len(), 1);
    assert_eq!(truncated[0].path, tmp.path());
}

#[test]
fn missing_roots_are_silent() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = DiscoveryConfig {
        cwd: Some(tmp.path().to_owned()),
        home: Some(tmp.path().join("nohome")),
        ..DiscoveryConfig::with_paths([tmp.path().join("absent")])
    };
    let d = discover(&cfg);
    assert!(d.skills.is_empty());
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
    assert_eq!(
        d.roots.len(),
        1 + extpool_skills::PROJECT_SKILL_DIRS.len() + extpool_skills::USER_SKILL_DIRS.len()
    );
}

#[cfg(unix)]
#[test]
fn symlinks_followed_for_user_roots_only_inside_for_projects() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let outside = t.join("outside");
    write_skill(&outside, "shared", "shared", "lives outside", "");
    let home = t.join("home");
    let user_root = home.join(".claude/skills");
    std::fs::create_dir_all(&user_root).unwrap();
    symlink(outside.join("shared"), user_root.join("shared")).unwrap();

    let repo = t.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let proj_root = repo.join(".agents/skills");
    std::fs::create_dir_all(&proj_root).unwrap();
    symlink(outside.join("shared"), proj_root.join("escape")).unwrap();
    write_skill(&proj_root, "real", "real", "d", "");
    symlink(proj_root.join("real"), proj_root.join("alias")).unwrap();
    // A loop back to the root.
    std::fs::create_dir_all(proj_root.join("loop")).unwrap();
    symlink(&proj_root, proj_root.join("loop/back")).unwrap();

    let cfg = DiscoveryConfig {
        cwd: Some(repo.clone()),
        home: Some(home),
        ..DiscoveryConfig::default()
    };
    let d = discover(&cfg);
    let mut found = names(&d);
    found.sort();
    assert_eq!(found, ["real", "shared"]);
    let shared = d.get("shared").unwrap();
    assert_eq!(shared.kind, RootKind::User);
    assert_eq!(
        shared.canonical_dir,
        std::fs::canonicalize(outside.join("shared")).unwrap()
    );
    assert!(
        d.diagnostics.iter().any(
            |x| x.path == proj_root.join("escape") && x.message.contains("outside the project")
        ),
        "{:?}",
        d.diagnostics
    );
}

#[cfg(unix)]
#[test]
fn a_skill_md_symlinked_outside_its_directory_is_refused() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret.md");
    std::fs::write(
        &secret,
        "---\nname: leak\ndescription: leaked\n---\nsecret\n",
    )
    .unwrap();
    let root = tmp.path().join("skills");
    std::fs::create_dir_all(root.join("leak")).unwrap();
    symlink(&secret, root.join("leak/SKILL.md")).unwrap();
    // Inside the skill directory, a symlinked SKILL.md is fine.
    std::fs::create_dir_all(root.join("inside")).unwrap();
    std::fs::write(
        root.join("inside/real.md"),
        "---\nname: inside\ndescription: ok\n---\n",
    )
    .unwrap();
    symlink("real.md", root.join("inside/SKILL.md")).unwrap();
    let d = discover(&DiscoveryConfig::with_paths([&root]));
    assert_eq!(names(&d), ["inside"]);
    assert!(d.diagnostics.iter().any(|x| x.is_error()
        && x.path == root.join("leak/SKILL.md")
        && x.message.contains("outside the skill directory")));
}

fn big_body() -> String {
    "A line of instructions that the model reads only when needed.\n".repeat(8 * 1024)
}

#[test]
fn discovery_reads_only_the_frontmatter() {
    let tmp = tempfile::tempdir().unwrap();
    let body = big_body();
    for i in 0..20 {
        write_skill(tmp.path(), &format!("s{i}"), &format!("s{i}"), "d", &body);
    }
    let d = discover(&DiscoveryConfig::with_paths([tmp.path()]));
    assert_eq!(d.skills.len(), 20);
    assert_eq!(d.stats.files_parsed, 20);
    // Each file is ~500 KB; the walk read one 4 KB chunk of each.
    assert!(
        d.stats.bytes_read <= 20 * 4096,
        "read {} bytes",
        d.stats.bytes_read
    );
}

#[tokio::test]
async fn bodies_are_read_when_first_needed() {
    let tmp = tempfile::tempdir().unwrap();
    let body = big_body();
    write_skill(tmp.path(), "lazy", "lazy", "A lazy skill", &body);
    write_raw(
        tmp.path(),
        "active",
        "---\nname: active\ndescription: Always on\nalways_active: true\n---\nAlways.\n",
    );
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .build()
        .unwrap();
    assert_eq!(cap.body_reads(), 0);
    assert_eq!(cap.list_skills().await.unwrap().len(), 2);
    assert!(cap.instructions().await.unwrap().is_some());
    assert_eq!(cap.list_commands().await.unwrap().len(), 2);
    assert!(cap.skill_exists("skill://lazy/SKILL.md").await.unwrap());
    assert_eq!(cap.body_reads(), 0, "metadata operations read no body");

    let content = cap
        .read_skill("skill://lazy/SKILL.md")
        .await
        .unwrap()
        .unwrap();
    assert!(content.as_text().unwrap().ends_with(&body));
    assert_eq!(cap.body_reads(), 1);
    cap.get_command("lazy", &[]).await.unwrap();
    assert_eq!(cap.body_reads(), 2);
    let mut ctx = extpool_core::TurnContext::new(extpool_core::Scope::default(), "hi");
    cap.before_model_request(&mut ctx).await.unwrap();
    assert_eq!(cap.body_reads(), 3, "only the always-active body");
}

#[test]
fn root_that_is_a_file_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let d = discover(&DiscoveryConfig::with_paths([&file]));
    assert!(d.skills.is_empty());
    assert_eq!(d.diagnostics.len(), 1);
    assert_eq!(d.diagnostics[0].code, DiagnosticCode::NotADirectory);
    assert!(Path::new(&d.diagnostics[0].path) == file);
}

#[cfg(unix)]
#[test]
fn a_fifo_named_skill_md_does_not_hang_discovery() {
    let tmp = tempfile::tempdir().unwrap();
    write_skill(tmp.path(), "good", "good", "d", "");
    std::fs::create_dir_all(tmp.path().join("fifo")).unwrap();
    let fifo = tmp.path().join("fifo/SKILL.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils) is needed for this test");
    assert!(made.success());
    let d = discover(&DiscoveryConfig::with_paths([tmp.path()]));
    assert_eq!(names(&d), ["good"]);
    assert!(
        d.diagnostics
            .iter()
            .any(|x| x.is_error() && x.path == fifo && x.message.contains("not a regular file")),
        "{:?}",
        d.diagnostics
    );
}
