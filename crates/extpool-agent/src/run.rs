//! Runs and interruption (RFC lifecycle diagram 8).
//!
//! A *run* is what a user interrupts: every turn an agent starts, and every
//! call its subagents make, belongs to the agent's current run. Each run is
//! a cancellation token; a subagent's runs are children of its parent's
//! current run, so interrupting the parent cancels the subagent's calls in
//! flight. A call in flight is cancelled by dropping it, which sends MCP's
//! `notifications/cancelled` to its server; the pooled connection stays
//! open. After an interruption the next turn starts a new run.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// The run state of one agent.
#[derive(Debug)]
pub(crate) struct RunState {
    current: Mutex<CancellationToken>,
    parent: Option<Arc<RunState>>,
}

impl RunState {
    /// The run state of a top-level agent.
    pub(crate) fn root() -> Arc<Self> {
        Arc::new(Self {
            current: Mutex::new(CancellationToken::new()),
            parent: None,
        })
    }

    /// The run state of a subagent of `parent`: its runs are children of
    /// the parent's current run.
    pub(crate) fn child_of(parent: &Arc<RunState>) -> Arc<Self> {
        Arc::new(Self {
            current: Mutex::new(parent.current().child_token()),
            parent: Some(parent.clone()),
        })
    }

    /// The current run's token, as it is.
    pub(crate) fn current(&self) -> CancellationToken {
        self.current.lock().clone()
    }

    /// The token for a new turn: the current run's, or — when it was
    /// interrupted — a new run's. A subagent whose parent's run is still
    /// interrupted stays interrupted (its parent has not resumed).
    pub(crate) fn for_turn(&self) -> CancellationToken {
        let mut current = self.current.lock();
        if current.is_cancelled() {
            let next = match &self.parent {
                Some(parent) => {
                    let parent = parent.current();
                    if parent.is_cancelled() {
                        return current.clone();
                    }
                    parent.child_token()
                }
                None => CancellationToken::new(),
            };
            *current = next;
        }
        current.clone()
    }
}

/// Interrupts an agent's current run from anywhere (a UI thread, a signal
/// handler's task). Cheap to clone.
#[derive(Debug, Clone)]
pub struct RunHandle {
    pub(crate) state: Arc<RunState>,
    pub(crate) scope: String,
}

impl RunHandle {
    /// Interrupts the current run: every call in flight in it — the
    /// agent's and its subagents' — is cancelled (its server is told) and
    /// returns [`crate::AgentError::Interrupted`]. Pooled connections stay
    /// open; the agent's next turn starts a new run.
    pub fn cancel(&self) {
        tracing::info!(scope = %self.scope, "run interrupted");
        self.state.current().cancel();
    }

    /// True when the current run has been interrupted.
    pub fn is_cancelled(&self) -> bool {
        self.state.current().is_cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupting_a_parent_interrupts_its_subagents_until_it_resumes() {
        let parent = RunState::root();
        let child = RunState::child_of(&parent);
        let child_turn = child.for_turn();
        parent.current().cancel();
        assert!(child_turn.is_cancelled());
        // The subagent cannot start a fresh run while its parent is interrupted.
        assert!(child.for_turn().is_cancelled());
        // The parent's next turn starts a new run; then the subagent's too.
        assert!(!parent.for_turn().is_cancelled());
        let fresh = child.for_turn();
        assert!(!fresh.is_cancelled());
        parent.current().cancel();
        assert!(fresh.is_cancelled());
    }
}
