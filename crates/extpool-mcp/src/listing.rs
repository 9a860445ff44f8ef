//! Listing every page of a list method — `tools/list`, `prompts/list`,
//! `resources/list`, `resources/templates/list`, `skills/list` — in one
//! function every list uses ([`list_all`]), bounded against a server that
//! paginates forever and lenient with one that lists an entry it cannot
//! describe.
//!
//! - **Bounds.** A listing follows at most [`MAX_LIST_PAGES`] pages, takes
//!   at most [`MAX_LIST_ITEMS`] entries, and its pages together may hold
//!   at most the server's `max_message_bytes`, as one page may. A server
//!   that hands out a cursor it gave before would list the same pages
//!   forever: the listing stops there. Each bound fails the listing with a
//!   [`ListingProblem`] naming it (the server's other lists, its calls and
//!   every other server go on); an empty `nextCursor` ends the list, as an
//!   absent one does.
//! - **Malformed entries.** An entry that does not read as its type (a
//!   tool `{"name": 5}`) is skipped with a [`SkippedEntry`] naming its
//!   place, its name when it has a readable one and the field at fault;
//!   the others are kept. rmcp reads such a page as no list at all.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::future::Future;

use rmcp::model::{
    ClientRequest, CustomResult, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, ListSkillsRequest, ListToolsRequest, PaginatedRequestParams, Prompt,
    Resource, ResourceTemplate, ServerResult, Skill, Tool,
};
use rmcp::service::{PeerRequestOptions, RoleClient};
use rmcp::{Peer, ServiceError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::human_bytes;
use crate::name::ServerName;
use crate::progress::CancelOnDrop;

/// The most pages one listing follows.
pub const MAX_LIST_PAGES: usize = 1_000;
/// The most entries one listing takes.
pub const MAX_LIST_ITEMS: usize = 100_000;
/// The skipped entries one listing describes; the others are counted.
pub const MAX_SKIPPED_DESCRIBED: usize = 20;
/// The longest name or cursor quoted in a message, in characters.
const MAX_QUOTED_CHARS: usize = 64;

/// What bounds one listing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// [`MAX_LIST_PAGES`].
    pub pages: usize,
    /// [`MAX_LIST_ITEMS`].
    pub items: usize,
    /// The server's `max_message_bytes`, over every page.
    pub bytes: u64,
}

impl Bounds {
    /// The bounds of a server that accepts messages of `max_message_bytes`.
    pub(crate) fn new(max_message_bytes: u64) -> Self {
        Self {
            pages: MAX_LIST_PAGES,
            items: MAX_LIST_ITEMS,
            bytes: max_message_bytes,
        }
    }
}

/// Why a listing was stopped (the server is named by the error around it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListingProblem {
    /// A page gave a cursor an earlier page gave: the server would list the
    /// same pages forever.
    #[error(
        "gave the cursor {cursor} again on page {page} (first on page {first}); \
         following it would list the same pages forever"
    )]
    RepeatedCursor {
        /// The page that repeated it (1 is the first).
        page: usize,
        /// The page that gave it first.
        first: usize,
        /// The cursor, quoted and cut short.
        cursor: String,
    },
    /// Every one of [`MAX_LIST_PAGES`] pages gave a next cursor.
    #[error("has more than {limit} pages; extpool follows at most {limit}")]
    TooManyPages {
        /// The bound.
        limit: usize,
    },
    /// The pages held more than [`MAX_LIST_ITEMS`] entries.
    #[error("lists more than {limit} entries (by page {page}); extpool takes at most {limit}")]
    TooManyItems {
        /// The bound.
        limit: usize,
        /// The page that went past it.
        page: usize,
    },
    /// The pages together held more than the server's `max_message_bytes`.
    #[error(
        "sent more than {} in its pages (by page {page}); the limit is the server's \
         `max_message_bytes`, over all pages as for one",
        human_bytes(*limit)
    )]
    TooManyBytes {
        /// The bound, in bytes.
        limit: u64,
        /// The page that went past it.
        page: usize,
    },
    /// A page is not a list of this kind at all.
    #[error("answered page {page} with no {method} result: {reason}")]
    NotAList {
        /// The list method.
        method: &'static str,
        /// The page (1 is the first).
        page: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// An entry of a list that could not be read, and so was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedEntry {
    /// The list method.
    pub method: &'static str,
    /// The result's field holding the list (`tools`, `resourceTemplates`).
    pub list: &'static str,
    /// The page (1 is the first).
    pub page: usize,
    /// The entry's index in its page's list, from 0.
    pub index: usize,
    /// Its name (or URI), quoted and cut short, when it has a readable one.
    pub name: Option<String>,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for SkippedEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.method)?;
        if self.page > 1 {
            write!(f, " page {}", self.page)?;
        }
        write!(f, ": {}[{}]", self.list, self.index)?;
        if let Some(name) = &self.name {
            write!(f, " ({name})")?;
        }
        f.write_str(" is not published: ")?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.reason)
    }
}

/// What a listing gave: the entries read, and those left out.
#[derive(Debug, Clone)]
pub(crate) struct Listed<T> {
    /// The entries, in the server's order.
    pub items: Vec<T>,
    /// The first [`MAX_SKIPPED_DESCRIBED`] entries left out.
    pub skipped: Vec<SkippedEntry>,
    /// How many were left out in all.
    pub skipped_count: usize,
}

/// An entry of a list method.
pub(crate) trait Item: DeserializeOwned + Serialize + Send + Sized + 'static {
    /// The list method.
    const METHOD: &'static str;
    /// The result's field holding the entries.
    const FIELD: &'static str;
    /// The request of one page.
    fn request(params: PaginatedRequestParams) -> ClientRequest;
    /// The entries and next cursor of a result rmcp read as this list.
    fn typed(result: ServerResult) -> Result<(Vec<Self>, Option<String>), Box<ServerResult>>;
}

macro_rules! item {
    ($item:ty, $method:literal, $field:literal, $request:ident, $result:ident, $items:ident) => {
        impl Item for $item {
            const METHOD: &'static str = $method;
            const FIELD: &'static str = $field;
            fn request(params: PaginatedRequestParams) -> ClientRequest {
                ClientRequest::$request($request::with_param(params))
            }
            fn typed(
                result: ServerResult,
            ) -> Result<(Vec<Self>, Option<String>), Box<ServerResult>> {
                match result {
                    ServerResult::$result(r) => Ok((r.$items, r.next_cursor)),
                    other => Err(Box::new(other)),
                }
            }
        }
    };
}

item!(
    Tool,
    "tools/list",
    "tools",
    ListToolsRequest,
    ListToolsResult,
    tools
);
item!(
    Prompt,
    "prompts/list",
    "prompts",
    ListPromptsRequest,
    ListPromptsResult,
    prompts
);
item!(
    Resource,
    "resources/list",
    "resources",
    ListResourcesRequest,
    ListResourcesResult,
    resources
);
item!(
    ResourceTemplate,
    "resources/templates/list",
    "resourceTemplates",
    ListResourceTemplatesRequest,
    ListResourceTemplatesResult,
    resource_templates
);
item!(
    Skill,
    "skills/list",
    "skills",
    ListSkillsRequest,
    ListSkillsResult,
    skills
);

/// Every page of `T`'s list on `peer`, within `bounds`. The outer error is
/// the transport's or the server's (a page that failed); the inner one a
/// bound the listing broke.
pub(crate) async fn list_all<T: Item>(
    peer: &Peer<RoleClient>,
    bounds: Bounds,
) -> Result<Result<Listed<T>, ListingProblem>, ServiceError> {
    follow(bounds, |cursor| page(peer, T::request(params(cursor)))).await
}

fn params(cursor: Option<String>) -> PaginatedRequestParams {
    PaginatedRequestParams::default().with_cursor(cursor)
}

/// One page's request; `notifications/cancelled` goes out if the listing
/// is dropped before the answer (its timeout).
async fn page(
    peer: &Peer<RoleClient>,
    request: ClientRequest,
) -> Result<ServerResult, ServiceError> {
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let mut cancel = CancelOnDrop::new(peer.clone(), handle.id.clone());
    let result = handle.await_response().await;
    cancel.disarm();
    result
}

/// Follows the cursor from page to page through `fetch` (given the cursor
/// to send) until a page gives none or a bound is broken.
pub(crate) async fn follow<T, F, Fut>(
    bounds: Bounds,
    mut fetch: F,
) -> Result<Result<Listed<T>, ListingProblem>, ServiceError>
where
    T: Item,
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<ServerResult, ServiceError>>,
{
    let mut listed = Listed {
        items: Vec::new(),
        skipped: Vec::new(),
        skipped_count: 0,
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut first_of: Vec<String> = Vec::new();
    let mut bytes = 0u64;
    let mut cursor = None;
    for number in 1..=bounds.pages {
        let result = fetch(cursor.take()).await?;
        let (next, size) = match read_page(result, number, &mut listed) {
            Ok(read) => read,
            Err(problem) => return Ok(Err(problem)),
        };
        bytes = bytes.saturating_add(size);
        if bytes > bounds.bytes {
            return Ok(Err(ListingProblem::TooManyBytes {
                limit: bounds.bytes,
                page: number,
            }));
        }
        if listed.items.len() > bounds.items {
            return Ok(Err(ListingProblem::TooManyItems {
                limit: bounds.items,
                page: number,
            }));
        }
        let Some(next) = next.filter(|c| !c.is_empty()) else {
            return Ok(Ok(listed));
        };
        if !seen.insert(next.clone()) {
            let first = first_of
                .iter()
                .position(|c| *c == next)
                .map_or(0, |i| i + 1);
            return Ok(Err(ListingProblem::RepeatedCursor {
                page: number,
                first,
                cursor: quote(&next),
            }));
        }
        first_of.push(next.clone());
        cursor = Some(next);
    }
    Ok(Err(ListingProblem::TooManyPages {
        limit: bounds.pages,
    }))
}

/// Adds one page's entries to `listed`; its next cursor and size in bytes.
fn read_page<T: Item>(
    result: ServerResult,
    number: usize,
    listed: &mut Listed<T>,
) -> Result<(Option<String>, u64), ListingProblem> {
    let value = match T::typed(result) {
        Ok((items, next)) => {
            let size = json_size(&items) + next.as_ref().map_or(0, json_size);
            listed.items.extend(items);
            return Ok((next, size));
        }
        // rmcp reads a list with an entry it cannot read as some other
        // result, most often a custom one: read it entry by entry.
        Err(other) => match *other {
            ServerResult::CustomResult(CustomResult(value)) => value,
            other => serde_json::to_value(&other).unwrap_or(Value::Null),
        },
    };
    let size = json_size(&value);
    let not_a_list = |reason: String| ListingProblem::NotAList {
        method: T::METHOD,
        page: number,
        reason,
    };
    let Value::Object(mut fields) = value else {
        return Err(not_a_list(format!(
            "the result is {}, not an object",
            kind(&value)
        )));
    };
    let next = match fields.remove("nextCursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c),
        Some(other) => {
            return Err(not_a_list(format!(
                "`nextCursor` is {}, not a string",
                kind(&other)
            )));
        }
    };
    let entries = match fields.remove(T::FIELD) {
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            return Err(not_a_list(format!(
                "`{}` is {}, not a list",
                T::FIELD,
                kind(&other)
            )));
        }
        None => return Err(not_a_list(format!("there is no `{}` list", T::FIELD))),
    };
    for (index, entry) in entries.into_iter().enumerate() {
        let describe = listed.skipped.len() < MAX_SKIPPED_DESCRIBED;
        match read_entry::<T>(entry, describe) {
            Ok(item) => listed.items.push(item),
            Err(fault) => {
                listed.skipped_count += 1;
                if let Some(Fault {
                    name,
                    field,
                    reason,
                }) = fault
                {
                    listed.skipped.push(SkippedEntry {
                        method: T::METHOD,
                        list: T::FIELD,
                        page: number,
                        index,
                        name,
                        field,
                        reason,
                    });
                }
            }
        }
    }
    Ok((next, size))
}

/// One entry as `T`; else, when `describe`, its readable name, the field
/// at fault and why (the field is the one whose removal changes the error:
/// any other field left out leaves it as it is).
fn read_entry<T: Item>(entry: Value, describe: bool) -> Result<T, Option<Fault>> {
    let error = match T::deserialize(&entry) {
        Ok(item) => return Ok(item),
        Err(e) => e.to_string(),
    };
    if !describe {
        return Err(None);
    }
    let Value::Object(fields) = &entry else {
        return Err(Some(Fault {
            name: None,
            field: None,
            reason: format!("it is {}, not an object", kind(&entry)),
        }));
    };
    let name = ["name", "uri", "uriTemplate"]
        .iter()
        .find_map(|key| fields.get(*key).and_then(Value::as_str))
        .map(quote);
    let field = match error.strip_prefix("missing field `") {
        Some(rest) => rest.split('`').next().map(str::to_owned),
        None => fields.keys().find_map(|key| {
            let mut without = fields.clone();
            without.remove(key);
            let changed = match T::deserialize(&Value::Object(without)) {
                Ok(_) => true,
                Err(e) => e.to_string() != error,
            };
            changed.then(|| key.chars().take(MAX_QUOTED_CHARS).collect())
        }),
    };
    Err(Some(Fault {
        name,
        field,
        reason: error,
    }))
}

/// What is wrong with an entry that was left out.
struct Fault {
    name: Option<String>,
    field: Option<String>,
    reason: String,
}

/// `text` quoted with its control characters escaped, cut short.
fn quote(text: &str) -> String {
    let mut short: String = text.chars().take(MAX_QUOTED_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    format!("{short:?}")
}

/// A word for a JSON value's kind.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The size of `value` as compact JSON, counted without keeping it.
fn json_size<V: Serialize + ?Sized>(value: &V) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// What the latest listing of each list method of one client left out:
/// shown with the server's sources, and logged once — when an entry is
/// first left out, not again at each listing that leaves it out.
#[derive(Debug, Default)]
pub(crate) struct SkippedNotes(parking_lot::Mutex<BTreeMap<&'static str, Noted>>);

#[derive(Debug)]
struct Noted {
    entries: Vec<SkippedEntry>,
    count: usize,
}

impl SkippedNotes {
    /// Records what a listing of `method` on `server` left out.
    pub(crate) fn record(
        &self,
        server: &ServerName,
        method: &'static str,
        entries: Vec<SkippedEntry>,
        count: usize,
    ) {
        let mut notes = self.0.lock();
        let before = notes.get(method);
        for entry in &entries {
            if before.is_none_or(|b| !b.entries.contains(entry)) {
                tracing::warn!(server = %server, "MCP server \"{server}\": {entry}");
            }
        }
        let more = count - entries.len();
        if more > 0 && before.is_none_or(|b| b.count != count) {
            tracing::warn!(server = %server, "MCP server \"{server}\": {method}: {more} more entries are not published");
        }
        if count == 0 {
            notes.remove(method);
        } else {
            notes.insert(method, Noted { entries, count });
        }
    }

    /// One line each, by list method; the entries not described counted.
    pub(crate) fn lines(&self) -> Vec<String> {
        let notes = self.0.lock();
        let mut lines = Vec::new();
        for (method, noted) in notes.iter() {
            lines.extend(noted.entries.iter().map(ToString::to_string));
            let more = noted.count - noted.entries.len();
            if more > 0 {
                lines.push(format!("{method}: {more} more entries are not published"));
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests;
