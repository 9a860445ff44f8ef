//! URL-mode elicitation (MCP 2025-11-25) through a relaying client: which
//! client was sent each elicitation, so that the server's later
//! `notifications/elicitation/complete` reaches that client and no other.
//!
//! A server names each URL-mode elicitation with an `elicitationId`, in an
//! `elicitation/create` request or in the `data.elicitations` of a
//! `URLElicitationRequiredError` (-32042) answering a call; when the user
//! has finished in the browser it sends `notifications/elicitation/complete`
//! with that id, by then often after the call is over. One upstream
//! connection serves every session of a gateway, so the id is the only
//! link back: each connection keeps the ids it relayed with the client they
//! went to (`Sent`): its session only, never its call (which must end
//! when it ends). A complete notification whose id was not relayed on that
//! connection goes nowhere. The ids are the server's, on this connection
//! only: a client cannot name another's.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use extpool_core::ClientSession;
use parking_lot::Mutex;
use rmcp::model::{ErrorCode, ErrorData};
use serde_json::Value;

/// The JSON-RPC error code of `URLElicitationRequiredError`: the call
/// cannot go on until the user has completed the URL elicitations in its
/// `data.elicitations`.
pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);

/// The notification a server sends when a URL-mode elicitation is complete.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// Most elicitations a connection remembers waiting for completion; the
/// oldest is forgotten first (its completion then reaches no one), so a
/// server that never completes what it asks cannot grow the map.
pub(crate) const MAX_WAITING: usize = 1024;

/// The longest elicitation id kept: a longer one is not remembered.
const MAX_ID_LEN: usize = 512;

/// The URL elicitations relayed on one connection and not yet complete,
/// by id, with the session of the client each went to; oldest first in
/// `order`.
#[derive(Default)]
pub(crate) struct Sent {
    inner: Mutex<SentInner>,
}

#[derive(Default)]
struct SentInner {
    clients: HashMap<String, Arc<dyn ClientSession>>,
    order: VecDeque<String>,
}

impl Sent {
    /// Remembers that elicitation `id` went to the client of `session`
    /// (replacing what the same id went to before).
    pub(crate) fn remember(&self, id: &str, session: Arc<dyn ClientSession>) {
        if id.is_empty() || id.len() > MAX_ID_LEN {
            return;
        }
        let mut inner = self.inner.lock();
        if inner.clients.insert(id.to_owned(), session).is_some() {
            inner.order.retain(|kept| kept != id);
        }
        inner.order.push_back(id.to_owned());
        while inner.order.len() > MAX_WAITING {
            if let Some(oldest) = inner.order.pop_front() {
                inner.clients.remove(&oldest);
            }
        }
    }

    /// The session of the client elicitation `id` went to, forgotten now
    /// (a completion is told once).
    pub(crate) fn take(&self, id: &str) -> Option<Arc<dyn ClientSession>> {
        let mut inner = self.inner.lock();
        let client = inner.clients.remove(id)?;
        inner.order.retain(|kept| kept != id);
        Some(client)
    }

    /// How many elicitations wait for completion.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().clients.len()
    }
}

/// The ids of the URL-mode elicitations a `URLElicitationRequiredError`
/// carries (`data.elicitations[].elicitationId`); none for another error.
pub(crate) fn required_ids(error: &ErrorData) -> Vec<&str> {
    if error.code != URL_ELICITATION_REQUIRED {
        return Vec::new();
    }
    error
        .data
        .as_ref()
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.get("mode").and_then(Value::as_str) == Some("url"))
        .filter_map(|e| e.get("elicitationId").and_then(Value::as_str))
        .collect()
}

/// The `elicitationId` of a complete notification's params.
pub(crate) fn completed_id(params: Option<&Value>) -> Option<&str> {
    params?.get("elicitationId")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Named(&'static str);

    #[async_trait::async_trait]
    impl ClientSession for Named {
        async fn notify(&self, _: &str, _: Value) -> Result<(), String> {
            Err(self.0.into())
        }
    }

    async fn who(client: Arc<dyn ClientSession>) -> String {
        client.notify("m", Value::Null).await.unwrap_err()
    }

    #[tokio::test]
    async fn a_completion_reaches_the_client_its_elicitation_went_to_once() {
        let sent = Sent::default();
        sent.remember("e1", Arc::new(Named("a")));
        sent.remember("e2", Arc::new(Named("b")));
        assert_eq!(who(sent.take("e2").unwrap()).await, "b");
        assert!(sent.take("e2").is_none());
        assert!(sent.take("unknown").is_none());
        assert_eq!(who(sent.take("e1").unwrap()).await, "a");
        assert_eq!(sent.len(), 0);
    }

    #[test]
    fn the_oldest_is_forgotten_past_the_bound_and_long_ids_are_not_kept() {
        let sent = Sent::default();
        for i in 0..=MAX_WAITING {
            sent.remember(&format!("e{i}"), Arc::new(Named("a")));
        }
        assert_eq!(sent.len(), MAX_WAITING);
        assert!(sent.take("e0").is_none());
        assert!(sent.take("e1").is_some());
        sent.remember(&"x".repeat(MAX_ID_LEN + 1), Arc::new(Named("a")));
        sent.remember("", Arc::new(Named("a")));
        assert_eq!(sent.len(), MAX_WAITING - 1);
    }

    #[test]
    fn the_ids_of_a_url_elicitation_required_error_are_read() {
        let error = ErrorData::new(
            URL_ELICITATION_REQUIRED,
            "authorize first",
            Some(json!({"elicitations": [
                {"mode": "url", "url": "https://a.example", "message": "m", "elicitationId": "e1"},
                {"mode": "form", "elicitationId": "f"},
                {"mode": "url", "url": "https://b.example", "message": "m"},
            ]})),
        );
        assert_eq!(required_ids(&error), ["e1"]);
        let other = ErrorData::new(ErrorCode(-32000), "x", error.data.clone());
        assert!(required_ids(&other).is_empty());
        assert_eq!(
            completed_id(Some(&json!({"elicitationId": "e1"}))),
            Some("e1")
        );
        assert_eq!(completed_id(None), None);
    }
}
