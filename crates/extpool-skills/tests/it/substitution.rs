//! Slash-command argument substitution, directly and through `get_command`.

use extpool_core::{CommandResource, ExtensionError};
use extpool_skills::args::{split_args, substitute, substitute_raw};
use extpool_skills::{DiscoveryConfig, SkillManagerCap};

use crate::support::write_raw;

fn a(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn whole_argument_string() {
    assert_eq!(
        substitute(
            "Fix issue $ARGUMENTS now",
            &a(&["123", "urgent"]),
            &[],
            None
        ),
        "Fix issue 123 urgent now"
    );
    // As typed: quotes kept in $ARGUMENTS, removed in positions.
    assert_eq!(
        substitute_raw("[$ARGUMENTS] [$1]", r#"foo "hello world""#, &[], None),
        r#"[foo "hello world"] [hello world]"#
    );
}

#[test]
fn indexed_and_positional_are_zero_based() {
    let args = a(&["first", "second"]);
    assert_eq!(
        substitute(
            "$ARGUMENTS[0]/$ARGUMENTS[1]/$ARGUMENTS[2]|",
            &args,
            &[],
            None
        ),
        "first/second/|"
    );
    assert_eq!(
        substitute("$0 then $1, not $2.", &args, &[], None),
        "first then second, not ."
    );
    // Followed by a word character: not a placeholder.
    assert_eq!(substitute("$0x $1_ $1", &args, &[], None), "$0x $1_ second");
    // Multi-digit indices.
    let many: Vec<String> = (0..12).map(|i| format!("v{i}")).collect();
    assert_eq!(
        substitute("$11 $ARGUMENTS[10]", &many, &[], None),
        "v11 v10"
    );
}

#[test]
fn named_arguments() {
    let named = a(&["issue", "branch"]);
    assert_eq!(
        substitute(
            "Issue $issue on $branch ($issue)",
            &a(&["42", "main"]),
            &named,
            None
        ),
        "Issue 42 on main (42)"
    );
    // Missing → empty; followed by a word char or `[` → untouched.
    assert_eq!(
        substitute("[$branch] $issues $issue[0]", &a(&["42"]), &named, None),
        "[] $issues $issue[0]"
    );
    // Longest name first.
    assert_eq!(
        substitute(
            "$file $file_name",
            &a(&["a", "b"]),
            &a(&["file", "file_name"]),
            None
        ),
        "a b"
    );
}

#[test]
fn arguments_are_appended_when_there_is_no_placeholder() {
    assert_eq!(
        substitute(
            "Review the code.",
            &a(&["src/main.rs", "carefully"]),
            &[],
            None
        ),
        "Review the code.\n\nARGUMENTS: src/main.rs carefully"
    );
    // No arguments: nothing appended, placeholders emptied.
    assert_eq!(
        substitute("Review the code.", &[], &[], None),
        "Review the code."
    );
    assert_eq!(
        substitute("Do [$ARGUMENTS] [$0]", &[], &[], None),
        "Do [] []"
    );
    // The skill directory is not an argument placeholder.
    assert_eq!(
        substitute("Run ${CLAUDE_SKILL_DIR}/x.sh", &a(&["y"]), &[], Some("/s")),
        "Run /s/x.sh\n\nARGUMENTS: y"
    );
}

#[test]
fn substituted_text_is_never_substituted_again() {
    assert_eq!(
        substitute("A=$0 B=$1", &a(&["$1", "$ARGUMENTS"]), &[], None),
        "A=$1 B=$ARGUMENTS"
    );
    assert_eq!(substitute("cost: $5 $", &[], &[], None), "cost:  $");
    assert_eq!(substitute("$$ $ARGUMENTSX", &a(&["z"]), &[], None), "$$ zX");
}

#[test]
fn shell_splitting() {
    assert_eq!(
        split_args(r#"one 'two three' "four \"five\"" six\ seven $HOME"#),
        a(&["one", "two three", "four \"five\"", "six seven", "$HOME"])
    );
}

#[tokio::test]
async fn commands_render_skills_and_never_run_shell() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    let body = format!(
        "Fix issue $issue in ${{CLAUDE_SKILL_DIR}}.\n\n!`touch {m}`\n\n```!\ntouch {m}\n```\n",
        m = marker.display()
    );
    write_raw(
        tmp.path(),
        "fix",
        &format!(
            "---\nname: fix\ndescription: Fix an issue\narguments: issue\nargument-hint: \"[issue]\"\n---\n{body}"
        ),
    );
    write_raw(
        tmp.path(),
        "hidden",
        "---\nname: hidden\ndescription: Model only\nuser-invocable: false\n---\nx\n",
    );
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([tmp.path()]))
        .watch(false)
        .build()
        .unwrap();
    let commands = cap.list_commands().await.unwrap();
    assert_eq!(commands.len(), 1);
    assert_eq!(commands[0].name, "fix");
    assert_eq!(commands[0].argument_hint.as_deref(), Some("[issue]"));
    assert_eq!(commands[0].arguments[0].name, "issue");

    let dir = tmp.path().join("fix");
    let out = cap.get_command("fix", &a(&["123"])).await.unwrap();
    assert_eq!(
        out,
        format!(
            "Base directory for this skill: {d}\n\nFix issue 123 in {d}.\n\n!`touch {m}`\n\n```!\ntouch {m}\n```",
            d = dir.display(),
            m = marker.display()
        )
    );
    assert!(!marker.exists(), "a shell block was executed");
    assert!(matches!(
        cap.get_command("hidden", &[]).await,
        Err(ExtensionError::NotFound { .. })
    ));
    assert!(matches!(
        cap.get_command("nope", &[]).await,
        Err(ExtensionError::NotFound { .. })
    ));
}
