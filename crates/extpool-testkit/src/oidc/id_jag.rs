//! Enterprise-managed authorization (ID-JAG) for tests, with real parts on
//! both sides:
//! - the enterprise IdP is the [`OidcProvider`], whose token-exchange grant
//!   issues ID-JAGs (`oidc/id_jag.mjs`, added through oidc-provider's
//!   `registerGrantType`): [`OidcProvider::register_id_jag_client`] registers
//!   a confidential client allowed that grant (RFC 7591, at the provider's
//!   open registration), [`OidcProvider::set_id_jag_policy`] makes it refuse
//!   some users (`access_denied`) or issue ID-JAGs of another lifetime;
//! - the upstream is [`IdJagServer`]: an MCP server on the Python `mcp` SDK
//!   that is its own authorization server, accepting ID-JAGs with the SDK's
//!   `AuthSettings.identity_assertion_enabled` (`peers/id_jag_server.py`).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::{Value, json};

use super::OidcProvider;
use crate::{child::ListeningChild, peers};

/// The client secret [`IdJagServer`] registers the gateway's client with.
pub const ID_JAG_AS_CLIENT_SECRET: &str = "id-jag-as-client-secret";

impl OidcProvider {
    /// Registers a confidential client (`client_secret_basic`) allowed the
    /// token-exchange grant (ID-JAGs); returns its id and secret.
    ///
    /// # Panics
    ///
    /// When the provider refuses the registration.
    pub async fn register_id_jag_client(&self) -> (String, String) {
        let response = self
            .http
            .post(format!("{}/reg", self.issuer))
            .json(&json!({
                "grant_types": ["urn:ietf:params:oauth:grant-type:token-exchange"],
                "response_types": [],
                "redirect_uris": [],
                "token_endpoint_auth_method": "client_secret_basic",
            }))
            .send()
            .await
            .unwrap_or_else(|e| panic!("registering an ID-JAG client: {e}"));
        let status = response.status();
        let body: Value = response.json().await.unwrap_or_default();
        assert!(
            status.is_success(),
            "registration refused ({status}): {body}"
        );
        let field = |name: &str| {
            body[name]
                .as_str()
                .unwrap_or_else(|| panic!("no {name} in {body}"))
                .to_owned()
        };
        (field("client_id"), field("client_secret"))
    }

    /// The ID-JAG grant's policy from now on: the subjects it refuses
    /// (`access_denied`), and the lifetime of the ID-JAGs it issues
    /// (`None`: five minutes).
    pub fn set_id_jag_policy(&self, deny: &[&str], ttl_secs: Option<u64>) {
        let policy = json!({ "deny": deny, "ttl": ttl_secs });
        std::fs::write(
            self.dir.path().join("id_jag_policy.json"),
            policy.to_string(),
        )
        .expect("writing the ID-JAG policy");
    }
}

/// `peers/id_jag_server.py`.
pub fn id_jag_server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/id_jag_server.py")
}

/// The Python SDK's MCP server and authorization server that accepts only
/// ID-JAGs (see the [module documentation](self)); killed on drop.
#[derive(Debug)]
pub struct IdJagServer {
    child: ListeningChild,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl IdJagServer {
    /// Starts it for IdP `idp` (its issuer), with the gateway's client
    /// `client_id` / [`ID_JAG_AS_CLIENT_SECRET`] registered, issuing access
    /// tokens that live `token_ttl_secs`.
    ///
    /// # Panics
    ///
    /// When the venv is missing or the server does not come up.
    pub fn start(idp: &str, client_id: &str, token_ttl_secs: u64) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("extpool-id-jag-")
            .tempdir()
            .expect("a temporary directory");
        let log = dir.path().join("requests.jsonl");
        let mut command = Command::new(peers::python());
        command
            .arg(id_jag_server_script())
            .arg(idp)
            .arg(client_id)
            .arg(ID_JAG_AS_CLIENT_SECRET)
            .arg(&log)
            .arg(token_ttl_secs.to_string());
        Self {
            child: ListeningChild::spawn(command, "Python mcp server with ID-JAG grant"),
            log,
            _dir: dir,
        }
    }

    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        self.child.url()
    }

    /// The authorization server's issuer (the server's origin).
    pub fn issuer(&self) -> &str {
        self.url().trim_end_matches("/mcp")
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.child.stderr()
    }

    /// Every logged event: `{"event": "token", "sub"}` (an access token
    /// issued), `{"event": "token", "error"}` (an ID-JAG refused),
    /// `{"event": "mcp", "sub", "status"}` (an MCP request and whose token
    /// it carried, `null` without one).
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The subjects of the access tokens issued, in order.
    pub fn tokens_issued(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter(|e| e["event"] == "token")
            .filter_map(|e| e["sub"].as_str().map(str::to_owned))
            .collect()
    }

    /// The subjects of the MCP requests that carried an accepted token.
    pub fn mcp_subjects(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter(|e| e["event"] == "mcp")
            .filter_map(|e| e["sub"].as_str().map(str::to_owned))
            .collect()
    }
}
