//! The README's commands, run literally from the repository root.

use std::process::Command;

use crate::support::{Sandbox, repo_root, run};

/// `cargo run --release -p extpool -- --config examples/quickstart/extpool.yaml`
#[test]
fn the_quickstart_command_line_runs() {
    let sb = Sandbox::new();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(repo_root())
        .args([
            "run",
            "--release",
            "-p",
            "extpool",
            "--",
            "--config",
            "examples/quickstart/extpool.yaml",
        ])
        .env("HOME", sb.home())
        .env("NO_COLOR", "1");
    let r = run(cmd);
    assert_eq!(r.code, 0, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("✓ testkit"), "{}", r.stdout);
    for skill in ["release-notes", "code-review", "commit-message"] {
        assert!(r.stdout.contains(skill), "{skill}: {}", r.stdout);
    }
    assert!(
        r.stdout.contains("extpool run /release-notes v1.2.0"),
        "{}",
        r.stdout
    );

    // The commands it suggests work on the same config.
    let exe = repo_root().join("target/release/extpool");
    let exe = if exe.is_file() {
        exe
    } else {
        env!("CARGO_BIN_EXE_extpool").into()
    };
    let q = |args: &[&str]| {
        let mut c = Command::new(&exe);
        c.current_dir(repo_root())
            .env("HOME", sb.home())
            .args(["--config", "examples/quickstart/extpool.yaml"])
            .args(args);
        run(c)
    };
    let r = q(&["run", "/release-notes", "v1.2.0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("# Release notes for v1.2.0"),
        "{}",
        r.stdout
    );
    let r = q(&["call", "mcp__testkit__add", "a=2", "b=3"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "5\n"), "{}", r.stderr);
    let r = q(&["read", "skill://release-notes/references/format.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = q(&["list", "tools", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("\"mcp__testkit__echo\""), "{}", r.stdout);
    assert!(
        !r.stdout.contains("mcp__testkit__crash"),
        "denied by the quickstart's permissions: {}",
        r.stdout
    );
}

/// `cargo run --release -p extpool` on a machine with no configuration.
#[test]
fn the_first_readme_command_runs_without_configuration() {
    let sb = Sandbox::new();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(repo_root())
        .args(["run", "--release", "-p", "extpool"])
        .env("HOME", sb.home())
        .env("NO_COLOR", "1");
    let r = run(cmd);
    assert_eq!(r.code, 0, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Try next"), "{}", r.stdout);
}
