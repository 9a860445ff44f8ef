//! What a new user meets first: the repository's example skills valid
//! under `skills validate --strict`, printed hints spelled as the user ran
//! extpool (`extpool …` or `cargo run -p extpool -- …`), and counts that
//! agree between the overview and the listings.

use std::process::Command;

use serde_json::Value;

use crate::support::{Sandbox, repo_root, run, testkit};

#[test]
fn the_example_skills_are_valid_under_strict_validation() {
    let sb = Sandbox::new();
    let skills = repo_root().join("examples/quickstart/skills");
    let r = sb.run(&["skills", "validate", "--strict", skills.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("3 valid, 0 with errors"), "{}", r.stderr);
}

#[test]
fn hints_are_spelled_as_extpool_was_run() {
    let sb = Sandbox::new();
    let direct = sb.run(&["list", "servers"]);
    assert!(
        direct.stdout.contains("(see `extpool config paths`")
            && direct.stdout.contains("`extpool mcp add` adds one"),
        "{}",
        direct.stdout
    );
    // The same through cargo from a shell, as the README's first line
    // runs it (cargo replaces itself with extpool; the shell has none of
    // the variables cargo sets).
    let mut cargo = Command::new("sh");
    cargo
        .args([
            "-c",
            "\"$0\" run -q --manifest-path \"$1\" -p extpool -- list servers; exit $?",
        ])
        .arg(env!("CARGO"))
        .arg(repo_root().join("Cargo.toml"))
        .current_dir(sb.work())
        .env("HOME", sb.home())
        .env("XDG_CONFIG_HOME", sb.home().join(".config"))
        .env("NO_COLOR", "1");
    // What cargo sets for the program it runs (cargo's own settings,
    // CARGO_HOME, CARGO_TARGET_DIR, stay).
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        let set_by_cargo = key == "CARGO"
            || [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
                "CARGO_PRIMARY_",
                "CARGO_TARGET_TMPDIR",
            ]
            .iter()
            .any(|p| key_text.starts_with(p));
        if set_by_cargo {
            cargo.env_remove(key);
        }
    }
    let through = run(cargo);
    assert_eq!(through.code, 0, "{}", through.stderr);
    assert!(
        through
            .stdout
            .contains("(see `cargo run -p extpool -- config paths`")
            && through
                .stdout
                .contains("`cargo run -p extpool -- mcp add` adds one"),
        "{}",
        through.stdout
    );
}

/// The number in `Label: N …` of the overview.
fn count_after(text: &str, label: &str) -> usize {
    let line = text
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label} line: {text}"));
    line[label.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn json_len(sb: &Sandbox, args: &[&str]) -> usize {
    let r = sb.run(args);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn counts_agree_between_the_overview_and_the_listings() {
    let sb = Sandbox::new();
    let skills = repo_root().join("examples/quickstart/skills");
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  testkit:\n    command: {:?}\nskills:\n  default_roots: false\n  paths: [{:?}]\n",
            testkit().display().to_string(),
            skills.display().to_string()
        ),
    );
    let overview = sb.run(&[]);
    assert_eq!(overview.code, 0, "{}", overview.stderr);
    let tools = count_after(&overview.stdout, "Tools: ");
    let skills_counted = count_after(&overview.stdout, "Skills: ");
    assert_eq!(
        tools,
        json_len(&sb, &["--json", "list", "tools"]),
        "{}",
        overview.stdout
    );
    assert_eq!(
        skills_counted,
        json_len(&sb, &["--json", "list", "skills", "--hosted"]),
        "{}",
        overview.stdout
    );
    // Each part is labelled: the local skills are what `list skills` shows.
    let local = json_len(&sb, &["--json", "list", "skills"]);
    assert!(
        overview.stdout.contains(&format!("({local} local, ")),
        "{}",
        overview.stdout
    );
}
