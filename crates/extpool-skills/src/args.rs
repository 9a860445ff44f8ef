//! Argument substitution for slash commands (`/name args…`), as Claude Code
//! renders skills:
//!
//! - `$name` for each name in the skill's `arguments` (when not followed by
//!   `[` or a word character) becomes the positional argument at that index;
//! - `$ARGUMENTS[N]` becomes the N-th argument (0-based);
//! - `$N` (not followed by a word character) becomes the N-th argument (0-based);
//! - `$ARGUMENTS` becomes the whole argument string;
//! - `${CLAUDE_SKILL_DIR}` and `${SKILL_DIR}` become the skill directory,
//!   and other `${NAME}` variables the caller names become their values
//!   ([`substitute_vars`]: a plugin's commands get `${CLAUDE_PLUGIN_ROOT}`);
//! - a missing argument becomes the empty string;
//! - when the body has no argument placeholder and arguments were given,
//!   `\n\nARGUMENTS: <args>` is appended.
//!
//! Unlike a chain of string replacements, this is one pass over the body:
//! text that came from an argument is never substituted again, so an
//! argument containing `$1` stays `$1`. Nothing is ever executed: inline
//! shell (`` !`cmd` ``) and fenced shell blocks are left as text.

/// Splits a raw argument string the way a shell would, without expansion:
/// whitespace separates, quotes group, a backslash escapes, `$VAR` stays
/// literal. Unbalanced quotes fall back to splitting on whitespace.
pub fn split_args(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => current.push(c),
                        None => return raw.split_whitespace().map(str::to_owned).collect(),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => current.push(e),
                            Some(other) => {
                                current.push('\\');
                                current.push(other);
                            }
                            None => return raw.split_whitespace().map(str::to_owned).collect(),
                        },
                        Some(c) => current.push(c),
                        None => return raw.split_whitespace().map(str::to_owned).collect(),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        out.push(current);
    }
    out
}

/// Joins arguments into the string `$ARGUMENTS` stands for, quoting those
/// that need it so that [`split_args`] gives them back.
pub fn join_args(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let needs_quotes = a.is_empty()
                || a.chars()
                    .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\'));
            if needs_quotes {
                format!("\"{}\"", a.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

struct Subst<'a> {
    args: &'a [String],
    raw: &'a str,
    /// Named arguments, longest first.
    named: Vec<(&'a str, usize)>,
    /// `${NAME}` variables: (`NAME`, value).
    vars: &'a [(&'a str, &'a str)],
}

impl Subst<'_> {
    fn positional(&self, i: usize) -> &str {
        self.args.get(i).map_or("", String::as_str)
    }

    /// The placeholder at the start of `rest` (the text after a `$`):
    /// its length, its value, and whether it is an argument placeholder.
    fn at(&self, rest: &str) -> Option<(usize, String, bool)> {
        let b = rest.as_bytes();
        for (name, index) in &self.named {
            if rest.starts_with(name) {
                let next = b.get(name.len()).copied();
                if !next.is_some_and(|c| c == b'[' || is_word(c)) {
                    return Some((name.len(), self.positional(*index).to_owned(), true));
                }
            }
        }
        if let Some(after) = rest.strip_prefix("ARGUMENTS[") {
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && after.as_bytes().get(digits) == Some(&b']') {
                let value = after[..digits]
                    .parse::<usize>()
                    .map_or("", |i| self.positional(i));
                return Some(("ARGUMENTS[".len() + digits + 1, value.to_owned(), true));
            }
        }
        let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 && !b.get(digits).copied().is_some_and(is_word) {
            let value = rest[..digits]
                .parse::<usize>()
                .map_or("", |i| self.positional(i));
            return Some((digits, value.to_owned(), true));
        }
        if rest.starts_with("ARGUMENTS") {
            return Some(("ARGUMENTS".len(), self.raw.to_owned(), true));
        }
        let braced = rest.strip_prefix('{')?;
        self.vars.iter().find_map(|(name, value)| {
            braced
                .strip_prefix(name)
                .filter(|after| after.starts_with('}'))
                .map(|_| (name.len() + 2, (*value).to_owned(), false))
        })
    }
}

/// The `${…}` variables of a skill directory.
fn skill_dir_vars(skill_dir: Option<&str>) -> Vec<(&'static str, &str)> {
    skill_dir
        .map(|dir| vec![("CLAUDE_SKILL_DIR", dir), ("SKILL_DIR", dir)])
        .unwrap_or_default()
}

/// Substitutes `args` into `body`; `$ARGUMENTS` is `raw`.
fn render(
    body: &str,
    args: &[String],
    raw: &str,
    named: &[String],
    vars: &[(&str, &str)],
) -> String {
    let mut named: Vec<(&str, usize)> = named
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.is_empty() && !n.bytes().all(|b| b.is_ascii_digit()))
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    named.sort_by_key(|n| std::cmp::Reverse(n.0.len()));
    let s = Subst {
        args,
        raw,
        named,
        vars,
    };
    let mut out = String::with_capacity(body.len() + raw.len());
    let mut replaced_argument = false;
    let mut i = 0;
    while let Some(offset) = body[i..].find('$') {
        let at = i + offset;
        out.push_str(&body[i..at]);
        match s.at(&body[at + 1..]) {
            Some((len, value, is_argument)) => {
                out.push_str(&value);
                replaced_argument |= is_argument;
                i = at + 1 + len;
            }
            None => {
                out.push('$');
                i = at + 1;
            }
        }
    }
    out.push_str(&body[i..]);
    if !replaced_argument && !args.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(raw);
    }
    out
}

/// Renders a command body with already-split arguments.
pub fn substitute(
    body: &str,
    args: &[String],
    named: &[String],
    skill_dir: Option<&str>,
) -> String {
    render(
        body,
        args,
        &join_args(args),
        named,
        &skill_dir_vars(skill_dir),
    )
}

/// Renders a command body with already-split arguments and `${NAME}`
/// variables (`vars` holds `(NAME, value)` pairs), in the same single
/// pass: a value that came from an argument or a variable is never
/// substituted again.
pub fn substitute_vars(
    body: &str,
    args: &[String],
    named: &[String],
    vars: &[(&str, &str)],
) -> String {
    render(body, args, &join_args(args), named, vars)
}

/// Renders a command body with the argument line as the user typed it
/// (`$ARGUMENTS` keeps its quotes; positions come from [`split_args`]).
pub fn substitute_raw(body: &str, raw: &str, named: &[String], skill_dir: Option<&str>) -> String {
    render(
        body,
        &split_args(raw),
        raw,
        named,
        &skill_dir_vars(skill_dir),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn splitting_like_a_shell() {
        assert_eq!(
            split_args(r#"foo "hello world" 'a b' c\ d"#),
            s(&["foo", "hello world", "a b", "c d"])
        );
        assert_eq!(split_args("  $HOME  x "), s(&["$HOME", "x"]));
        assert_eq!(
            split_args(r#"say "unbalanced"#),
            s(&["say", "\"unbalanced"])
        );
        assert_eq!(split_args(r#""""#), s(&[""]));
        assert!(split_args("").is_empty());
    }

    #[test]
    fn variables_are_substituted_in_the_same_pass() {
        let args = s(&["${ROOT}", "$0"]);
        assert_eq!(
            substitute_vars("${ROOT}/bin $0 $1 ${OTHER}", &args, &[], &[("ROOT", "/p")]),
            "/p/bin ${ROOT} $0 ${OTHER}"
        );
        assert_eq!(
            substitute("${SKILL_DIR} ${CLAUDE_SKILL_DIR}x", &[], &[], Some("/d")),
            "/d /dx"
        );
    }

    #[test]
    fn join_round_trips() {
        let args = s(&["a", "b c", "", "q\"uote"]);
        assert_eq!(split_args(&join_args(&args)), args);
    }
}
