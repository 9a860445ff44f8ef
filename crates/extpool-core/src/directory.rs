//! Directory reads of skills (SEP-2640 `resources/directory/read`): the
//! direct children of a directory resource, a page at a time.
//!
//! One paging rule for every source that lists a directory (local skill
//! folders, a hosted skill's manifest): children sorted by URI, a page of
//! at most [`DIRECTORY_PAGE_SIZE`], and a cursor that is the URI of the
//! last child given — so a page after a change in the directory neither
//! repeats nor skips a child that was there all along.

use crate::ResourceEntry;

/// MIME type that marks a listed child as a directory (SEP-2640).
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// Most children answered in one page.
pub const DIRECTORY_PAGE_SIZE: usize = 100;

/// Most children a directory may have to be listed at all: a skill holds at
/// most 512 files (SEP-2640), so a folder past this is no skill's.
pub const MAX_DIRECTORY_ENTRIES: usize = 4096;

/// One page of a directory's direct children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryPage {
    /// The children on this page, by URI; a subdirectory has
    /// [`DIRECTORY_MIME_TYPE`].
    pub entries: Vec<ResourceEntry>,
    /// The cursor of the next page; `None` on the last.
    pub next_cursor: Option<String>,
}

impl DirectoryPage {
    /// The page of `children` (any order, each URI once) that follows
    /// `cursor` (the first page without one), at most `page_size` long.
    pub fn of(mut children: Vec<ResourceEntry>, cursor: Option<&str>, page_size: usize) -> Self {
        children.sort_by(|a, b| a.uri.cmp(&b.uri));
        children.dedup_by(|a, b| a.uri == b.uri);
        let start = match cursor {
            Some(after) => children.partition_point(|c| c.uri.as_str() <= after),
            None => 0,
        };
        let mut entries: Vec<ResourceEntry> = children.into_iter().skip(start).collect();
        let next_cursor = if entries.len() > page_size.max(1) {
            entries.truncate(page_size.max(1));
            entries.last().map(|e| e.uri.clone())
        } else {
            None
        };
        Self {
            entries,
            next_cursor,
        }
    }
}

/// A child of a directory listing: `uri`, its last segment as its name, and
/// `mime_type` ([`DIRECTORY_MIME_TYPE`] for a subdirectory).
pub fn child_entry(uri: String, mime_type: &str) -> ResourceEntry {
    let name = uri.rsplit('/').next().unwrap_or(&uri).to_owned();
    ResourceEntry {
        uri,
        name,
        description: String::new(),
        mime_type: Some(mime_type.to_owned()),
        icons: None,
        meta: None,
    }
}

/// `uri` without its trailing slashes (`skill://a/refs/` names the same
/// directory as `skill://a/refs`).
pub fn trim_directory_uri(uri: &str) -> &str {
    let trimmed = uri.trim_end_matches('/');
    if trimmed.ends_with(':') { uri } else { trimmed }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn children(n: usize) -> Vec<ResourceEntry> {
        (0..n)
            .rev()
            .map(|i| child_entry(format!("skill://s/f{i:03}"), "text/plain"))
            .collect()
    }

    #[test]
    fn pages_follow_their_cursor_without_repeats_or_gaps() {
        let first = DirectoryPage::of(children(250), None, 100);
        assert_eq!(first.entries.len(), 100);
        assert_eq!(first.entries[0].uri, "skill://s/f000");
        assert_eq!(first.next_cursor.as_deref(), Some("skill://s/f099"));
        let second = DirectoryPage::of(children(250), first.next_cursor.as_deref(), 100);
        assert_eq!(second.entries[0].uri, "skill://s/f100");
        let third = DirectoryPage::of(children(250), second.next_cursor.as_deref(), 100);
        assert_eq!(third.entries.len(), 50);
        assert_eq!(third.next_cursor, None);
        let exact = DirectoryPage::of(children(100), None, 100);
        assert_eq!((exact.entries.len(), exact.next_cursor), (100, None));
    }

    #[test]
    fn a_child_removed_between_pages_skips_nothing_else() {
        let first = DirectoryPage::of(children(150), None, 100);
        let mut fewer = children(150);
        fewer.retain(|c| c.uri != "skill://s/f099");
        let second = DirectoryPage::of(fewer, first.next_cursor.as_deref(), 100);
        assert_eq!(second.entries[0].uri, "skill://s/f100");
        assert_eq!(second.entries.len(), 50);
    }

    #[test]
    fn names_and_trailing_slashes() {
        assert_eq!(
            child_entry("skill://s/refs".into(), DIRECTORY_MIME_TYPE).name,
            "refs"
        );
        assert_eq!(trim_directory_uri("skill://s/refs//"), "skill://s/refs");
        assert_eq!(trim_directory_uri("skill://s"), "skill://s");
    }
}
