//! Session-era MCP sessions any replica resumes.
//!
//! A 2025-era client keeps the `Mcp-Session-Id` one replica gave it and a
//! load balancer may send its next request to another. Each session's
//! [`Record`] (its client's `initialize` parameters) is kept in the
//! gateway's state store, one per endpoint (`/mcp`, or a durable
//! session's `/sessions/{id}/mcp`), resumable on that endpoint only: the
//! replica a request of an unknown session id reaches loads it, makes a
//! fresh handler and initializes it again (the front end does), so the
//! client never notices. The upstream connections the resumed session
//! uses are that replica's own. Which session ids are resumed at all,
//! and by one request at a time, is the front end's to decide: only
//! those the store keeps a record of. A caller's MCP sessions are counted
//! in the store too ([`Resumable::claim`]), so `sessions_per_principal`
//! holds across the replicas sharing it.

use extpool_state::StateStore;
use rmcp::model::InitializeRequestParams;
use serde::{Deserialize, Serialize};

/// What the store keeps of one MCP session: enough to initialize a
/// handler for it again on any replica. (Its JSON is the shape earlier
/// versions wrote, so their records still resume.)
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The client's `initialize` parameters.
    pub initialize_params: InitializeRequestParams,
}

/// The records of every endpoint's MCP sessions, in the state store when
/// there is one (without one, sessions are this replica's alone).
pub(crate) struct Resumable {
    store: Option<StateStore>,
}

impl Resumable {
    /// Sessions resumable across replicas when `store` is given.
    pub(crate) fn new(store: Option<StateStore>) -> Self {
        Self { store }
    }

    /// Claims MCP session `id` of `endpoint` for `owner` in the store
    /// before it is made, counted against the `max` sessions one caller
    /// holds on all the replicas sharing it (those seen within `live`):
    /// `Err(held)` when `owner` holds them all. Without a store, or when
    /// it does not answer, the replica's own count is the limit.
    pub(crate) async fn claim(
        &self,
        (endpoint, id): (&str, &str),
        owner: &str,
        max: usize,
        live: std::time::Duration,
    ) -> Result<(), u64> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        match store
            .claim_mcp_session((endpoint, id), owner, max, live)
            .await
        {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(
                    endpoint,
                    "cannot count a caller's MCP sessions on every replica ({e}); this replica's count holds"
                );
                Ok(())
            }
        }
    }

    /// Keeps the record of MCP session `id` of `endpoint` (its client's
    /// `initialize` parameters), so any replica resumes it; without a
    /// store, nothing.
    pub(crate) async fn keep(&self, endpoint: &str, id: &str, params: &InitializeRequestParams) {
        let Some(store) = &self.store else {
            return;
        };
        let record = Record {
            initialize_params: params.clone(),
        };
        let written = match serde_json::to_string(&record) {
            Ok(json) => store
                .put_mcp_session(endpoint, id, &json)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = written {
            // Other replicas then cannot resume it; this one serves it.
            tracing::warn!(endpoint, "cannot record an MCP session: {e}");
        }
    }

    /// The `initialize` parameters MCP session `id` of `endpoint` was made
    /// with, from the store's record; `None` without one (or a store).
    pub(crate) async fn load(&self, endpoint: &str, id: &str) -> Option<InitializeRequestParams> {
        let json = match self.store.as_ref()?.mcp_session(endpoint, id).await {
            Ok(json) => json?,
            Err(e) => {
                tracing::warn!(endpoint, "cannot read an MCP session's record: {e}");
                return None;
            }
        };
        match serde_json::from_str::<Record>(&json) {
            Ok(record) => Some(record.initialize_params),
            Err(e) => {
                // Unreadable (another version wrote it): the client starts
                // a new session, as for any unknown id.
                tracing::warn!(
                    endpoint,
                    "a stored MCP session is unreadable ({e}); its client must start a new one"
                );
                None
            }
        }
    }

    /// Ends MCP session `id` of `endpoint` for good: its record removed, so
    /// no replica resumes it (the store tells the others it is closed).
    pub(crate) async fn discard(&self, endpoint: &str, id: &str) {
        if let Some(store) = &self.store
            && let Err(e) = store.delete_mcp_session(endpoint, id).await
        {
            tracing::debug!(endpoint, "removing an MCP session's record: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_as_earlier_versions_wrote_it() {
        let json = r#"{"initialize_params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
        let record: Record = serde_json::from_str(json).expect("record");
        assert_eq!(record.initialize_params.client_info.name, "c");
        let again = serde_json::to_value(&record).expect("json");
        assert_eq!(again["initialize_params"]["protocolVersion"], "2025-06-18");
    }
}
