//! The fixture corpus (`tests/fixtures/corpus`, expectations in
//! `tests/fixtures/corpus.tsv`) through our strict and lenient modes and
//! through the reference validator, `agentskills validate` (skills-ref 0.1.1).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use extpool_skills::{DiscoveryConfig, ValidationMode, discover, validate_path, validate_paths};

use crate::support::{agentskills, fixtures};

#[derive(Debug)]
struct Case {
    name: String,
    dir: PathBuf,
    strict_valid: bool,
    skills_ref_valid: bool,
    lenient_loaded: bool,
    note: String,
}

fn cases() -> Vec<Case> {
    let table = std::fs::read_to_string(fixtures().join("corpus.tsv")).unwrap();
    let cases: Vec<Case> = table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert!(cols.len() >= 4, "bad corpus.tsv line: {l:?}");
            Case {
                name: cols[0].to_owned(),
                dir: fixtures().join("corpus").join(cols[0]),
                strict_valid: cols[1] == "valid",
                skills_ref_valid: cols[2] == "valid",
                lenient_loaded: cols[3] == "loaded",
                note: cols.get(4).copied().unwrap_or_default().to_owned(),
            }
        })
        .collect();
    for c in &cases {
        assert!(c.dir.is_dir(), "fixture {} is missing", c.dir.display());
    }
    cases
}

/// `agentskills validate` on every case (in parallel): exit status and the
/// `  - message` lines it printed.
fn run_reference(cases: &[Case]) -> Vec<(bool, Vec<String>)> {
    let bin = agentskills();
    let children: Vec<_> = cases
        .iter()
        .map(|c| {
            Command::new(&bin)
                .arg("validate")
                .arg(&c.dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()))
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout);
            let messages = text
                .lines()
                .filter_map(|l| l.strip_prefix("  - "))
                .map(str::to_owned)
                .collect();
            (out.status.success(), messages)
        })
        .collect()
}

#[test]
fn strict_verdicts_agree_with_skills_ref() {
    let cases = cases();
    let reference = run_reference(&cases);
    let mut agreed = 0;
    let mut divergent = 0;
    for (case, (ref_valid, ref_messages)) in cases.iter().zip(&reference) {
        let reports = validate_path(&case.dir, ValidationMode::Strict);
        let ours: Vec<String> = reports
            .iter()
            .flat_map(|r| &r.diagnostics)
            .filter(|d| d.is_error())
            .map(|d| d.message.clone())
            .collect();
        let our_valid = ours.is_empty();
        assert_eq!(
            our_valid, case.strict_valid,
            "{}: our strict verdict changed; errors: {ours:?}",
            case.name
        );
        assert_eq!(
            *ref_valid, case.skills_ref_valid,
            "{}: skills-ref's verdict is not the documented one; it said {ref_messages:?}",
            case.name
        );
        if case.strict_valid != case.skills_ref_valid {
            assert!(
                !case.note.is_empty(),
                "{}: a divergence from skills-ref must be explained in corpus.tsv",
                case.name
            );
            divergent += 1;
            continue;
        }
        agreed += 1;
        // Same messages, except the YAML parser's own wording.
        for theirs in ref_messages {
            let prefix = if theirs.starts_with("Invalid YAML in frontmatter:") {
                "Invalid YAML in frontmatter:"
            } else {
                theirs.as_str()
            };
            assert!(
                ours.iter().any(|m| m.starts_with(prefix)),
                "{}: skills-ref says {theirs:?}; we say {ours:?}",
                case.name
            );
        }
    }
    assert!(agreed >= 50, "only {agreed} agreeing cases");
    assert!(divergent <= 7, "{divergent} divergent cases");
}

#[test]
fn lenient_loads_or_skips_as_documented() {
    for case in cases() {
        let reports = validate_path(&case.dir, ValidationMode::Lenient);
        let loaded = reports.iter().any(|r| r.meta.is_some());
        let diagnostics: Vec<String> = reports
            .iter()
            .flat_map(|r| &r.diagnostics)
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            loaded, case.lenient_loaded,
            "{}: lenient outcome; diagnostics: {diagnostics:?}",
            case.name
        );
        // Skipping is always explained by an error.
        if !loaded {
            assert!(
                reports
                    .iter()
                    .flat_map(|r| &r.diagnostics)
                    .any(|d| d.is_error()),
                "{}: skipped without an error",
                case.name
            );
        }
    }
}

#[test]
fn one_broken_skill_never_hides_the_others() {
    let cases = cases();
    let discovery = discover(&DiscoveryConfig::with_paths([fixtures().join("corpus")]));
    let expected = cases
        .iter()
        .filter(|c| c.lenient_loaded && c.name != "missing-skill-md")
        .count();
    assert_eq!(
        discovery.skills.len(),
        expected,
        "loaded: {:?}",
        discovery
            .skills
            .iter()
            .map(|s| s.name().to_owned())
            .collect::<Vec<_>>()
    );
    for case in cases
        .iter()
        .filter(|c| !c.lenient_loaded && c.name != "missing-skill-md")
    {
        assert!(
            discovery
                .diagnostics
                .iter()
                .any(|d| d.is_error() && d.path.starts_with(&case.dir)),
            "{}: no error reported for a skipped skill",
            case.name
        );
    }
    // Host fields are understood in lenient mode.
    let cc = discovery.get("claude-code-fields").unwrap();
    assert!(cc.meta.disable_model_invocation);
    assert_eq!(cc.meta.argument_hint.as_deref(), Some("[file]"));
    // Without a name, the directory's name is used.
    assert!(discovery.get("missing-name").is_some());
    assert!(discovery.get("other-name").is_some());
}

#[test]
fn diagnostics_print_file_and_line() {
    let dir = fixtures().join("corpus/Uppercase-Name");
    let printed: Vec<String> = validate_paths(&[&dir], ValidationMode::Strict)
        .iter()
        .map(ToString::to_string)
        .collect();
    let file = dir.join("SKILL.md");
    assert_eq!(
        printed,
        [format!(
            "{}:2: Skill name 'Uppercase-Name' must be lowercase",
            file.display()
        )]
    );
    let dir = fixtures().join("corpus/unexpected-field");
    let printed: Vec<String> = validate_paths(&[&dir], ValidationMode::Strict)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(printed.len(), 1);
    assert!(
        printed[0].starts_with(&format!(
            "{}:4: Unexpected fields in frontmatter: author.",
            dir.join("SKILL.md").display()
        )),
        "{printed:?}"
    );
    // A missing path is a diagnostic too.
    let missing = fixtures().join("corpus/does-not-exist");
    let d = validate_paths(&[&missing], ValidationMode::Strict);
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].message,
        format!("Path does not exist: {}", missing.display())
    );
}

#[test]
fn a_directory_of_skills_is_validated_skill_by_skill() {
    let diagnostics = validate_paths(&[fixtures().join("corpus")], ValidationMode::Strict);
    let invalid = cases()
        .iter()
        .filter(|c| !c.strict_valid && c.name != "missing-skill-md")
        .count();
    let mut files: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.path.clone())
        .collect();
    files.sort();
    files.dedup();
    assert_eq!(files.len(), invalid, "{files:?}");
}
