//! Identities at the gateway, through its real entry points (HTTP on
//! 127.0.0.1:0, the listener bound first so the tokens' audience is the URL
//! clients use), with a real OpenID provider (`extpool_testkit::oidc`:
//! panva's `oidc-provider`, tokens from real authorization-code flows) and a
//! state store (SQLite; PostgreSQL for the change feed):
//!
//! - sessions of every kind belong to the principal that made them —
//!   durable ones on every `/v1` route and their MCP endpoint in both eras,
//!   session-era MCP sessions on `/mcp`, on this replica and on one that
//!   resumes them from the store: another principal is told they do not
//!   exist, word for word as for an id nobody made, is shown none of their
//!   servers and never opens them again; an operator sees them all;
//! - every bad token is refused with 401, the rule, and the challenge that
//!   names the metadata (with `error="invalid_token"`), never echoed;
//! - a rotated key is fetched once, and made-up key ids never make the
//!   gateway fetch again within the refetch interval;
//! - API keys name their own principal, and stop working when revoked
//!   (at once on SQLite, when the change feed says so on PostgreSQL);
//! - the Python and TypeScript MCP SDKs log in by themselves, from the
//!   401 to the token, and use the gateway.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use extpool_auth::resource::{IssuerSettings, TokenVerifier};
use extpool_server::GatewayOptions;
use extpool_state::StateStore;
use extpool_testkit::oidc::{self, JWKS_PATH, OidcProvider};
use extpool_testkit::{HttpServer, StateDir, peers};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{PATIENCE, Project, Served, client_lines, raw_2026, testkit_yaml, within};

/// The session-era protocol version the raw requests speak.
const VERSION: &str = "2025-11-25";
/// Where the gateway's protected-resource metadata is.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// A gateway that takes `provider`'s access tokens for its own URL, with a
/// SQLite state store.
struct Guarded {
    served: Served,
    verifier: Arc<TokenVerifier>,
    /// The URL clients use and the tokens' audience: `http://127.0.0.1:PORT`.
    audience: String,
}

impl Guarded {
    /// `path` on this gateway.
    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.audience)
    }

    /// The challenge of a request that came without a token.
    fn challenge(&self) -> String {
        format!("Bearer resource_metadata=\"{}\"", self.at(METADATA_PATH))
    }
}

/// Serves a project with `servers_yaml` behind `provider`'s tokens (whoever
/// is in group `operators` is an operator), the issuer's settings changed by
/// `tune`, with a SQLite store in the project. The listener is bound first:
/// the audience is its URL.
async fn guarded(
    provider: &OidcProvider,
    servers_yaml: &str,
    tune: impl FnOnce(&mut IssuerSettings),
) -> Guarded {
    guarded_with(
        provider,
        servers_yaml,
        tune,
        GatewayOptions::default(),
        None,
    )
    .await
}

/// [`guarded`] with `options` (issuer and store set here) and `store`
/// (none: SQLite in the project).
async fn guarded_with(
    provider: &OidcProvider,
    servers_yaml: &str,
    tune: impl FnOnce(&mut IssuerSettings),
    options: GatewayOptions,
    store: Option<StateStore>,
) -> Guarded {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let audience = format!("http://{}", listener.local_addr().unwrap());
    let verifier = Arc::new(verifier(provider, &audience, tune).await);
    let project = Project::new();
    project.config(servers_yaml);
    let store = match store {
        Some(store) => store,
        None => sqlite(&project).await,
    };
    let options = GatewayOptions {
        issuer: Some(verifier.clone()),
        state: Some(store),
        ..options
    };
    let served = Served::start_on(project, options, listener).await;
    Guarded {
        served,
        verifier,
        audience,
    }
}

/// A SQLite state store in `project`'s directory.
async fn sqlite(project: &Project) -> StateStore {
    StateStore::open_url(&format!(
        "sqlite:{}",
        project.path().join("state.db").display()
    ))
    .await
    .unwrap()
}

/// A verifier of `provider`'s tokens for `audience` (operators: group
/// `operators`), its settings changed by `tune`.
pub(crate) async fn verifier(
    provider: &OidcProvider,
    audience: &str,
    tune: impl FnOnce(&mut IssuerSettings),
) -> TokenVerifier {
    let mut settings = IssuerSettings::new(provider.issuer(), audience);
    settings.operator = Some("groups=operators".parse().unwrap());
    tune(&mut settings);
    within(TokenVerifier::discover(settings)).await.unwrap()
}

/// An HTTP answer, its body read whole.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The JSON-RPC message of an MCP answer (a JSON body or an SSE stream).
    pub(crate) fn message(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("id").is_some())
                .unwrap_or_else(|| panic!("no JSON-RPC answer in: {}", self.body))
        })
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map_or("", |v| v.to_str().unwrap_or("(not text)"))
    }
}

/// Sends `method url` with `token` (if any), `headers` and `body`; the
/// answer read whole.
async fn send(
    method: Method,
    url: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> Answer {
    let response = request(method, url, token, headers, body).await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = within(response.text()).await.unwrap();
    Answer {
        status,
        headers,
        body,
    }
}

/// Sends `method url` and returns the response as it arrives (its body not
/// read: an SSE stream stays open).
async fn request(
    method: Method,
    url: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    within(request.send()).await.unwrap()
}

/// A `/v1` (or any JSON) request as `token`.
async fn api(method: Method, url: &str, token: Option<&str>, body: Option<Value>) -> Answer {
    send(method, url, token, &[], body.map(|b| b.to_string())).await
}

/// The ids of the sessions `token` is listed.
async fn listed(g: &Guarded, token: &str) -> Vec<String> {
    let answer = api(Method::GET, &g.at("/v1/sessions"), Some(token), None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The ids `token` (an operator) is listed, each caller's without the
/// digest of its owner that makes it whole.
async fn listed_short(g: &Guarded, token: &str) -> Vec<String> {
    listed(g, token)
        .await
        .into_iter()
        .map(|id| match id.rsplit_once('~') {
            Some((short, digest)) if digest.len() == 16 => short.to_owned(),
            _ => id,
        })
        .collect()
}

/// The whole id an operator (`token`) is shown for a caller's `id`.
async fn whole_id(g: &Guarded, token: &str, id: &str) -> String {
    let whole: Vec<String> = listed(g, token)
        .await
        .into_iter()
        .filter(|w| w.strip_prefix(id).is_some_and(|rest| rest.starts_with('~')))
        .collect();
    assert_eq!(whole.len(), 1, "{id}: {whole:?}");
    whole[0].clone()
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "identity-test", "version": "1"}}})
    .to_string()
}

fn tools_list(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}).to_string()
}

/// A session-era POST to MCP endpoint `url`, in MCP session `session` if
/// any, as `token`.
pub(crate) async fn mcp_post(
    url: &str,
    token: &str,
    session: Option<&str>,
    body: String,
) -> Answer {
    let mut headers = vec![("accept", "application/json, text/event-stream")];
    if let Some(id) = session {
        headers.extend([("mcp-session-id", id), ("mcp-protocol-version", VERSION)]);
    }
    send(Method::POST, url, Some(token), &headers, Some(body)).await
}

/// A session-era GET (the SSE stream) or DELETE of MCP session `session`.
async fn mcp_without_body(
    method: Method,
    url: &str,
    token: &str,
    session: &str,
) -> reqwest::Response {
    let headers = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", session),
        ("mcp-protocol-version", VERSION),
    ];
    request(method, url, Some(token), &headers, None).await
}

/// Initializes a session-era MCP session on `url` as `token`; its id.
pub(crate) async fn mcp_initialize(url: &str, token: &str) -> String {
    let answer = mcp_post(url, token, None, initialize_body()).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.message()["result"]["serverInfo"].is_object(),
        "{}",
        answer.body
    );
    let id = answer.header("mcp-session-id").to_owned();
    assert!(
        !id.is_empty(),
        "initialize made no session: {:?}",
        answer.headers
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = mcp_post(url, token, Some(&id), initialized.to_string()).await;
    assert_eq!(done.status, 202, "{}", done.body);
    id
}

/// The tool names of a `tools/list` answer.
fn tool_names(answer: &Answer) -> Vec<String> {
    let message = answer.message();
    message["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {message}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_never_sees_anothers_sessions() {
    let provider = within(OidcProvider::start()).await;
    let kit = StateDir::new();
    let g = guarded(&provider, &testkit_yaml("testkit", &kit), |_| {}).await;
    let alice = within(provider.token_for("alice", &g.audience)).await;
    let bob = within(provider.token_for("bob", &g.audience)).await;
    let ops = within(provider.token_for("ops", &g.audience)).await;

    // Durable sessions: alice's and bob's, each owned by its maker.
    for (token, id, user) in [(&alice, "alices", "alice"), (&bob, "bobs", "bob")] {
        let made = api(
            Method::POST,
            &g.at("/v1/sessions"),
            Some(token),
            Some(json!({"id": id})),
        )
        .await;
        assert_eq!(made.status, 201, "{}", made.body);
        let owner = format!("{user}@{}", provider.issuer());
        assert_eq!(
            made.json()["session"]["owner"],
            owner.as_str(),
            "{}",
            made.body
        );
    }
    // To bob, alice's session is one nobody made: the same 404, word for
    // word, on every route of the API — by her id (his own "alices" is
    // none) and by its whole id.
    let routes = [
        (Method::GET, "/v1/sessions/{}"),
        (Method::POST, "/v1/sessions/{}/mcp-refresh"),
        (Method::DELETE, "/v1/sessions/{}"),
    ];
    let whole = whole_id(&g, &ops, "alices").await;
    let made_up = "nobodys~0123456789abcdef";
    let pairs = [("alices", "nobodys"), (whole.as_str(), made_up)];
    for (method, route) in &routes {
        for (hers, none) in pairs {
            let theirs = api(
                method.clone(),
                &g.at(&route.replace("{}", hers)),
                Some(&bob),
                None,
            )
            .await;
            let nobodys = api(
                method.clone(),
                &g.at(&route.replace("{}", none)),
                Some(&bob),
                None,
            )
            .await;
            assert_eq!(theirs.status, 404, "{method} {route}: {}", theirs.body);
            assert_eq!(nobodys.status, 404, "{method} {route}: {}", nobodys.body);
            assert_eq!(
                theirs.body.replace(hers, "ID"),
                nobodys.body.replace(none, "ID"),
                "{method} {route}"
            );
        }
    }
    // And on its MCP endpoint: initialize, a 2026-07-28 request, the SSE
    // stream.
    let mut told = Vec::new();
    for id in ["alices", "nobodys", whole.as_str(), made_up] {
        let url = g.at(&format!("/sessions/{id}/mcp"));
        let init = mcp_post(&url, &bob, None, initialize_body()).await;
        assert_eq!(init.status, 404, "{id}: {}", init.body);
        assert!(init.headers.get("mcp-session-id").is_none(), "{id}");
        told.push(init.body.replace(id, "ID"));
        let bearer = format!("Bearer {bob}");
        let (status, answer) = raw_2026(
            &url,
            "tools/list",
            json!({}),
            &[("mcp-method", "tools/list"), ("authorization", &bearer)],
        )
        .await;
        assert_eq!(status, 404, "{id}: {answer}");
        let stream = request(
            Method::GET,
            &url,
            Some(&bob),
            &[("accept", "text/event-stream")],
            None,
        )
        .await;
        assert_eq!(stream.status().as_u16(), 404, "{id}");
    }
    assert_eq!(told[0], told[1]);
    assert_eq!(told[2], told[3]);

    // Each lists its own; the operator lists both (in creation order) and
    // reads alice's.
    assert_eq!(listed(&g, &alice).await, ["alices"]);
    assert_eq!(listed(&g, &bob).await, ["bobs"]);
    assert_eq!(listed_short(&g, &ops).await, ["alices", "bobs"]);
    let hers = whole_id(&g, &ops, "alices").await;
    let read = api(
        Method::GET,
        &g.at(&format!("/v1/sessions/{hers}")),
        Some(&ops),
        None,
    )
    .await;
    assert_eq!(read.status, 200, "{}", read.body);

    // Alice's session is untouched by all that: its endpoint serves her,
    // in both eras; she refreshes it, then deletes it.
    let endpoint = g.at("/sessions/alices/mcp");
    let own = mcp_initialize(&endpoint, &alice).await;
    let tools = mcp_post(&endpoint, &alice, Some(&own), tools_list(1)).await;
    assert_eq!(tools.status, 200, "{}", tools.body);
    assert!(!tool_names(&tools).is_empty(), "{}", tools.body);
    let bearer = format!("Bearer {alice}");
    let (status, answer) = raw_2026(
        &endpoint,
        "tools/list",
        json!({}),
        &[("mcp-method", "tools/list"), ("authorization", &bearer)],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    // Bob, holding her MCP session's id too, is still told nothing.
    let stolen = mcp_post(&endpoint, &bob, Some(&own), tools_list(2)).await;
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    let refreshed = api(
        Method::POST,
        &g.at("/v1/sessions/alices/mcp-refresh"),
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    assert_eq!(refreshed.json()["session"], "alices", "{}", refreshed.body);
    let deleted = api(
        Method::DELETE,
        &g.at("/v1/sessions/alices"),
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(deleted.json()["deleted"], "alices", "{}", deleted.body);
    assert_eq!(listed_short(&g, &ops).await, ["bobs"]);

    // Session-era MCP sessions on /mcp: alice's is hers.
    let url = g.at("/mcp");
    let session = mcp_initialize(&url, &alice).await;
    let unknown = mcp_post(&url, &bob, Some("no-such-session"), tools_list(1)).await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let theirs = mcp_post(&url, &bob, Some(&session), tools_list(1)).await;
    assert_eq!(theirs.status, 404, "{}", theirs.body);
    assert_eq!(theirs.body, "Not Found: Session not found");
    assert_eq!(theirs.body, unknown.body, "told as an unknown session is");
    for method in [Method::GET, Method::DELETE] {
        let response = mcp_without_body(method.clone(), &url, &bob, &session).await;
        assert_eq!(response.status().as_u16(), 404, "{method}");
        let body = within(response.text()).await.unwrap();
        assert_eq!(body, "Not Found: Session not found", "{method}");
    }
    // Hers still answers her, and its stream opens for her.
    let tools = mcp_post(&url, &alice, Some(&session), tools_list(2)).await;
    assert_eq!(tools.status, 200, "{}", tools.body);
    let names = tool_names(&tools);
    assert!(names.iter().any(|n| n == "mcp__testkit__echo"), "{names:?}");
    let stream = mcp_without_body(Method::GET, &url, &alice, &session).await;
    assert_eq!(stream.status().as_u16(), 200);
    let kind = stream.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    drop(stream);
    // An operator may act on any session, this one too.
    let by_ops = mcp_post(&url, &ops, Some(&session), tools_list(3)).await;
    assert_eq!(by_ops.status, 200, "{}", by_ops.body);
    // She ends it; then it is gone for her too.
    let ended = mcp_without_body(Method::DELETE, &url, &alice, &session).await;
    assert!(ended.status().is_success(), "{}", ended.status());
    let after = mcp_post(&url, &alice, Some(&session), tools_list(4)).await;
    assert_eq!(after.status, 404, "{}", after.body);

    g.served.stop().await;
}

/// `claims` as a JWT signed with `alg: none` (empty signature), by hand.
fn unsigned(claims: &Value) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.",
        part(&json!({"alg": "none", "typ": "JWT"})),
        part(claims)
    )
}

/// `claims` as a JWT signed with HS256 under `secret`.
fn hmac_signed(claims: &Value, secret: &[u8], kid: &str) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(
        &header,
        claims,
        &jsonwebtoken::EncodingKey::from_secret(secret),
    )
    .unwrap()
}

/// An RS256 (or other RSA algorithm) header naming `kid`, as the provider
/// writes it.
fn rsa_header(alg: jsonwebtoken::Algorithm, kid: &str) -> jsonwebtoken::Header {
    let mut header = jsonwebtoken::Header::new(alg);
    header.kid = Some(kid.to_owned());
    header.typ = Some("at+jwt".to_owned());
    header
}

/// Checks a refusal of a presented `token`: 401, the rule named in the
/// body and in the challenge (with `error="invalid_token"`; its description
/// in visible ASCII, RFC 6750 §3), the token in neither (nor any long part
/// of it).
fn assert_refused(g: &Guarded, what: &str, token: &str, answer: &Answer, rule: &str) {
    assert_eq!(answer.status, 401, "{what}: {}", answer.body);
    assert!(answer.body.contains(rule), "{what}: {}", answer.body);
    let challenge = answer.header("www-authenticate");
    let expected = format!(
        "{}, error=\"invalid_token\", error_description=\"{}\"",
        g.challenge(),
        answer
            .body
            .trim_end()
            .replace(['\\', '"'], "'")
            .chars()
            .map(|c| if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            })
            .collect::<String>()
    );
    assert_eq!(challenge, expected, "{what}");
    let mut parts: Vec<&str> = token.split('.').filter(|p| p.len() >= 12).collect();
    parts.push(token);
    for part in parts {
        assert!(
            !answer.body.contains(part),
            "{what}: the body echoes the token"
        );
        assert!(
            !challenge.contains(part),
            "{what}: the challenge echoes the token"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_are_refused_with_the_rule_and_a_challenge() {
    let provider = within(OidcProvider::start()).await;
    let g = guarded(&provider, "", |_| {}).await;
    let sessions = g.at("/v1/sessions");
    let mcp = g.at("/mcp");

    // The protected-resource metadata answers without a token, at its
    // place and under any path (a client asks for /mcp's).
    for path in [METADATA_PATH, &format!("{METADATA_PATH}/mcp")] {
        let answer = api(Method::GET, &g.at(path), None, None).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        let metadata = answer.json();
        assert_eq!(metadata["resource"], g.audience.as_str(), "{metadata}");
        assert_eq!(
            metadata["authorization_servers"],
            json!([provider.issuer()])
        );
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    }

    // Without a token (or with another scheme): the challenge alone, which
    // names the metadata and no error (RFC 6750 §3.1).
    let mut refusals = 0;
    for (method, url, scheme) in [
        (Method::GET, &sessions, None),
        (Method::POST, &mcp, None),
        (Method::GET, &sessions, Some("Basic YWxpY2U6cHc=")),
    ] {
        let headers: Vec<(&str, &str)> = scheme.iter().map(|s| ("authorization", *s)).collect();
        let body = (method == Method::POST).then(initialize_body);
        let answer = send(method.clone(), url, None, &headers, body).await;
        assert_eq!(answer.status, 401, "{method} {url}: {}", answer.body);
        assert_eq!(answer.header("www-authenticate"), g.challenge());
        assert!(
            answer.body.contains("requires an access token"),
            "{}",
            answer.body
        );
        refusals += 1;
    }

    // What passes: a token of a real flow; one signed by the provider's key
    // for the audience with its slash; one expired within the leeway; one
    // for several audiences, this gateway's among them.
    let good = provider.claims_for("alice", &g.audience);
    let now = good["iat"].as_u64().unwrap();
    let with = |edits: &[(&str, Value)]| {
        let mut claims = good.clone();
        for (name, value) in edits {
            claims[*name] = value.clone();
        }
        claims
    };
    let passing = [
        within(provider.token_for("alice", &g.audience)).await,
        provider.sign(&good),
        provider.sign(&with(&[("aud", json!(format!("{}/", g.audience)))])),
        provider.sign(&with(&[("exp", json!(now - 10))])),
        provider.sign(&with(&[("aud", json!(["http://127.0.0.1:1", g.audience]))])),
    ];
    for token in &passing {
        let answer = api(Method::GET, &sessions, Some(token), None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    // The scheme is read in any case (RFC 7235 §2.1).
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        let header = format!("{scheme} {}", passing[0]);
        let answer = send(
            Method::GET,
            &sessions,
            None,
            &[("authorization", &header)],
            None,
        )
        .await;
        assert_eq!(answer.status, 200, "{scheme}: {}", answer.body);
    }

    // What does not, each for its rule.
    let mut no_subject = good.clone();
    no_subject.as_object_mut().unwrap().remove("sub");
    let mut no_expiry = good.clone();
    no_expiry.as_object_mut().unwrap().remove("exp");
    let public_key = provider.public_jwk().to_string();
    let modulus = URL_SAFE_NO_PAD
        .decode(provider.public_jwk()["n"].as_str().unwrap())
        .unwrap();
    let mut huge = provider.claims_for("alice", &g.audience);
    huge["padding"] = json!("x".repeat(100 * 1024));
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired beyond the leeway",
            provider.sign(&with(&[
                ("exp", json!(now - 600)),
                ("iat", json!(now - 4200)),
            ])),
            "the access token has expired",
        ),
        (
            "not valid yet beyond the leeway",
            provider.sign(&with(&[("nbf", json!(now + 600))])),
            "the access token is not valid yet (nbf)",
        ),
        (
            "for another audience",
            provider.sign(&with(&[("aud", json!("http://127.0.0.1:1"))])),
            "for another audience than this gateway",
        ),
        (
            "of another issuer",
            provider.sign(&with(&[("iss", json!("http://127.0.0.1:1"))])),
            "issued by another issuer",
        ),
        (
            "without a subject",
            provider.sign(&no_subject),
            "the access token has no sub claim",
        ),
        (
            "with an empty subject",
            provider.sign(&with(&[("sub", json!(""))])),
            "the access token has no sub claim",
        ),
        (
            "with a subject of 300 bytes",
            provider.sign(&with(&[("sub", json!("s".repeat(300)))])),
            "its subject is longer than 255 bytes",
        ),
        (
            "without an expiry",
            provider.sign(&no_expiry),
            "the access token has no exp claim",
        ),
        (
            "alg none",
            unsigned(&good),
            "alg none and unknown algorithms are refused",
        ),
        (
            "HS256 keyed with the public key as published",
            hmac_signed(&good, public_key.as_bytes(), provider.kid()),
            "signed with HS256; only an issuer's public-key signatures",
        ),
        (
            "HS256 keyed with the public key's modulus",
            hmac_signed(&good, &modulus, provider.kid()),
            "signed with HS256",
        ),
        (
            "HS256 keyed with a secret",
            hmac_signed(&good, b"a shared secret", provider.kid()),
            "signed with HS256",
        ),
        (
            "PS256 under a key published for RS256",
            provider.sign_with_header(
                &rsa_header(jsonwebtoken::Algorithm::PS256, provider.kid()),
                &good,
            ),
            "names PS256, which its signing key does not verify",
        ),
        (
            "re-signed by a foreign key under the provider's kid",
            provider.sign_with_foreign_key(&good),
            "the access token's signature does not verify",
        ),
        (
            "a garbage string",
            "this-is-no-token".to_owned(),
            "the access token is not a JWT this gateway can read",
        ),
        (
            "a 100 KB token",
            provider.sign(&huge),
            "the access token is longer than 16384 bytes",
        ),
    ];
    for (what, token, rule) in &cases {
        let answer = api(Method::GET, &sessions, Some(token), None).await;
        assert_refused(&g, what, token, &answer, rule);
        let headers = [("accept", "application/json, text/event-stream")];
        let answer = send(
            Method::POST,
            &mcp,
            Some(token),
            &headers,
            Some(initialize_body()),
        )
        .await;
        assert_refused(&g, what, token, &answer, rule);
        assert!(answer.headers.get("mcp-session-id").is_none(), "{what}");
        refusals += 2;
    }
    // Nothing got through: no session was made, and every refusal counted.
    let answer = api(Method::GET, &sessions, Some(&passing[1]), None).await;
    assert_eq!(answer.json()["sessions"], json!([]), "{}", answer.body);
    let metrics = g.served.gateway.metrics();
    assert!(
        metrics.contains(&format!(
            "extpool_refused_total{{reason=\"auth\"}} {refusals}\n"
        )),
        "{refusals} refusals: {metrics}"
    );
    // Checking all that fetched the provider's keys once, at start.
    assert_eq!(provider.requests(JWKS_PATH), 1);
    assert_eq!(g.verifier.key_fetches(), 1);
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_once_and_an_unknown_kid_is_refused_without_more_fetches() {
    let mut provider = within(OidcProvider::start()).await;
    let hour = Duration::from_secs(3600);
    let g = guarded(&provider, "", |s| s.refetch_interval = hour).await;
    let sessions = g.at("/v1/sessions");
    let fetches = |provider: &OidcProvider| provider.requests(JWKS_PATH);
    assert_eq!(fetches(&provider), 1, "discovery fetched the keys");
    assert_eq!(g.verifier.key_fetches(), 1);

    let before = within(provider.token_for("alice", &g.audience)).await;
    let checks = g.verifier.signature_checks();
    for _ in 0..3 {
        let answer = api(Method::GET, &sessions, Some(&before), None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    assert_eq!(fetches(&provider), 1, "a known key is not fetched again");
    assert_eq!(
        g.verifier.signature_checks(),
        checks + 1,
        "a token accepted once is not checked again under the same keys"
    );

    // The provider rotates: a token of the new key makes the gateway fetch
    // the keys once, and is accepted; more of them fetch nothing.
    let old_kid = provider.kid().to_owned();
    within(provider.rotate()).await;
    assert_ne!(provider.kid(), old_kid);
    let after = within(provider.token_for("alice", &g.audience)).await;
    let answer = api(Method::GET, &sessions, Some(&after), None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(fetches(&provider), 2, "the new key was fetched once");
    assert_eq!(g.verifier.key_fetches(), 2);
    let checks = g.verifier.signature_checks();
    for _ in 0..3 {
        let answer = api(Method::GET, &sessions, Some(&after), None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    assert_eq!(fetches(&provider), 2);
    assert_eq!(g.verifier.signature_checks(), checks, "remembered");

    // The old key is no longer published: its token is refused, and so is
    // one under a made-up kid — neither fetches again within the interval,
    // however often they come.
    // (A kid is shown in the refusal as the token writes it, quotes and
    // all, and the challenge stays a valid header.)
    let claims = provider.claims_for("alice", &g.audience);
    let odd = "made-up \"kid\", ключ\n";
    let made_up = provider.sign_with_header(
        &rsa_header(jsonwebtoken::Algorithm::RS256, "made-up-kid"),
        &claims,
    );
    let odd_token =
        provider.sign_with_header(&rsa_header(jsonwebtoken::Algorithm::RS256, odd), &claims);
    for _ in 0..10 {
        for (token, kid) in [
            (&before, old_kid.as_str()),
            (&made_up, "made-up-kid"),
            (&odd_token, odd),
        ] {
            let answer = api(Method::GET, &sessions, Some(token), None).await;
            let rule =
                format!("the access token's signing key {kid:?} is not one the issuer publishes");
            assert_refused(&g, kid, token, &answer, &rule);
        }
    }
    assert_eq!(fetches(&provider), 2, "unknown kids made the gateway fetch");
    assert_eq!(g.verifier.key_fetches(), 2);
    g.served.stop().await;

    // A gateway that never fetched for an unknown kid: the first one
    // fetches once (the issuer may have rotated), then it is refused; the
    // next ones fetch nothing.
    let g = guarded(&provider, "", |s| s.refetch_interval = hour).await;
    assert_eq!(fetches(&provider), 3, "the new gateway's discovery");
    let claims = provider.claims_for("bob", &g.audience);
    let made_up = provider.sign_with_header(
        &rsa_header(jsonwebtoken::Algorithm::RS256, "another-made-up-kid"),
        &claims,
    );
    let rule =
        "the access token's signing key \"another-made-up-kid\" is not one the issuer publishes";
    let answer = api(Method::GET, &g.at("/v1/sessions"), Some(&made_up), None).await;
    assert_refused(&g, "a first unknown kid", &made_up, &answer, rule);
    assert_eq!(fetches(&provider), 4, "the first unknown kid fetched once");
    assert_eq!(g.verifier.key_fetches(), 2);
    for _ in 0..10 {
        let answer = api(Method::GET, &g.at("/v1/sessions"), Some(&made_up), None).await;
        assert_refused(&g, "an unknown kid again", &made_up, &answer, rule);
    }
    assert_eq!(fetches(&provider), 4);
    // Its known key still verifies without a fetch.
    let token = provider.sign(&claims);
    let answer = api(Method::GET, &g.at("/v1/sessions"), Some(&token), None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(fetches(&provider), 4);
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_down_when_a_new_key_must_be_fetched_is_a_503_to_retry_not_an_invalid_token() {
    let mut provider = within(OidcProvider::start()).await;
    let interval = Duration::from_secs(30);
    let g = guarded(&provider, "", |s| s.refetch_interval = interval).await;
    let sessions = g.at("/v1/sessions");
    let before = within(provider.token_for("alice", &g.audience)).await;
    let answer = api(Method::GET, &sessions, Some(&before), None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);

    // The provider rotates its key and goes down: a good token of the new
    // key cannot be checked. The client is told to retry, not that its
    // token is invalid (it would drop it).
    within(provider.rotate()).await;
    let after = provider.sign(&provider.claims_for("alice", &g.audience));
    provider.stop();
    let fetches = g.verifier.key_fetches();
    for attempt in 0..3 {
        let answer = api(Method::GET, &sessions, Some(&after), None).await;
        assert_eq!(answer.status, 503, "attempt {attempt}: {}", answer.body);
        let retry: u64 = answer
            .header("retry-after")
            .parse()
            .unwrap_or_else(|_| panic!("no Retry-After in {:?}", answer.headers));
        assert!((1..=interval.as_secs()).contains(&retry), "{retry}");
        assert!(
            !answer.header("www-authenticate").contains("invalid_token"),
            "{:?}",
            answer.headers
        );
        assert!(
            answer
                .body
                .contains("the issuer's keys could not be fetched"),
            "{}",
            answer.body
        );
        assert!(!answer.body.contains(&after), "the body echoes the token");
    }
    assert_eq!(
        g.verifier.key_fetches(),
        fetches + 1,
        "the issuer is asked once during the outage, not at every request"
    );
    // A token of a key the gateway has is still checked without it.
    let answer = api(Method::GET, &sessions, Some(&before), None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_name_their_principal_and_revoked_ones_stop_working() {
    let db = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", db.path().join("state.db").display());
    api_keys(&url, Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_on_postgres_are_forgotten_when_the_change_feed_says_so() {
    let url = extpool_testkit::postgres::PgServer::shared().database();
    api_keys(&url, Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_loopback_a_request_without_a_key_is_anonymous_once_the_store_holds_keys() {
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let store = sqlite(&project).await;
    let url = format!("sqlite:{}", project.path().join("state.db").display());
    let served = Served::start(
        project,
        GatewayOptions {
            state: Some(store),
            ..GatewayOptions::default()
        },
    )
    .await;
    let at = |path: &str| format!("{}{path}", served.base);
    // No key anywhere: the one local caller, an operator.
    let metrics = api(Method::GET, &at("/metrics"), None, None).await;
    assert_eq!(metrics.status, 200, "{}", metrics.body);

    // Another process makes a key; alice's key makes a session.
    let elsewhere = StateStore::open_url(&url).await.unwrap();
    let alice = within(elsewhere.create_api_key("alice", false))
        .await
        .unwrap()
        .secret;
    let made = api(
        Method::POST,
        &at("/v1/sessions"),
        Some(&alice),
        Some(json!({"id": "hers"})),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);

    // Now a request without a key is anonymous: alice's session does not
    // exist for it on any route, nor her MCP endpoint, nor the metrics.
    // A token that is no key (there is no issuer) is the same as none.
    for token in [None, Some("not-a-key-and-no-issuer")] {
        let hers = api(Method::GET, &at("/v1/sessions/hers"), token, None).await;
        assert_eq!(hers.status, 404, "{token:?}: {}", hers.body);
        let refresh = api(
            Method::POST,
            &at("/v1/sessions/hers/mcp-refresh"),
            token,
            None,
        )
        .await;
        assert_eq!(refresh.status, 404, "{token:?}: {}", refresh.body);
        let listed = api(Method::GET, &at("/v1/sessions"), token, None).await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        assert_eq!(listed.json()["sessions"], json!([]), "{}", listed.body);
        let mut headers = vec![("accept", "application/json, text/event-stream")];
        headers.push(("content-type", "application/json"));
        let call = send(
            Method::POST,
            &at("/sessions/hers/mcp"),
            token,
            &headers,
            Some(initialize_body()),
        )
        .await;
        assert_eq!(call.status, 404, "{token:?}: {}", call.body);
        let metrics = api(Method::GET, &at("/metrics"), token, None).await;
        assert_eq!(metrics.status, 403, "{token:?}: {}", metrics.body);
        let gone = api(Method::DELETE, &at("/v1/sessions/hers"), token, None).await;
        assert_eq!(gone.status, 404, "{token:?}: {}", gone.body);
    }
    // What an anonymous request makes is its own, and not alice's.
    let made = api(
        Method::POST,
        &at("/v1/sessions"),
        None,
        Some(json!({"id": "nobodys"})),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert_eq!(
        made.json()["session"]["owner"],
        "anonymous",
        "{}",
        made.body
    );
    let theirs = api(Method::GET, &at("/v1/sessions/nobodys"), Some(&alice), None).await;
    assert_eq!(theirs.status, 404, "{}", theirs.body);
    let hers = api(Method::GET, &at("/v1/sessions/hers"), Some(&alice), None).await;
    assert_eq!(hers.status, 200, "{}", hers.body);
    // The key's principal has one spelling: the session's owner says it
    // as the audit log and the metrics do.
    assert_eq!(
        hers.json()["session"]["owner"],
        "api-key:alice",
        "{}",
        hers.body
    );
    served.stop().await;
}

/// Which store [`api_keys`] runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// Nothing remembered: a key revoked by another process is refused at
    /// once.
    Sqlite,
    /// Keys remembered until the change feed says they changed.
    Postgres,
}

/// API keys on a gateway whose store is at `url`, made and revoked
/// through another handle of that store (as `extpool api-keys` does, in
/// another process): each names its own principal — a key named like a
/// user of the issuer is not that user — sees its own sessions only (an
/// operator's key every one, and the metrics), and stops working when
/// revoked, on every route.
async fn api_keys(url: &str, backend: Backend) {
    let provider = within(OidcProvider::start()).await;
    let store = StateStore::open_url(url).await.unwrap();
    let g = guarded_with(
        &provider,
        "",
        |_| {},
        GatewayOptions::default(),
        Some(store),
    )
    .await;
    let elsewhere = StateStore::open_url(url).await.unwrap();
    let sessions = g.at("/v1/sessions");
    let alice = within(provider.token_for("alice", &g.audience)).await;
    let key = within(elsewhere.create_api_key("alice", false))
        .await
        .unwrap();
    let root = within(elsewhere.create_api_key("root", true))
        .await
        .unwrap();

    let made = api(
        Method::POST,
        &sessions,
        Some(&alice),
        Some(json!({"id": "hers"})),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let made = api(
        Method::POST,
        &sessions,
        Some(&key.secret),
        Some(json!({"id": "keys"})),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert_eq!(
        made.json()["session"]["owner"],
        "api-key:alice",
        "{}",
        made.body
    );

    // The key sees its own session and not alice's, nor she its.
    let own = api(
        Method::GET,
        &g.at("/v1/sessions/keys"),
        Some(&key.secret),
        None,
    )
    .await;
    assert_eq!(own.status, 200, "{}", own.body);
    let hers = api(
        Method::GET,
        &g.at("/v1/sessions/hers"),
        Some(&key.secret),
        None,
    )
    .await;
    assert_eq!(hers.status, 404, "{}", hers.body);
    let its = api(Method::GET, &g.at("/v1/sessions/keys"), Some(&alice), None).await;
    assert_eq!(its.status, 404, "{}", its.body);
    assert_eq!(listed(&g, &key.secret).await, ["keys"]);
    assert_eq!(listed(&g, &alice).await, ["hers"]);
    // Its session-era MCP sessions are its own too.
    let url = g.at("/mcp");
    let session = mcp_initialize(&url, &key.secret).await;
    let taken = mcp_post(&url, &alice, Some(&session), tools_list(1)).await;
    assert_eq!(taken.status, 404, "{}", taken.body);
    let mine = mcp_post(&url, &key.secret, Some(&session), tools_list(1)).await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    // An operator's key sees every session, and the metrics; the other not.
    assert_eq!(listed_short(&g, &root.secret).await, ["hers", "keys"]);
    let metrics = api(Method::GET, &g.at("/metrics"), Some(&root.secret), None).await;
    assert_eq!(metrics.status, 200, "{}", metrics.body);
    let metrics = api(Method::GET, &g.at("/metrics"), Some(&key.secret), None).await;
    assert_eq!(metrics.status, 403, "{}", metrics.body);
    // Its use is recorded.
    let used = within(elsewhere.api_keys()).await.unwrap();
    assert!(used.iter().all(|k| k.last_used_ms.is_some()), "{used:?}");

    // Revoked elsewhere. On SQLite the next request is refused; on
    // PostgreSQL as soon as the change feed tells the gateway (until then
    // it believes what it remembered).
    assert!(within(elsewhere.revoke_api_key("alice")).await.unwrap());
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let refused = loop {
        let answer = api(Method::GET, &sessions, Some(&key.secret), None).await;
        if answer.status == 401 || backend == Backend::Sqlite {
            break answer;
        }
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(
            tokio::time::Instant::now() < deadline,
            "a revoked key was still accepted after {PATIENCE:?}"
        );
        tokio::task::yield_now().await;
    };
    let rule = "the bearer token is not one this extpool gateway accepts";
    assert_refused(&g, "a revoked key", &key.secret, &refused, rule);
    for answer in [
        api(
            Method::GET,
            &g.at("/v1/sessions/keys"),
            Some(&key.secret),
            None,
        )
        .await,
        mcp_post(&url, &key.secret, Some(&session), tools_list(2)).await,
        api(Method::GET, &sessions, Some(&key.secret), None).await,
    ] {
        assert_refused(&g, "a revoked key", &key.secret, &answer, rule);
    }
    // The others are unaffected; the revoked key's session is still there
    // for an operator.
    assert_eq!(listed(&g, &alice).await, ["hers"]);
    assert_eq!(listed_short(&g, &root.secret).await, ["hers", "keys"]);
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anothers_requests_never_show_a_sessions_servers_nor_open_it_again() {
    let provider = within(OidcProvider::start()).await;
    let kit = StateDir::new();
    let own = HttpServer::spawn(kit.args());
    // Idle long enough that nothing closes before alice holds her session
    // open (a loaded machine can stall a test for a second), short enough
    // to wait for.
    let options = GatewayOptions {
        private_session_servers: true,
        session_idle_timeout: Duration::from_secs(3),
        ..GatewayOptions::default()
    };
    let g = guarded_with(&provider, "", |_| {}, options, None).await;
    let alice = within(provider.token_for("alice", &g.audience)).await;
    let bob = within(provider.token_for("bob", &g.audience)).await;
    let ops = within(provider.token_for("ops", &g.audience)).await;
    let servers = json!({"aliceprivate": {"url": own.url()}});
    let made = api(
        Method::POST,
        &g.at("/v1/sessions"),
        Some(&alice),
        Some(json!({"id": "alices", "mcp_servers": servers})),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert_eq!(
        made.json()["server_status"][0]["state"],
        "ready",
        "{}",
        made.body
    );
    // Alice keeps it open: an MCP session on its endpoint with its stream.
    let endpoint = g.at("/sessions/alices/mcp");
    let held = mcp_initialize(&endpoint, &alice).await;
    let stream = mcp_without_body(Method::GET, &endpoint, &alice, &held).await;
    assert_eq!(stream.status().as_u16(), 200);

    // What bob is shown of the gateway names none of her servers: the
    // sources (API and built-in tool) and his tools.
    let leaks = |text: &str| text.contains(own.url()) || text.contains("aliceprivate");
    let sources = api(Method::GET, &g.at("/v1/sources"), Some(&bob), None).await;
    assert_eq!(sources.status, 200, "{}", sources.body);
    assert!(!leaks(&sources.body), "{}", sources.body);
    let mine = mcp_initialize(&g.at("/mcp"), &bob).await;
    let tools = mcp_post(&g.at("/mcp"), &bob, Some(&mine), tools_list(1)).await;
    assert_eq!(tools.status, 200, "{}", tools.body);
    assert!(!leaks(&tools.body), "{}", tools.body);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "ListMcpSources", "arguments": {}}});
    let listed_sources = mcp_post(&g.at("/mcp"), &bob, Some(&mine), call.to_string()).await;
    assert_eq!(listed_sources.status, 200, "{}", listed_sources.body);
    assert!(
        listed_sources.message()["result"]["content"].is_array(),
        "{}",
        listed_sources.body
    );
    assert!(!leaks(&listed_sources.body), "{}", listed_sources.body);
    // (Her session was open all along, so there was something to leak.)
    let state = |answer: &Answer| answer.json()["server_status"][0]["state"].clone();
    // The operator names it by its whole id.
    let hers = g.at(&format!(
        "/v1/sessions/{}",
        whole_id(&g, &ops, "alices").await
    ));
    let seen = api(Method::GET, &hers, Some(&ops), None).await;
    assert_eq!(state(&seen), "ready", "{}", seen.body);
    assert!(
        leaks(&seen.body),
        "the operator sees her servers: {}",
        seen.body
    );

    // She lets go; the session closes here when idle (the store keeps it).
    drop(stream);
    let mut expirations = g.served.gateway.expirations();
    let closed = async {
        loop {
            let seen = api(Method::GET, &hers, Some(&ops), None).await;
            if seen.json()["open_on"] == json!([]) {
                return seen;
            }
            expirations.changed().await.unwrap();
        }
    };
    let seen = tokio::time::timeout(PATIENCE, closed)
        .await
        .expect("her idle session never closed");
    assert_eq!(seen.json()["server_status"], Value::Null, "{}", seen.body);
    // Bob's requests for it, on every route, by her id and by its whole
    // one, open nothing.
    let whole = whole_id(&g, &ops, "alices").await;
    for id in ["alices", whole.as_str()] {
        for (method, path) in [
            (Method::GET, format!("/v1/sessions/{id}")),
            (Method::POST, format!("/v1/sessions/{id}/mcp-refresh")),
            (Method::DELETE, format!("/v1/sessions/{id}")),
        ] {
            let answer = api(method.clone(), &g.at(&path), Some(&bob), None).await;
            assert_eq!(answer.status, 404, "{method} {path}: {}", answer.body);
        }
        let endpoint = g.at(&format!("/sessions/{id}/mcp"));
        let init = mcp_post(&endpoint, &bob, None, initialize_body()).await;
        assert_eq!(init.status, 404, "{}", init.body);
        let stream = mcp_without_body(Method::GET, &endpoint, &bob, &held).await;
        assert_eq!(stream.status().as_u16(), 404);
    }
    let seen = api(Method::GET, &hers, Some(&ops), None).await;
    assert_eq!(seen.json()["open_on"], json!([]), "{}", seen.body);
    assert_eq!(seen.json()["server_status"], Value::Null, "{}", seen.body);
    // Hers does.
    let refreshed = api(
        Method::POST,
        &g.at("/v1/sessions/alices/mcp-refresh"),
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let seen = api(Method::GET, &hers, Some(&ops), None).await;
    assert_eq!(state(&seen), "ready", "{}", seen.body);
    assert_ne!(seen.json()["open_on"], json!([]), "{}", seen.body);
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_resumes_an_mcp_session_checks_its_owner() {
    let provider = within(OidcProvider::start()).await;
    // Two replicas on one store, each taking tokens for either's URL.
    let listeners = [
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
    ];
    let urls: Vec<String> = listeners
        .iter()
        .map(|l| format!("http://{}", l.local_addr().unwrap()))
        .collect();
    let second = urls[1].clone();
    let verifier = Arc::new(verifier(&provider, &urls[0], |s| s.audiences.push(second)).await);
    let db = tempfile::tempdir().unwrap();
    let store = StateStore::open_url(&format!("sqlite:{}", db.path().join("state.db").display()))
        .await
        .unwrap();
    let mut replicas = Vec::new();
    for (listener, name) in listeners.into_iter().zip(["a", "b"]) {
        let project = Project::new();
        project.config("");
        let options = GatewayOptions {
            issuer: Some(verifier.clone()),
            state: Some(store.clone()),
            replica_id: Some(extpool_state::ReplicaId::new(name).unwrap()),
            ..GatewayOptions::default()
        };
        replicas.push(Served::start_on(project, options, listener).await);
    }
    let (a, b) = (format!("{}/mcp", urls[0]), format!("{}/mcp", urls[1]));
    let alice = within(provider.token_for("alice", &urls[0])).await;
    let bob = within(provider.token_for("bob", &urls[1])).await;

    let session = mcp_initialize(&a, &alice).await;
    // On b, which never held it, bob is told it does not exist (b finds
    // its owner in the store), by every method; nothing is resumed for him.
    let theirs = mcp_post(&b, &bob, Some(&session), tools_list(1)).await;
    assert_eq!(theirs.status, 404, "{}", theirs.body);
    assert_eq!(theirs.body, "Not Found: Session not found");
    for method in [Method::GET, Method::DELETE] {
        let response = mcp_without_body(method.clone(), &b, &bob, &session).await;
        assert_eq!(response.status().as_u16(), 404, "{method}");
    }
    // Alice's next request reaches b: resumed for her.
    let hers = mcp_post(&b, &alice, Some(&session), tools_list(2)).await;
    assert_eq!(hers.status, 200, "{}", hers.body);
    assert!(!tool_names(&hers).is_empty(), "{}", hers.body);
    // Now b holds it, and still tells bob nothing; a still serves her.
    let theirs = mcp_post(&b, &bob, Some(&session), tools_list(3)).await;
    assert_eq!(theirs.status, 404, "{}", theirs.body);
    let hers = mcp_post(&a, &alice, Some(&session), tools_list(4)).await;
    assert_eq!(hers.status, 200, "{}", hers.body);
    for served in replicas {
        served.stop().await;
    }
}

/// The redirect URI the SDK scripts register (never followed).
const SDK_REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// Checks what an SDK that logged in by itself as alice printed: it was
/// refused first, read the metadata, registered, was authorized for the
/// gateway, exchanged the code, and then used the gateway with alice's
/// token.
fn assert_logged_in(g: &Guarded, provider: &OidcProvider, out: &[Value], greeting: &str) {
    let of = |op: &str| -> Vec<&Value> { out.iter().filter(|l| l["op"] == op).collect() };
    let http = of("http");
    let at = |place: &dyn Fn(&Value) -> bool, what: &str| {
        http.iter()
            .position(|l| place(l))
            .unwrap_or_else(|| panic!("no {what} in {http:#?}"))
    };
    let mcp = g.at("/mcp");
    let refused = at(
        &|l| l["url"] == mcp.as_str() && l["status"] == 401,
        "401 from /mcp",
    );
    let metadata = at(
        &|l| l["url"].as_str().unwrap().starts_with(&g.at(METADATA_PATH)) && l["status"] == 200,
        "protected-resource metadata",
    );
    let issuer = provider.issuer();
    let registered = at(
        &|l| {
            l["url"].as_str().unwrap().starts_with(issuer)
                && l["method"] == "POST"
                && l["status"] == 201
        },
        "registration",
    );
    let exchanged = at(
        &|l| l["url"] == provider.token_endpoint().as_str() && l["status"] == 200,
        "code exchange",
    );
    let served = http
        .iter()
        .rposition(|l| l["url"] == mcp.as_str() && l["status"] == 200)
        .unwrap_or_else(|| panic!("/mcp never answered 200: {http:#?}"));
    assert!(
        refused < metadata && metadata < registered && registered < exchanged && exchanged < served,
        "{http:#?}"
    );
    let authorize = of("authorize");
    assert_eq!(authorize.len(), 1, "{out:#?}");
    let authorize = authorize[0];
    assert_eq!(authorize["redirect_uri"], SDK_REDIRECT_URI);
    let client_id = authorize["client_id"].as_str().unwrap();
    assert_ne!(
        client_id,
        oidc::PUBLIC_CLIENT_ID,
        "the SDK registered a client of its own"
    );
    let resource = authorize["resource"].as_str().unwrap();
    assert!(
        resource.trim_end_matches('/') == g.audience,
        "resource {resource}, audience {}",
        g.audience
    );
    let tools = of("list_tools");
    let tools: Vec<&str> = tools[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"mcp__testkit__echo"), "{tools:?}");
    let call = of("call");
    assert_eq!(call[0]["is_error"], false, "{out:#?}");
    assert!(call[0]["text"].to_string().contains(greeting), "{out:#?}");
    let claims = &of("token")[0]["claims"];
    assert_eq!(claims["sub"], "alice", "{claims}");
    assert_eq!(claims["iss"], issuer, "{claims}");
    assert_eq!(claims["client_id"], client_id, "{claims}");
    assert_eq!(
        claims["aud"].as_str().unwrap().trim_end_matches('/'),
        g.audience
    );
    assert!(
        provider
            .request_log()
            .contains(&("POST".to_owned(), "/reg".to_owned(), 201)),
        "{:?}",
        provider.request_log()
    );
}

/// `identity/<name>`, the SDK scripts beside this module.
fn script(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/identity")
        .join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_logs_in_by_itself_and_uses_the_gateway() {
    let provider = within(OidcProvider::start()).await;
    let kit = StateDir::new();
    let g = guarded(&provider, &testkit_yaml("testkit", &kit), |_| {}).await;
    let mut command = std::process::Command::new(peers::python());
    command
        .arg(script("sdk_login.py"))
        .arg(g.at("/mcp"))
        .arg("alice")
        .arg(oidc::python_login_helper());
    let out = client_lines(command, "Python SDK's login").await;
    assert_logged_in(&g, &provider, &out, "hello from python");
    g.served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_logs_in_by_itself_and_uses_the_gateway() {
    let provider = within(OidcProvider::start()).await;
    let kit = StateDir::new();
    // The SDK asks for the scopes the gateway advertises (without any it
    // asks for none, which the provider refuses after the sign-in).
    let scopes = ["openid", "email", "groups"];
    let g = guarded(&provider, &testkit_yaml("testkit", &kit), |s| {
        s.scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
    })
    .await;
    let metadata = reqwest::get(g.at(METADATA_PATH)).await.unwrap();
    let metadata: Value = metadata.json().await.unwrap();
    assert_eq!(metadata["scopes_supported"], json!(scopes));
    let mut command = std::process::Command::new(peers::node22());
    command
        .arg(script("sdk_login.mjs"))
        .arg(g.at("/mcp"))
        .arg("alice")
        .arg(oidc::js_login_helper())
        .env("EXTPOOL_NODE_MODULES", peers::node_modules());
    let out = client_lines(command, "TypeScript SDK's login").await;
    assert_logged_in(&g, &provider, &out, "hello from typescript");
    let asked = out
        .iter()
        .find(|l| l["op"] == "authorize")
        .map(|l| l["scope"].clone());
    assert_eq!(asked, Some(json!("openid email groups")), "{out:#?}");
    g.served.stop().await;
}
