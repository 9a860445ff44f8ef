//! `extpool serve` in front of a team, as an operator runs it: a real
//! OpenID provider's tokens name who is calling (`--auth-issuer`), each
//! caller sees only its own sessions, an operator sees all, and static API
//! keys made with `extpool api-keys` work until they are revoked.

use extpool_testkit::oidc::OidcProvider;
use serde_json::{Value, json};

use crate::serve::Served;
use crate::support::Sandbox;

/// `METHOD url` with `token`, its status, `WWW-Authenticate` and body.
async fn call(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, String, String) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, challenge, response.text().await.unwrap())
}

/// `extpool serve` on a free port with the testkit server, `state` as its
/// store, and `args`; its base URL (`http://127.0.0.1:PORT`).
fn serve(sb: &Sandbox, state: &str, args: &[&str]) -> (Served, String) {
    sb.testkit_config("skills:\n  default_roots: false\n");
    let mut command = sb.command();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--state", state])
        .args(args);
    let served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    (served, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_an_issuer_admits_its_tokens_and_keeps_each_callers_sessions_apart() {
    let provider = OidcProvider::start().await;
    let sb = Sandbox::new();
    let state = format!("sqlite:{}", sb.work().join("state.db").display());
    let (_served, base) = serve(
        &sb,
        &state,
        &[
            "--auth-issuer",
            provider.issuer(),
            "--auth-operator",
            "groups=operators",
        ],
    );
    let sessions = format!("{base}/v1/sessions");

    // No token: 401 with the challenge that names the metadata, which
    // names the issuer and this gateway as the resource.
    let (status, challenge, _) = call(reqwest::Method::GET, &sessions, None, None).await;
    assert_eq!(status, 401);
    let metadata_url = format!("{base}/.well-known/oauth-protected-resource");
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    let (status, _, metadata) = call(reqwest::Method::GET, &metadata_url, None, None).await;
    assert_eq!(status, 200, "{metadata}");
    let metadata: Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(metadata["resource"], json!(base));
    assert_eq!(
        metadata["authorization_servers"],
        json!([provider.issuer()])
    );

    // Tokens from the provider's own login, for this gateway.
    let alice = provider.token_for("alice", &base).await;
    let bob = provider.token_for("bob", &base).await;
    let ops = provider.token_for("ops", &base).await;

    let (status, _, created) = call(
        reqwest::Method::POST,
        &sessions,
        Some(&alice),
        Some(json!({"id": "alices"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let one = format!("{sessions}/alices");
    assert_eq!(
        call(reqwest::Method::GET, &one, Some(&alice), None).await.0,
        200
    );
    // To bob it does not exist, whatever he does with its id.
    for (method, url) in [
        (reqwest::Method::GET, one.clone()),
        (reqwest::Method::POST, format!("{one}/mcp-refresh")),
        (reqwest::Method::DELETE, one.clone()),
    ] {
        let (status, _, body) = call(method.clone(), &url, Some(&bob), None).await;
        assert_eq!(status, 404, "{method} {url}: {body}");
        assert!(body.contains("does not exist"), "{body}");
    }
    let listed = |body: &str| -> Vec<String> {
        let page: Value = serde_json::from_str(body).unwrap();
        page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, _, page) = call(reqwest::Method::GET, &sessions, Some(&bob), None).await;
    assert!(listed(&page).is_empty(), "{page}");
    let (_, _, page) = call(reqwest::Method::GET, &sessions, Some(&alice), None).await;
    assert_eq!(listed(&page), vec!["alices"]);
    // An operator sees every session (a caller's by its whole id: the
    // caller's id and its owner's digest), and /metrics.
    let (_, _, page) = call(reqwest::Method::GET, &sessions, Some(&ops), None).await;
    let all = listed(&page);
    assert!(all.len() == 1 && all[0].starts_with("alices~"), "{all:?}");
    let metrics = format!("{base}/metrics");
    assert_eq!(
        call(reqwest::Method::GET, &metrics, Some(&alice), None)
            .await
            .0,
        403
    );
    assert_eq!(
        call(reqwest::Method::GET, &metrics, Some(&ops), None)
            .await
            .0,
        200
    );
    // Alice's session is untouched by bob's attempts.
    assert_eq!(
        call(reqwest::Method::DELETE, &one, Some(&alice), None)
            .await
            .0,
        200
    );

    // A token for another audience is refused, naming the rule.
    let elsewhere = provider.token_for("alice", "http://127.0.0.1:1").await;
    let (status, challenge, body) =
        call(reqwest::Method::GET, &sessions, Some(&elsewhere), None).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(body.contains("another audience"), "{body}");
    assert!(!body.contains(&elsewhere) && !challenge.contains(&elsewhere));
}

#[test]
fn an_issuer_that_cannot_be_read_stops_serve_before_any_server_starts() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    // Nothing listens on port 1.
    let run = sb.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--auth-issuer",
        "http://127.0.0.1:1",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("--auth-issuer"), "{}", run.stderr);
    assert!(
        run.stderr.contains("metadata could not be read"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("testkit"),
        "a server started: {}",
        run.stderr
    );
    // Plain http to another machine is refused before anything is fetched.
    let run = sb.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--auth-issuer",
        "http://idp.example",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("plain http://"), "{}", run.stderr);
    // On every interface, the audience must be named.
    let run = sb.run(&[
        "serve",
        "--listen",
        "0.0.0.0:0",
        "--auth-issuer",
        "http://127.0.0.1:1",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("--auth-audience is needed"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_alone_guard_a_gateway_on_every_interface() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let state = format!("sqlite:{}", sb.work().join("state.db").display());
    // No key yet: nothing tells callers apart, so serve refuses to start.
    let refused = sb.run(&["serve", "--listen", "0.0.0.0:0", "--state", &state]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("an API key in its state store"),
        "{}",
        refused.stderr
    );
    let made = sb.run(&["api-keys", "create", "ci", "--state", &state]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    let key = made.stdout.trim().to_owned();
    // With a key in the store, no shared token is needed.
    let mut command = sb.command();
    command.args(["serve", "--listen", "0.0.0.0:0", "--state", &state]);
    let _served = Served::spawn(command);
    let port = _served.url.rsplit(':').next().unwrap();
    let port = port.trim_end_matches("/mcp");
    let sessions = format!("http://127.0.0.1:{port}/v1/sessions");
    // A request without the key is refused, even from this machine: the
    // gateway listens where others reach it.
    let (status, challenge, body) = call(reqwest::Method::GET, &sessions, None, None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(challenge, "Bearer");
    assert!(body.contains("requires an API key"), "{body}");
    // So is a token that is no key (with no issuer to check it).
    let (status, _, body) =
        call(reqwest::Method::GET, &sessions, Some("made-up-token"), None).await;
    assert_eq!(status, 401, "{body}");
    let (status, _, body) = call(
        reqwest::Method::POST,
        &sessions,
        Some(&key),
        Some(json!({"id": "from-ci"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let made: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(made["session"]["owner"], "api-key:ci", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_are_made_listed_used_and_revoked_from_the_command_line() {
    let sb = Sandbox::new();
    let state = format!("sqlite:{}", sb.work().join("state.db").display());
    let made = sb.run(&["api-keys", "create", "ci", "--state", &state]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    let key = made.stdout.trim().to_owned();
    assert!(key.starts_with("epk_") && key.len() > 40, "{key}");
    assert!(made.stderr.contains("shown this once"), "{}", made.stderr);
    let listed = sb.run(&["api-keys", "list", "--state", &state, "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows[0]["name"], "ci");
    assert_eq!(rows[0]["operator"], false);
    assert!(!listed.stdout.contains(&key));
    let again = sb.run(&["api-keys", "create", "ci", "--state", &state]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("ci"), "{}", again.stderr);

    // A gateway that requires its token takes the key too, as its caller.
    let token = sb.write("gw.token", "a-long-enough-gateway-token-0123");
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (_served, base) = serve(&sb, &state, &["--token-file", token.to_str().unwrap()]);
    let sessions = format!("{base}/v1/sessions");
    let (status, _, body) = call(
        reqwest::Method::POST,
        &sessions,
        Some(&key),
        Some(json!({"id": "from-ci"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (_, _, page) = call(reqwest::Method::GET, &sessions, Some(&key), None).await;
    assert!(page.contains("from-ci"), "{page}");
    // A made-up key is refused.
    let (status, _, _) = call(reqwest::Method::GET, &sessions, Some("epk_nope"), None).await;
    assert_eq!(status, 401);

    let revoked = sb.run(&["api-keys", "revoke", "ci", "--state", &state]);
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    // The next request with it is refused: a gateway on SQLite asks the
    // file for every key.
    let (status, _, _) = call(reqwest::Method::GET, &sessions, Some(&key), None).await;
    assert_eq!(status, 401);
    let missing = sb.run(&["api-keys", "revoke", "ci", "--state", &state]);
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("no API key is named"),
        "{}",
        missing.stderr
    );
}

/// The steps of a Python SDK client that calls `echo` `n` times (each
/// JSON-RPC error printed, not raised) after listing the tools.
fn echo_steps(n: usize) -> Value {
    let mut steps = vec![json!({"op": "list_tools"})];
    for i in 0..n {
        steps.push(json!({
            "op": "call",
            "name": "mcp__testkit__echo",
            "args": {"message": format!("call {i}")},
            "expect_error": true,
        }));
    }
    Value::Array(steps)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_rules_and_rate_limits_follow_each_caller_through_the_sdk_client() {
    let provider = OidcProvider::start().await;
    let sb = Sandbox::new();
    let state = format!("sqlite:{}", sb.work().join("state.db").display());
    let audit = sb.work().join("audit.jsonl");
    sb.testkit_config(
        "skills:\n  default_roots: false\n\
         permissions:\n  principals:\n    - match: {groups: sales}\n      deny: [\"mcp__testkit__echo\"]\n\
         gateway:\n  rate_limits:\n    tools:\n      - match: \"mcp__testkit__ec*\"\n        calls_per_minute: 1\n        burst: 2\n",
    );
    let mut command = sb.command();
    command.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--state",
        &state,
        "--audit-log",
        audit.to_str().unwrap(),
        "--auth-issuer",
        provider.issuer(),
        "--auth-operator",
        "groups=operators",
    ]);
    let served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let alice = provider.token_for("alice", &base).await;
    let bob = provider.token_for("bob", &base).await;
    let ops = provider.token_for("ops", &base).await;
    let url = served.url.clone();

    // Alice (eng): echo is hers; two calls fill her burst, the third is
    // refused naming the limit and when to retry.
    let (a, u) = (alice.clone(), url.clone());
    let out = tokio::task::spawn_blocking(move || {
        crate::serve::python_as(Some(&a), &["--url", &u], echo_steps(3))
    })
    .await
    .unwrap();
    let tools = out[1]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t == "mcp__testkit__echo"), "{out:?}");
    assert_eq!(out[2]["text"], json!(["call 0"]), "{out:?}");
    assert_eq!(out[3]["text"], json!(["call 1"]), "{out:?}");
    let refused = out[4]["error"].as_str().unwrap();
    assert!(
        refused.contains("rate limit reached")
            && refused.contains("calls to mcp__testkit__ec*")
            && refused.contains("retry in"),
        "{refused}"
    );

    // Bob (sales): echo is not listed to him and refused by his rule; his
    // other tools work, and alice's spent tokens are not his.
    let (b, u) = (bob.clone(), url.clone());
    let steps = json!([
        {"op": "list_tools"},
        {"op": "call", "name": "mcp__testkit__echo", "args": {"message": "x"}, "expect_error": true},
        {"op": "call", "name": "mcp__testkit__add", "args": {"a": 1, "b": 2}},
    ]);
    let out = tokio::task::spawn_blocking(move || {
        crate::serve::python_as(Some(&b), &["--url", &u], steps)
    })
    .await
    .unwrap();
    let tools = out[1]["tools"].as_array().unwrap();
    assert!(!tools.iter().any(|t| t == "mcp__testkit__echo"), "{out:?}");
    assert!(tools.iter().any(|t| t == "mcp__testkit__add"), "{out:?}");
    let refused = out[2]["error"].as_str().unwrap();
    assert!(
        refused.contains("not available to this caller") && refused.contains("groups=sales"),
        "{refused}"
    );
    assert_eq!(out[3]["is_error"], false, "{out:?}");

    // The operator reads who called and what was limited.
    let (status, _, metrics) = call(
        reqwest::Method::GET,
        &format!("{base}/metrics"),
        Some(&ops),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let alice_label = format!("alice@{}", provider.issuer());
    assert!(
        metrics.contains(&format!(
            "extpool_principal_calls_total{{principal=\"{alice_label}\"}} 3"
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains("extpool_rate_limited_total{limit=\"1 calls to mcp__testkit__ec* a minute per caller (burst 2)\"} 1"),
        "{metrics}"
    );
    // Every audited call names its caller; bob's refusal names his rule.
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        records
            .iter()
            .any(|r| r["principal"] == json!(alice_label) && r["outcome"] == "ok"),
        "{records:?}"
    );
    let bobs = records
        .iter()
        .find(|r| {
            r["principal"] == json!(format!("bob@{}", provider.issuer()))
                && r["name"] == "mcp__testkit__echo"
        })
        .unwrap_or_else(|| panic!("no audit record of bob's echo: {records:?}"));
    assert_eq!(bobs["decision"], "deny", "{bobs}");
    assert!(
        bobs["rule"].as_str().unwrap().contains("groups=sales"),
        "{bobs}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extpool_mcp_login_through_the_gateway_gives_a_caller_its_own_grant() {
    use std::io::BufRead;
    let upstream = extpool_testkit::oauth::OAuthServer::start(Default::default())
        .await
        .unwrap();
    let sb = Sandbox::new();
    let state = format!("sqlite:{}", sb.work().join("state.db").display());
    let credentials = sb.work().join("credentials");
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  kit:\n    url: {}\n    oauth:\n      per_user: true\n      store: {:?}\nskills:\n  default_roots: false\n",
            upstream.mcp_url(),
            credentials.display().to_string()
        ),
    );
    let key = |name: &str| {
        let made = sb.run(&["api-keys", "create", name, "--state", &state]);
        assert_eq!(made.code, 0, "{}", made.stderr);
        made.stdout.trim().to_owned()
    };
    let (alice, bob) = (key("alice"), key("bob"));
    let token = sb.write("gw.token", "a-long-enough-gateway-token-0123");
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut command = sb.command();
    command.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--state",
        &state,
        "--token-file",
        token.to_str().unwrap(),
    ]);
    let served = Served::spawn(command);

    // Alice logs in with the command; the test is her browser.
    let mut login = sb.command();
    login
        .args([
            "mcp",
            "login",
            "kit",
            "--no-browser",
            "--gateway",
            &served.url,
        ])
        .env("EXTPOOL_GATEWAY_TOKEN", &alice)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = login.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    // Read stderr to its end, as a terminal would; the URL line is sent on.
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.trim().starts_with("http") {
                let _ = tx.send(line.trim().to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the command printed the authorization URL");
    // The gateway's login page names who will be logged in; its button
    // gives this browser the login's cookie and sends it to the
    // authorization server, whose redirect brings it back.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = browser.get(&url).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("api-key:alice"));
    let (origin, query) = url.split_once("/oauth/login?").unwrap();
    let pressed = browser
        .post(format!("{origin}/oauth/login"))
        .header("origin", origin)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(query.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(pressed.status().as_u16(), 303);
    let cookie = pressed.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let provider = pressed.headers()["location"].to_str().unwrap().to_owned();
    let approved = browser.get(&provider).send().await.unwrap();
    let back = approved.headers()["location"].to_str().unwrap().to_owned();
    let landed = browser
        .get(&back)
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(landed.status().as_u16(), 200);
    assert!(landed.text().await.unwrap().contains("Logged in"));
    let done = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let out = String::from_utf8_lossy(&done.stdout);
    assert!(done.status.success(), "{out}");
    assert!(
        out.contains("logged in to kit through the gateway"),
        "{out}"
    );

    // Alice's calls go with her grant; bob, who did not log in, is told how.
    let steps = || json!([{"op": "call", "name": "mcp__kit__echo", "args": {"message": "mine"}, "expect_error": true}]);
    let (a, u) = (alice.clone(), served.url.clone());
    let out = tokio::task::spawn_blocking(move || {
        crate::serve::python_as(Some(&a), &["--url", &u], steps())
    })
    .await
    .unwrap();
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    let tokens = || {
        let mut seen = upstream.accepted_token_fingerprints();
        seen.sort();
        seen.dedup();
        seen
    };
    assert_eq!(tokens().len(), 1, "alice's calls used one token, hers");
    let (b, u) = (bob.clone(), served.url.clone());
    let out = tokio::task::spawn_blocking(move || {
        crate::serve::python_as(Some(&b), &["--url", &u], steps())
    })
    .await
    .unwrap();
    let told = format!("{out:?}");
    assert!(
        told.contains("needs your own OAuth login") && told.contains("--gateway"),
        "{told}"
    );
    assert_eq!(tokens().len(), 1, "bob's session sent no token of anyone's");
}

/// A session-era `method` on `url` as `token` (in `session` if any): the
/// answer's `Mcp-Session-Id` and its JSON-RPC message.
async fn mcp(url: &str, token: &str, session: Option<&str>, body: Value) -> (String, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(id) = session {
        request = request
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    let message = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in: {text}"))
    });
    (id, message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exchanges_a_callers_token_as_the_client_its_configuration_names() {
    use extpool_testkit::audience::AudienceServer;
    use extpool_testkit::oidc::{GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET};
    let provider = OidcProvider::start().await;
    let upstream = AudienceServer::start(provider.issuer(), &provider.jwks_uri()).await;
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  up:\n    url: {}\n    oauth: {{token_exchange: {{}}}}\ngateway:\n  auth:\n    issuer: {}\n    client_id: {GATEWAY_CLIENT_ID}\n    client_secret: ${{GATEWAY_SECRET}}\nskills:\n  default_roots: false\n",
            upstream.url(),
            provider.issuer()
        ),
    );
    let state = format!("sqlite:{}", sb.work().join("state.db").display());
    let mut command = sb.command();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--state", &state])
        .env("GATEWAY_SECRET", GATEWAY_CLIENT_SECRET);
    let served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let token = provider.token_for("alice", &base).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "teams-test", "version": "1"}}});
    let (session, answer) = mcp(&served.url, &token, None, init).await;
    assert!(answer["result"].is_object(), "{answer}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__up__whoami", "arguments": {}}});
    let (_, answer) = mcp(&served.url, &token, Some(&session), call).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let me: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {answer}"));
    assert_eq!(me["sub"], "alice", "{answer}");
    assert_eq!(me["act"], json!({"sub": GATEWAY_CLIENT_ID}), "{answer}");
    assert_eq!(provider.token_exchanges(), 1);
}
