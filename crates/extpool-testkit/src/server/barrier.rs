//! `barrier`: calls that wait for each other, so a test can prove that
//! calls were in flight on one server at the same time without measuring
//! time. A call with `key` and `parties` records its arrival (the
//! persistent counter `barrier-<key>`, readable while it waits) and returns
//! only once `parties` calls with that key have arrived in this process.
//! Calls that were serialised — one finishing before the next is sent —
//! would wait forever. A cancelled call stops and increments `cancelled`,
//! like `sleep`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use rmcp::ErrorData;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::state::{Counters, StateError};

/// Most parties one barrier waits for.
pub(crate) const MAX_PARTIES: u64 = 64;
/// Most distinct keys one process keeps (each holds a few bytes).
const MAX_KEYS: usize = 1024;

/// Arrivals per key in this process.
#[derive(Debug, Default)]
pub(crate) struct Barriers {
    arrivals: Mutex<HashMap<String, watch::Sender<u64>>>,
}

/// The counter that records arrivals at barrier `key`.
pub fn arrivals_counter(key: &str) -> String {
    format!("barrier-{key}")
}

fn state_error(e: StateError) -> ErrorData {
    match e {
        StateError::InvalidKey(_) => ErrorData::invalid_params(e.to_string(), None),
        _ => ErrorData::internal_error(e.to_string(), None),
    }
}

impl Barriers {
    /// Records one arrival at `key` and waits until `parties` have arrived,
    /// or until `cancelled` fires (then counts it in `cancelled`).
    pub(crate) async fn wait(
        &self,
        counters: &Counters,
        key: &str,
        parties: u64,
        cancelled: &CancellationToken,
    ) -> Result<u64, ErrorData> {
        let counter = arrivals_counter(key);
        crate::state::validate_key(&counter).map_err(state_error)?;
        let mut arrived = {
            let mut map = self.arrivals.lock().unwrap_or_else(PoisonError::into_inner);
            if !map.contains_key(key) && map.len() >= MAX_KEYS {
                return Err(ErrorData::invalid_params(
                    format!("too many barrier keys (at most {MAX_KEYS})"),
                    None,
                ));
            }
            let sender = map
                .entry(key.to_owned())
                .or_insert_with(|| watch::channel(0).0);
            sender.send_modify(|n| *n += 1);
            sender.subscribe()
        };
        counters.increment(&counter).map_err(state_error)?;
        tokio::select! {
            reached = arrived.wait_for(|n| *n >= parties) => match reached {
                Ok(_) => Ok(parties),
                Err(_) => Err(ErrorData::internal_error("barrier dropped", None)),
            },
            () = cancelled.cancelled() => {
                counters.increment("cancelled").map_err(state_error)?;
                tracing::info!(key, "barrier cancelled after a cancellation from the client");
                Err(ErrorData::internal_error("cancelled", None))
            }
        }
    }
}
