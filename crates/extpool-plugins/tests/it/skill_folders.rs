//! Every host's skill folders, through `discover`: one documented
//! precedence (project over user; within a folder the cross-host
//! `.agents/skills` first), the first definition wins, every shadowed one
//! reported.

use extpool_plugins::{DiscoverRequest, discover};
use extpool_skills::{DiagnosticCode, RootKind};

use crate::support::write;

fn skill(dir: &std::path::Path, root: &str, name: &str, description: &str) {
    write(
        dir,
        &format!("{root}/{name}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\nBody.\n"),
    );
}

#[test]
fn every_hosts_skill_folder_is_read_and_shadowing_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("repo");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    for (root, name) in [
        (".agents/skills", "a"),
        (".claude/skills", "c"),
        (".codex/skills", "x"),
        (".gemini/skills", "g"),
        (".github/skills", "h"),
        (".cursor/skills", "u"),
    ] {
        skill(&project, root, name, "project");
    }
    skill(&project, ".github/skills", "c", "project copilot copy");
    for (root, name) in [
        (".codex/skills", "uc"),
        (".gemini/skills", "ug"),
        (".copilot/skills", "up"),
        (".cursor/skills", "uu"),
        (".claude/skills", "g"),
    ] {
        skill(&home, root, name, "user");
    }
    skill(&home, ".github/skills", "not-a-user-root", "user github");
    let found = discover(&DiscoverRequest::new(
        &home,
        Some(project.clone()),
        home.join("data"),
    ));
    let mut names: Vec<&str> = found.skills.skills.iter().map(|s| s.name()).collect();
    names.sort();
    assert_eq!(
        names,
        ["a", "c", "g", "h", "u", "uc", "ug", "up", "uu", "x"]
    );
    let c = found.skills.get("c").unwrap();
    assert!(
        c.skill_md.starts_with(project.join(".claude/skills")),
        "{:?}",
        c.skill_md
    );
    let g = found.skills.get("g").unwrap();
    assert_eq!(g.kind, RootKind::Project, "project over user");
    let shadowed: Vec<_> = found
        .skills
        .diagnostics
        .iter()
        .filter(|d| d.code == DiagnosticCode::Shadowed)
        .map(|d| d.path.clone())
        .collect();
    assert_eq!(shadowed.len(), 2, "{shadowed:?}");
    assert!(
        shadowed
            .iter()
            .any(|p| p.starts_with(project.join(".github/skills/c")))
    );
    assert!(
        shadowed
            .iter()
            .any(|p| p.starts_with(home.join(".claude/skills/g")))
    );
}
