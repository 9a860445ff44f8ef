//! A caller's login asked of its MCP client when a call needs it: a call
//! of a per-user server's tool by a caller without a grant starts the
//! caller's login ([`crate::login`]) and sends the authorization URL as a
//! URL-mode elicitation (`elicitation/create`, `mode: "url"`, MCP
//! 2025-11-25) to a client that supports it; when the caller accepts and
//! the login completes (its browser came back to the gateway), the call
//! runs again with the caller's new grant. Clients without URL-mode
//! elicitation, and 2026-07-28 requests (no server-to-client requests),
//! get the error that says how to log in.

use std::time::Duration;

use extpool_host::core::Principal;
use rmcp::model::ServerRequest;
use serde_json::json;

use super::GatewayHandler;
use super::exchange::{Back, Exchange};
use crate::login::LoginStatus;

/// How long a call waits for its caller's login to complete.
const LOGIN_WAIT: Duration = Duration::from_secs(600);

/// Whether `client` takes URL-mode elicitations.
fn takes_url_elicitation(client: &crate::client_peer::ClientPeer) -> bool {
    client.info().is_some_and(|info| {
        info.capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.url.is_some())
    })
}

/// Sends `request` (an `elicitation/create`) to the client of `ex`:
/// on the call's own answer over HTTP, else through its stdio peer. The
/// client's answer as JSON.
async fn ask(ex: &Exchange, request: serde_json::Value) -> Result<serde_json::Value, String> {
    match &ex.back {
        Back::Queue { client, .. } => {
            let method = request["method"].as_str().unwrap_or_default().to_owned();
            client.request(&method, request["params"].clone()).await
        }
        Back::Peer(peer) => {
            let request =
                serde_json::from_value::<ServerRequest>(request).map_err(|e| e.to_string())?;
            let answer = peer
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            serde_json::to_value(answer).map_err(|e| e.to_string())
        }
    }
}

impl GatewayHandler {
    /// Logs `principal` in to per-user server `server` through its client;
    /// true when the login completed (the call may run again).
    pub(super) async fn log_in_through_client(
        &self,
        ex: &Exchange,
        principal: &Principal,
        server: &str,
    ) -> bool {
        if !self
            .client_peer(ex)
            .is_some_and(|client| takes_url_elicitation(&client))
        {
            return false;
        }
        let Some(headers) = &ex.headers else {
            return false;
        };
        let base = crate::identity::base_url(headers);
        let mut begun = match crate::login::begin(&self.shared, principal, server, &base).await {
            Ok(begun) => begun,
            Err(_) => return false,
        };
        let message = format!(
            "{server} needs you to log in to it (your own account): open the link, authorize, and the call goes on"
        );
        let request = json!({
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": message,
                "url": begun.authorization_url,
                "elicitationId": begun.state,
            },
        });
        let answered = tokio::select! {
            answer = ask(ex, request) => answer,
            () = ex.ct.cancelled() => return false,
        };
        let accepted = answered.is_ok_and(|answer| answer["action"] == "accept");
        if !accepted {
            return false;
        }
        let done = async {
            loop {
                let now = begun.status.borrow_and_update().clone();
                match now {
                    LoginStatus::Done => return true,
                    LoginStatus::Failed { .. } | LoginStatus::None => return false,
                    LoginStatus::Pending { .. } => {}
                }
                if begun.status.changed().await.is_err() {
                    return false;
                }
            }
        };
        let completed = tokio::select! {
            done = tokio::time::timeout(LOGIN_WAIT, done) => done.unwrap_or(false),
            () = ex.ct.cancelled() => false,
        };
        if completed {
            // The caller's server is listed again with the new grant.
            let _ = self.view().reconcile_now().await;
        }
        completed
    }
}
