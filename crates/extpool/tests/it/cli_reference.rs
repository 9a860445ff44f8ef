//! The book's command-line reference (`docs/src/reference/cli.md`) is the
//! binary's own `--help`, command by command: this test renders it from
//! the real `extpool` (the root's `--help`, then each command's, down the
//! tree) and fails when the checked-in page differs, so the page cannot
//! drift from the command line. `EXTPOOL_BLESS=1` writes the page instead.

use std::process::Command;

use crate::support::repo_root;

/// The page, from the repository's root.
const PAGE: &str = "docs/src/reference/cli.md";

/// How to write the page again.
const REGENERATE: &str = "EXTPOOL_BLESS=1 cargo test -p extpool --test it cli_reference";

/// Deepest command path followed, and most commands rendered: bounds on
/// a walk of the binary's own output.
const MAX_DEPTH: usize = 6;
const MAX_COMMANDS: usize = 500;

/// `extpool PATH… --help`, as a person reads it, whatever this machine's
/// environment: no `EXTPOOL_*` variable (clap shows their values beside
/// the flags they set), no colour, a home and working directory of its
/// own.
fn help(path: &[String]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_extpool"))
        .args(path)
        .arg("--help")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "extpool {} --help failed: {}",
        path.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim_end().to_owned()
}

/// The commands a help text lists under `Commands:` (clap's `help`
/// left out: it prints what `--help` does).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.strip_prefix("  "))
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command's path and help, the root first, each command followed
/// by its own commands (depth first, in the order `--help` lists them).
fn walk() -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut stack = vec![Vec::<String>::new()];
    while let Some(path) = stack.pop() {
        assert!(
            out.len() < MAX_COMMANDS,
            "more than {MAX_COMMANDS} commands"
        );
        let text = help(&path);
        if path.len() < MAX_DEPTH {
            for name in subcommands(&text).into_iter().rev() {
                let mut child = path.clone();
                child.push(name);
                stack.push(child);
            }
        }
        out.push((path, text));
    }
    out
}

/// The heading's anchor as mdBook makes it (`extpool api-keys create` →
/// `extpool-api-keys-create`).
fn anchor(title: &str) -> String {
    title
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// The page: an index of every command, then each one's help.
fn render(commands: &[(Vec<String>, String)]) -> String {
    let mut page = format!(
        "# Command line\n\n\
         <!-- Generated from the binary's --help by crates/extpool/tests/it/cli_reference.rs: \
         do not edit; regenerate with `{REGENERATE}`. -->\n\n\
         Every command of `extpool`, as its `--help` prints it. The flags of the root \
         marked global are accepted by every command.\n\n"
    );
    for (path, _) in commands {
        let title = std::iter::once("extpool")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let indent = "  ".repeat(path.len().saturating_sub(1));
        page.push_str(&format!("{indent}- [`{title}`](#{})\n", anchor(&title)));
    }
    for (path, text) in commands {
        let title = std::iter::once("extpool")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        page.push_str(&format!("\n## `{title}`\n\n```text\n{text}\n```\n"));
    }
    page
}

#[test]
fn the_books_cli_reference_is_what_the_binary_prints() {
    let commands = walk();
    assert!(
        commands.len() > 10,
        "the walk found {} commands: {:?}",
        commands.len(),
        commands.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    let page = render(&commands);
    let file = repo_root().join(PAGE);
    if std::env::var_os("EXTPOOL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&file, &page).unwrap();
        return;
    }
    let written = std::fs::read_to_string(&file).unwrap_or_default();
    if written != page {
        let first = written
            .lines()
            .zip(page.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| written.lines().count().min(page.lines().count()));
        panic!(
            "{PAGE} is not what the binary's --help prints (first difference at line {}: \
             the page has {:?}, the binary {:?}); regenerate with {REGENERATE}",
            first + 1,
            written.lines().nth(first).unwrap_or("<end>"),
            page.lines().nth(first).unwrap_or("<end>"),
        );
    }
}

#[test]
fn the_walk_lists_the_commands_of_a_help_text() {
    let text = "About\n\nUsage: extpool [OPTIONS] [COMMAND]\n\nCommands:\n  list         List things\n  api-keys     Static keys,\n               wrapped\n  help         Print this message\n\nOptions:\n  -h, --help\n";
    assert_eq!(subcommands(text), ["list", "api-keys"]);
    assert_eq!(anchor("extpool api-keys create"), "extpool-api-keys-create");
}
