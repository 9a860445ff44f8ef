//! Store events: what changed in the shared state, for whoever caches it.
//!
//! Replicas sharing one store each keep sessions open with a copy of their
//! authority; when another replica grants names, deletes a session or
//! closes an MCP session, they must hear of it (and of API keys created or
//! revoked, if they cache them). Every handle publishes its own writes to
//! its subscribers at once; on PostgreSQL the same events also travel to
//! every other replica with `NOTIFY` (sent at commit, never for a
//! rolled-back write) and arrive through one `LISTEN` connection per
//! handle. A notification lost while that connection was down is covered
//! by [`StoreEvent::Resync`], sent each time it (re)connects: re-read
//! whatever you cache. On SQLite, events reach the handles of one process
//! only (an SQLite file serves one gateway process).

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::broadcast;

use crate::model::SessionId;
use crate::sql::EVENTS_CHANNEL;

/// How many events a slow subscriber may fall behind before it is told
/// to [`StoreEvent::Resync`].
const BUFFER: usize = 1024;

/// Something that changed in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreEvent {
    /// A refresh granted the session names it did not hold.
    Granted(SessionId),
    /// The session was deleted.
    Deleted(SessionId),
    /// A client ended its session-era MCP session `id` on `endpoint` (its
    /// `DELETE` reached one replica; the others drop their copy).
    McpSessionClosed {
        /// `""` for `/mcp`, else the durable session's id.
        endpoint: String,
        /// The `Mcp-Session-Id`.
        id: String,
    },
    /// An API key was created or revoked: re-read the keys if cached.
    ApiKeysChanged,
    /// Events may have been missed (the listening connection was down, or
    /// this subscriber fell behind): re-read everything cached.
    Resync,
}

/// An event as it travels between replicas.
#[derive(Serialize, Deserialize)]
struct Wire {
    /// The handle that wrote it.
    o: String,
    #[serde(flatten)]
    event: WireEvent,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
enum WireEvent {
    Granted { s: String },
    Deleted { s: String },
    McpClosed { e: String, i: String },
    ApiKeys,
}

/// The events of one store handle and its clones.
pub(crate) struct Bus {
    /// Tells this handle's own notifications from other replicas'.
    origin: String,
    tx: broadcast::Sender<StoreEvent>,
    listening: AtomicBool,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus").finish_non_exhaustive()
    }
}

impl Bus {
    pub(crate) fn new() -> Arc<Bus> {
        let (tx, _) = broadcast::channel(BUFFER);
        let origin = format!(
            "{:016x}",
            RandomState::new().hash_one((std::process::id(), crate::store::now_ms()))
        );
        Arc::new(Bus {
            origin,
            tx,
            listening: AtomicBool::new(false),
        })
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<StoreEvent> {
        self.tx.subscribe()
    }

    /// Delivers `event` to this handle's subscribers.
    pub(crate) fn publish(&self, event: StoreEvent) {
        // No subscriber is not an error: nobody caches anything.
        let _ = self.tx.send(event);
    }

    /// `event` as a notification payload, `None` for events that never
    /// travel.
    pub(crate) fn payload(&self, event: &StoreEvent) -> Option<String> {
        let event = match event {
            StoreEvent::Granted(s) => WireEvent::Granted {
                s: s.as_str().to_owned(),
            },
            StoreEvent::Deleted(s) => WireEvent::Deleted {
                s: s.as_str().to_owned(),
            },
            StoreEvent::McpSessionClosed { endpoint, id } => WireEvent::McpClosed {
                e: endpoint.clone(),
                i: id.clone(),
            },
            StoreEvent::ApiKeysChanged => WireEvent::ApiKeys,
            StoreEvent::Resync => return None,
        };
        serde_json::to_string(&Wire {
            o: self.origin.clone(),
            event,
        })
        .ok()
    }

    /// A notification received from the database: `None` when this handle
    /// sent it (already delivered) or it cannot be read.
    fn decode(&self, payload: &str) -> Option<StoreEvent> {
        let wire: Wire = match serde_json::from_str(payload) {
            Ok(w) => w,
            Err(e) => {
                tracing::debug!("unreadable store notification ignored: {e}");
                return None;
            }
        };
        if wire.o == self.origin {
            return None;
        }
        match wire.event {
            WireEvent::Granted { s } => SessionId::new(s).ok().map(StoreEvent::Granted),
            WireEvent::Deleted { s } => SessionId::new(s).ok().map(StoreEvent::Deleted),
            WireEvent::McpClosed { e, i } => {
                Some(StoreEvent::McpSessionClosed { endpoint: e, id: i })
            }
            WireEvent::ApiKeys => Some(StoreEvent::ApiKeysChanged),
        }
    }

    /// Starts listening for other replicas' events on `pool`, once per
    /// handle; ends when the pool is closed.
    pub(crate) fn listen_once(self: &Arc<Bus>, pool: &PgPool) {
        if self.listening.swap(true, Ordering::SeqCst) {
            return;
        }
        let bus = self.clone();
        let pool = pool.clone();
        tokio::spawn(async move { bus.listen(pool).await });
    }

    async fn listen(self: Arc<Bus>, pool: PgPool) {
        let mut backoff = Duration::from_millis(100);
        while !pool.is_closed() {
            let mut listener = match connect(&pool).await {
                Ok(l) => l,
                Err(e) => {
                    if pool.is_closed() {
                        return;
                    }
                    tracing::warn!(
                        error = %crate::error::masked_detail(&e),
                        "cannot listen for other replicas' session changes; retrying in {backoff:?}"
                    );
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            backoff = Duration::from_millis(100);
            // Whatever happened while nobody listened is unknown.
            self.publish(StoreEvent::Resync);
            loop {
                match listener.try_recv().await {
                    Ok(Some(n)) => {
                        if let Some(event) = self.decode(n.payload()) {
                            self.publish(event);
                        }
                    }
                    Ok(None) => {
                        tracing::debug!("store listening connection lost; reconnecting");
                        break;
                    }
                    Err(e) => {
                        if !pool.is_closed() {
                            tracing::debug!(error = %crate::error::masked_detail(&e), "store listening connection failed; reconnecting");
                        }
                        break;
                    }
                }
            }
        }
    }
}

/// A listening connection of its own (taken from the pool and kept).
async fn connect(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.eager_reconnect(false);
    listener.listen(EVENTS_CHANNEL).await?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_travel_and_their_sender_skips_its_own() {
        let a = Bus::new();
        let b = Bus::new();
        let id = SessionId::new("s-1").expect("id");
        for event in [
            StoreEvent::Granted(id.clone()),
            StoreEvent::Deleted(id.clone()),
            StoreEvent::McpSessionClosed {
                endpoint: String::new(),
                id: "0b2f".into(),
            },
            StoreEvent::ApiKeysChanged,
        ] {
            let payload = a.payload(&event).expect("travels");
            assert_eq!(b.decode(&payload), Some(event));
            assert_eq!(a.decode(&payload), None, "its own");
        }
        assert_eq!(a.payload(&StoreEvent::Resync), None);
        assert_eq!(b.decode("not json"), None);
        assert_eq!(
            b.decode(r#"{"o":"x","k":"granted","s":"a/b"}"#),
            None,
            "an invalid id is dropped"
        );
    }
}
