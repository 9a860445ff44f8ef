//! A running gateway's servers from the command line, through the binary
//! against `extpool serve`: `tools disable | enable` (a deny rule in
//! extpool.yaml that the gateway's configuration watcher applies).

use crate::support::Sandbox;

#[test]
fn tools_disable_works_without_a_gateway_and_refuses_a_bad_name() {
    let sb = Sandbox::new();
    let path = sb.write("extpool.yaml", "skills:\n  default_roots: false\n");
    let out = sb.run(&["--json", "tools", "disable", "mcp__x__*"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let answer: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(answer["outcome"], "disabled", "{answer}");
    assert!(
        answer["file"].as_str().unwrap().ends_with("extpool.yaml"),
        "{answer}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.ends_with("permissions:\n  deny:\n  - mcp__x__*\n"),
        "{text}"
    );
    let missing = sb.run(&["tools", "enable", "mcp__y__z"]);
    assert_eq!(missing.code, 0, "{}", missing.stderr);
    assert!(
        missing.stdout.contains("not in permissions.deny"),
        "{}",
        missing.stdout
    );
    let bad = sb.run(&["tools", "disable", "two words"]);
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains("no spaces"), "{}", bad.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}
