//! The OpenID provider harness: a real `oidc-provider` behind discovery and
//! a JWKS, tokens from real authorization-code flows (in Rust, and through
//! the Python and JavaScript sign-in helpers), edge-case tokens, and key
//! rotation.

use extpool_testkit::{
    oidc::{self, AuthorizationRequest, JWKS_PATH, OidcProvider},
    peers,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind, jwk::JwkSet};
use serde_json::{Value, json};

use crate::common::within;

/// The resource (RFC 8707) the tokens are for: an MCP endpoint.
const RESOURCE: &str = "http://127.0.0.1:8520/mcp";

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

async fn get_json(url: &str) -> Value {
    let response = within(http().get(url).send()).await.unwrap();
    assert!(
        response.status().is_success(),
        "GET {url}: {}",
        response.status()
    );
    serde_json::from_str(&within(response.text()).await.unwrap()).unwrap()
}

/// The JWKS as a resource server finds it: discovery, then `jwks_uri`.
async fn discovered_jwks(provider: &OidcProvider) -> JwkSet {
    let discovery = get_json(&provider.discovery_url()).await;
    let jwks_uri = discovery["jwks_uri"].as_str().unwrap();
    serde_json::from_value(get_json(jwks_uri).await).unwrap()
}

/// Validates `token` as the gateway will: the key named by its kid in
/// `jwks`, RS256, the issuer and the audience.
fn validate(
    token: &str,
    jwks: &JwkSet,
    issuer: &str,
    audience: &str,
) -> Result<Value, jsonwebtoken::errors::Error> {
    let header = jsonwebtoken::decode_header(token)?;
    let kid = header.kid.unwrap_or_default();
    let Some(jwk) = jwks.find(&kid) else {
        return Err(ErrorKind::InvalidKeyFormat.into());
    };
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    jsonwebtoken::decode::<Value>(token, &DecodingKey::from_jwk(jwk)?, &validation)
        .map(|data| data.claims)
}

#[tokio::test]
async fn oidc_provider_discovery_and_user_tokens() {
    let provider = within(OidcProvider::start()).await;
    let issuer = provider.issuer().to_owned();
    assert!(issuer.starts_with("http://127.0.0.1:"), "{issuer}");

    let discovery = get_json(&provider.discovery_url()).await;
    assert_eq!(discovery["issuer"], issuer.as_str());
    assert_eq!(discovery["jwks_uri"], provider.jwks_uri().as_str());
    assert_eq!(
        discovery["code_challenge_methods_supported"],
        json!(["S256"])
    );
    assert!(
        discovery["registration_endpoint"].is_string(),
        "{discovery}"
    );
    let grants = discovery["grant_types_supported"].as_array().unwrap();
    for grant in ["authorization_code", "client_credentials"] {
        assert!(grants.contains(&json!(grant)), "{grants:?}");
    }

    let jwks = discovered_jwks(&provider).await;
    assert_eq!(jwks.keys.len(), 1);
    assert_eq!(jwks.keys[0].common.key_id.as_deref(), Some(provider.kid()));
    assert_eq!(provider.requests(JWKS_PATH), 1);

    for (user, groups, email) in [
        ("alice", json!(["eng"]), "alice@example.test"),
        ("bob", json!(["sales"]), "bob@example.test"),
    ] {
        let token = within(provider.token_for(user, RESOURCE)).await;
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.alg, Algorithm::RS256);
        assert_eq!(header.typ.as_deref(), Some("at+jwt"));
        let claims = validate(&token, &jwks, &issuer, RESOURCE).unwrap();
        assert_eq!(claims["sub"], user);
        assert_eq!(claims["aud"], RESOURCE);
        assert_eq!(claims["iss"], issuer.as_str());
        assert_eq!(claims["groups"], groups);
        assert_eq!(claims["email"], email);
        assert_eq!(claims["client_id"], oidc::PUBLIC_CLIENT_ID);
        assert_eq!(claims["scope"], "mcp");
        // Not for another resource.
        let err = validate(&token, &jwks, &issuer, "http://127.0.0.1:1/other").unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::InvalidAudience);
    }
    // Tokens were issued without anyone fetching the JWKS again.
    assert_eq!(provider.requests(JWKS_PATH), 1);
    assert!(
        provider.requests("/token") >= 2,
        "{:?}",
        provider.request_log()
    );
}

#[tokio::test]
async fn oidc_provider_rotation_publishes_only_the_new_key() {
    let mut provider = within(OidcProvider::start()).await;
    let issuer = provider.issuer().to_owned();
    let before = discovered_jwks(&provider).await;
    let old_kid = provider.kid().to_owned();
    assert_eq!(
        before.keys[0].common.key_id.as_deref(),
        Some(old_kid.as_str())
    );
    let old_token = within(provider.token_for("ops", RESOURCE)).await;
    assert_eq!(
        validate(&old_token, &before, &issuer, RESOURCE).unwrap()["groups"],
        json!(["operators"])
    );
    assert_eq!(provider.requests(JWKS_PATH), 1);

    within(provider.rotate()).await;
    assert_eq!(provider.issuer(), issuer, "same port after a rotation");
    assert_ne!(provider.kid(), old_kid);
    let after = discovered_jwks(&provider).await;
    assert_eq!(provider.requests(JWKS_PATH), 2);
    let kids: Vec<_> = after.keys.iter().map(|k| k.common.key_id.clone()).collect();
    assert_eq!(kids, [Some(provider.kid().to_owned())]);
    assert!(after.find(&old_kid).is_none());

    // A token of the old key finds no key any more; new tokens verify.
    assert!(validate(&old_token, &after, &issuer, RESOURCE).is_err());
    let new_token = within(provider.token_for("alice", RESOURCE)).await;
    let header = jsonwebtoken::decode_header(&new_token).unwrap();
    assert_eq!(header.kid.as_deref(), Some(provider.kid()));
    assert_eq!(
        validate(&new_token, &after, &issuer, RESOURCE).unwrap()["sub"],
        "alice"
    );
    assert!(validate(&new_token, &before, &issuer, RESOURCE).is_err());
}

#[tokio::test]
async fn oidc_provider_signs_edge_case_tokens() {
    let provider = within(OidcProvider::start()).await;
    let issuer = provider.issuer().to_owned();
    let jwks = discovered_jwks(&provider).await;
    let good = provider.claims_for("bob", RESOURCE);
    let claims = validate(&provider.sign(&good), &jwks, &issuer, RESOURCE).unwrap();
    assert_eq!(claims["groups"], json!(["sales"]));
    assert_eq!(
        provider.verify(&provider.sign(&good), RESOURCE).unwrap(),
        good
    );

    let with = |key: &str, value: Value| {
        let mut claims = good.clone();
        claims[key] = value;
        claims
    };
    let expired = with("exp", json!(good["iat"].as_u64().unwrap() - 600));
    let cases = [
        (provider.sign(&expired), ErrorKind::ExpiredSignature),
        (
            provider.sign(&with("aud", json!("http://127.0.0.1:1/other"))),
            ErrorKind::InvalidAudience,
        ),
        (
            provider.sign(&with("iss", json!("http://127.0.0.1:1"))),
            ErrorKind::InvalidIssuer,
        ),
        (
            provider.sign_with_foreign_key(&good),
            ErrorKind::InvalidSignature,
        ),
    ];
    for (token, kind) in cases {
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.kid.as_deref(), Some(provider.kid()));
        let err = validate(&token, &jwks, &issuer, RESOURCE).unwrap_err();
        assert_eq!(err.kind(), &kind, "{token}");
    }
}

#[tokio::test]
async fn oidc_provider_registration_and_client_credentials() {
    let provider = within(OidcProvider::start()).await;
    let issuer = provider.issuer().to_owned();

    // An MCP client registers itself (RFC 7591), as a public client with a
    // loopback redirect URI, and a user signs in for it.
    let discovery = get_json(&provider.discovery_url()).await;
    let registration = discovery["registration_endpoint"].as_str().unwrap();
    let redirect_uri = "http://127.0.0.1:33333/callback";
    let response = within(
        http()
            .post(registration)
            .header("content-type", "application/json")
            .body(
                json!({
                    "client_name": "an MCP client",
                    "redirect_uris": [redirect_uri],
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                })
                .to_string(),
            )
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 201);
    let client: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    let client_id = client["client_id"].as_str().unwrap();
    let request = provider.authorization_request_for(client_id, redirect_uri, RESOURCE);
    let redirect = within(provider.complete_authorization(&request.url, "ops")).await;
    assert!(redirect.starts_with(redirect_uri), "{redirect}");
    let token = within(provider.exchange(&request, &redirect)).await;
    let claims = provider.verify(&token, RESOURCE).unwrap();
    assert_eq!(claims["sub"], "ops");
    assert_eq!(claims["client_id"], client_id);

    // A public client must use PKCE: without it the provider says so on
    // the redirect.
    let without_pkce = reqwest::Url::parse_with_params(
        &provider.authorization_endpoint(),
        [
            ("client_id", client_id),
            ("response_type", "code"),
            ("redirect_uri", redirect_uri),
            ("state", "s"),
            ("resource", RESOURCE),
        ],
    )
    .unwrap();
    let refused = within(provider.complete_authorization(without_pkce.as_str(), "ops")).await;
    assert!(refused.contains("error=invalid_request"), "{refused}");

    // The confidential client gets a token of its own.
    let token = within(provider.service_token(RESOURCE)).await;
    let jwks = discovered_jwks(&provider).await;
    let claims = validate(&token, &jwks, &issuer, RESOURCE).unwrap();
    assert_eq!(claims["client_id"], oidc::SERVICE_CLIENT_ID);
    assert!(claims.get("groups").is_none(), "{claims}");
}

/// Runs a sign-in helper (`program helper URL USER`) and returns the
/// redirect URL it printed.
async fn run_helper(program: std::path::PathBuf, helper: std::path::PathBuf, url: &str) -> String {
    let output = within(
        tokio::process::Command::new(program)
            .arg(helper)
            .arg(url)
            .arg("bob")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

async fn exchange_for_bob(provider: &OidcProvider, request: &AuthorizationRequest, redirect: &str) {
    let token = within(provider.exchange(request, redirect)).await;
    let claims = provider.verify(&token, RESOURCE).unwrap();
    assert_eq!(claims["sub"], "bob");
    assert_eq!(claims["groups"], json!(["sales"]));
}

#[tokio::test]
async fn oidc_sign_in_helpers_for_python_and_javascript() {
    let provider = within(OidcProvider::start()).await;

    let request = provider.authorization_request(RESOURCE);
    let redirect = run_helper(peers::python(), oidc::python_login_helper(), &request.url).await;
    assert!(
        redirect.starts_with(oidc::PUBLIC_CLIENT_REDIRECT_URI),
        "{redirect}"
    );
    exchange_for_bob(&provider, &request, &redirect).await;

    let request = provider.authorization_request(RESOURCE);
    let redirect = run_helper(peers::node22(), oidc::js_login_helper(), &request.url).await;
    assert!(
        redirect.starts_with(oidc::PUBLIC_CLIENT_REDIRECT_URI),
        "{redirect}"
    );
    exchange_for_bob(&provider, &request, &redirect).await;
}

#[tokio::test]
async fn oidc_provider_script_exits_when_its_stdin_closes() {
    use tokio::io::{AsyncBufReadExt, BufReader};

    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.json");
    let status = within(
        tokio::process::Command::new(peers::node22())
            .arg(oidc::provider_script())
            .args(["genkeys".as_ref(), keys.as_os_str(), "1".as_ref()])
            .status(),
    )
    .await
    .unwrap();
    assert!(status.success());
    let generated: Value = serde_json::from_slice(&std::fs::read(&keys).unwrap()).unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [generated[0]["jwk"]]}).to_string()).unwrap();
    let node_modules = peers::oidc_provider_package().parent().unwrap().to_owned();
    let mut child = tokio::process::Command::new(peers::node22())
        .arg(oidc::provider_script())
        .arg("serve")
        .arg(node_modules)
        .arg("0")
        .arg(&jwks)
        .arg(dir.path().join("requests.jsonl"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = within(lines.next_line()).await.unwrap().unwrap();
    assert!(line.starts_with("listening http://127.0.0.1:"), "{line}");
    drop(child.stdin.take());
    let status = within(child.wait()).await.unwrap();
    assert!(status.success(), "{status}");
}
