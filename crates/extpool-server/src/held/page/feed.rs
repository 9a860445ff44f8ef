//! The last tool calls, as the audit log records them (time, principal,
//! session, tool, decision, outcome, duration; never arguments), kept in
//! memory for the operator page whether or not an audit file is written,
//! and a counter that moves with each one (what the page's stream waits on).

use std::collections::VecDeque;

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::watch;

use crate::audit::AuditRecord;

/// Calls kept.
pub const KEPT: usize = 100;

/// One call as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallRow {
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// Who called (the caller's label, shared with its request).
    pub principal: std::sync::Arc<str>,
    /// The client session.
    pub session: String,
    /// The tool, as the client named it.
    pub tool: String,
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// `ok`, `tool_error`, `error`, `denied`, `blocked`, `cancelled`, …
    pub outcome: &'static str,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
}

/// The last [`KEPT`] calls.
#[derive(Debug)]
pub struct Feed {
    rows: Mutex<VecDeque<CallRow>>,
    count: watch::Sender<u64>,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            rows: Mutex::new(VecDeque::with_capacity(KEPT)),
            count: watch::Sender::new(0),
        }
    }
}

impl Feed {
    /// Keeps `record` (the oldest goes past [`KEPT`]).
    pub fn push(&self, record: &AuditRecord<'_>) {
        let row = CallRow {
            time_ms: record.time_ms,
            principal: record.principal.clone(),
            session: record.session.to_owned(),
            tool: record.name.to_owned(),
            decision: record.decision,
            outcome: record.outcome,
            duration_ms: record.duration_ms,
        };
        {
            let mut rows = self.rows.lock();
            if rows.len() == KEPT {
                rows.pop_front();
            }
            rows.push_back(row);
        }
        self.count.send_modify(|n| *n += 1);
    }

    /// The calls kept, newest first.
    pub fn rows(&self) -> Vec<CallRow> {
        self.rows.lock().iter().rev().cloned().collect()
    }

    /// Moves with each call kept.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.count.subscribe()
    }
}
