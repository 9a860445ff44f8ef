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
