//! Property tests of SKILL.md frontmatter: no input panics, it is read in
//! bounded time, and every diagnostic names the file (and a line inside
//! it when it has one).
//!
//! `EXTPOOL_FUZZ_CASES=100000 cargo test -p extpool-skills --test it props`
//! runs a long campaign.

use std::path::Path;
use std::time::{Duration, Instant};

use extpool_skills::{ValidationMode, validate_content};
use proptest::prelude::*;

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("EXTPOOL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const PIECES: &[&str] = &[
    "---\n",
    "---",
    "\n",
    "name: ",
    "description: ",
    "license: ",
    "compatibility: ",
    "allowed-tools: ",
    "metadata:\n",
    "  ",
    "mcp_servers:\n",
    "user-invocable: ",
    "argument-hint: ",
    "arguments: ",
    "always_active: ",
    "x",
    "my-skill",
    "Bad_Name",
    "a: b",
    "[",
    "]",
    "{",
    "}",
    "\"q\"",
    "'q'",
    "|",
    ">",
    "- ",
    "true",
    "1",
    "~",
    "null",
    "&a ",
    "*a",
    "!!binary ",
    "\t",
    "\u{feff}",
    "é",
    "# c",
    "\r\n",
    "...",
    ": ",
    "? ",
];

fn skill_md() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(PIECES), 0..60).prop_map(|p| p.concat().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..300),
        1 => ("[a-z-]{0,70}", "\\PC{0,200}").prop_map(|(n, d)| format!("---\nname: {n}\ndescription: {d}\n---\nbody\n").into_bytes()),
    ]
}

proptest! {
    #![proptest_config(cases(3000))]

    #[test]
    fn frontmatter_is_read_without_panicking(content in skill_md(), strict in any::<bool>(), dir in "[a-z-]{1,12}") {
        let mode = if strict { ValidationMode::Strict } else { ValidationMode::Lenient };
        let path = Path::new("skills/s/SKILL.md");
        let lines = content.split(|&b| b == b'\n').count().max(1);
        let started = Instant::now();
        let report = validate_content(path, &dir, &content, mode);
        prop_assert!(started.elapsed() < Duration::from_secs(10));
        for d in &report.diagnostics {
            prop_assert_eq!(d.path.as_path(), path, "{}", d);
            if let Some(line) = d.line {
                prop_assert!(line >= 1 && line <= lines + 1, "{d}");
            }
        }
        if let Some(meta) = &report.meta {
            prop_assert!(!meta.name.is_empty());
            prop_assert!(report.is_valid() || !strict);
        }
    }
}
