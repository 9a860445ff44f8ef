//! [`SessionConnectionPool`]: one live client per distinct `(name, config)`,
//! shared by every capability and scope that asks, and a bound on how many
//! live clients exist.
//!
//! - **Single flight.** The first request for a key starts the connection in
//!   a background task and parks a shared future in the map; concurrent
//!   requests await the same future, so one process is spawned however many
//!   callers race. A caller that gives up does not cancel the connect.
//! - **Leases.** `get_client` returns a [`PooledClient`]; while any lease is
//!   alive the client is *in use*. A client without leases stays connected
//!   (the next turn reuses it, RFC diagram 5) but is *idle*: when the bound
//!   is reached, the least recently used idle client is closed to make room.
//! - **Bound.** With `max_clients` live clients all in use, further requests
//!   for new keys wait (FIFO wake-ups on each released lease or closed
//!   client) until `acquire_timeout`, then fail with
//!   [`ClientError::PoolExhausted`].
//! - No lock is held across an `.await`, and never around a call: the map
//!   lock only guards bookkeeping.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use parking_lot::Mutex;

use crate::client::{ClientOptions, McpClient};
use crate::config::McpServerConfig;
use crate::error::ClientError;
use crate::name::ServerName;

/// Limits and shared settings of a pool.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Maximum live clients (RFC default 20).
    pub max_clients: usize,
    /// How long a request waits for a free slot before failing.
    pub acquire_timeout: Duration,
    /// Settings shared by every client.
    pub client: ClientOptions,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            max_clients: 20,
            acquire_timeout: Duration::from_secs(30),
            client: ClientOptions::default(),
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    name: ServerName,
    config: Arc<McpServerConfig>,
}

impl PoolKey {
    /// The key of `(name, config)`: only what decides the connection, so
    /// configs that differ in catalog-only fields share one client.
    fn new(name: &ServerName, config: &McpServerConfig) -> Self {
        Self {
            name: name.clone(),
            config: Arc::new(config.connection_identity()),
        }
    }
}

type ConnectFuture = Shared<BoxFuture<'static, Result<McpClient, ClientError>>>;

enum Entry {
    Connecting(ConnectFuture),
    Ready {
        client: McpClient,
        lease: Arc<()>,
        last_used: Instant,
    },
}

impl Entry {
    fn is_idle(&self) -> bool {
        matches!(self, Entry::Ready { lease, .. } if Arc::strong_count(lease) == 1)
    }
}

#[derive(Default)]
struct PoolState {
    entries: HashMap<PoolKey, Entry>,
    /// Entries holding a slot (connecting or ready).
    live: usize,
}

struct PoolInner {
    config: PoolConfig,
    state: Mutex<PoolState>,
    freed: tokio::sync::Notify,
    closed: AtomicBool,
}

/// The pool of live MCP clients (RFC `SessionConnectionPool`); cheap to clone.
#[derive(Clone)]
pub struct SessionConnectionPool {
    inner: Arc<PoolInner>,
}

impl std::fmt::Debug for SessionConnectionPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.inner.state.lock();
        f.debug_struct("SessionConnectionPool")
            .field("live", &st.live)
            .field("max_clients", &self.inner.config.max_clients)
            .finish()
    }
}

/// A client borrowed from the pool; the client stays pooled while leased.
#[derive(Clone)]
pub struct PooledClient {
    client: McpClient,
    /// Always `Some` until drop (taken there so the count is right before waking waiters).
    lease: Option<Arc<()>>,
    pool: Weak<PoolInner>,
}

impl std::fmt::Debug for PooledClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PooledClient").field(&self.client).finish()
    }
}

impl std::ops::Deref for PooledClient {
    type Target = McpClient;
    fn deref(&self) -> &McpClient {
        &self.client
    }
}

impl PooledClient {
    /// The shared client.
    pub fn client(&self) -> &McpClient {
        &self.client
    }
}

impl Drop for PooledClient {
    fn drop(&mut self) {
        // Release the lease first, then wake waiters: a waiter that runs at
        // once must already see the client idle. Always wake: two leases
        // dropped at the same time could each believe the other remains.
        drop(self.lease.take());
        if let Some(pool) = self.pool.upgrade() {
            pool.freed.notify_waiters();
        }
    }
}

/// One pooled client, as reported by [`SessionConnectionPool::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolEntryInfo {
    /// The server.
    pub name: ServerName,
    /// True while the first connection is being made.
    pub connecting: bool,
    /// Leases held (0 = idle).
    pub leases: usize,
    /// Connections made so far (1 + reconnects).
    pub connections: u64,
}

enum Next {
    Ready(PooledClient),
    Await(ConnectFuture),
    Wait,
    Evict(McpClient, ConnectFuture),
}

impl SessionConnectionPool {
    /// An empty pool.
    pub fn new(config: PoolConfig) -> Self {
        Self {
            inner: Arc::new(PoolInner {
                config,
                state: Mutex::new(PoolState::default()),
                freed: tokio::sync::Notify::new(),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// The pool's configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.config
    }

    /// The stderr lines its servers write from now on (all of them; filter
    /// by [`crate::stderr::StderrLine::server`]).
    pub fn stderr_lines(&self) -> tokio::sync::broadcast::Receiver<crate::stderr::StderrLine> {
        self.inner.config.client.stderr_lines.subscribe()
    }

    /// The live client for `(name, config)`, connecting it when there is none.
    ///
    /// Concurrent first requests share one connection attempt. When the pool
    /// is full of clients in use, waits up to `acquire_timeout`.
    pub async fn get_client(
        &self,
        name: &ServerName,
        config: &McpServerConfig,
    ) -> Result<PooledClient, ClientError> {
        let key = PoolKey::new(name, config);
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + self.inner.config.acquire_timeout;
        loop {
            let notified = self.inner.freed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.next_step(&key)? {
                Next::Ready(client) => return Ok(client),
                Next::Await(connect) => {
                    connect.await?;
                }
                Next::Evict(old, connect) => {
                    tracing::debug!(evicted = %old.name(), for_server = %name, "closing idle MCP client to make room");
                    tokio::spawn(async move { old.close().await });
                    connect.await?;
                }
                Next::Wait => {
                    tracing::debug!(server = %name, "MCP pool full; waiting for a free slot");
                    if tokio::time::timeout_at(deadline, notified).await.is_err() {
                        return Err(ClientError::PoolExhausted {
                            server: name.clone(),
                            limit: self.inner.config.max_clients,
                            waited_ms: started.elapsed().as_millis() as u64,
                        });
                    }
                }
            }
        }
    }

    fn next_step(&self, key: &PoolKey) -> Result<Next, ClientError> {
        let inner = &self.inner;
        let mut st = inner.state.lock();
        if inner.closed.load(Ordering::Acquire) {
            return Err(ClientError::Closed {
                server: key.name.clone(),
            });
        }
        match st.entries.get_mut(key) {
            Some(Entry::Ready {
                client,
                lease,
                last_used,
            }) if !client.is_closed() => {
                *last_used = Instant::now();
                return Ok(Next::Ready(PooledClient {
                    client: client.clone(),
                    lease: Some(lease.clone()),
                    pool: Arc::downgrade(inner),
                }));
            }
            Some(Entry::Connecting(connect)) => return Ok(Next::Await(connect.clone())),
            Some(Entry::Ready { .. }) => {
                // Closed behind the pool's back (e.g. `remove`): drop it.
                st.entries.remove(key);
                st.live -= 1;
            }
            None => {}
        }
        if st.live < inner.config.max_clients {
            st.live += 1;
            let connect = self.spawn_connect(key.clone());
            st.entries
                .insert(key.clone(), Entry::Connecting(connect.clone()));
            return Ok(Next::Await(connect));
        }
        let idle = st
            .entries
            .iter()
            .filter(|(_, e)| e.is_idle())
            .min_by_key(|(_, e)| match e {
                Entry::Ready { last_used, .. } => *last_used,
                Entry::Connecting(_) => Instant::now(),
            })
            .map(|(k, _)| k.clone());
        if let Some(idle) = idle
            && let Some(Entry::Ready { client, .. }) = st.entries.remove(&idle)
        {
            let connect = self.spawn_connect(key.clone());
            st.entries
                .insert(key.clone(), Entry::Connecting(connect.clone()));
            return Ok(Next::Evict(client, connect));
        }
        Ok(Next::Wait)
    }

    fn spawn_connect(&self, key: PoolKey) -> ConnectFuture {
        let weak = Arc::downgrade(&self.inner);
        let options = Arc::new(self.inner.config.client.clone());
        let name = key.name.clone();
        let task = tokio::spawn(async move {
            let result = McpClient::connect(key.name.clone(), (*key.config).clone(), options).await;
            let Some(inner) = weak.upgrade() else {
                if let Ok(client) = &result {
                    client.close().await;
                }
                return result;
            };
            let closed = inner.closed.load(Ordering::Acquire);
            {
                let mut st = inner.state.lock();
                match (&result, closed) {
                    (Ok(client), false) => {
                        st.entries.insert(
                            key.clone(),
                            Entry::Ready {
                                client: client.clone(),
                                lease: Arc::new(()),
                                last_used: Instant::now(),
                            },
                        );
                    }
                    _ => {
                        if st.entries.remove(&key).is_some() {
                            st.live -= 1;
                        }
                    }
                }
            }
            inner.freed.notify_waiters();
            match result {
                Ok(client) if closed => {
                    client.close().await;
                    Err(ClientError::Closed { server: key.name })
                }
                other => other,
            }
        });
        async move {
            task.await.unwrap_or_else(|join| {
                Err(ClientError::Protocol {
                    server: name,
                    operation: "connect",
                    error: Arc::new(join),
                })
            })
        }
        .boxed()
        .shared()
    }

    /// Closes the client for `(name, config)` now, if pooled. Leaseholders'
    /// later calls fail with [`ClientError::Closed`].
    pub async fn remove(&self, name: &ServerName, config: &McpServerConfig) -> bool {
        let key = PoolKey::new(name, config);
        let removed = {
            let mut st = self.inner.state.lock();
            match st.entries.remove(&key) {
                Some(Entry::Ready { client, .. }) => {
                    st.live -= 1;
                    Some(client)
                }
                Some(connecting) => {
                    st.entries.insert(key, connecting);
                    None
                }
                None => None,
            }
        };
        self.inner.freed.notify_waiters();
        match removed {
            Some(client) => {
                client.close().await;
                true
            }
            None => false,
        }
    }

    /// Closes the client for `(name, config)` when nobody holds a lease on
    /// it (its server was replaced or removed and every capability using it
    /// let go); a client still leased — shared with another capability of
    /// the same server — stays. True when it was closed.
    pub async fn close_if_idle(&self, name: &ServerName, config: &McpServerConfig) -> bool {
        let key = PoolKey::new(name, config);
        let removed = {
            let mut st = self.inner.state.lock();
            match st.entries.get(&key) {
                Some(entry) if entry.is_idle() => match st.entries.remove(&key) {
                    Some(Entry::Ready { client, .. }) => {
                        st.live -= 1;
                        Some(client)
                    }
                    _ => None,
                },
                _ => None,
            }
        };
        let Some(client) = removed else {
            return false;
        };
        self.inner.freed.notify_waiters();
        client.close().await;
        true
    }

    /// Live clients (connecting or connected).
    pub fn live_clients(&self) -> usize {
        self.inner.state.lock().live
    }

    /// One line per pooled client.
    pub fn snapshot(&self) -> Vec<PoolEntryInfo> {
        let st = self.inner.state.lock();
        let mut out: Vec<_> = st
            .entries
            .iter()
            .map(|(key, entry)| match entry {
                Entry::Connecting(_) => PoolEntryInfo {
                    name: key.name.clone(),
                    connecting: true,
                    leases: 0,
                    connections: 0,
                },
                Entry::Ready { client, lease, .. } => PoolEntryInfo {
                    name: key.name.clone(),
                    connecting: false,
                    leases: Arc::strong_count(lease) - 1,
                    connections: client.connection_count(),
                },
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Closes every client in parallel (children and their process groups
    /// exit or are killed) and refuses further requests. Idempotent.
    pub async fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::Release);
        let (clients, connecting): (Vec<_>, Vec<_>) = {
            let mut st = self.inner.state.lock();
            st.live = 0;
            st.entries
                .drain()
                .map(|(_, e)| match e {
                    Entry::Ready { client, .. } => (Some(client), None),
                    Entry::Connecting(c) => (None, Some(c)),
                })
                .unzip()
        };
        self.inner.freed.notify_waiters();
        let closes = clients
            .into_iter()
            .flatten()
            .map(|c| async move { c.close().await });
        // A connect in flight closes its own client when it sees the flag.
        let pending = connecting.into_iter().flatten().map(|c| async move {
            let _ = c.await;
        });
        let bound = self.inner.config.client.close_timeout;
        let _ = futures::future::join(
            futures::future::join_all(closes),
            tokio::time::timeout(bound, futures::future::join_all(pending)),
        )
        .await;
    }
}
