//! Restarting one server on request (`extpool restart`, the gateway's
//! admin call): its connection closed and made again, the catalog asked to
//! list it again, every other server untouched.

use super::Host;
use crate::error::HostError;

impl Host {
    /// Restarts server `name` (configured or discovered; its name ignoring
    /// case): its connection is closed — a stdio server's process exits —
    /// and made again, and the catalog lists it again. Other servers are
    /// untouched. Returns its connection afterwards.
    pub async fn restart_server(&self, name: &str) -> Result<crate::ServerConnection, HostError> {
        let entries = self.inner.runtime.entries();
        let Some(entry) = entries
            .iter()
            .find(|e| extpool_core::name::same_server_name(&e.info.name, name))
            .cloned()
        else {
            let known: Vec<&str> = entries.iter().map(|e| e.info.name.as_str()).collect();
            return Err(HostError::UnknownServer {
                name: name.to_owned(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            });
        };
        let server = entry.info.name.clone();
        let failed = |reason: String| HostError::Restart {
            server: server.clone(),
            reason,
        };
        let Some(cap) = entry.cap.clone() else {
            return Err(failed(format!(
                "it is not running ({}); fix its configuration and the gateway starts it",
                entry.info.state.word()
            )));
        };
        let client = match cap.client() {
            Some(client) => client,
            None => cap
                .ensure_client()
                .await
                .map_err(|e| failed(e.to_string()))?,
        };
        self.inner.logs.push(
            &server,
            crate::server_logs::LogKind::Extpool,
            "restart asked: closing its connection",
        );
        let restarted = client.restart().await;
        self.inner
            .logs
            .note(self.inner.runtime.read(crate::connections::observed));
        restarted.map_err(|e| failed(e.to_string()))?;
        tracing::info!(server = %server, pid = ?client.pid(), "MCP server restarted");
        self.inner.catalog.request_reconcile();
        crate::connections::of(std::slice::from_ref(&entry))
            .into_iter()
            .next()
            .ok_or_else(|| failed("it has no connection after the restart".to_owned()))
    }
}
