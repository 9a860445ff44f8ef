//! Adding and removing one rule of `extpool.yaml`'s `permissions.allow` or
//! `permissions.deny` list as a located text edit (what `tools disable`
//! and `tools enable` write): the item's line is inserted after the
//! list's last item (at its indentation) or removed; every other byte of
//! the file stays as it was. A section or list the edit made is removed
//! again with its last rule, so adding then removing a rule gives the file
//! back.

use super::outline::{Kind, OutlineEntry, SeqItem, outline};
use super::yaml::{Doc, at, mapping, offset, value_end};
use super::{EditError, Edited};

/// The section the lists are in.
const SECTION: &str = "permissions";

/// Which list of `permissions` a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleList {
    /// `permissions.allow`.
    Allow,
    /// `permissions.deny`.
    Deny,
}

impl RuleList {
    /// Its key under `permissions`.
    pub fn key(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }
}

/// `text` (an `extpool.yaml`) with `rule` added to `list`; unchanged when
/// the list holds that rule already.
pub fn add_rule(text: &str, list: RuleList, rule: &str) -> Result<Edited, EditError> {
    let key = list.key();
    let item = crate::tree::yaml_string(rule);
    let doc = Doc::new(text);
    let Some(root) = outline(text)? else {
        return Ok(Edited::between(text, doc.append(&section(key, &item))));
    };
    let top = mapping(&root, "the document")?;
    let Some(perms) = top.iter().find(|e| e.key == SECTION) else {
        return Ok(Edited::between(text, doc.append(&section(key, &item))));
    };
    let new = match &perms.value.kind {
        Kind::Null { written } => {
            let mut doc = doc;
            if *written {
                doc.cut_line_after(perms.line, perms.key_end_col);
            }
            doc.insert_after(perms.line, &list_lines(key, &item, perms.col + 2))
        }
        Kind::Map {
            flow: false,
            entries,
            ..
        } => match entries.iter().find(|e| e.key == key) {
            None => {
                let indent = entries.first().map_or(perms.col + 2, |e| e.col);
                let after = perms.value.last_line.max(perms.line);
                doc.insert_after(after, &list_lines(key, &item, indent))
            }
            Some(entry) => add_item(doc, entry, &item, rule)?,
        },
        Kind::Map { flow: true, .. } => {
            return Err(EditError::NotEditable {
                line: perms.value.line,
                why: format!("{SECTION} is written in flow style ({{…}})"),
            });
        }
        _ => {
            return Err(EditError::NotAMapping {
                what: SECTION.to_owned(),
                line: perms.value.line,
            });
        }
    };
    Ok(Edited::between(text, new))
}

/// `rule` (written as `item`) added to the list `entry` holds.
fn add_item(
    doc: Doc<'_>,
    entry: &OutlineEntry,
    item: &str,
    rule: &str,
) -> Result<String, EditError> {
    match &entry.value.kind {
        Kind::Null { written } => {
            let mut doc = doc;
            if *written {
                doc.cut_line_after(entry.line, entry.key_end_col);
            }
            let pad = " ".repeat(entry.col + 2);
            Ok(doc.insert_after(entry.line, &format!("{pad}- {item}\n")))
        }
        Kind::Seq { items, .. } if holds(items, rule).is_some() => Ok(doc.text()),
        Kind::Seq {
            flow: false, items, ..
        } => {
            let (indent, after) = match (items.first(), items.last()) {
                (Some(first), Some(last)) => (doc.indent(first.node.line), last.node.last_line),
                _ => (entry.col + 2, entry.line),
            };
            let pad = " ".repeat(indent);
            Ok(doc.insert_after(after, &format!("{pad}- {item}\n")))
        }
        Kind::Seq {
            flow: true,
            items,
            close: Some(close),
        } => {
            let sep = if items.is_empty() { "" } else { ", " };
            Ok(doc.insert_at(*close, &format!("{sep}{item}")))
        }
        _ => Err(EditError::NotEditable {
            line: entry.value.line,
            why: format!("{SECTION}.{} is not a list", entry.key),
        }),
    }
}

/// `text` with `rule` removed from `list` (exactly that rule: a glob that
/// also matches it stays); unchanged when the list does not hold it.
pub fn remove_rule(text: &str, list: RuleList, rule: &str) -> Result<Edited, EditError> {
    let unchanged = || Ok(Edited::between(text, text.to_owned()));
    let Some(root) = outline(text)? else {
        return unchanged();
    };
    let top = mapping(&root, "the document")?;
    let Some(perms) = top.iter().find(|e| e.key == SECTION) else {
        return unchanged();
    };
    let Kind::Map {
        flow: false,
        entries,
        ..
    } = &perms.value.kind
    else {
        return unchanged();
    };
    let Some(entry) = entries.iter().find(|e| e.key == list.key()) else {
        return unchanged();
    };
    let Kind::Seq { flow, items, .. } = &entry.value.kind else {
        return unchanged();
    };
    let Some(index) = holds(items, rule) else {
        return unchanged();
    };
    let doc = Doc::new(text);
    let new = if *flow {
        remove_flow_item(doc.text(), items, index)
    } else if items.len() > 1 {
        let item = &items[index].node;
        doc.remove_lines(item.line, item.last_line.max(item.line))
    } else if entries.len() > 1 {
        // Its last rule: the list goes.
        doc.remove_lines(entry.line, entry.value.last_line.max(entry.line))
    } else {
        // The section's only list's last rule: the section goes, with the
        // blank line written before it when it ends the file.
        let last = perms.value.last_line.max(perms.line);
        let mut first = perms.line;
        if doc.ends_at(last) && first > 1 && doc.is_blank(first - 1) {
            first -= 1;
        }
        doc.remove_lines(first, last)
    };
    Ok(Edited::between(text, new))
}

/// The index of the item that is exactly `rule`.
fn holds(items: &[SeqItem], rule: &str) -> Option<usize> {
    items.iter().position(|i| i.text.as_deref() == Some(rule))
}

/// Item `index` of a flow sequence removed with the comma that separates
/// it from its neighbour.
fn remove_flow_item(text: String, items: &[SeqItem], index: usize) -> String {
    let item = &items[index].node;
    let start = offset(&text, at(item));
    let (from, to) = match (items.get(index + 1), index.checked_sub(1)) {
        (Some(next), _) => (start, offset(&text, at(&next.node))),
        (None, Some(prev)) => (
            value_end(&text, at(&items[prev].node)),
            value_end(&text, at(item)),
        ),
        (None, None) => (start, value_end(&text, at(item))),
    };
    format!("{}{}", &text[..from], &text[to..])
}

/// `key:` and a list of one item, indented by `indent` spaces.
fn list_lines(key: &str, item: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    format!("{pad}{key}:\n{pad}- {item}\n")
}

/// A whole `permissions:` section holding one list of one item.
fn section(key: &str, item: &str) -> String {
    format!("{SECTION}:\n{}", list_lines(key, item, 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# servers\nmcp_servers:\n  a:\n    command: x   # kept\n";

    fn deny(text: &str) -> Vec<String> {
        let tree = crate::tree::parse_yaml(text).unwrap();
        match tree.at(&["permissions", "deny"]).map(|n| &n.value) {
            Some(crate::tree::Value::Seq(items)) => items
                .iter()
                .map(|i| i.as_str().unwrap_or_else(|| panic!("{text}")).to_owned())
                .collect(),
            other => panic!("{other:?}: {text}"),
        }
    }

    #[test]
    fn a_missing_section_is_made_and_removed_again() {
        let added = add_rule(FILE, RuleList::Deny, "mcp__a__rm").unwrap();
        assert!(added.changed);
        assert_eq!(
            added.text,
            format!("{FILE}\npermissions:\n  deny:\n  - mcp__a__rm\n")
        );
        assert_eq!(deny(&added.text), ["mcp__a__rm"]);
        let again = add_rule(&added.text, RuleList::Deny, "mcp__a__rm").unwrap();
        assert!(!again.changed);
        let back = remove_rule(&added.text, RuleList::Deny, "mcp__a__rm").unwrap();
        assert_eq!(back.text, FILE);
        for empty in ["", "# only\n"] {
            let added = add_rule(empty, RuleList::Deny, "t").unwrap().text;
            assert_eq!(
                remove_rule(&added, RuleList::Deny, "t").unwrap().text,
                empty
            );
        }
    }

    #[test]
    fn an_existing_list_gets_one_line_at_its_indentation() {
        let text = "permissions:  # who may\n  default: allow\n  deny:\n    - x   # why\n    - 'y*'\nskills: {}\n";
        let out = add_rule(text, RuleList::Deny, "mcp__a__b").unwrap().text;
        assert_eq!(
            out,
            text.replace("    - 'y*'\n", "    - 'y*'\n    - mcp__a__b\n")
        );
        assert_eq!(deny(&out), ["x", "y*", "mcp__a__b"]);
        assert_eq!(
            remove_rule(&out, RuleList::Deny, "mcp__a__b").unwrap().text,
            text
        );
        // Exactly that rule: a glob matching it is not it.
        assert!(!remove_rule(text, RuleList::Deny, "y").unwrap().changed);
        let without_x = remove_rule(text, RuleList::Deny, "x").unwrap().text;
        assert_eq!(deny(&without_x), ["y*"]);
        assert!(without_x.contains("# who may") && without_x.contains("default: allow"));
    }

    #[test]
    fn a_section_without_the_list_gets_it_and_loses_it_again() {
        let text = "permissions:\n  allow: ['*']\nskills: {}\n";
        let out = add_rule(text, RuleList::Deny, "t").unwrap().text;
        assert_eq!(
            out,
            "permissions:\n  allow: ['*']\n  deny:\n  - t\nskills: {}\n"
        );
        assert_eq!(remove_rule(&out, RuleList::Deny, "t").unwrap().text, text);
        let null = "permissions: ~\n";
        let out = add_rule(null, RuleList::Deny, "t").unwrap().text;
        assert_eq!(out, "permissions:\n  deny:\n  - t\n");
        let empty_list = "permissions:\n  deny:\n";
        assert_eq!(
            deny(&add_rule(empty_list, RuleList::Deny, "t").unwrap().text),
            ["t"]
        );
    }

    #[test]
    fn flow_lists() {
        let text = "permissions:\n  deny: [a, b]\n";
        let out = add_rule(text, RuleList::Deny, "c").unwrap().text;
        assert_eq!(out, "permissions:\n  deny: [a, b, c]\n");
        assert_eq!(remove_rule(&out, RuleList::Deny, "c").unwrap().text, text);
        assert_eq!(
            remove_rule(text, RuleList::Deny, "a").unwrap().text,
            "permissions:\n  deny: [b]\n"
        );
        let empty = "permissions:\n  deny: []\n";
        let out = add_rule(empty, RuleList::Deny, "c").unwrap().text;
        assert_eq!(out, "permissions:\n  deny: [c]\n");
        assert_eq!(remove_rule(&out, RuleList::Deny, "c").unwrap().text, empty);
    }

    #[test]
    fn refusals_say_why() {
        let e = add_rule("permissions: {deny: [a]}\n", RuleList::Deny, "b").unwrap_err();
        assert!(matches!(e, EditError::NotEditable { .. }), "{e}");
        let e = add_rule("permissions:\n  deny: x\n", RuleList::Deny, "b").unwrap_err();
        assert!(
            e.to_string().contains("permissions.deny is not a list"),
            "{e}"
        );
        let e = add_rule("permissions: [1]\n", RuleList::Deny, "b").unwrap_err();
        assert!(matches!(e, EditError::NotAMapping { .. }), "{e}");
    }
}
