//! Each caller's own upstream credential: a server whose OAuth grant is
//! per user (`oauth: {per_user: true}`) is reached with the grant of the
//! caller whose session calls it — logged in through the gateway
//! (`/v1/login/{server}` and `/oauth/callback`) against the testkit's real
//! OAuth authorization server — and never with another caller's; a caller
//! without a grant is told how to log in; each caller's refreshed grant
//! survives a restart of the gateway.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use extpool_server::GatewayOptions;
use extpool_state::StateStore;
use extpool_testkit::oauth::{OAuthServer, OAuthServerOptions};

use crate::support::{Project, Served, within};

/// The gateway's own token: with it set, every request must bring a token,
/// and the callers here bring API keys.
const GATEWAY_TOKEN: &str = "the-gateway-token-of-this-test";

/// A project whose one server `kit` is the OAuth-guarded testkit server,
/// its grants each caller's own, kept in `credentials`.
fn project(upstream: &OAuthServer, credentials: &std::path::Path) -> Project {
    let project = Project::new();
    project.config(&format!(
        "  kit:\n    url: {}\n    oauth:\n      per_user: true\n      store: {:?}\n",
        upstream.mcp_url(),
        credentials.display().to_string()
    ));
    project
}

/// A gateway on `project` with its state in `state.db` of `dir`.
async fn serve(project: Project, dir: &std::path::Path) -> (Served, StateStore) {
    let state = StateStore::open_url(&format!("sqlite:{}", dir.join("state.db").display()))
        .await
        .unwrap();
    let served = Served::start(
        project,
        GatewayOptions {
            bearer: Some(GATEWAY_TOKEN.into()),
            state: Some(state.clone()),
            ..GatewayOptions::default()
        },
    )
    .await;
    (served, state)
}

/// The testkit's OAuth server and the gateway's directories for grants
/// (`credentials`) and state (`data`), kept across restarts of the gateway.
struct World {
    upstream: OAuthServer,
    credentials: tempfile::TempDir,
    data: tempfile::TempDir,
}

impl World {
    async fn start() -> Self {
        Self {
            upstream: within(OAuthServer::start(OAuthServerOptions::default()))
                .await
                .unwrap(),
            credentials: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    /// A gateway (again) on the project of `kit`, with the same grants
    /// and state.
    async fn serve(&self) -> (Served, StateStore) {
        serve(
            project(&self.upstream, self.credentials.path()),
            self.data.path(),
        )
        .await
    }
}

/// `METHOD url` with `key` as the bearer token; the status and JSON body.
async fn api(method: reqwest::Method, url: &str, key: &str) -> (u16, Value) {
    let response = within(
        reqwest::Client::new()
            .request(method, url)
            .bearer_auth(key)
            .send(),
    )
    .await
    .unwrap();
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// A browser of its own (its own cookies, no redirect followed by
/// itself) going through a caller's login as a person does: the gateway's
/// login page, its button, the authorization server (the testkit's
/// approves at once), and back to the gateway's callback.
struct Browser {
    http: reqwest::Client,
    /// `name=value` of each cookie it was given.
    cookies: Vec<String>,
}

/// A page as the browser got it.
struct Page {
    status: u16,
    text: String,
}

impl Browser {
    fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: Vec::new(),
        }
    }

    /// GETs `url` with this browser's cookies.
    async fn get(&self, url: &str) -> reqwest::Response {
        let mut request = self.http.get(url);
        if !self.cookies.is_empty() {
            request = request.header("cookie", self.cookies.join("; "));
        }
        within(request.send()).await.unwrap()
    }

    /// Opens the gateway's login page at `url`.
    async fn open(&self, url: &str) -> Page {
        let response = self.get(url).await;
        let status = response.status().as_u16();
        Page {
            status,
            text: response.text().await.unwrap(),
        }
    }

    /// Presses the button of the login page at `url`: the form's POST with
    /// the page's origin; keeps the cookie; where it is sent (the
    /// authorization server).
    async fn press(&mut self, url: &str) -> String {
        let parsed = url::Url::parse(url).unwrap();
        let origin = parsed.origin().ascii_serialization();
        let state = parsed
            .query_pairs()
            .find(|(k, _)| k == "state")
            .unwrap()
            .1
            .into_owned();
        let form: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("state", &state)
            .finish();
        let response = within(
            self.http
                .post(format!("{origin}/oauth/login"))
                .header("origin", &origin)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status().as_u16(), 303, "{url}");
        for cookie in response.headers().get_all("set-cookie") {
            let cookie = cookie.to_str().unwrap();
            assert!(
                cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
                "{cookie}"
            );
            self.cookies
                .push(cookie.split(';').next().unwrap().trim().to_owned());
        }
        response.headers()["location"].to_str().unwrap().to_owned()
    }

    /// Visits the authorization server at `url`; where it sends the
    /// browser back to (the gateway's callback).
    async fn authorize(&self, url: &str) -> String {
        let approved = self.get(url).await;
        assert_eq!(approved.status().as_u16(), 302, "{url}");
        approved.headers()["location"].to_str().unwrap().to_owned()
    }

    /// The whole login from the page at `url`; the callback's page.
    async fn log_in(&mut self, url: &str) -> Page {
        let provider = self.press(url).await;
        let back = self.authorize(&provider).await;
        self.open(&back).await
    }
}

/// Starts `key`'s caller's login to `server`; the login page's URL.
async fn start_login(served: &Served, key: &str, server: &str) -> String {
    let login = format!("{}/v1/login/{server}", served.base);
    let (status, started) = api(reqwest::Method::POST, &login, key).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "pending", "{started}");
    let url = started["authorization_url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("{}/oauth/login?state=", served.base)),
        "{url}"
    );
    url
}

/// Logs `key`'s caller (API key `name`) in to `kit` through the gateway,
/// as its browser would: the login page names the caller, its button
/// leads to the authorization server, whose redirect back to the
/// gateway's callback completes the login.
async fn log_in(served: &Served, key: &str, name: &str) {
    let url = start_login(served, key, "kit").await;
    let mut browser = Browser::new();
    let page = browser.open(&url).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(
        page.text.contains(&format!("api-key:{name}")),
        "{}",
        page.text
    );
    // The browser brings no token: the page and the callback need none.
    let landed = browser.log_in(&url).await;
    assert_eq!(landed.status, 200, "{}", landed.text);
    assert!(landed.text.contains("Logged in"), "{}", landed.text);
    let login = format!("{}/v1/login/kit", served.base);
    let (status, done) = api(reqwest::Method::GET, &login, key).await;
    assert_eq!(status, 200);
    assert_eq!(done["status"], "done", "{done}");
}

/// An MCP client of the gateway's `/mcp` presenting `key`.
async fn client(served: &Served, key: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(served.url.clone())
            .auth_header(key.to_owned()),
    );
    within(().serve(transport)).await.unwrap()
}

/// Calls `mcp__kit__echo` as `key`'s caller in a new session; the tokens
/// the upstream accepted during the call (fingerprints), and the result
/// or the error's text.
async fn echo(
    served: &Served,
    upstream: &OAuthServer,
    key: &str,
) -> (Vec<String>, Result<String, String>) {
    let before = upstream.accepted_token_fingerprints().len();
    let client = client(served, key).await;
    let mut call = CallToolRequestParams::new("mcp__kit__echo");
    call.arguments = json!({"message": "hi"}).as_object().cloned();
    let outcome = match within(client.peer().call_tool(call)).await {
        Ok(result) if result.is_error != Some(true) => Ok(format!("{:?}", result.content)),
        Ok(result) => Err(format!("{:?}", result.content)),
        Err(e) => Err(e.to_string()),
    };
    let _ = client.cancel().await;
    let accepted = upstream.accepted_token_fingerprints()[before..].to_vec();
    (accepted, outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_reaches_a_per_user_server_with_its_own_grant_and_none_with_anothers() {
    let world = World::start().await;
    let (upstream, credentials) = (&world.upstream, &world.credentials);
    let (served, state) = world.serve().await;
    let alice = state.create_api_key("alice", false).await.unwrap().secret;
    let bob = state.create_api_key("bob", false).await.unwrap().secret;
    let carol = state.create_api_key("carol", false).await.unwrap().secret;

    // Nobody has logged in: the server is each caller's, so carol is told
    // to log in for herself, and the upstream saw no token at all.
    let (accepted, refused) = echo(&served, upstream, &carol).await;
    let refused = refused.unwrap_err();
    assert!(
        refused.contains("needs your own OAuth login")
            && refused.contains("extpool mcp login kit --gateway"),
        "{refused}"
    );
    assert!(accepted.is_empty(), "{accepted:?}");

    log_in(&served, &alice, "alice").await;
    log_in(&served, &bob, "bob").await;
    // Each login stored a grant of its own: two records, no shared one.
    let records: Vec<String> = std::fs::read_dir(credentials.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".grant"))
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(
        records.iter().all(|r| r.starts_with("kit--u")),
        "{records:?}"
    );

    let (alices, ran) = echo(&served, upstream, &alice).await;
    assert!(ran.is_ok(), "{ran:?}");
    let (bobs, ran) = echo(&served, upstream, &bob).await;
    assert!(ran.is_ok(), "{ran:?}");
    assert!(!alices.is_empty() && !bobs.is_empty());
    assert!(
        alices.iter().all(|a| !bobs.contains(a)),
        "alice's calls and bob's used the same token: {alices:?} {bobs:?}"
    );
    // Alice again: her token, never bob's.
    let (again, ran) = echo(&served, upstream, &alice).await;
    assert!(ran.is_ok(), "{ran:?}");
    assert!(
        again.iter().all(|t| !bobs.contains(t)),
        "{again:?} {bobs:?}"
    );
    // Carol is still told to log in: nobody's grant is hers.
    let (accepted, refused) = echo(&served, upstream, &carol).await;
    assert!(refused.unwrap_err().contains("needs your own OAuth login"));
    assert!(accepted.is_empty());
    // No token of the upstream's is in the gateway's stored records in
    // clear, nor in what the callers were told.
    for secret in upstream.issued_secrets() {
        assert!(!records.iter().any(|r| r.contains(&secret)));
    }
    served.stop().await;

    // The access tokens die (the upstream restarted, say): each caller's
    // grant is refreshed — its refresh token rotated — and, after a
    // restart of the gateway on the same store, still works as its own.
    upstream.revoke_access_tokens();
    let (served, _state) = world.serve().await;
    let (alices, ran) = echo(&served, upstream, &alice).await;
    assert!(ran.is_ok(), "{ran:?}");
    served.stop().await;
    // Again: the refresh token the first refresh used is dead (rotation),
    // so only the rotated one, stored as alice's, can refresh now.
    upstream.revoke_access_tokens();
    let (served, _state) = world.serve().await;
    let (alices_after, ran) = echo(&served, upstream, &alice).await;
    assert!(ran.is_ok(), "the rotated grant was not kept: {ran:?}");
    let (bobs_after, ran) = echo(&served, upstream, &bob).await;
    assert!(ran.is_ok(), "{ran:?}");
    assert!(
        alices_after
            .iter()
            .chain(&alices)
            .all(|a| !bobs_after.contains(a)),
        "{alices:?} {alices_after:?} {bobs_after:?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_is_only_for_a_per_user_server_and_its_callback_for_its_own_state() {
    let world = World::start().await;
    let (served, state) = world.serve().await;
    let alice = state.create_api_key("alice", false).await.unwrap().secret;
    let (status, body) = api(
        reqwest::Method::POST,
        &format!("{}/v1/login/nope", served.base),
        &alice,
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("per_user"),
        "{body}"
    );
    // Without a token the login API is refused like every /v1 route.
    let refused = within(
        reqwest::Client::new()
            .post(format!("{}/v1/login/kit", served.base))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    // A callback nobody is waiting for changes nothing.
    let stray = within(reqwest::get(format!(
        "{}/oauth/callback?code=x&state=made-up",
        served.base
    )))
    .await
    .unwrap();
    assert_eq!(stray.status().as_u16(), 400);
    let (_, status) = api(
        reqwest::Method::GET,
        &format!("{}/v1/login/kit", served.base),
        &alice,
    )
    .await;
    assert_eq!(status["status"], "none", "{status}");
    served.stop().await;
}

/// The grant records in `dir`.
fn grants(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".grant"))
                .collect()
        })
        .unwrap_or_default()
}

/// `url` with its query's `state` and nothing else of it but `pairs`.
fn callback_with(served: &Served, state: &str, pairs: &[(&str, &str)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        query.append_pair(k, v);
    }
    query.append_pair("state", state);
    format!("{}/oauth/callback?{}", served.base, query.finish())
}

/// The `state` of a login page's URL.
fn state_of(url: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_completes_only_in_the_browser_its_page_sent_to_the_provider() {
    let world = World::start().await;
    let (served, state) = world.serve().await;
    let mallory = state.create_api_key("mallory", false).await.unwrap().secret;
    // How mallory's login stands once it is no longer waiting.
    let status = || {
        let login = format!("{}/v1/login/kit?wait_ms=30000", served.base);
        let mallory = mallory.clone();
        async move { api(reqwest::Method::GET, &login, &mallory).await.1 }
    };

    // Mallory starts a login and sends its link to bob: bob's browser is
    // told whose login it is before anything happens.
    let url = start_login(&served, &mallory, "kit").await;
    let bobs = Browser::new();
    let page = bobs.open(&url).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("api-key:mallory"), "{}", page.text);
    assert!(page.text.contains("<strong>kit</strong>"), "{}", page.text);

    // Mallory goes on in her own browser and sends bob the provider's
    // link instead: bob signs in there, and his browser comes back to the
    // gateway without the login's cookie. Nothing is completed.
    let mut mallorys = Browser::new();
    let provider = mallorys.press(&url).await;
    let back = bobs.authorize(&provider).await;
    let landed = bobs.open(&back).await;
    assert_eq!(landed.status, 403, "{}", landed.text);
    assert!(!landed.text.contains("Logged in"), "{}", landed.text);
    let failed = status().await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("is not the one that went there"),
        "{failed}"
    );
    assert!(grants(world.credentials.path()).is_empty());
    let (accepted, refused) = echo(&served, &world.upstream, &mallory).await;
    assert!(
        refused.unwrap_err().contains("needs your own OAuth login"),
        "mallory reaches the upstream as bob"
    );
    assert!(accepted.is_empty(), "{accepted:?}");
    // The redirect is spent: mallory's own browser cannot use it now.
    let again = mallorys.open(&back).await;
    assert_eq!(again.status, 400, "{}", again.text);

    // A cookie of the right name and the wrong value is no better.
    let url = start_login(&served, &mallory, "kit").await;
    let mut forged = Browser::new();
    let provider = forged.press(&url).await;
    let back = forged.authorize(&provider).await;
    let name = forged.cookies[0].split('=').next().unwrap().to_owned();
    forged.cookies = vec![format!("{name}=00")];
    let landed = forged.open(&back).await;
    assert_eq!(landed.status, 403, "{}", landed.text);
    assert_eq!(status().await["status"], "failed");

    // The provider refuses (the user said no): the page says so, with
    // the provider's words as text, never markup; no "Logged in".
    let url = start_login(&served, &mallory, "kit").await;
    let mut browser = Browser::new();
    browser.press(&url).await;
    let denied = callback_with(
        &served,
        &state_of(&url),
        &[
            ("error", "access_denied"),
            (
                "error_description",
                "<script>alert(1)</script> no & \"never\"",
            ),
        ],
    );
    let landed = browser.open(&denied).await;
    assert_eq!(landed.status, 502, "{}", landed.text);
    assert!(!landed.text.contains("Logged in"), "{}", landed.text);
    assert!(!landed.text.contains("<script>"), "{}", landed.text);
    assert!(
        landed
            .text
            .contains("&lt;script&gt;alert(1)&lt;/script&gt; no &amp; &quot;never&quot;"),
        "{}",
        landed.text
    );
    assert_eq!(status().await["status"], "failed");

    // A code the provider never issued: the exchange fails, and the page
    // says the login failed rather than that it worked.
    let url = start_login(&served, &mallory, "kit").await;
    let mut browser = Browser::new();
    browser.press(&url).await;
    let bogus = callback_with(&served, &state_of(&url), &[("code", "never-issued")]);
    let landed = browser.open(&bogus).await;
    assert_eq!(landed.status, 502, "{}", landed.text);
    assert!(landed.text.contains("Not logged in"), "{}", landed.text);
    assert!(!landed.text.contains(">Logged in"), "{}", landed.text);
    assert!(grants(world.credentials.path()).is_empty());

    // The login page's button pressed from another site is refused.
    let url = start_login(&served, &mallory, "kit").await;
    let pressed = within(
        reqwest::Client::new()
            .post(format!("{}/oauth/login", served.base))
            .header("origin", "https://evil.example")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("state={}", state_of(&url)))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(pressed.status().as_u16(), 403);
    assert!(pressed.headers().get("set-cookie").is_none());
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_has_one_login_per_server_and_a_few_at_once_however_often_it_asks() {
    let world = World::start().await;
    let upstream = &world.upstream;
    let project = Project::new();
    let mut servers = String::new();
    for i in 1..=6 {
        servers.push_str(&format!(
            "  kit{i}:\n    url: {}\n    oauth:\n      per_user: true\n      store: {:?}\n",
            upstream.mcp_url(),
            world.credentials.path().display().to_string()
        ));
    }
    project.config(&servers);
    let (served, state) = serve(project, world.data.path()).await;
    let mallory = state.create_api_key("mallory", false).await.unwrap().secret;
    let bob = state.create_api_key("bob", false).await.unwrap().secret;

    // Asked again and again, the login to one server is the same one:
    // one client registered upstream, not one a request.
    let first = start_login(&served, &mallory, "kit1").await;
    for _ in 0..5 {
        assert_eq!(start_login(&served, &mallory, "kit1").await, first);
    }
    assert_eq!(upstream.counts().registrations, 1);
    for i in 2..=4 {
        start_login(&served, &mallory, &format!("kit{i}")).await;
    }
    assert_eq!(upstream.counts().registrations, 4);
    // A fifth at once is refused before anything reaches the upstream.
    let (status, body) = api(
        reqwest::Method::POST,
        &format!("{}/v1/login/kit5", served.base),
        &mallory,
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("4 of your logins already wait"),
        "{body}"
    );
    assert_eq!(upstream.counts().registrations, 4);
    // Another caller is not locked out, and logs in.
    let url = start_login(&served, &bob, "kit5").await;
    let landed = Browser::new().log_in(&url).await;
    assert_eq!(landed.status, 200, "{}", landed.text);
    // Once one of mallory's logins ends, she may start another.
    let landed = Browser::new().log_in(&first).await;
    assert_eq!(landed.status, 200, "{}", landed.text);
    start_login(&served, &mallory, "kit6").await;
    served.stop().await;
}

/// A session-era client that takes URL-mode elicitations and, as its
/// user's browser, follows the URL it is sent to the gateway's callback.
struct Browses {
    asked: std::sync::Arc<parking_lot::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Browses {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities.elicitation = Some(
            rmcp::model::ElicitationCapability::new()
                .with_url(rmcp::model::UrlElicitationCapability::new()),
        );
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("url-elicitation-test", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
        let ElicitRequestParams::UrlElicitationParams { url, message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked.lock().push(message);
        let landed = Browser::new().log_in(&url).await;
        assert_eq!(landed.status, 200, "{}", landed.text);
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_its_callers_login_asks_the_client_to_open_the_url_and_goes_on() {
    let world = World::start().await;
    let upstream = &world.upstream;
    let (served, state) = world.serve().await;
    let dana = state.create_api_key("dana", false).await.unwrap().secret;
    let asked = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(served.url.clone()).auth_header(dana.clone()),
    );
    let client = within(
        Browses {
            asked: asked.clone(),
        }
        .serve(transport),
    )
    .await
    .unwrap();
    let mut call = CallToolRequestParams::new("mcp__kit__echo");
    call.arguments = json!({"message": "after login"}).as_object().cloned();
    let result = within(client.peer().call_tool(call)).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(
        format!("{:?}", result.content).contains("after login"),
        "{result:?}"
    );
    let asked = asked.lock().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("kit needs you to log in"), "{asked:?}");
    // The grant is dana's own, and the upstream saw only her token.
    let (status, done) = api(
        reqwest::Method::GET,
        &format!("{}/v1/login/kit", served.base),
        &dana,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(done["status"], "done", "{done}");
    let mut tokens = upstream.accepted_token_fingerprints();
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    let _ = client.cancel().await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_session_named_like_an_implicit_one_never_lends_it_its_view() {
    let kit = extpool_testkit::StateDir::new();
    let own = extpool_testkit::HttpServer::spawn(kit.args());
    let project = Project::new();
    project.config("");
    let data = tempfile::tempdir().unwrap();
    let state = StateStore::open_url(&format!(
        "sqlite:{}",
        data.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let served = Served::start(
        project,
        GatewayOptions {
            bearer: Some(GATEWAY_TOKEN.into()),
            state: Some(state.clone()),
            private_session_servers: true,
            replica_id: Some(extpool_state::ReplicaId::new("r1").unwrap()),
            ..GatewayOptions::default()
        },
    )
    .await;
    let alice = state.create_api_key("alice", false).await.unwrap().secret;
    let bob = state.create_api_key("bob", false).await.unwrap().secret;
    // Alice takes the id the gateway gives its next implicit session, with
    // a server of her own in it.
    let created = within(
        reqwest::Client::new()
            .post(format!("{}/v1/sessions", served.base))
            .bearer_auth(&alice)
            .json(&json!({"id": "gw-r1-1", "mcp_servers": {"mine": {"url": own.url()}}}))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    // Bob's first session on /mcp is named gw-r1-1 too: it sees none of
    // alice's server.
    let bobs = client(&served, &bob).await;
    let tools = within(bobs.peer().list_all_tools()).await.unwrap();
    assert!(
        !tools.iter().any(|t| t.name.starts_with("mcp__mine__")),
        "bob sees alice's own server: {:?}",
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    );
    // Alice's own endpoint has it.
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!(
            "{}/sessions/gw-r1-1/mcp",
            served.base
        ))
        .auth_header(alice.clone()),
    );
    let alices = within(().serve(transport)).await.unwrap();
    let tools = within(alices.peer().list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name.starts_with("mcp__mine__")));
    let _ = bobs.cancel().await;
    let _ = alices.cancel().await;
    served.stop().await;
}

/// A 2026-07-28 client (no session) of the gateway's `/mcp` presenting `key`.
async fn stateless(
    served: &Served,
    key: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(served.url.clone())
            .auth_header(key.to_owned()),
    );
    within(().serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("server/discover")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_reaches_its_callers_own_server_with_its_own_grant() {
    let world = World::start().await;
    let upstream = &world.upstream;
    let (served, state) = world.serve().await;
    let alice = state.create_api_key("alice", false).await.unwrap().secret;
    let bob = state.create_api_key("bob", false).await.unwrap().secret;
    log_in(&served, &alice, "alice").await;
    let call = || {
        let mut call = CallToolRequestParams::new("mcp__kit__echo");
        call.arguments = json!({"message": "stateless"}).as_object().cloned();
        call
    };
    let alices = stateless(&served, &alice).await;
    let tools = within(alices.peer().list_all_tools()).await.unwrap();
    assert!(
        tools.iter().any(|t| t.name == "mcp__kit__echo"),
        "{tools:?}"
    );
    let ran = within(alices.peer().call_tool(call())).await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let bobs = stateless(&served, &bob).await;
    let tools = within(bobs.peer().list_all_tools()).await.unwrap();
    assert!(
        !tools.iter().any(|t| t.name == "mcp__kit__echo"),
        "{tools:?}"
    );
    let refused = within(bobs.peer().call_tool(call())).await;
    let told = format!("{refused:?}");
    assert!(told.contains("needs your own OAuth login"), "{told}");
    let mut tokens = upstream.accepted_token_fingerprints();
    tokens.sort();
    tokens.dedup();
    assert_eq!(
        tokens.len(),
        1,
        "only alice's token ever reached the upstream: {tokens:?}"
    );
    let _ = alices.cancel().await;
    let _ = bobs.cancel().await;
    served.stop().await;
}
