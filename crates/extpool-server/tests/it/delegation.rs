//! Delegated credentials per upstream server, through the gateway's HTTP
//! entry point, against a real OpenID provider (`oidc-provider`, with the
//! RFC 8693 token-exchange grant registered through its own
//! `registerGrantType`) and an upstream MCP server that accepts only
//! tokens minted for itself (`extpool_testkit::audience`):
//!
//! - `oauth.token_exchange`: alice's and bob's calls reach the upstream as
//!   themselves with the gateway as actor (`act`), recorded in the audit
//!   log, in a session and without one (2026-07-28), one exchange each; their own tokens never reach it; a refused exchange is a tool
//!   error naming the server and the issuer's `error`, and the upstream
//!   sees nothing; an exchanged token is reused until near its expiry,
//!   then exchanged again;
//! - `oauth.passthrough`: the caller's own token goes on only when its
//!   audience names the server, never when it is only the gateway's.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use extpool_server::GatewayOptions;
use extpool_server::delegation::DelegationOptions;
use extpool_testkit::StateDir;
use extpool_testkit::audience::AudienceServer;
use extpool_testkit::oauth::fingerprint;
use extpool_testkit::oidc::{GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, OidcProvider};
use serde_json::{Value, json};

use crate::identity::{mcp_initialize, mcp_post, verifier};
use crate::support::{PATIENCE, Project, Served, raw_2026, testkit_yaml};

/// A gateway taking `provider`'s tokens, its configuration `yaml`, its
/// audit log in its project, exchanging tokens as [`GATEWAY_CLIENT_ID`].
struct Gateway {
    served: Served,
    /// The tokens' audience: the gateway's URL.
    audience: String,
    audit: PathBuf,
}

async fn gateway(provider: &OidcProvider, yaml: &str, refresh_margin: Duration) -> Gateway {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let audience = format!("http://{}", listener.local_addr().unwrap());
    let verifier = Arc::new(verifier(provider, &audience, |_| {}).await);
    let project = Project::new();
    project.config(yaml);
    let audit = project.path().join("audit.jsonl");
    let options = GatewayOptions {
        issuer: Some(verifier),
        audit_log: Some(audit.clone()),
        delegation: Some(DelegationOptions {
            client_id: GATEWAY_CLIENT_ID.to_owned(),
            client_secret: extpool_auth::Secret::new(GATEWAY_CLIENT_SECRET),
            refresh_margin,
        }),
        ..GatewayOptions::default()
    };
    let served = Served::start_on(project, options, listener).await;
    Gateway {
        served,
        audience,
        audit,
    }
}

/// The configuration's servers (`servers`, under `mcp_servers:`) and its
/// `gateway.auth` naming `provider` and the gateway's client.
fn config(provider: &OidcProvider, servers: &str) -> String {
    format!(
        "{servers}gateway:\n  auth:\n    issuer: {}\n    client_id: {GATEWAY_CLIENT_ID}\n    client_secret: ${{EXTPOOL_TEST_GATEWAY_SECRET}}\n",
        provider.issuer()
    )
}

fn exchanging(provider: &OidcProvider, upstream: &AudienceServer) -> String {
    config(
        provider,
        &format!(
            "  up:\n    url: {}\n    oauth: {{token_exchange: {{}}}}\n",
            upstream.url()
        ),
    )
}

/// Calls `tool` in a new session as `token`: the `tools/call` result.
async fn call(g: &Gateway, token: &str, tool: &str) -> Value {
    let session = mcp_initialize(&g.served.url, token).await;
    call_in(g, token, &session, tool).await
}

async fn call_in(g: &Gateway, token: &str, session: &str, tool: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}});
    let answer = mcp_post(&g.served.url, token, Some(session), body.to_string()).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let message = answer.message();
    message["result"].clone()
}

/// The JSON `whoami` answered in `result` (panics on a tool error).
fn whoami(result: &Value) -> Value {
    assert_ne!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {result}"))
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "not a tool error: {result}");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

fn audit_records(g: &Gateway) -> Vec<Value> {
    std::fs::read_to_string(&g.audit)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_and_bob_reach_the_upstream_as_themselves_with_the_gateway_as_actor() {
    let provider = OidcProvider::start().await;
    let upstream = AudienceServer::start(provider.issuer(), &provider.jwks_uri()).await;
    // A shared server beside it: the gateway's own tools (CallMcpWithQuery)
    // are offered.
    let kit = StateDir::new();
    let yaml = format!(
        "{}{}",
        testkit_yaml("kit", &kit),
        exchanging(&provider, &upstream)
    );
    let g = gateway(&provider, &yaml, Duration::from_secs(60)).await;
    let mut own = Vec::new();
    let mut tokens = Vec::new();
    for user in ["alice", "bob"] {
        let token = provider.token_for(user, &g.audience).await;
        own.push(fingerprint(&token));
        tokens.push(token.clone());
        let session = mcp_initialize(&g.served.url, &token).await;
        let listed = mcp_post(
            &g.served.url,
            &token,
            Some(&session),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
        )
        .await;
        assert!(listed.body.contains("mcp__up__whoami"), "{}", listed.body);
        let me = whoami(&call_in(&g, &token, &session, "mcp__up__whoami").await);
        assert_eq!(me["sub"], user, "{me}");
        assert_eq!(me["act"], json!({"sub": GATEWAY_CLIENT_ID}), "{me}");
        assert_eq!(me["aud"], upstream.url(), "{me}");
    }
    assert_eq!(provider.token_exchanges(), 2, "one exchange per caller");
    // A 2026-07-28 request of bob's, without a session, goes with the
    // token kept for him.
    let auth = format!("Bearer {}", tokens[1]);
    let (status, message) = raw_2026(
        &g.served.url,
        "tools/call",
        json!({"name": "mcp__up__whoami", "arguments": {}}),
        &[
            ("authorization", auth.as_str()),
            ("mcp-method", "tools/call"),
            ("mcp-name", "mcp__up__whoami"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(whoami(&message["result"])["sub"], "bob", "{message}");
    assert_eq!(provider.token_exchanges(), 2, "bob's kept token was used");
    // A first call through the built-in that calls another tool goes with
    // a token exchanged for its caller too.
    let ops = provider.token_for("ops", &g.audience).await;
    own.push(fingerprint(&ops));
    let session = mcp_initialize(&g.served.url, &ops).await;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "CallMcpWithQuery",
        "arguments": {"server": "up", "tool": "whoami", "args": {}, "jq_filter": "."}}});
    let answer = mcp_post(&g.served.url, &ops, Some(&session), body.to_string()).await;
    let message = answer.message();
    let result = &message["result"];
    assert!(result.is_object(), "{message}");
    assert_ne!(result["isError"], true, "{result}");
    assert!(
        result.to_string().contains("ops") && result.to_string().contains(GATEWAY_CLIENT_ID),
        "{result}"
    );
    assert_eq!(provider.token_exchanges(), 3);
    let seen = upstream.seen();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|s| s.accepted), "{seen:?}");
    assert!(
        seen.iter()
            .all(|s| s.token.as_ref().is_some_and(|t| !own.contains(t))),
        "a caller's own token reached the upstream: {seen:?}"
    );
    let calls: Vec<Value> = audit_records(&g)
        .into_iter()
        .filter(|r| r["name"] == "mcp__up__whoami")
        .collect();
    assert_eq!(calls.len(), 3, "{calls:?}");
    for record in &calls {
        assert_eq!(record["outcome"], "ok", "{record}");
        assert_eq!(record["credential"], "token_exchange", "{record}");
        assert_eq!(record["act"], json!({"sub": GATEWAY_CLIENT_ID}), "{record}");
    }
    let audit = std::fs::read_to_string(&g.audit).unwrap();
    assert!(!audit.contains("eyJ"), "a token in the audit log: {audit}");
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_exchange_stops_the_call_before_the_upstream() {
    let provider = OidcProvider::start().await;
    let upstream = AudienceServer::start(provider.issuer(), &provider.jwks_uri()).await;
    let g = gateway(
        &provider,
        &exchanging(&provider, &upstream),
        Duration::from_secs(60),
    )
    .await;
    provider.refuse_exchanges_for("ops");
    let token = provider.token_for("ops", &g.audience).await;
    let text = error_text(&call(&g, &token, "mcp__up__whoami").await);
    assert!(text.contains("MCP server up"), "{text}");
    assert!(text.contains("access_denied"), "{text}");
    assert!(!text.contains(&token), "{text}");
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());
    assert_eq!(provider.token_exchanges(), 0);
    let record = audit_records(&g)
        .into_iter()
        .find(|r| r["name"] == "mcp__up__whoami")
        .expect("the refused call is audited");
    assert_eq!(record["outcome"], "error", "{record}");
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchanged_token_is_reused_until_near_expiry_then_exchanged_again() {
    let provider = OidcProvider::start().await;
    // Issued for 6 s, exchanged again 2 s before: reused for 3 to 4 s
    // (expiries are whole seconds).
    provider.set_exchange_ttl(Duration::from_secs(6));
    let upstream = AudienceServer::start(provider.issuer(), &provider.jwks_uri()).await;
    let g = gateway(
        &provider,
        &exchanging(&provider, &upstream),
        Duration::from_secs(2),
    )
    .await;
    let token = provider.token_for("alice", &g.audience).await;
    let session = mcp_initialize(&g.served.url, &token).await;
    let first_call = Instant::now();
    assert_eq!(
        whoami(&call_in(&g, &token, &session, "mcp__up__whoami").await)["sub"],
        "alice"
    );
    assert_eq!(provider.token_exchanges(), 1);
    let mut reused = 0;
    // Calls go on until the token is exchanged again (a condition, bounded).
    let deadline = Instant::now() + PATIENCE;
    while provider.token_exchanges() < 2 {
        assert!(Instant::now() < deadline, "never exchanged again");
        let me = whoami(&call_in(&g, &token, &session, "mcp__up__whoami").await);
        assert_eq!(me["sub"], "alice");
        reused += 1;
    }
    let again = first_call.elapsed();
    assert!(reused > 1, "the exchanged token was not reused");
    assert!(
        again >= Duration::from_secs(2),
        "exchanged again after {again:?}"
    );
    // The upstream checks `exp` without leeway: no call went with an
    // expired token.
    assert!(
        upstream.seen().iter().all(|s| s.accepted),
        "{:?}",
        upstream.seen()
    );
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passthrough_sends_the_callers_token_only_when_it_names_the_server() {
    let provider = OidcProvider::start().await;
    let upstream = AudienceServer::start(provider.issuer(), &provider.jwks_uri()).await;
    let yaml = config(
        &provider,
        &format!(
            "  pt:\n    url: {}\n    oauth: {{passthrough: {{}}}}\n",
            upstream.url()
        ),
    );
    let g = gateway(&provider, &yaml, Duration::from_secs(60)).await;
    // A token for the gateway only: the confused deputy is refused.
    let gateways = provider.token_for("alice", &g.audience).await;
    let text = error_text(&call(&g, &gateways, "mcp__pt__whoami").await);
    assert!(
        text.contains("MCP server pt") && text.contains("not for it"),
        "{text}"
    );
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());
    // A token whose audience names the gateway and the server goes on.
    let mut claims = provider.claims_for("alice", &g.audience);
    claims["aud"] = json!([g.audience, upstream.url()]);
    let both = provider.sign(&claims);
    let me = whoami(&call(&g, &both, "mcp__pt__whoami").await);
    assert_eq!(
        (&me["sub"], &me["act"]),
        (&json!("alice"), &Value::Null),
        "{me}"
    );
    let seen = upstream.seen();
    assert!(
        !seen.is_empty() && seen.iter().all(|s| s.token == Some(fingerprint(&both))),
        "{seen:?}"
    );
    // And the gateway-only token is refused again afterwards.
    let session = mcp_initialize(&g.served.url, &gateways).await;
    let before = upstream.seen().len();
    let text = error_text(&call_in(&g, &gateways, &session, "mcp__pt__whoami").await);
    assert!(text.contains("not for it"), "{text}");
    assert_eq!(upstream.seen().len(), before);
    assert_eq!(provider.token_exchanges(), 0);
    g.served.stop().await;
}
