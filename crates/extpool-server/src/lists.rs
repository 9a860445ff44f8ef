//! The order and the cache policy of everything the gateway lists or
//! reads, in both protocol eras.
//!
//! **Order.** Every list is sorted, so that it is the same across calls,
//! sessions and protocol eras whatever order upstream servers answered in:
//! tools and prompts by the name the client sees, resources and skills by
//! URI, resource templates by URI template (byte order, ties by the rest of
//! the entry's JSON, so that even duplicates come in one order).
//!
//! **Cache policy (SEP-2549 `ttlMs` / `cacheScope`).** Every list and every
//! resource read says `ttlMs: 0` and `cacheScope: "private"`: a client must
//! not treat an answer as fresh for any time, and no intermediary may share
//! it between principals. A list changes whenever an upstream server's list
//! changes, a server comes or goes, or a durable session is refreshed; the
//! gateway tells clients through `list_changed`, but a 2026-07-28 client
//! that is not listening (`subscriptions/listen`) would never hear it, and
//! no freshness window is safe against a change nobody announces. What a
//! session sees also depends on its grants, hence `private`. The discovery
//! result (`server/discover`) says the same (rmcp's default).

use rmcp::model::{
    CacheScope, GetSkillResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListSkillsResult, ListToolsResult, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Skill, Tool,
};

/// How long a client may treat a list or a read as fresh: never (see the
/// module's cache policy).
pub const TTL_MS: u64 = 0;

/// Who may cache a list or a read: only the client that asked.
pub const CACHE_SCOPE: CacheScope = CacheScope::Private;

/// Sorts `items` by `key`, ties by their JSON (a total, stable order).
fn sort_by<T: serde::Serialize>(items: &mut [T], key: impl Fn(&T) -> &str) {
    items.sort_by(|a, b| {
        key(a).cmp(key(b)).then_with(|| {
            let json = |x: &T| serde_json::to_string(x).unwrap_or_default();
            json(a).cmp(&json(b))
        })
    });
}

/// `tools/list`: by listed name.
pub fn tools(mut items: Vec<Tool>) -> ListToolsResult {
    sort_by(&mut items, |t| &t.name);
    ListToolsResult::with_all_items(items)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CACHE_SCOPE)
}

/// `prompts/list`: by listed name.
pub fn prompts(mut items: Vec<Prompt>) -> ListPromptsResult {
    sort_by(&mut items, |p| &p.name);
    ListPromptsResult::with_all_items(items)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CACHE_SCOPE)
}

/// `resources/list`: by URI.
pub fn resources(mut items: Vec<Resource>) -> ListResourcesResult {
    sort_by(&mut items, |r| &r.uri);
    ListResourcesResult::with_all_items(items)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CACHE_SCOPE)
}

/// `resources/templates/list`: by URI template.
pub fn templates(mut items: Vec<ResourceTemplate>) -> ListResourceTemplatesResult {
    sort_by(&mut items, |t| &t.uri_template);
    ListResourceTemplatesResult::with_all_items(items)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CACHE_SCOPE)
}

/// `resources/directory/read`: one page, in the order the view gave it
/// (by URI, the page's own order), `next_cursor` passed on.
pub fn directory(items: Vec<Resource>, next_cursor: Option<String>) -> ListResourcesResult {
    let mut result = ListResourcesResult::with_all_items(items)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CACHE_SCOPE);
    result.next_cursor = next_cursor;
    result
}

/// `skills/list`: by URI.
pub fn skills(mut items: Vec<Skill>) -> ListSkillsResult {
    sort_by(&mut items, |s| &s.uri);
    ListSkillsResult::with_all_items(items)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CACHE_SCOPE)
}

/// `skills/get`: the same policy as lists.
pub fn skill(result: GetSkillResult) -> GetSkillResult {
    result.with_ttl_ms(TTL_MS).with_cache_scope(CACHE_SCOPE)
}

/// `resources/read`: the same policy as lists.
pub fn read(result: ReadResourceResult) -> ReadResourceResult {
    result.with_ttl_ms(TTL_MS).with_cache_scope(CACHE_SCOPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_are_broken_by_the_whole_entry() {
        let a = Resource::new("demo://x", "b");
        let b = Resource::new("demo://x", "a");
        let c = Resource::new("demo://a", "z");
        let one = resources(vec![a.clone(), b.clone(), c.clone()]).resources;
        let two = resources(vec![b, c, a]).resources;
        assert_eq!(one, two);
        assert_eq!(one[0].uri, "demo://a");
        assert_eq!(one[1].name, "a");
    }
}
