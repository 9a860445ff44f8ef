//! What was found but not loaded is said — once on stderr, and in `list
//! sources` — never just missing: tools a server advertises that the
//! catalog refuses, skills whose SKILL.md has errors, a skill root whose
//! scan stopped at its bound.

use crate::support::{Sandbox, testkit};

#[test]
fn tools_the_catalog_refuses_are_listed_in_sources_and_said_once_on_stderr() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  kit:\n    command: {}\n    args: [--bad-tool-names]\nskills:\n  default_roots: false\n",
            testkit().display()
        ),
    );
    let long = format!("long_{}", "x".repeat(295));
    let r = sb.run(&["list", "tools"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("mcp__kit__echo"), "{}", r.stdout);
    assert!(!r.stdout.contains("long_x"), "{}", r.stdout);
    let control = "warning: MCP server \"kit\": not published: invalid name: name \"bad\\u{1b}[31mname\" contains control character U+001B at byte 3";
    let too_long = format!(
        "warning: MCP server \"kit\": not published: invalid name: name \"{long}\" is 300 bytes, more than the limit of 256"
    );
    let duplicate = "warning: MCP server \"kit\": name \"mcp__kit__echo\" is already taken by \"kit\"; this entry is not published";
    for line in [control, too_long.as_str(), duplicate] {
        assert_eq!(r.stderr.matches(line).count(), 1, "{line}\n{}", r.stderr);
    }
    assert!(!r.stderr.contains('\x1b'), "escaped: {}", r.stderr);

    let r = sb.run(&["list", "sources"]);
    assert!(
        r.stdout.contains("3 advertised names not published"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("Not loaded"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("kit     name \"mcp__kit__echo\" is already taken"),
        "{}",
        r.stdout
    );
    let r = sb.run(&["list", "sources", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let dropped = v[0]["dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 3, "{dropped:?}");
    assert!(
        dropped[1].as_str().unwrap().contains(&long),
        "the name is whole: {dropped:?}"
    );
}

#[test]
fn skills_not_loaded_are_counted_with_where_to_look() {
    let sb = Sandbox::new();
    sb.write(
        "skills/good/SKILL.md",
        "---\nname: good\ndescription: Fine.\n---\nBody\n",
    );
    // Two errors in one skill, one in another: two skills not loaded.
    sb.write(
        "skills/worse/SKILL.md",
        "---\nname: Worse_Name\n---\nBody\n",
    );
    sb.write("skills/bad/SKILL.md", "---\nname: bad\n---\nBody\n");
    sb.write(
        "extpool.yaml",
        "skills:\n  paths: [./skills]\n  default_roots: false\n",
    );
    let r = sb.run(&["list", "skills"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("good"), "{}", r.stdout);
    assert_eq!(
        r.stderr
            .matches("warning: 2 skills in skills not loaded (errors in their SKILL.md); see `extpool skills validate skills`")
            .count(),
        1,
        "{}",
        r.stderr
    );
    let r = sb.run(&["list", "sources"]);
    assert!(
        r.stdout
            .contains("1 skill, 2 not loaded; see `extpool skills validate skills`"),
        "{}",
        r.stdout
    );
    // The rows say the fact; the command is the table's, not the data's.
    let r = sb.run(&["list", "sources", "--json"]);
    assert!(
        r.stdout.contains("\"1 skill, 2 not loaded\""),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("extpool skills validate"),
        "{}",
        r.stdout
    );
    // The summary counts skills, not messages.
    let r = sb.run(&["skills", "validate", "--strict", "skills"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("3 skills checked (strict mode): 1 valid, 2 with errors"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.matches(": error: ").count() > 2,
        "more messages than skills: {}",
        r.stdout
    );
    // A missing file of a healthy skill names the skill and its file.
    let r = sb.run(&["read", "skill://good/missing.md"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "skill \"good\" has no file \"missing.md\" (from skill://good/missing.md); its instructions are skill://good/SKILL.md"
        ),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("known skills"), "{}", r.stderr);
}

#[test]
fn a_skill_root_past_its_directory_bound_is_said_and_its_skills_kept() {
    let sb = Sandbox::new();
    sb.write(
        "skills/aaa/SKILL.md",
        "---\nname: aaa\ndescription: Found.\n---\nBody\n",
    );
    for i in 0..2000 {
        std::fs::create_dir_all(sb.work().join(format!("skills/empty-{i:04}"))).unwrap();
    }
    sb.write(
        "extpool.yaml",
        "skills:\n  paths: [./skills]\n  default_roots: false\n",
    );
    let r = sb.run(&["list", "skills"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr
            .matches("skills: warning: skills scan truncated: this root has more than 2000 directories (the limit)")
            .count(),
        1,
        "{}",
        r.stderr
    );
    let r = sb.run(&["list", "sources"]);
    assert!(
        r.stdout.contains("; scan stopped at a bound"),
        "{}",
        r.stdout
    );
}

#[test]
fn skills_validate_refuses_a_skill_md_linked_out_of_the_tree_without_quoting_it() {
    // `skills validate PATH` applies discovery's confinement: a SKILL.md
    // that is a symlink out of its skill is refused, and what it points at
    // is never shown.
    let sb = Sandbox::new();
    sb.write(
        "outside.md",
        "---\nname: leak\ndescription: TOP SECRET\n---\nTOP SECRET body\n",
    );
    std::fs::create_dir_all(sb.work().join("skills/leak")).unwrap();
    std::os::unix::fs::symlink(
        sb.work().join("outside.md"),
        sb.work().join("skills/leak/SKILL.md"),
    )
    .unwrap();
    for target in ["skills", "skills/leak", "skills/leak/SKILL.md"] {
        let r = sb.run(&["skills", "validate", target]);
        assert_eq!(r.code, 1, "{target}: {}\n{}", r.stdout, r.stderr);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(!all.contains("TOP SECRET"), "{target}: {all}");
        assert!(
            all.contains("SKILL.md is a symbolic link that resolves outside the skill directory"),
            "{target}: {all}"
        );
    }
}

#[test]
fn a_failing_servers_stderr_is_shown_with_what_extpool_passed_it_masked() {
    // The server echoes the values it was given (an env value and a
    // `${VAR}` argument) to stderr and exits: extpool shows its stderr
    // (overview, list sources, -v logs) with those values masked.
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let script = sb.write(
        "leaky.sh",
        "#!/bin/sh\necho \"bad key $API_KEY for $1\" >&2\nexit 1\n",
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    sb.write(
        "extpool.yaml",
        "mcp_servers:\n  leaky:\n    command: ./leaky.sh\n    args: [\"--arg=${LEAKY_ARG}\"]\n    env:\n      API_KEY: ${LEAKY_KEY}\nskills:\n  default_roots: false\n",
    );
    let env = [("LEAKY_KEY", "k3y-v4lue-0123"), ("LEAKY_ARG", "v4r-s3cr3t")];
    for args in [
        &["-v"][..],
        &["list", "sources"][..],
        &["list", "sources", "--json"][..],
    ] {
        let r = sb.run_with(args, &env);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(all.contains("bad key *** for --arg=***"), "{args:?}: {all}");
        for (_, secret) in env {
            assert!(!all.contains(secret), "{args:?}: {all}");
        }
    }
}

#[test]
fn an_oversized_or_too_deep_answer_is_said_at_once_not_as_a_timeout() {
    let sb = Sandbox::new();
    sb.testkit_config(
        "    max_message_bytes: 1048576\n    request_timeout_ms: 600000\nskills:\n  default_roots: false\n",
    );
    let r = sb.run(&["call", "mcp__testkit__large_text", "bytes=3145728"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains(
            "MCP server \"testkit\" sent a message of more than 1.0 MiB in answer to tools/call; the limit is 1.0 MiB (`max_message_bytes` in the server's config)"
        ),
        "{}",
        r.stderr
    );
    let r = sb.run(&["call", "mcp__testkit__nested", "depth=10000"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains(
            "MCP server \"testkit\" sent a message nested more than 127 levels deep in answer to tools/call; it cannot be read"
        ),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("timed out"), "{}", r.stderr);
}
