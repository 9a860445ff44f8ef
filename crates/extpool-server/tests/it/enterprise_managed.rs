//! Enterprise-managed authorization (ID-JAG) through the gateway: a server
//! with `oauth.enterprise_managed` is the Python MCP SDK's server and its
//! own authorization server, accepting only ID-JAGs
//! (`identity_assertion_enabled`); the enterprise IdP is the gateway's
//! issuer, oidc-provider with its token-exchange grant issuing ID-JAGs.
//! Each caller's call reaches the server with that caller's own token; a
//! refused ID-JAG stops the call before anything reaches the server.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use extpool_auth::Secret;
use extpool_auth::resource::{IssuerSettings, TokenVerifier};
use extpool_server::GatewayOptions;
use extpool_server::delegation::DelegationOptions;
use extpool_testkit::oidc::OidcProvider;
use extpool_testkit::oidc::id_jag::{ID_JAG_AS_CLIENT_SECRET, IdJagServer};

use crate::support::{Project, Served, within};

/// The tool of the upstream, as the gateway names it.
const WHOAMI: &str = "mcp__crm__whoami";

/// The IdP, the upstream, and a gateway on them.
struct World {
    idp: OidcProvider,
    upstream: IdJagServer,
    served: Served,
    /// The gateway's URL: the audience of the callers' tokens.
    audience: String,
    /// The gateway's client id (the same at both servers).
    client_id: String,
    /// The gateway's audit log.
    audit: std::path::PathBuf,
}

impl World {
    /// Everything started; the upstream's tokens live `token_ttl_secs`, the
    /// gateway exchanges again `margin` before they expire.
    async fn start(token_ttl_secs: u64, margin: Duration) -> Self {
        let idp = OidcProvider::start().await;
        let (client_id, client_secret) = idp.register_id_jag_client().await;
        let upstream = IdJagServer::start(idp.issuer(), &client_id, token_ttl_secs);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let audience = format!("http://{}", listener.local_addr().unwrap());
        let verifier = within(TokenVerifier::discover(IssuerSettings::new(
            idp.issuer(),
            &audience,
        )))
        .await
        .unwrap();
        let project = Project::new();
        // Secrets are references (the default stands in for the variable).
        project.config(&format!(
            "  crm:\n    url: {}\n    oauth:\n      enterprise_managed:\n        client_id: {client_id}\n        client_secret: ${{EXTPOOL_TEST_CRM_SECRET:-{ID_JAG_AS_CLIENT_SECRET}}}\ngateway:\n  auth:\n    issuer: {}\n    client_id: {client_id}\n    client_secret: ${{EXTPOOL_TEST_GATEWAY_SECRET}}\n",
            upstream.url(),
            idp.issuer(),
        ));
        let audit = project.path().join("audit.jsonl");
        let options = GatewayOptions {
            issuer: Some(Arc::new(verifier)),
            audit_log: Some(audit.clone()),
            delegation: Some(DelegationOptions {
                client_id: client_id.clone(),
                client_secret: Secret::new(client_secret),
                refresh_margin: margin,
            }),
            ..GatewayOptions::default()
        };
        let served = Served::start_on(project, options, listener).await;
        Self {
            idp,
            upstream,
            served,
            audience,
            client_id,
            audit,
        }
    }

    /// The audit records of calls of `whoami`.
    fn audited_calls(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.audit)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["name"] == WHOAMI)
            .collect()
    }

    /// `user`'s MCP client of the gateway, with its token of the IdP.
    async fn client(&self, user: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
        let token = self.idp.token_for(user, &self.audience).await;
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.served.url.clone())
                .auth_header(token),
        );
        within(().serve(transport)).await.unwrap()
    }
}

/// Calls `whoami` as `client`: its text, or the tool error's text.
async fn whoami(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
) -> Result<String, String> {
    let result = within(client.peer().call_tool(CallToolRequestParams::new(WHOAMI)))
        .await
        .map_err(|e| e.to_string())?;
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error == Some(true) {
        Err(text)
    } else {
        Ok(text)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_callers_call_reaches_the_server_with_its_own_token_from_an_id_jag() {
    let w = World::start(3600, Duration::from_secs(60)).await;
    let alice = w.client("alice").await;
    let bob = w.client("bob").await;

    let as_alice = whoami(&alice).await;
    assert_eq!(
        as_alice,
        Ok(format!("alice {}", w.client_id)),
        "{}",
        w.upstream.stderr()
    );
    assert_eq!(whoami(&bob).await, Ok(format!("bob {}", w.client_id)));
    // Kept per (principal, server): no new exchange while fresh.
    assert_eq!(whoami(&alice).await, Ok(format!("alice {}", w.client_id)));
    assert_eq!(w.upstream.tokens_issued(), ["alice", "bob"]);

    // Every MCP request the server saw carried a token it issued for
    // alice or bob (never the caller's own, which it would not know).
    let events = w.upstream.events();
    let mcp: Vec<_> = events.iter().filter(|e| e["event"] == "mcp").collect();
    assert!(!mcp.is_empty());
    for event in mcp {
        assert!(
            event["sub"] == "alice" || event["sub"] == "bob",
            "an MCP request without an exchanged token: {events:?}"
        );
    }
    // Each call is audited with its credential mode, and no token.
    let calls = w.audited_calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    for record in &calls {
        assert_eq!(record["outcome"], "ok", "{record}");
        assert_eq!(record["credential"], "enterprise_managed", "{record}");
    }
    let audit = std::fs::read_to_string(&w.audit).unwrap();
    assert!(!audit.contains("eyJ"), "a token in the audit log: {audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_id_jag_stops_the_call_and_names_the_server_and_the_code() {
    let w = World::start(3600, Duration::from_secs(60)).await;
    w.idp.set_id_jag_policy(&["bob"], None);
    let bob = w.client("bob").await;

    let refused = whoami(&bob).await.unwrap_err();
    assert!(refused.contains("MCP server crm"), "{refused}");
    assert!(refused.contains("access_denied"), "{refused}");
    assert!(refused.contains("the call was not sent"), "{refused}");
    // Nothing of bob's reached the server: no redemption, no MCP request.
    assert!(w.upstream.events().is_empty(), "{:?}", w.upstream.events());
    let calls = w.audited_calls();
    assert_eq!(calls.len(), 1, "the refused call is audited: {calls:?}");
    assert_eq!(calls[0]["outcome"], "error", "{}", calls[0]);

    // alice is not refused, and goes on.
    let alice = w.client("alice").await;
    assert_eq!(whoami(&alice).await, Ok(format!("alice {}", w.client_id)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_token_is_used_until_near_expiry_then_made_again() {
    // Tokens live 40 s; the gateway renews 30 s before: a token is kept
    // for about ten seconds (room for two calls under load).
    let w = World::start(40, Duration::from_secs(30)).await;
    let alice = w.client("alice").await;
    assert!(whoami(&alice).await.is_ok());
    assert!(whoami(&alice).await.is_ok());
    assert_eq!(w.upstream.tokens_issued(), ["alice"], "kept while fresh");
    // Past the margin: the next call makes another.
    within(async {
        while w.upstream.tokens_issued().len() < 2 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert!(whoami(&alice).await.is_ok());
        }
    })
    .await;
    assert_eq!(w.upstream.tokens_issued(), ["alice", "alice"]);
}
