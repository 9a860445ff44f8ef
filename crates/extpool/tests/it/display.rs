//! What extpool shows people never carries a control character from
//! outside: ESC sequences and bidirectional overrides in skill
//! descriptions, server failures and tool errors are shown escaped
//! (`\x1b`, `\u{202e}`); a tool's result sent to a pipe stays exact.

use crate::support::Sandbox;

const ESC: char = '\u{1b}';
const RLO: char = '\u{202e}';

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write(
        "skills/esc/SKILL.md",
        "---\nname: esc\ndescription: \"red \\e[31mALERT\\e[0m and \\u202Eevil\"\n---\nbody\n",
    );
    sb.testkit_config(
        "  broken:\n    command: \"./bad\\e]0;pwned\\a\"\nskills:\n  paths: [./skills]\n  default_roots: false\n",
    );
    sb
}

fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.contains(ESC) && !text.contains(RLO) && !text.contains('\u{7}'),
        "{what} carries a raw control character: {text:?}"
    );
}

#[test]
fn skill_descriptions_are_shown_escaped_in_tables_and_the_overview() {
    let sb = sandbox();
    let r = sb.run(&["list", "skills"]);
    assert_clean("list skills", &r.stdout);
    assert!(
        r.stdout
            .contains(r"red \x1b[31mALERT\x1b[0m and \u{202e}evil"),
        "{}",
        r.stdout
    );
    let r = sb.run(&[]);
    assert_clean("the overview", &r.stdout);
    assert_clean("the status lines", &r.stderr);
    assert!(r.stdout.contains(r"red \x1b[31mALERT"), "{}", r.stdout);
    assert!(r.stderr.contains("]0;pwned"), "{}", r.stderr);
}

#[test]
fn tool_errors_are_shown_escaped_and_piped_results_stay_exact() {
    let sb = sandbox();
    let r = sb.run(&[
        "call",
        "mcp__testkit__fail",
        &format!("message={ESC}[2Jboom"),
    ]);
    assert_eq!(r.code, 1);
    assert_clean("a tool's error", &r.stderr);
    assert!(r.stderr.contains(r"\x1b[2Jboom"), "{}", r.stderr);
    let r = sb.run(&[
        "call",
        "mcp__testkit__echo",
        &format!("message={ESC}[1mraw"),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, format!("{ESC}[1mraw\n"), "a pipe gets the bytes");
}

#[test]
fn a_servers_stderr_in_the_logs_is_shown_escaped() {
    // `-vv` logs what a server writes to stderr: its control characters
    // reach the terminal escaped, and a log sent to a pipe has no colour.
    let sb = sandbox();
    let r = sb.run(&[
        "-vv",
        "call",
        "mcp__testkit__stderr",
        &format!("message=left\r{ESC}]0;pwned\u{7}{RLO}evil"),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_clean("the logs", &r.stderr);
    assert!(!r.stderr.contains('\r'), "{:?}", r.stderr);
    let logged = r"left\x0d\x1b]0;pwned\x07\u{202e}evil";
    assert!(
        r.stderr
            .lines()
            .any(|l| l.contains("testkit") && l.contains(logged)),
        "{}",
        r.stderr
    );
}

#[test]
fn a_servers_long_stderr_line_is_logged_cut() {
    let sb = sandbox();
    let long = "y".repeat(100_000);
    let r = sb.run(&[
        "-vv",
        "call",
        "mcp__testkit__stderr",
        &format!("message={long}"),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let logged = r
        .stderr
        .lines()
        .find(|l| l.contains("yyyy…") && l.contains("(cut at 8192 bytes)"))
        .unwrap_or_else(|| {
            panic!(
                "no cut stderr line in:\n{}",
                r.stderr.chars().take(4096).collect::<String>()
            )
        });
    assert!(logged.len() < 8192 + 512, "{} bytes", logged.len());
}
