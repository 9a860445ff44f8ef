//! Adding and removing a server of `extpool.yaml`'s `mcp_servers` as a
//! located text edit: the entry's lines are inserted after the last
//! server (at the servers' indentation) or removed (with the comment lines
//! written directly above it and inside it); every other byte of the file
//! stays as it was.

use std::collections::BTreeMap;

use extpool_core::name::same_server_name;
use extpool_mcp::config::McpServerConfig;

use super::EditError;
use super::outline::{Kind, Located, OutlineEntry, outline};

/// The section servers are written in.
const SERVERS: &str = "mcp_servers";

/// `text` (an `extpool.yaml`) with server `name` added as `config`.
/// Refused when a server of that name (ignoring case) is there already.
pub fn add_server(text: &str, name: &str, config: &McpServerConfig) -> Result<String, EditError> {
    let doc = Doc::new(text);
    let Some(root) = outline(text)? else {
        // Empty, or comments only: the section goes at the end.
        return Ok(doc.append(&section(name, config)?));
    };
    let top = mapping(&root, "the document")?;
    let Some(servers) = top.iter().find(|e| e.key == SERVERS) else {
        return Ok(doc.append(&section(name, config)?));
    };
    match &servers.value.kind {
        Kind::Null { written } => {
            // `mcp_servers:` (or `mcp_servers: null`): the entry goes on
            // the lines after the key, the `null` removed.
            let mut doc = doc;
            if *written {
                doc.cut_line_after(servers.line, servers.key_end_col);
            }
            let at = servers.col + 2;
            Ok(doc.insert_after(servers.line, &entry_lines(name, config, at)?))
        }
        Kind::Map {
            flow,
            entries,
            close,
        } => {
            if let Some(existing) = entries.iter().find(|e| same_server_name(&e.key, name)) {
                return Err(EditError::Exists {
                    name: name.to_owned(),
                    existing: existing.key.clone(),
                    line: existing.line,
                });
            }
            match (flow, entries.last(), close) {
                (false, Some(last), _) => {
                    let at = entries.first().map_or(last.col, |e| e.col);
                    let after = last.value.last_line.max(last.line);
                    Ok(doc.insert_after(after, &entry_lines(name, config, at)?))
                }
                (true, None, Some(close)) => {
                    // `mcp_servers: {}`: written as a block instead.
                    let mut doc = doc;
                    let (line, col) = (servers.value.line, servers.value.col);
                    // With the space before it, as removing the last
                    // server wrote it.
                    let spaced = col > 0 && doc.char_at(line, col - 1) == Some(' ');
                    doc.cut_span((line, col - usize::from(spaced)), (close.0, close.1 + 1));
                    let at = servers.col + 2;
                    Ok(doc.insert_after(servers.line, &entry_lines(name, config, at)?))
                }
                (true, Some(_), Some(close)) => {
                    let json = serde_json::to_string(config).map_err(EditError::render)?;
                    let item = format!(", {}: {json}", crate::tree::yaml_string(name));
                    Ok(doc.insert_at(*close, &item))
                }
                _ => Err(EditError::NotEditable {
                    line: servers.line,
                    why: format!("{SERVERS} is neither a block nor a flow mapping"),
                }),
            }
        }
        _ => Err(EditError::NotAMapping {
            what: SERVERS.to_owned(),
            line: servers.value.line,
        }),
    }
}

/// `text` with server `name` removed (its name as written is returned
/// too; matched exactly, else ignoring case).
pub fn remove_server(text: &str, name: &str) -> Result<(String, String), EditError> {
    let doc = Doc::new(text);
    let not_found = || EditError::NotFound {
        name: name.to_owned(),
    };
    let root = outline(text)?.ok_or_else(not_found)?;
    let top = mapping(&root, "the document")?;
    let servers = top
        .iter()
        .find(|e| e.key == SERVERS)
        .ok_or_else(not_found)?;
    let Kind::Map { flow, entries, .. } = &servers.value.kind else {
        return Err(not_found());
    };
    let index = entries
        .iter()
        .position(|e| e.key == name)
        .or_else(|| entries.iter().position(|e| same_server_name(&e.key, name)))
        .ok_or_else(not_found)?;
    let entry = &entries[index];
    let written = entry.key.clone();
    if *flow {
        return Ok((doc.remove_flow_entry(entries, index), written));
    }
    let first = doc.leading_comments(entry);
    let last = doc.trailing_comments(entry);
    let mut doc = doc;
    if entries.len() == 1 {
        // The last server: the section stays, as an empty mapping.
        doc.after_colon(servers.line, servers.key_end_col, " {}");
    }
    Ok((doc.remove_lines(first, last), written))
}

pub(super) fn mapping<'a>(node: &'a Located, what: &str) -> Result<&'a [OutlineEntry], EditError> {
    match &node.kind {
        Kind::Map {
            flow: false,
            entries,
            ..
        } => Ok(entries),
        Kind::Map { flow: true, .. } => Err(EditError::NotEditable {
            line: node.line,
            why: format!("{what} is written in flow style ({{…}})"),
        }),
        _ => Err(EditError::NotAMapping {
            what: what.to_owned(),
            line: node.line,
        }),
    }
}

/// `name: config` as block YAML lines indented by `at` spaces.
fn entry_lines(name: &str, config: &McpServerConfig, at: usize) -> Result<String, EditError> {
    let one = BTreeMap::from([(name.to_owned(), config.clone())]);
    let yaml = crate::tree::to_yaml(&one).map_err(EditError::Render)?;
    let pad = " ".repeat(at);
    Ok(yaml
        .lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect::<String>())
}

/// A whole `mcp_servers:` section holding one server.
fn section(name: &str, config: &McpServerConfig) -> Result<String, EditError> {
    Ok(format!("{SERVERS}:\n{}", entry_lines(name, config, 2)?))
}

/// The text being edited, as lines that keep their line breaks.
pub(super) struct Doc<'a> {
    lines: Vec<String>,
    /// The file's line break (`\r\n` when its first line has one).
    newline: &'a str,
}

impl<'a> Doc<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let newline = match text.find('\n') {
            Some(i) if text[..i].ends_with('\r') => "\r\n",
            _ => "\n",
        };
        Self {
            lines: text.split_inclusive('\n').map(str::to_owned).collect(),
            newline,
        }
    }

    /// Lines written with the file's line break.
    pub(super) fn native(&self, block: &str) -> String {
        if self.newline == "\n" {
            block.to_owned()
        } else {
            block.replace('\n', self.newline)
        }
    }

    pub(super) fn text(self) -> String {
        self.lines.concat()
    }

    /// `block` at the end, after a line break if the file lacks its last.
    pub(super) fn append(mut self, block: &str) -> String {
        let block = self.native(block);
        if let Some(last) = self.lines.last_mut()
            && !last.ends_with('\n')
        {
            last.push_str(self.newline);
        }
        let blank = self.lines.iter().any(|l| !l.trim().is_empty());
        let newline = self.newline;
        let mut text = self.text();
        if blank && !text.ends_with(&format!("{newline}{newline}")) {
            text.push_str(newline);
        }
        text.push_str(&block);
        text
    }

    /// `block` (whole lines) after line `line` (1-based).
    pub(super) fn insert_after(mut self, line: usize, block: &str) -> String {
        let block = self.native(block);
        let at = line.min(self.lines.len());
        if at > 0
            && let Some(prev) = self.lines.get_mut(at - 1)
            && !prev.ends_with('\n')
        {
            prev.push_str(self.newline);
        }
        self.lines.insert(at, block);
        self.text()
    }

    /// `text` inserted at (line, column in characters).
    pub(super) fn insert_at(mut self, (line, col): (usize, usize), text: &str) -> String {
        if let Some(l) = self.lines.get_mut(line.saturating_sub(1)) {
            let at = byte_of(l, col);
            l.insert_str(at, text);
        }
        self.text()
    }

    /// Removes what follows the colon after `key_end_col` on `line` up to
    /// a comment or the line's end (a written `null`).
    pub(super) fn cut_line_after(&mut self, line: usize, key_end_col: usize) {
        let Some(l) = self.lines.get_mut(line.saturating_sub(1)) else {
            return;
        };
        let from = byte_of(l, key_end_col);
        let Some(colon) = l[from..].find(':').map(|i| from + i + 1) else {
            return;
        };
        let rest = &l[colon..];
        let end = rest
            .find(" #")
            .map(|i| colon + i)
            .unwrap_or(colon + rest.trim_end_matches(['\r', '\n']).len());
        l.replace_range(colon..end, "");
    }

    /// Inserts `text` right after the colon that follows the key.
    pub(super) fn after_colon(&mut self, line: usize, key_end_col: usize, text: &str) {
        let Some(l) = self.lines.get_mut(line.saturating_sub(1)) else {
            return;
        };
        let from = byte_of(l, key_end_col);
        if let Some(colon) = l[from..].find(':').map(|i| from + i + 1) {
            l.insert_str(colon, text);
        }
    }

    /// The leading spaces of line `line` (1-based).
    pub(super) fn indent(&self, line: usize) -> usize {
        self.lines
            .get(line.saturating_sub(1))
            .map_or(0, |l| l.chars().take_while(|c| *c == ' ').count())
    }

    /// Whether line `line` (1-based) is blank.
    pub(super) fn is_blank(&self, line: usize) -> bool {
        self.lines
            .get(line.saturating_sub(1))
            .is_some_and(|l| l.trim().is_empty())
    }

    /// Whether nothing but blank lines follows line `line` (1-based).
    pub(super) fn ends_at(&self, line: usize) -> bool {
        self.lines.iter().skip(line).all(|l| l.trim().is_empty())
    }

    /// The character at (line, column), if there is one.
    pub(super) fn char_at(&self, line: usize, col: usize) -> Option<char> {
        self.lines.get(line.checked_sub(1)?)?.chars().nth(col)
    }

    /// Removes the text between two (line, column) places.
    pub(super) fn cut_span(&mut self, from: (usize, usize), to: (usize, usize)) {
        let text = std::mem::take(&mut self.lines).concat();
        let a = offset(&text, from);
        let b = offset(&text, to).max(a);
        let cut = format!("{}{}", &text[..a], &text[b..]);
        self.lines = cut.split_inclusive('\n').map(str::to_owned).collect();
    }

    /// Removes lines `first..=last` (1-based).
    pub(super) fn remove_lines(mut self, first: usize, last: usize) -> String {
        let last = last.min(self.lines.len());
        if first >= 1 && first <= last {
            self.lines.drain(first - 1..last);
        }
        self.text()
    }

    /// The first line of `entry` with the comment lines directly above it
    /// at its own indentation (no blank line between).
    pub(super) fn leading_comments(&self, entry: &OutlineEntry) -> usize {
        let mut first = entry.line;
        while first > 1 {
            let above = &self.lines[first - 2];
            let indent = above.chars().take_while(|c| *c == ' ').count();
            if above.trim_start().starts_with('#') && indent == entry.col {
                first -= 1;
            } else {
                break;
            }
        }
        first
    }

    /// The last line of `entry` with the comment lines that follow it
    /// indented deeper than its key (no blank line between).
    pub(super) fn trailing_comments(&self, entry: &OutlineEntry) -> usize {
        let mut last = entry.value.last_line.max(entry.line);
        while let Some(next) = self.lines.get(last) {
            let indent = next.chars().take_while(|c| *c == ' ').count();
            if next.trim_start().starts_with('#') && indent > entry.col {
                last += 1;
            } else {
                break;
            }
        }
        last
    }

    /// Removes entry `index` of a flow mapping with the comma that
    /// separates it from its neighbour.
    fn remove_flow_entry(self, entries: &[OutlineEntry], index: usize) -> String {
        let text = self.text();
        let entry = &entries[index];
        let start = offset(&text, (entry.line, entry.col));
        let (from, to) = match (entries.get(index + 1), index.checked_sub(1)) {
            // Up to the next entry's key: its comma and spacing go too.
            (Some(next), _) => (start, offset(&text, (next.line, next.col))),
            // The last one: from the end of the one before (its comma).
            (None, Some(prev)) => {
                let prev_end = value_end(&text, at(&entries[prev].value));
                (prev_end, value_end(&text, at(&entry.value)))
            }
            (None, None) => (start, value_end(&text, at(&entry.value))),
        };
        format!("{}{}", &text[..from], &text[to..])
    }
}

/// Where `node` starts: (line, column).
pub(super) fn at(node: &super::outline::Located) -> (usize, usize) {
    (node.line, node.col)
}

/// The byte offset just after the value starting at `from` in a flow
/// collection: before the `,`, `}` or `]` that ends it.
pub(super) fn value_end(text: &str, from: (usize, usize)) -> usize {
    let start = offset(text, from);
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, c) in text[start..].char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{' | '[') => depth += 1,
            (None, '}' | ']') if depth == 0 => return trim_back(text, start + i),
            (None, '}' | ']') => depth -= 1,
            (None, ',') if depth == 0 => return trim_back(text, start + i),
            _ => {}
        }
    }
    text.len()
}

fn trim_back(text: &str, mut at: usize) -> usize {
    while at > 0 && text[..at].ends_with([' ', '\t', '\n', '\r']) {
        at -= 1;
    }
    at
}

/// The byte offset of (1-based line, 0-based column in characters).
pub(super) fn offset(text: &str, (line, col): (usize, usize)) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    start + byte_of(&text[start..], col)
}

/// The byte offset of character `col` of `line`.
fn byte_of(line: &str, col: usize) -> usize {
    line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(url: &str) -> McpServerConfig {
        McpServerConfig::http(url)
    }

    fn stdio(command: &str, args: &[&str]) -> McpServerConfig {
        McpServerConfig::stdio(command, args.iter().copied())
    }

    const FILE: &str = "# My servers\nmcp_servers:\n  # the docs\n  docs:\n    url: https://docs.example/mcp   # kept\n    # inside docs\n\n  files:\n    command: npx\n    args: [-y, x]\n\n# skills follow\nskills:\n  paths: [./skills]\n";

    #[test]
    fn add_goes_after_the_last_server_and_keeps_every_other_byte() {
        let out = add_server(FILE, "git", &stdio("uvx", &["mcp-server-git"])).unwrap();
        let expected = FILE.replace(
            "    args: [-y, x]\n",
            "    args: [-y, x]\n  git:\n    command: uvx\n    args:\n    - mcp-server-git\n",
        );
        assert_eq!(out, expected);
        let parsed = crate::tree::parse_yaml(&out).unwrap();
        assert!(parsed.at(&["mcp_servers", "git", "command"]).is_some());
    }

    #[test]
    fn remove_takes_the_entry_and_its_comments_only() {
        let (out, written) = remove_server(FILE, "docs").unwrap();
        assert_eq!(written, "docs");
        assert_eq!(
            out,
            "# My servers\nmcp_servers:\n\n  files:\n    command: npx\n    args: [-y, x]\n\n# skills follow\nskills:\n  paths: [./skills]\n"
        );
        let (out, _) = remove_server(FILE, "FILES").unwrap();
        assert!(out.contains("  docs:\n") && !out.contains("files"), "{out}");
        assert!(out.ends_with("\n\n# skills follow\nskills:\n  paths: [./skills]\n"));
    }

    #[test]
    fn add_then_remove_gives_the_file_back() {
        let added = add_server(FILE, "git", &http("https://git.example/mcp")).unwrap();
        let (back, _) = remove_server(&added, "git").unwrap();
        assert_eq!(back, FILE);
    }

    #[test]
    fn removing_the_last_server_leaves_an_empty_section() {
        let text = "mcp_servers:  # all of them\n  only:\n    command: x\nskills: {}\n";
        let (out, _) = remove_server(text, "only").unwrap();
        assert_eq!(out, "mcp_servers: {}  # all of them\nskills: {}\n");
        let again = add_server(&out, "only", &stdio("x", &[])).unwrap();
        assert_eq!(
            again,
            "mcp_servers:  # all of them\n  only:\n    command: x\nskills: {}\n"
        );
    }

    #[test]
    fn a_missing_or_empty_section_is_made() {
        let cfg = http("https://a.example/mcp");
        assert_eq!(
            add_server("", "a", &cfg).unwrap(),
            "mcp_servers:\n  a:\n    url: https://a.example/mcp\n"
        );
        assert_eq!(
            add_server("# nothing yet", "a", &cfg).unwrap(),
            "# nothing yet\n\nmcp_servers:\n  a:\n    url: https://a.example/mcp\n"
        );
        assert_eq!(
            add_server("skills: {}\n", "a", &cfg).unwrap(),
            "skills: {}\n\nmcp_servers:\n  a:\n    url: https://a.example/mcp\n"
        );
        assert_eq!(
            add_server("mcp_servers: ~ # none\nskills: {}\n", "a", &cfg).unwrap(),
            "mcp_servers: # none\n  a:\n    url: https://a.example/mcp\nskills: {}\n"
        );
    }

    #[test]
    fn flow_sections_and_crlf_files() {
        let cfg = http("https://b.example/mcp");
        let out = add_server("mcp_servers: {a: {command: x}}\n", "b", &cfg).unwrap();
        assert_eq!(
            out,
            "mcp_servers: {a: {command: x}, b: {\"url\":\"https://b.example/mcp\"}}\n"
        );
        let (back, _) = remove_server(&out, "b").unwrap();
        assert_eq!(back, "mcp_servers: {a: {command: x}}\n");
        let (first, _) = remove_server(&out, "a").unwrap();
        assert_eq!(
            first,
            "mcp_servers: {b: {\"url\":\"https://b.example/mcp\"}}\n"
        );
        let crlf = "mcp_servers:\r\n  a:\r\n    command: x\r\n";
        let out = add_server(crlf, "b", &cfg).unwrap();
        assert_eq!(
            out,
            "mcp_servers:\r\n  a:\r\n    command: x\r\n  b:\r\n    url: https://b.example/mcp\r\n"
        );
    }

    #[test]
    fn refusals_say_why() {
        let e = add_server(FILE, "Docs", &http("https://x.example")).unwrap_err();
        assert!(matches!(e, EditError::Exists { line: 4, .. }), "{e}");
        let e = remove_server(FILE, "nope").unwrap_err();
        assert!(matches!(e, EditError::NotFound { .. }), "{e}");
        let e = add_server("- a\n- b\n", "x", &http("https://x.example")).unwrap_err();
        assert!(matches!(e, EditError::NotAMapping { .. }), "{e}");
        let e = add_server("{mcp_servers: {}}", "x", &http("https://x.example")).unwrap_err();
        assert!(matches!(e, EditError::NotEditable { .. }), "{e}");
        let e = add_server("mcp_servers: [1]\n", "x", &http("https://x.example")).unwrap_err();
        assert!(matches!(e, EditError::NotAMapping { .. }), "{e}");
        let e = add_server("mcp_servers:\n  a: [1\n", "x", &http("https://x.example")).unwrap_err();
        assert!(matches!(e, EditError::Syntax { .. }), "{e}");
    }

    #[test]
    fn block_scalars_and_nested_comments_end_where_their_text_does() {
        let text = "mcp_servers:\n  a:\n    env:\n      K: |\n        one\n        two\n\n    # about b\n  b:\n    command: y\n";
        let (out, _) = remove_server(text, "a").unwrap();
        assert_eq!(out, "mcp_servers:\n\n    # about b\n  b:\n    command: y\n");
    }
}
