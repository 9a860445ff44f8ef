//! The operator page at `/`, in a real headless Chromium driven over the
//! DevTools protocol ([`cdp`]): it lists the configured servers with their
//! tool counts; a server killed while the page is open turns `failed`
//! there without a reload; a session made through `/v1/sessions` appears
//! and its delete button deletes it; a tool description with `<script>`
//! and an ESC character is shown as text; behind a bearer token the page
//! answers only a browser that sends it.
//!
//! The page fits a 360 px screen and has a dark theme; with
//! `EXTPOOL_PAGE_SCREENSHOTS=DIR` that test also saves it at 1280 and 360
//! CSS pixels as `DIR/operator-page.png` and `DIR/operator-page-360.png`
//! (the README's, in `docs/`).

mod cdp;

use extpool_server::GatewayOptions;
use extpool_testkit::{HttpServer, StateDir, stdio_command};
use serde_json::{Value, json};

use crate::support::{Project, Served, raw_2026, server_yaml, testkit_yaml, within};
use cdp::{Browser, Tab};

/// A tool whose description would run a script and colour a terminal, if
/// anything took it for markup or wrote it raw.
fn hostile_tools() -> Value {
    json!([{
        "name": "hostile",
        "description": "Reads files.<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"> \u{1b}[31mred\u{1b}[0m",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }])
}

/// A project with the testkit `alpha` and the testkit `board` serving
/// [`hostile_tools`].
fn project(state: &StateDir) -> Project {
    let project = Project::new();
    let file = project.path().join("tools.json");
    std::fs::write(&file, hostile_tools().to_string()).unwrap();
    let board = stdio_command(["--tools-file".to_owned(), file.display().to_string()]);
    project.config(&format!(
        "{}{}",
        testkit_yaml("alpha", state),
        server_yaml("board", board)
    ));
    project
}

/// The gateway on `project` with a SQLite state store (sessions), and the
/// store's directory.
async fn served(project: Project, options: GatewayOptions) -> (Served, tempfile::TempDir) {
    let db = tempfile::tempdir().unwrap();
    let store = extpool_state::StateStore::open_url(&format!(
        "sqlite:{}",
        db.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let options = GatewayOptions {
        state: Some(store),
        ..options
    };
    (Served::start(project, options).await, db)
}

/// The tool count the catalog has for `server` (what the page must show).
fn tools_of(served: &Served, server: &str) -> usize {
    let status = served.gateway.host().status();
    status.catalog.source(server).unwrap().tools
}

/// The selector's text in the page, as a JS expression.
fn text_of(selector: &str) -> String {
    format!(
        "(document.querySelector({0}) || {{}}).textContent",
        json!(selector)
    )
}

/// Opens the page and waits until both servers are shown with their
/// catalog's tool counts.
async fn open_page(tab: &Tab, served: &Served, base: &str) {
    tab.open(&format!("{base}/")).await;
    for server in ["alpha", "board"] {
        let expected = tools_of(served, server).to_string();
        let shown = tab
            .wait_for(
                &format!(
                    "{} === {}",
                    text_of(&format!("[data-server=\"{server}\"] .tool-count")),
                    json!(expected)
                ),
                &format!("{server} shown with {expected} tools"),
            )
            .await;
        assert_eq!(shown, json!(true));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_follows_servers_and_sessions_live_and_shows_hostile_text_as_text() {
    let state = StateDir::new();
    let (served, _db) = served(project(&state), GatewayOptions::default()).await;
    assert!(tools_of(&served, "alpha") > 1);
    assert_eq!(tools_of(&served, "board"), 1);
    let browser = Browser::launch().await;
    let tab = browser.tab().await;
    open_page(&tab, &served, &served.base).await;
    // Marks this document: a reload would lose it.
    tab.eval("window.__same = 'this load'").await;
    hostile_text_is_text(&tab).await;
    // Calls show in the last calls and the server's minute.
    echo(&served.url, 3).await;
    tab.wait_for(
        "document.querySelectorAll('#calls tbody tr').length === 3",
        "three calls listed",
    )
    .await;
    assert_eq!(
        tab.eval(&text_of("#calls tbody tr td:nth-child(3)")).await,
        json!("mcp__alpha__echo")
    );
    assert_eq!(
        tab.eval(&text_of("#calls tbody tr td:nth-child(5)")).await,
        json!("ok")
    );

    session_deleted_from_the_page(&tab, &served).await;
    killed_server_turns_failed(&tab, &served).await;
    assert_eq!(tab.eval("window.__same").await, json!("this load"));
    drop(browser);
    served.stop().await;
}

/// The hostile description is shown as text: no script ran, no element
/// was made, ESC is its visible symbol; and no playground is offered.
async fn hostile_text_is_text(tab: &Tab) {
    let description = tab
        .wait_for(
            &text_of("[data-tool=\"mcp__board__hostile\"] .desc"),
            "the hostile tool listed",
        )
        .await;
    let description = description.as_str().unwrap();
    assert!(
        description.contains("<script>window.__pwned = 1</script>"),
        "{description}"
    );
    assert!(description.contains("<img src=x onerror="), "{description}");
    // ESC is shown as its visible symbol, never raw.
    assert!(description.contains("\u{241b}[31mred"), "{description}");
    assert!(!description.contains('\u{1b}'), "{description}");
    let injected = tab
        .eval("[typeof window.__pwned, document.querySelectorAll('#tools script, #tools img').length]")
        .await;
    assert_eq!(injected, json!(["undefined", 0]));
    // No playground unless the gateway offers it.
    assert_eq!(
        tab.eval("document.querySelectorAll('#tools textarea, #tools button').length")
            .await,
        json!(0)
    );
}

/// A session made through the API appears; its refresh button refreshes
/// it, and its delete button (pressed, then confirmed) deletes it.
async fn session_deleted_from_the_page(tab: &Tab, served: &Served) {
    let id = create_session(&served.base).await;
    let row = format!("[data-session={}]", json!(id));
    tab.wait_for(
        &format!("!!document.querySelector({})", json!(row)),
        "the new session listed",
    )
    .await;

    // Its refresh button refreshes it through the API.
    tab.click(&format!("[data-refresh={}]", json!(id))).await;
    tab.wait_for(
        &format!(
            "{} === {}",
            text_of("#session-note"),
            json!(format!("refreshed {id}"))
        ),
        "the session refreshed",
    )
    .await;
    // Its delete button (pressed, then confirmed) deletes it.
    let button = format!("[data-delete={}]", json!(id));
    tab.click(&button).await;
    tab.wait_for(
        &format!("{} === 'Confirm delete'", text_of(&button)),
        "the delete button asks to confirm",
    )
    .await;
    // The sessions drawn again meanwhile (another one made): still armed.
    let other = create_session(&served.base).await;
    tab.wait_for(
        &format!(
            "!!document.querySelector({})",
            json!(format!("[data-session={}]", json!(other)))
        ),
        "the other session listed",
    )
    .await;
    assert_eq!(tab.eval(&text_of(&button)).await, json!("Confirm delete"));
    tab.click(&button).await;
    tab.wait_for(
        &format!("!document.querySelector({})", json!(row)),
        "the deleted session gone from the page",
    )
    .await;
    let status = within(
        reqwest::Client::new()
            .get(format!("{}/v1/sessions/{id}", served.base))
            .send(),
    )
    .await
    .unwrap()
    .status();
    assert_eq!(status.as_u16(), 404);
}

/// alpha's process killed: `failed` on the open page, with why.
async fn killed_server_turns_failed(tab: &Tab, served: &Served) {
    let pid = served
        .gateway
        .host()
        .server_connections()
        .into_iter()
        .find(|c| c.name == "alpha")
        .and_then(|c| c.pid)
        .expect("alpha runs as a process");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    tab.wait_for(
        &format!(
            "{} === 'failed'",
            text_of("[data-server=\"alpha\"] h3 .badge")
        ),
        "alpha shown failed",
    )
    .await;
    let detail = tab
        .eval(&text_of("[data-server=\"alpha\"] pre.detail"))
        .await;
    assert!(
        detail.as_str().unwrap().contains("its connection closed"),
        "{detail}"
    );
    assert_eq!(
        tab.eval(&text_of("[data-server=\"board\"] h3 .badge"))
            .await,
        json!("ready")
    );
}

/// Calls `mcp__alpha__echo` `n` times through `/mcp`; each must succeed.
async fn echo(url: &str, n: usize) {
    for i in 0..n {
        let (status, answer) = raw_2026(
            url,
            "tools/call",
            json!({"name": "mcp__alpha__echo", "arguments": {"message": format!("hello {i}")}}),
            &[
                ("mcp-method", "tools/call"),
                ("mcp-name", "mcp__alpha__echo"),
            ],
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            answer["result"]["content"][0]["text"],
            json!(format!("hello {i}")),
            "{answer}"
        );
    }
}

/// Creates a session through `/v1/sessions`; its id.
async fn create_session(base: &str) -> String {
    let created: Value = within(
        reqwest::Client::new()
            .post(format!("{base}/v1/sessions"))
            .send(),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    created["session"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_fits_a_360_pixel_screen_and_has_a_dark_theme() {
    // Servers over HTTP, a skill, calls and a session: every section filled.
    let state = StateDir::new();
    let alpha = HttpServer::spawn(state.args());
    let project = Project::new();
    let file = project.path().join("tools.json");
    std::fs::write(&file, hostile_tools().to_string()).unwrap();
    let board = HttpServer::spawn(["--tools-file".to_owned(), file.display().to_string()]);
    project.skill("review", "Review the change, then call echo.");
    // A skill whose name is not its folder's: loaded, with a warning.
    let odd = project.path().join("skills/odd");
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::write(
        odd.join("SKILL.md"),
        "---\nname: not-odd\ndescription: Misnamed, for tests\n---\nBody.\n",
    )
    .unwrap();
    project.config(&format!(
        "  alpha:\n    url: {}\n  board:\n    url: {}\n",
        alpha.url(),
        board.url()
    ));
    let options = GatewayOptions {
        replica_id: Some(extpool_state::ReplicaId::new("gateway-1").unwrap()),
        ..GatewayOptions::default()
    };
    let (served, _db) = served(project, options).await;
    echo(&served.url, 12).await;
    create_session(&served.base).await;
    let browser = Browser::launch().await;
    let tab = browser.tab().await;
    tab.call(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    )
    .await;
    open_page(&tab, &served, &served.base).await;
    tab.wait_for(
        "document.querySelectorAll('#calls tbody tr').length === 12 && !!document.querySelector('#sessions tbody tr')",
        "the calls and the session listed",
    )
    .await;
    // alpha's charts: calls per second, and its p50 and p99 of seconds with calls.
    let lines = tab
        .eval("['rate', 'p50', 'p99'].map(c => document.querySelectorAll(`[data-server=\"alpha\"] svg.chart polyline.${c}`).length)")
        .await;
    assert!(
        lines
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n.as_u64().unwrap() >= 1),
        "{lines}"
    );
    let skills = tab
        .eval("[...document.querySelectorAll('#skills tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
        .await;
    let skills = skills.as_array().unwrap();
    assert_eq!(skills.len(), 2, "{skills:?}");
    let row = |name: &str| {
        skills
            .iter()
            .find(|r| r[0] == json!(name))
            .unwrap_or_else(|| panic!("no skill {name}: {skills:?}"))
    };
    assert_eq!(row("review")[2], json!("valid"));
    let odd = row("not-odd");
    assert_eq!(odd[2], json!("warnings"));
    assert!(
        odd[3].as_str().unwrap().starts_with("warning (line 2): "),
        "{odd}"
    );
    // Dark: light text on a dark background.
    let colours = tab
        .eval("[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]")
        .await;
    assert_eq!(colours, json!(["rgb(13, 17, 23)", "rgb(230, 237, 243)"]));
    let dir = std::env::var("EXTPOOL_PAGE_SCREENSHOTS").ok();
    let shots = dir.as_deref().map(std::path::Path::new);
    for (width, name) in [(1280, "operator-page.png"), (360, "operator-page-360.png")] {
        tab.set_width(width).await;
        // Nothing is wider than the screen (tables scroll in their own box).
        let fits = tab
            .wait_for(
                "document.documentElement.scrollWidth <= window.innerWidth && window.innerWidth",
                &format!("the page fits {width} px"),
            )
            .await;
        assert_eq!(fits, json!(width));
        if let Some(dir) = shots {
            std::fs::create_dir_all(dir).unwrap();
            tab.screenshot(width, &dir.join(name)).await;
        }
    }
    drop(browser);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_token_the_page_answers_only_a_browser_that_sends_it_and_only_operators() {
    const TOKEN: &str = "page-test-token-8c1f";
    let state = StateDir::new();
    // Listening on every address: reachable from other machines, so the
    // token is required (the browser still dials 127.0.0.1).
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let db = tempfile::tempdir().unwrap();
    let store = extpool_state::StateStore::open_url(&format!(
        "sqlite:{}",
        db.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let viewer = store.create_api_key("viewer", false).await.unwrap().secret;
    let ops = store.create_api_key("ops", true).await.unwrap().secret;
    let served = Served::start_on(
        project(&state),
        GatewayOptions {
            bearer: Some(TOKEN.into()),
            state: Some(store),
            ..GatewayOptions::default()
        },
        listener,
    )
    .await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for path in ["/", "/v1/page/events", "/page/app.js"] {
        let refused = within(client.get(format!("{base}{path}")).send())
            .await
            .unwrap();
        assert_eq!(refused.status().as_u16(), 401, "{path}");
    }
    let page = within(client.get(format!("{base}/")).bearer_auth(TOKEN).send())
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("default-src 'none'"), "{policy}");
    // An API key: an operator's is shown the page, anyone else's is not.
    for (key, status) in [(&ops, 200), (&viewer, 403)] {
        for path in ["/", "/v1/page/events"] {
            let answer = within(client.get(format!("{base}{path}")).bearer_auth(key).send())
                .await
                .unwrap();
            assert_eq!(answer.status().as_u16(), status, "{path}");
        }
    }

    let browser = Browser::launch().await;
    let tab = browser.tab().await;
    // Without the token: refused, nothing of the page shown.
    tab.open(&format!("{base}/")).await;
    assert_eq!(
        tab.eval("!!document.getElementById('servers')").await,
        json!(false)
    );
    // With it (on every request the browser makes: page, script, stream).
    tab.call("Network.enable", json!({})).await;
    tab.call(
        "Network.setExtraHTTPHeaders",
        json!({"headers": {"Authorization": format!("Bearer {TOKEN}")}}),
    )
    .await;
    open_page(&tab, &served, &base).await;
    assert_eq!(tab.eval(&text_of("#link")).await, json!("live"));
    drop(browser);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_calls_a_tool_through_mcp_when_the_gateway_offers_it() {
    let state = StateDir::new();
    let options = GatewayOptions {
        playground: true,
        ..GatewayOptions::default()
    };
    let (served, _db) = served(project(&state), options).await;
    let browser = Browser::launch().await;
    let tab = browser.tab().await;
    open_page(&tab, &served, &served.base).await;
    // The search keeps the tools whose name or description matches.
    tab.eval(
        "(i => { i.value = 'HOSTILE'; i.dispatchEvent(new Event('input')); })(document.getElementById('tool-search'))",
    )
    .await;
    assert_eq!(
        tab.eval("[...document.querySelectorAll('#tools details')].map(d => d.dataset.tool)")
            .await,
        json!(["mcp__board__hostile"])
    );
    tab.eval(
        "(i => { i.value = ''; i.dispatchEvent(new Event('input')); })(document.getElementById('tool-search'))",
    )
    .await;
    let tool = "[data-tool=\"mcp__alpha__echo\"]";
    tab.wait_for(
        &format!(
            "!!document.querySelector({})",
            json!(format!("{tool} textarea"))
        ),
        "the echo tool's form",
    )
    .await;
    tab.eval(&format!(
        "document.querySelector({}).value = JSON.stringify({{message: 'from the page <b>'}})",
        json!(format!("{tool} textarea"))
    ))
    .await;
    tab.click(&format!("{tool} button")).await;
    let result = tab
        .wait_for(
            &format!(
                "(t => t.includes('from the page') && t)({})",
                text_of(&format!("{tool} pre.result"))
            ),
            "the call's result shown",
        )
        .await;
    let result: Value = serde_json::from_str(result.as_str().unwrap()).unwrap();
    assert_eq!(result["content"][0]["text"], json!("from the page <b>"));
    // It went the way every client's call goes: audited among the last calls.
    tab.wait_for(
        &format!(
            "{} === 'mcp__alpha__echo'",
            text_of("#calls tbody tr td:nth-child(3)")
        ),
        "the playground's call among the last calls",
    )
    .await;
    drop(browser);
    served.stop().await;
}

/// Reads the page's event stream until its first `snapshot`.
async fn first_snapshot(base: &str) -> Value {
    use futures::StreamExt as _;
    let response = within(reqwest::get(format!("{base}/v1/page/events")))
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut body = response.bytes_stream();
    let mut text = String::new();
    loop {
        let chunk = within(body.next())
            .await
            .expect("the stream ended")
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(at) = text.find("event: snapshot\ndata: ") {
            let rest = &text[at + "event: snapshot\ndata: ".len()..];
            if let Some(end) = rest.find('\n') {
                return serde_json::from_str(&rest[..end]).unwrap();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_what_the_api_and_the_command_line_show() {
    let state = StateDir::new();
    let (served, _db) = served(project(&state), GatewayOptions::default()).await;
    let id = create_session(&served.base).await;
    let snapshot = first_snapshot(&served.base).await;
    let get = |path: &'static str| {
        let url = format!("{}{path}", served.base);
        async move {
            within(reqwest::get(url))
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    // `extpool sessions sources` (GET /v1/sources): the same rows.
    let sources = get("/v1/sources").await;
    assert_eq!(snapshot["sources"]["sources"], sources["sources"]);
    assert_eq!(snapshot["sources"]["revision"], sources["revision"]);
    assert_eq!(snapshot["catalog"]["revision"], sources["revision"]);
    // `extpool sessions list` (GET /v1/sessions): the same sessions.
    let listed = get("/v1/sessions").await;
    let ids = |rows: &Value| -> Vec<String> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&snapshot["sessions"]["rows"]), vec![id.clone()]);
    assert_eq!(ids(&listed["sessions"]), vec![id]);
    assert_eq!(
        snapshot["sessions"]["rows"][0]["granted_count"],
        listed["sessions"][0]["granted_count"]
    );
    served.stop().await;
}
