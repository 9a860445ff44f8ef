//! Answers kept whole, where rmcp's types would drop what they do not
//! name: the answer to a request rmcp has no variant for (a
//! `CustomRequest`, such as the 2025-11-25 task methods and a task-augmented
//! `tools/call`) reaches its caller as the server's JSON
//! (`ServerResult::CustomResult`), never read into the first typed result
//! it happens to fit; and the `capabilities` the server declared in its
//! `initialize` answer are kept as sent (rmcp's `ServerCapabilities` has
//! no `tasks`, for one).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use rmcp::model::{JsonObject, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;

/// How many requests may wait for a whole answer at once; past it the
/// oldest are forgotten (a server that never answers them must not grow
/// the set), and their answers, if they come, are read as rmcp reads them.
const MAX_WAITING: usize = 1024;

/// What an outgoing request asks of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The whole result, as JSON.
    Result,
    /// The `capabilities` of an `initialize` answer, kept aside.
    Capabilities,
    /// The tools' `execution.taskSupport` of a `tools/list` answer (the
    /// first page when `first`), kept aside.
    Tools {
        /// Whether the request asked for the first page (no cursor).
        first: bool,
    },
}

/// What a server declared that rmcp's types drop, as it sent it: its
/// capabilities (empty until its `initialize` answer came) and which of
/// its tools take task-augmented calls (`execution.taskSupport`, MCP
/// 2025-11-25); empty for transports that do not keep them.
#[derive(Debug, Clone, Default)]
pub struct Declared(Arc<DeclaredInner>);

#[derive(Debug, Default)]
struct DeclaredInner {
    capabilities: OnceLock<JsonObject>,
    task_tools: parking_lot::RwLock<HashMap<String, String>>,
    /// Answers kept whole by a transport that cannot hand them to rmcp as
    /// they are (HTTP: rmcp reads each SSE event itself), by request id,
    /// until their caller takes them; at most [`MAX_WAITING`].
    answers: parking_lot::Mutex<HashMap<String, serde_json::Value>>,
}

impl Declared {
    /// Capability `name` as the server declared it.
    pub fn capability(&self, name: &str) -> Option<&serde_json::Value> {
        self.0.capabilities.get()?.get(name)
    }

    /// The `execution.taskSupport` of tool `name` (`optional` or
    /// `required`) in the server's latest listing; `None`: forbidden.
    pub fn task_support(&self, name: &str) -> Option<String> {
        self.0.task_tools.read().get(name).cloned()
    }

    /// Keeps the whole answer to request `id` for its caller
    /// ([`Declared::take_answer`]); past [`MAX_WAITING`] answers nobody
    /// took (their callers gave up), the kept ones are forgotten.
    pub(crate) fn keep_answer(&self, id: &RequestId, result: serde_json::Value) {
        let mut answers = self.0.answers.lock();
        if answers.len() >= MAX_WAITING {
            answers.clear();
        }
        answers.insert(serde_json::to_string(id).unwrap_or_default(), result);
    }

    /// The whole answer to request `id`, if one was kept.
    pub(crate) fn take_answer(&self, id: &RequestId) -> Option<serde_json::Value> {
        let key = serde_json::to_string(id).unwrap_or_default();
        self.0.answers.lock().remove(&key)
    }
}

/// What a client's message asks of its answer, if anything: a request rmcp
/// has no variant for wants it whole, an `initialize` its capabilities
/// kept, a `tools/list` its tools' task support (each transport that keeps
/// answers asks this one rule).
pub(crate) fn keeps(message: &rmcp::model::ClientJsonRpcMessage) -> Option<(Keep, &RequestId)> {
    use rmcp::model::{ClientRequest, JsonRpcMessage, JsonRpcRequest};
    let JsonRpcMessage::Request(JsonRpcRequest { id, request, .. }) = message else {
        return None;
    };
    match request {
        ClientRequest::CustomRequest(_) => Some((Keep::Result, id)),
        ClientRequest::InitializeRequest(_) => Some((Keep::Capabilities, id)),
        ClientRequest::ListToolsRequest(list) => {
            let first = list.params.as_ref().is_none_or(|p| p.cursor.is_none());
            Some((Keep::Tools { first }, id))
        }
        _ => None,
    }
}

/// The members of a tool this module reads.
#[derive(Deserialize)]
struct ListedTool {
    name: String,
    #[serde(default)]
    execution: Option<Execution>,
}

#[derive(Deserialize)]
struct Execution {
    #[serde(rename = "taskSupport", default)]
    task_support: Option<String>,
}

#[derive(Deserialize)]
struct Listed {
    #[serde(default)]
    tools: Vec<ListedTool>,
}

/// The requests of one connection waiting for an answer kept whole.
#[derive(Debug, Default)]
pub(crate) struct Whole {
    results: HashSet<String>,
    /// Their order, oldest first, to forget the oldest past the bound.
    order: std::collections::VecDeque<String>,
    initialize: Option<String>,
    /// `tools/list` requests waiting, with whether each asked for the
    /// first page.
    listings: HashMap<String, bool>,
    declared: Declared,
}

/// The members of an answer this module reads.
#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Initialized {
    capabilities: Option<JsonObject>,
}

impl Whole {
    /// Where the server's declared capabilities are kept.
    pub(crate) fn declared(&self) -> Declared {
        self.declared.clone()
    }

    /// Keeps the server's declared capabilities in `declared` (shared with
    /// whoever holds it).
    pub(crate) fn keep_declared_in(&mut self, declared: Declared) {
        self.declared = declared;
    }

    /// Notes that request `id` wants its answer kept as `keep` says.
    pub(crate) fn expect(&mut self, keep: Keep, id: &RequestId) {
        let key = serde_json::to_string(id).unwrap_or_default();
        match keep {
            Keep::Capabilities => self.initialize = Some(key),
            Keep::Tools { first } => {
                if self.listings.len() >= MAX_WAITING {
                    self.listings.clear();
                }
                self.listings.insert(key, first);
            }
            Keep::Result => {
                if self.order.len() >= MAX_WAITING
                    && let Some(oldest) = self.order.pop_front()
                {
                    self.results.remove(&oldest);
                }
                self.results.insert(key.clone());
                self.order.push_back(key);
            }
        }
    }

    /// Whether any answer is awaited (else lines need not be looked at).
    pub(crate) fn waiting(&self) -> bool {
        !self.results.is_empty() || self.initialize.is_some() || !self.listings.is_empty()
    }

    /// For an answer to a request that wants it whole: its id and result
    /// as JSON. An `initialize` answer has its capabilities kept, a
    /// `tools/list` answer its tools' task support, and each goes on to be
    /// read as usual (`None`), as does anything else.
    pub(crate) fn take(&mut self, line: &[u8]) -> Option<(RequestId, serde_json::Value)> {
        let answer: Answer = serde_json::from_slice(line).ok()?;
        let id = answer.id?.get();
        if self.initialize.as_deref() == Some(id) {
            self.initialize = None;
            if let Some(result) = answer.result
                && let Ok(Initialized {
                    capabilities: Some(capabilities),
                }) = serde_json::from_str(result.get())
            {
                let _ = self.declared.0.capabilities.set(capabilities);
            }
            return None;
        }
        if let Some(first) = self.listings.remove(id) {
            if let Some(result) = answer.result
                && let Ok(listed) = serde_json::from_str::<Listed>(result.get())
            {
                let mut tools = self.declared.0.task_tools.write();
                if first {
                    tools.clear();
                }
                for tool in listed.tools {
                    let support = tool.execution.and_then(|e| e.task_support);
                    if let Some(support @ ("optional" | "required")) = support.as_deref() {
                        tools.insert(tool.name, support.to_owned());
                    }
                }
            }
            return None;
        }
        if !self.results.remove(id) {
            return None;
        }
        self.order.retain(|k| k != id);
        let result = serde_json::from_str(answer.result?.get()).ok()?;
        let id = serde_json::from_str(id).ok()?;
        Some((id, result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_answer_is_kept_whole_and_initialize_keeps_its_capabilities() {
        let mut whole = Whole::default();
        assert!(!whole.waiting());
        whole.expect(Keep::Capabilities, &RequestId::Number(0));
        whole.expect(Keep::Result, &RequestId::Number(7));
        assert!(whole.waiting());
        let init = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{"list":{}}},"serverInfo":{"name":"s","version":"1"}}}"#;
        assert!(whole.take(init).is_none());
        assert_eq!(
            whole.declared().capability("tasks"),
            Some(&serde_json::json!({"list": {}}))
        );
        whole.expect(Keep::Tools { first: true }, &RequestId::Number(3));
        let tools = br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a","inputSchema":{},"execution":{"taskSupport":"required"}},{"name":"b","inputSchema":{}},{"name":"c","execution":{"taskSupport":"forbidden"}}]}}"#;
        assert!(whole.take(tools).is_none());
        let declared = whole.declared();
        assert_eq!(declared.task_support("a").as_deref(), Some("required"));
        assert_eq!(declared.task_support("b"), None);
        assert_eq!(declared.task_support("c"), None);
        let other = br#"{"jsonrpc":"2.0","id":8,"result":{"task":{"taskId":"x"}}}"#;
        assert!(whole.take(other).is_none());
        let mine = br#"{"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"x","ttl":null}}}"#;
        let (id, result) = whole.take(mine).expect("kept whole");
        assert_eq!(id, RequestId::Number(7));
        assert_eq!(
            result,
            serde_json::json!({"task": {"taskId": "x", "ttl": null}})
        );
        assert!(!whole.waiting());
    }

    #[test]
    fn requests_never_answered_are_forgotten_past_the_bound() {
        let mut whole = Whole::default();
        for n in 0..(MAX_WAITING as i64 + 10) {
            whole.expect(Keep::Result, &RequestId::Number(n));
        }
        assert_eq!(whole.results.len(), MAX_WAITING);
        assert!(
            whole
                .take(br#"{"jsonrpc":"2.0","id":0,"result":{}}"#)
                .is_none()
        );
    }
}
