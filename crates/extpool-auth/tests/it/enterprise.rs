//! Enterprise-managed authorization (ID-JAG) against real implementations
//! of both sides: oidc-provider as the enterprise IdP (its token-exchange
//! grant issuing ID-JAGs), the Python MCP SDK's authorization server
//! (`identity_assertion_enabled`) in front of its MCP server.

use extpool_auth::Secret;
use extpool_auth::enterprise::{
    EnterpriseError, EnterpriseManaged, EnterpriseManagedSettings, Stage, TokenEndpointClient,
    discover_token_endpoint, exchange,
};
use extpool_auth::grant::TokenAuthMethod;
use extpool_auth::oauth_http::oauth_client;
use extpool_testkit::oidc::OidcProvider;
use extpool_testkit::oidc::id_jag::{ID_JAG_AS_CLIENT_SECRET, IdJagServer};

/// The audience of the callers' tokens (the gateway, as its issuer knows it).
const GATEWAY: &str = "http://127.0.0.1:1/mcp";

struct Setup {
    idp: OidcProvider,
    server: IdJagServer,
    config: EnterpriseManaged,
}

/// The IdP, the gateway's client at it, the upstream with the same client
/// registered, and the configuration as discovery finds it.
async fn setup() -> Setup {
    let idp = OidcProvider::start().await;
    let (client_id, client_secret) = idp.register_id_jag_client().await;
    let server = IdJagServer::start(idp.issuer(), &client_id, 3600);
    let http = oauth_client();
    let (idp_endpoint, _) = discover_token_endpoint(&http, idp.issuer(), false)
        .await
        .expect("the IdP's metadata");
    let idp_client = TokenEndpointClient {
        issuer: idp.issuer().to_owned(),
        token_endpoint: idp_endpoint,
        client_id: client_id.clone(),
        client_secret: Secret::new(client_secret),
        auth_method: TokenAuthMethod::ClientSecretBasic,
    };
    // As configured: the authorization server found from the server's
    // protected-resource metadata.
    let settings: EnterpriseManagedSettings = serde_json::from_value(serde_json::json!({
        "client_id": client_id,
        "client_secret": ID_JAG_AS_CLIENT_SECRET,
    }))
    .unwrap();
    settings.validate().unwrap();
    let config = settings
        .resolve(&http, idp_client, server.url(), false)
        .await
        .expect("both servers found");
    assert_eq!(config.resource_as.issuer, server.issuer());
    assert_eq!(
        config.resource_as.token_endpoint,
        format!("{}/token", server.issuer())
    );
    Setup {
        idp,
        server,
        config,
    }
}

/// An MCP `initialize` to `url` with `token`: the HTTP status.
async fn initialize(url: &str, token: &Secret) -> u16 {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(token.expose())
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}
        }))
        .send()
        .await
        .expect("the MCP request")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_callers_assertion_becomes_its_own_token_at_the_server() {
    let s = setup().await;
    let http = oauth_client();
    for user in ["alice", "bob"] {
        let assertion = Secret::new(s.idp.token_for(user, GATEWAY).await);
        let issued = exchange(&http, &s.config, &assertion)
            .await
            .unwrap_or_else(|e| panic!("{user}'s exchange: {e}; server: {}", s.server.stderr()));
        assert_ne!(
            issued.access_token, assertion,
            "a token of the server's own"
        );
        let expires = issued.expires_at.expect("the server said when");
        assert!(
            expires > extpool_auth::grant::now_secs() + 3000,
            "{expires}"
        );
        assert_eq!(initialize(s.server.url(), &issued.access_token).await, 200);
    }
    assert_eq!(s.server.tokens_issued(), ["alice", "bob"]);
    assert_eq!(s.server.mcp_subjects(), ["alice", "bob"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_names_the_stage_and_the_code_and_no_token() {
    let s = setup().await;
    let http = oauth_client();
    let assertion = Secret::new(s.idp.token_for("bob", GATEWAY).await);

    // The IdP's policy refuses bob: nothing reaches the server.
    s.idp.set_id_jag_policy(&["bob"], None);
    let err = exchange(&http, &s.config, &assertion).await.unwrap_err();
    assert!(
        matches!(&err, EnterpriseError::Refused { stage: Stage::IdentityProvider, code, status: 400 } if code == "access_denied"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "the enterprise IdP refused the ID-JAG request: access_denied"
    );
    assert!(s.server.events().is_empty(), "{:?}", s.server.events());

    // A wrong client secret at the authorization server: refused there.
    s.idp.set_id_jag_policy(&[], None);
    let mut wrong = s.config.clone();
    wrong.resource_as.client_secret = Secret::new("not-the-secret");
    let err = exchange(&http, &wrong, &assertion).await.unwrap_err();
    assert_eq!(
        (err.stage(), err.code()),
        (Stage::AuthorizationServer, "invalid_client"),
        "{err}"
    );
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains(assertion.expose()), "{shown}");
        assert!(!shown.contains("not-the-secret"), "{shown}");
    }
    assert!(s.server.tokens_issued().is_empty());

    // Not an assertion the IdP issued: invalid_grant.
    let forged = Secret::new(
        s.idp
            .sign_with_foreign_key(&s.idp.claims_for("bob", GATEWAY)),
    );
    let err = exchange(&http, &s.config, &forged).await.unwrap_err();
    assert_eq!(
        (err.stage(), err.code()),
        (Stage::IdentityProvider, "invalid_grant"),
        "{err}"
    );
}
