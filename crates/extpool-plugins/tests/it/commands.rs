//! Every host's command folders as one command source, through `discover`
//! and `LocalCommandSource`: names and namespaces, precedence and
//! shadowing, each host's argument rules, bad files located.

use extpool_core::CommandResource;
use extpool_plugins::{CommandOrigin, DiscoverRequest, Severity, discover};

use crate::support::write;

struct Home {
    _tmp: tempfile::TempDir,
    home: std::path::PathBuf,
    project: std::path::PathBuf,
}

fn home() -> Home {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let project = tmp.path().join("work/repo");
    std::fs::create_dir_all(&home).expect("mkdir");
    std::fs::create_dir_all(project.join(".git")).expect("mkdir");
    Home {
        _tmp: tmp,
        home,
        project,
    }
}

#[tokio::test]
async fn command_folders_of_every_host_are_one_source() {
    let h = home();
    write(
        &h.project,
        ".claude/commands/review.md",
        "---\ndescription: Project review\nargument-hint: [file]\n---\nReview $0 ($ARGUMENTS).\n",
    );
    write(
        &h.project,
        ".claude/commands/frontend/test.md",
        "Run the frontend tests for $0.\n",
    );
    write(
        &h.home,
        ".claude/commands/review.md",
        "---\ndescription: User review\n---\nUser review.\n",
    );
    write(&h.home, ".claude/commands/mine.md", "Mine: $ARGUMENTS\n");
    write(
        &h.home,
        ".codex/prompts/draftpr.md",
        "---\ndescription: Draft a PR\nargument-hint: FILES=<paths> PR_TITLE=\"<title>\"\n---\nStage $FILES and open a PR titled $PR_TITLE.\n",
    );
    write(
        &h.home,
        ".codex/prompts/fix.md",
        "Fix $1 then $2; all: $ARGUMENTS; cost $$5\n",
    );
    write(
        &h.home,
        ".codex/prompts/nested/ignored.md",
        "Codex reads only the folder's own files.\n",
    );
    write(
        &h.project,
        ".gemini/commands/git/commit.toml",
        "description = \"Commit\"\nprompt = \"Commit: {{args}}\"\n",
    );
    write(
        &h.home,
        ".gemini/commands/plan.toml",
        "prompt = \"Plan the work.\"\n",
    );
    let found = discover(&DiscoverRequest::new(
        &h.home,
        Some(h.project.clone()),
        h.home.join("data"),
    ));
    let names: Vec<_> = found.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "frontend:test",
            "review",
            "git:commit",
            "mine",
            "prompts:draftpr",
            "prompts:fix",
            "plan"
        ]
    );
    let review = &found.commands[1];
    assert_eq!(review.origin, CommandOrigin::Project);
    assert_eq!(review.description, "Project review");
    let shadowed: Vec<_> = found
        .diagnostics
        .iter()
        .filter(|d| d.kind.code() == "shadowed")
        .collect();
    assert_eq!(shadowed.len(), 1, "{:?}", found.diagnostics);
    assert!(shadowed[0].path.ends_with(".claude/commands/review.md"));
    assert!(shadowed[0].path.starts_with(&h.home));
    assert_eq!(shadowed[0].severity, Severity::Warning);

    let source = found.command_source("commands");
    let render = |name: &'static str, args: &[&str]| {
        let source = source.clone();
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        async move { source.get_command(name, &args).await }
    };
    assert_eq!(
        render("review", &["a.rs"]).await.unwrap(),
        "Review a.rs (a.rs)."
    );
    assert_eq!(
        render("frontend:test", &[]).await.unwrap(),
        "Run the frontend tests for ."
    );
    assert_eq!(render("mine", &["x y"]).await.unwrap(), "Mine: \"x y\"");
    assert_eq!(
        render("prompts:fix", &["a", "b", "c"]).await.unwrap(),
        "Fix a then b; all: a b c; cost $$5"
    );
    assert_eq!(
        render("prompts:draftpr", &["FILES=src/", "PR_TITLE=Tidy up"])
            .await
            .unwrap(),
        "Stage src/ and open a PR titled Tidy up."
    );
    let err = render("prompts:draftpr", &["src/"]).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("expected KEY=value but found \"src/\""),
        "{err}"
    );
    assert_eq!(
        render("git:commit", &["fix", "typo"]).await.unwrap(),
        "Commit: fix typo"
    );
    assert_eq!(render("plan", &[]).await.unwrap(), "Plan the work.");
    let listed = source.list_commands().await.unwrap();
    assert_eq!(listed.len(), 7);
    assert_eq!(listed[1].argument_hint.as_deref(), Some("[file]"));
}

#[test]
fn a_bad_command_file_is_skipped_with_a_located_message() {
    let h = home();
    write(
        &h.project,
        ".gemini/commands/bad.toml",
        "description = \"x\"\nprompt = \n",
    );
    write(
        &h.project,
        ".gemini/commands/noprompt.toml",
        "description = \"x\"\n",
    );
    write(
        &h.project,
        ".gemini/commands/typed.toml",
        "description = \"x\"\nprompt = 3\n",
    );
    write(
        &h.project,
        ".claude/commands/yaml.md",
        "---\ndescription: \"unterminated\nmodel: x\n---\nBody\n",
    );
    write(&h.project, ".claude/commands/ok.md", "Fine.\n");
    std::fs::write(
        h.project.join(".claude/commands/binary.md"),
        b"ok\n\xff\xfe",
    )
    .unwrap();
    let found = discover(&DiscoverRequest::new(
        &h.home,
        Some(h.project.clone()),
        h.home.join("data"),
    ));
    let names: Vec<_> = found.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ok"]);
    let text: Vec<String> = found.diagnostics.iter().map(ToString::to_string).collect();
    let line = |file: &str| {
        found
            .diagnostics
            .iter()
            .find(|d| d.path.ends_with(file))
            .unwrap_or_else(|| panic!("{file} in {text:?}"))
    };
    assert_eq!(line("bad.toml").line, Some(2), "{text:?}");
    assert!(
        line("bad.toml").message.contains("invalid TOML"),
        "{text:?}"
    );
    assert_eq!(line("typed.toml").line, Some(2));
    assert!(
        line("noprompt.toml")
            .message
            .contains("'prompt' field is required")
    );
    assert_eq!(line("yaml.md").line, Some(2), "{text:?}");
    assert_eq!(line("binary.md").line, Some(2), "{text:?}");
    for d in &found.diagnostics {
        assert_eq!(d.kind.code(), "command-skipped", "{d}");
    }
}

#[test]
fn command_folders_are_bounded_in_depth_and_count() {
    let h = home();
    let deep = (1..=8)
        .map(|i| format!("d{i}"))
        .collect::<Vec<_>>()
        .join("/");
    write(
        &h.project,
        &format!(".claude/commands/{deep}/too-deep.md"),
        "x\n",
    );
    write(&h.project, ".claude/commands/d1/d2/fine.md", "x\n");
    for i in 0..12 {
        write(&h.home, &format!(".claude/commands/c{i:02}.md"), "x\n");
    }
    let mut req = DiscoverRequest::new(&h.home, Some(h.project.clone()), h.home.join("data"));
    req.limits.max_commands_per_folder = 10;
    let found = discover(&req);
    let names: Vec<_> = found.commands.iter().map(|c| c.name.clone()).collect();
    assert!(names.contains(&"d1:d2:fine".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with("too-deep")), "{names:?}");
    assert_eq!(names.iter().filter(|n| n.starts_with('c')).count(), 10);
    let bounds: Vec<String> = found
        .diagnostics
        .iter()
        .filter(|d| d.kind.code() == "bound")
        .map(ToString::to_string)
        .collect();
    assert!(
        bounds
            .iter()
            .any(|b| b.contains("deeper than 6 folder levels")),
        "{bounds:?}"
    );
    assert!(
        bounds
            .iter()
            .any(|b| b.contains("more than 10 command files")),
        "{bounds:?}"
    );
}
