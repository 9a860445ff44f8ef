//! The clients behind the calls in flight on one connection, so that what
//! a server asks while a call runs (sampling, elicitation) and the log
//! messages it sends reach the client whose call caused them.
//!
//! MCP gives a server-to-client request no link to the call it serves, and
//! one upstream connection is shared by every caller (the pool). The rule,
//! as other gateways apply it: the caller whose call started most recently
//! and is still running is asked. With no call in flight a request is
//! refused with a message saying so, and a log message is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use extpool_core::CallClient;
use parking_lot::Mutex;

/// Callers of the calls in flight, oldest first.
#[derive(Default)]
pub struct Callers {
    next: AtomicU64,
    active: Mutex<Vec<(u64, Arc<dyn CallClient>)>>,
    /// The URL-mode elicitations relayed and not yet complete, with the
    /// client each went to (kept past the call that asked).
    pub(crate) elicitations: crate::url_elicitation::Sent,
}

impl std::fmt::Debug for Callers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callers")
            .field("active", &self.active.lock().len())
            .finish()
    }
}

impl Callers {
    /// Registers `client` for the duration of a call (until the guard drops).
    pub(crate) fn enter(self: &Arc<Self>, client: Arc<dyn CallClient>) -> CallerGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.active.lock().push((id, client));
        CallerGuard {
            callers: self.clone(),
            id,
        }
    }

    /// The most recent caller that accepts `method`.
    pub(crate) fn latest(&self, method: &str) -> Option<Arc<dyn CallClient>> {
        self.active
            .lock()
            .iter()
            .rev()
            .find(|(_, c)| c.accepts(method))
            .map(|(_, c)| c.clone())
    }

    /// The most recent caller, whatever it accepts.
    pub(crate) fn latest_any(&self) -> Option<Arc<dyn CallClient>> {
        self.active.lock().last().map(|(_, c)| c.clone())
    }
}

/// Unregisters a caller when its call ends or is dropped.
pub(crate) struct CallerGuard {
    callers: Arc<Callers>,
    id: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        self.callers.active.lock().retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    struct Named(&'static str, bool);

    #[async_trait::async_trait]
    impl CallClient for Named {
        async fn request(&self, _: &str, _: Value) -> Result<Value, String> {
            Ok(Value::String(self.0.into()))
        }
        fn accepts(&self, _: &str) -> bool {
            self.1
        }
        fn log(&self, _: Value) {}
    }

    #[tokio::test]
    async fn the_latest_caller_that_accepts_is_asked_until_its_call_ends() {
        let callers = Arc::new(Callers::default());
        assert!(callers.latest("sampling/createMessage").is_none());
        let _a = callers.enter(Arc::new(Named("a", true)));
        let b = callers.enter(Arc::new(Named("b", true)));
        let _c = callers.enter(Arc::new(Named("c", false)));
        let ask = |c: &Callers| {
            let client = c.latest("sampling/createMessage").expect("a caller");
            async move { client.request("m", Value::Null).await }
        };
        assert_eq!(ask(&callers).await, Ok(Value::String("b".into())));
        drop(b);
        assert_eq!(ask(&callers).await, Ok(Value::String("a".into())));
        assert!(callers.latest_any().is_some());
    }
}
