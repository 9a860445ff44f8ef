//! `validate_path` on what users point at: the same confinement as
//! discovery (a SKILL.md symlink leaving the tree is refused and never
//! quoted), refused skills reported with the reason, counts by skill, and
//! the discovery bounds said out loud.

use std::os::unix::fs::symlink;

use extpool_skills::{
    DiagnosticCode, DiscoveryConfig, ValidationMode, discover, summarize, validate_path,
};

use crate::support::{write_raw, write_skill};

const SECRET: &str = "---\nname: leak\ndescription: TOP SECRET CONTENT\n---\nTOP SECRET BODY\n";

fn all_messages(reports: &[extpool_skills::SkillReport]) -> String {
    reports
        .iter()
        .flat_map(|r| &r.diagnostics)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_skill_md_symlink_out_of_the_tree_is_refused_and_not_quoted() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside.md");
    std::fs::write(&outside, SECRET).unwrap();
    let root = tmp.path().join("skills");
    std::fs::create_dir_all(root.join("leak")).unwrap();
    symlink(&outside, root.join("leak/SKILL.md")).unwrap();

    for target in [root.join("leak"), root.join("leak/SKILL.md"), root.clone()] {
        let reports = validate_path(&target, ValidationMode::Strict);
        let text = all_messages(&reports);
        assert!(!text.contains("TOP SECRET"), "{}: {text}", target.display());
        assert!(
            text.contains("SKILL.md is a symbolic link that resolves outside the skill directory"),
            "{}: {text}",
            target.display()
        );
        assert!(reports.iter().all(|r| r.meta.is_none()), "{reports:?}");
        let summary = summarize(&reports);
        assert_eq!(
            (summary.checked, summary.with_errors),
            (1, 1),
            "{summary:?}"
        );
    }
}

#[test]
fn a_root_whose_only_skill_was_refused_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("skills");
    std::fs::create_dir_all(root.join("only")).unwrap();
    std::fs::write(tmp.path().join("elsewhere.md"), SECRET).unwrap();
    symlink(tmp.path().join("elsewhere.md"), root.join("only/SKILL.md")).unwrap();
    let reports = validate_path(&root, ValidationMode::Lenient);
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].dir, root.join("only"));
    let text = all_messages(&reports);
    assert!(!text.contains("Missing required file"), "{text}");
    assert!(
        text.contains("resolves outside the skill directory"),
        "{text}"
    );
}

#[test]
fn the_summary_counts_skills_not_messages() {
    let tmp = tempfile::tempdir().unwrap();
    write_skill(tmp.path(), "good", "good", "Fine", "");
    write_raw(
        tmp.path(),
        "bad",
        "---\nname: Bad_Name\ndescription: ok\nextra: 1\n---\n",
    );
    write_raw(tmp.path(), "worse", "---\nname: worse\n---\n");
    let reports = validate_path(tmp.path(), ValidationMode::Strict);
    let s = summarize(&reports);
    assert_eq!(s.checked, 3, "{reports:#?}");
    assert_eq!(s.valid, 1);
    assert_eq!(s.with_errors, 2);
    assert!(s.errors > 2, "several messages, two skills: {s:?}");
}

#[test]
fn two_thousand_empty_directories_are_said_and_the_skills_found_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(".claude/skills");
    write_skill(
        &root,
        "aaa-first",
        "aaa-first",
        "Found before the bound",
        "",
    );
    for i in 0..2000 {
        std::fs::create_dir_all(root.join(format!("empty-{i:04}"))).unwrap();
    }
    write_skill(&root, "zzz-healthy", "zzz-healthy", "Past the bound", "");

    let d = discover(&DiscoveryConfig::with_paths([&root]));
    assert!(d.get("aaa-first").is_some(), "the skills found are kept");
    let bound: Vec<_> = d
        .diagnostics
        .iter()
        .filter(|x| x.code == DiagnosticCode::ScanTruncated)
        .collect();
    assert_eq!(bound.len(), 1, "{:#?}", d.diagnostics);
    assert_eq!(bound[0].path, root, "the diagnostic names the root");
    assert!(
        bound[0].message.contains("2000"),
        "and the bound: {}",
        bound[0]
    );
    assert_eq!(d.stats.roots_truncated, 1);

    // `skills validate` on that root says so too.
    let reports = validate_path(&root, ValidationMode::Lenient);
    let notes: Vec<_> = reports.iter().filter(|r| !r.skill).collect();
    assert_eq!(notes.len(), 1, "{reports:#?}");
    assert_eq!(notes[0].diagnostics[0].code, DiagnosticCode::ScanTruncated);
    assert!(summarize(&reports).checked >= 1);
}

#[test]
fn the_depth_bound_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = "a/b/c/d/e/f/g/h";
    write_skill(tmp.path(), &format!("{deep}/deep"), "deep", "Too deep", "");
    let d = discover(&DiscoveryConfig::with_paths([tmp.path()]));
    assert!(d.skills.is_empty());
    assert!(
        d.diagnostics
            .iter()
            .any(|x| x.code == DiagnosticCode::ScanTruncated
                && x.message.contains("levels below this root")),
        "{:#?}",
        d.diagnostics
    );
}

#[test]
fn skipped_and_shadowed_skills_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    let second = tmp.path().join("second");
    write_skill(&first, "dup", "dup", "Wins", "");
    write_skill(&second, "dup", "dup", "Shadowed", "");
    write_raw(&first, "broken", "---\nname: broken\n---\n");
    std::fs::create_dir_all(first.join("refused")).unwrap();
    std::fs::write(tmp.path().join("x.md"), SECRET).unwrap();
    symlink(tmp.path().join("x.md"), first.join("refused/SKILL.md")).unwrap();
    let d = discover(&DiscoveryConfig::with_paths([&first, &second]));
    assert_eq!(d.skills.len(), 1);
    assert_eq!(d.stats.skills_skipped, 2, "{:#?}", d.diagnostics);
    assert_eq!(d.stats.skills_shadowed, 1);
}
