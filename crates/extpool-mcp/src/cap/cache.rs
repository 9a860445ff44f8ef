//! The capability's list caches: filled on demand, keyed by the client's
//! change counter, so a `list_changed` (or a reconnect) invalidates them
//! without a background task.

use std::sync::Arc;

use extpool_core::{CommandEntry, ResourceEntry, ResourceTemplateEntry, ToolEntry};
use parking_lot::Mutex;

use crate::skills::HostedSkill;

pub(super) struct Cached<T> {
    pub(super) epoch: u64,
    pub(super) value: Arc<T>,
}

#[derive(Default)]
pub(super) struct ResourceIndex {
    pub(super) resources: Vec<ResourceEntry>,
    pub(super) templates: Vec<ResourceTemplateEntry>,
}

#[derive(Default)]
pub(super) struct Caches {
    pub(super) tools: Mutex<Option<Cached<Vec<ToolEntry>>>>,
    pub(super) resources: Mutex<Option<Cached<ResourceIndex>>>,
    pub(super) prompts: Mutex<Option<Cached<Vec<CommandEntry>>>>,
    pub(super) skills: Mutex<Option<Cached<Vec<HostedSkill>>>>,
}

pub(super) fn cached<T>(slot: &Mutex<Option<Cached<T>>>, epoch: u64) -> Option<Arc<T>> {
    slot.lock()
        .as_ref()
        .filter(|c| c.epoch == epoch)
        .map(|c| c.value.clone())
}

pub(super) fn store<T>(slot: &Mutex<Option<Cached<T>>>, epoch: u64, value: T) -> Arc<T> {
    let value = Arc::new(value);
    *slot.lock() = Some(Cached {
        epoch,
        value: value.clone(),
    });
    value
}

/// Minimal RFC 6570 level-1 match: literal parts in order, `{…}` spans one or
/// more characters without `/`.
pub(super) fn template_matches(template: &str, uri: &str) -> bool {
    let mut rest = uri;
    let mut parts = template.split('{');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(r) = rest.strip_prefix(first) else {
        return false;
    };
    rest = r;
    for part in parts {
        let Some((_, literal)) = part.split_once('}') else {
            return false;
        };
        let var_end = if literal.is_empty() {
            rest.len()
        } else {
            match rest.find(literal) {
                Some(i) => i,
                None => return false,
            }
        };
        let var = &rest[..var_end];
        if var.is_empty() || var.contains('/') {
            return false;
        }
        rest = &rest[var_end + literal.len()..];
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_simple_uris() {
        assert!(template_matches(
            "demo://resource/dynamic/text/{id}",
            "demo://resource/dynamic/text/1"
        ));
        assert!(!template_matches(
            "demo://resource/dynamic/text/{id}",
            "demo://resource/dynamic/text/"
        ));
        assert!(!template_matches(
            "demo://resource/dynamic/text/{id}",
            "demo://resource/dynamic/text/1/2"
        ));
        assert!(template_matches("x://{a}/b/{c}.md", "x://one/b/two.md"));
        assert!(!template_matches("x://{a}/b/{c}.md", "x://one/c/two.md"));
        assert!(template_matches("plain://x", "plain://x"));
    }
}
