//! `extpool mcp login|logout|auth-status` against a local authorization
//! server guarding the testkit MCP server, and serving from the stored grant.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use extpool_testkit::oauth::{OAuthServer, OAuthServerOptions};

use crate::support::{Run, Sandbox};

fn config(sandbox: &Sandbox, url: &str, oauth: &str) -> std::path::PathBuf {
    sandbox.write(
        "extpool.yaml",
        &format!("mcp_servers:\n  demo:\n    url: {url}\n    oauth: {oauth}\n"),
    )
}

fn env(sandbox: &Sandbox) -> Vec<(String, String)> {
    vec![(
        "EXTPOOL_CREDENTIALS_DIR".into(),
        sandbox.home().join("credentials").display().to_string(),
    )]
}

fn extpool(sandbox: &Sandbox, args: &[&str]) -> Run {
    let env = env(sandbox);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    sandbox.run_with(args, &env)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// `mcp login --no-browser`: read the URL from stderr, "visit" it, paste
/// the redirect address on stdin.
fn login_no_browser(sandbox: &Sandbox, extra: &[&str]) -> Run {
    let mut cmd = sandbox.command();
    for (k, v) in env(sandbox) {
        cmd.env(k, v);
    }
    cmd.args(["mcp", "login", "demo", "--no-browser"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut shown = String::new();
    let mut url = None;
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        shown.push_str(&line);
        if let Some(u) = line.trim().strip_prefix("http://127.0.0.1")
            && u.contains("/authorize?")
        {
            url = Some(format!("http://127.0.0.1{u}"));
            break;
        }
        if line.contains("error:") {
            break;
        }
        line.clear();
    }
    if let Some(url) = url {
        let location = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys, urllib.request as u\n\
class N(u.HTTPRedirectHandler):\n    def redirect_request(self, *a, **k): return None\n\
try:\n    u.build_opener(N).open(sys.argv[1])\nexcept u.HTTPError as e:\n    print(e.headers['Location'])",
                &url,
            ])
            .output()
            .unwrap();
        let location = String::from_utf8(location.stdout).unwrap();
        assert!(location.contains("code="), "no redirect: {location}");
        writeln!(child.stdin.as_mut().unwrap(), "{}", location.trim()).unwrap();
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    shown.push_str(&rest);
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: shown,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_browser_login_then_serving_status_and_logout() {
    let server = OAuthServer::start(OAuthServerOptions::default())
        .await
        .unwrap();
    let sandbox = std::sync::Arc::new(Sandbox::new());
    config(&sandbox, &server.mcp_url(), "{}");
    let sb = sandbox.clone();
    let before = extpool_testkit_counts(&server);
    let call = blocking(move || extpool(&sb, &["call", "mcp__demo__echo", "message=hi"])).await;
    assert_eq!(call.code, 1, "{}", call.stderr);
    assert!(
        call.stderr.contains("run: extpool mcp login demo"),
        "{}",
        call.stderr
    );
    assert_eq!(
        extpool_testkit_counts(&server),
        before,
        "no login attempted while serving"
    );

    let sb = sandbox.clone();
    let login = blocking(move || login_no_browser(&sb, &[])).await;
    assert_eq!(login.code, 0, "{}\n{}", login.stdout, login.stderr);
    assert!(
        login.stderr.contains("paste the address"),
        "{}",
        login.stderr
    );
    assert!(
        login.stdout.contains("logged in to demo"),
        "{}",
        login.stdout
    );

    let sb = sandbox.clone();
    let status = blocking(move || extpool(&sb, &["--json", "mcp", "auth-status"])).await;
    assert_eq!(status.code, 0, "{}", status.stderr);
    let rows: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(rows[0]["server"], "demo");
    assert_eq!(rows[0]["state"], "valid");
    assert_eq!(rows[0]["refreshable"], true);

    let sb = sandbox.clone();
    let call = blocking(move || extpool(&sb, &["call", "mcp__demo__echo", "message=hi"])).await;
    assert_eq!(call.code, 0, "{}", call.stderr);
    assert!(call.stdout.contains("hi"), "{}", call.stdout);

    for secret in server.issued_secrets() {
        for text in [
            &login.stdout,
            &login.stderr,
            &status.stdout,
            &call.stdout,
            &call.stderr,
        ] {
            assert!(
                !text.contains(&secret),
                "a token or code was printed: {text}"
            );
        }
    }

    let sb = sandbox.clone();
    let logout = blocking(move || extpool(&sb, &["mcp", "logout", "demo"])).await;
    assert_eq!(logout.code, 0, "{}", logout.stderr);
    assert!(
        logout.stdout.contains("removed: grant"),
        "{}",
        logout.stdout
    );
    let sb = sandbox.clone();
    let status = blocking(move || extpool(&sb, &["mcp", "auth-status"])).await;
    assert!(status.stdout.contains("no grant"), "{}", status.stdout);
}

fn extpool_testkit_counts(server: &OAuthServer) -> (u64, u64, u64) {
    let c = server.counts();
    (c.registrations, c.authorizations, c.refreshes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_login_through_the_loopback_redirect() {
    let server = OAuthServer::start(OAuthServerOptions::default())
        .await
        .unwrap();
    let sandbox = std::sync::Arc::new(Sandbox::new());
    config(&sandbox, &server.mcp_url(), "{scopes: [mcp:read]}");
    // The "browser" follows every redirect, so the loopback listener gets the code.
    let browser = sandbox.write(
        "browser.sh",
        "#!/bin/sh\nexec python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()' \"$1\"\n",
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let sb = sandbox.clone();
    let browser = browser.display().to_string();
    let login = blocking(move || {
        let mut env = env(&sb);
        env.push(("BROWSER".into(), browser));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        sb.run_with(&["mcp", "login", "demo"], &env)
    })
    .await;
    assert_eq!(login.code, 0, "{}\n{}", login.stdout, login.stderr);
    assert!(login.stdout.contains("scopes mcp:read"), "{}", login.stdout);
    let requests = server.authorization_requests();
    let redirect = requests[0]
        .iter()
        .find(|(k, _)| k == "redirect_uri")
        .unwrap();
    assert!(redirect.1.starts_with("http://127.0.0.1:"), "{redirect:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_backed_profiles_are_read_only() {
    let server = OAuthServer::start(OAuthServerOptions::default())
        .await
        .unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = extpool_auth::CredentialStore::open(store_dir.path()).unwrap();
    let url = server.mcp_url();
    let grant = extpool_auth::login(
        extpool_auth::LoginTarget {
            server: "demo",
            url: &url,
            profile: &extpool_auth::OAuthProfile::default(),
        },
        &store,
        &extpool_auth::HeadlessAuthorizer::default(),
        &extpool_auth::LoginOptions::default(),
    )
    .await
    .unwrap();
    let sandbox = std::sync::Arc::new(Sandbox::new());
    config(&sandbox, &url, "{credentials_env: DEMO_GRANT}");
    let json = serde_json::to_string(&grant).unwrap();
    let sb = sandbox.clone();
    let (call, login, logout) = blocking(move || {
        let env = [("DEMO_GRANT", json.as_str())];
        (
            sb.run_with(&["call", "mcp__demo__echo", "message=from-env"], &env),
            sb.run_with(&["mcp", "login", "demo", "--no-browser"], &env),
            sb.run_with(&["mcp", "logout", "demo"], &env),
        )
    })
    .await;
    assert_eq!(call.code, 0, "{}", call.stderr);
    assert!(call.stdout.contains("from-env"));
    for refused in [&login, &logout] {
        assert_eq!(refused.code, 1);
        assert!(
            refused
                .stderr
                .contains("environment-backed (DEMO_GRANT) and read-only"),
            "{}",
            refused.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcr_flags_fail_closed_on_the_wrong_state() {
    let server = OAuthServer::start(OAuthServerOptions::default())
        .await
        .unwrap();
    let sandbox = std::sync::Arc::new(Sandbox::new());
    config(
        &sandbox,
        &server.mcp_url(),
        "{client: {mode: dcr, dcr: {}}}",
    );
    let sb = sandbox.clone();
    let (retry, reset, both) = blocking(move || {
        (
            extpool(&sb, &["mcp", "login", "demo", "--retry-dcr-registration"]),
            extpool(&sb, &["mcp", "login", "demo", "--reset-dcr-registration"]),
            extpool(
                &sb,
                &[
                    "mcp",
                    "login",
                    "demo",
                    "--retry-dcr-registration",
                    "--reset-dcr-registration",
                ],
            ),
        )
    })
    .await;
    assert_eq!(retry.code, 1);
    assert!(
        retry
            .stderr
            .contains("needs an interrupted (pending) registration; the state is absent"),
        "{}",
        retry.stderr
    );
    assert_eq!(reset.code, 1);
    assert!(
        reset.stderr.contains("needs a ready registration"),
        "{}",
        reset.stderr
    );
    assert_eq!(both.code, 2, "{}", both.stderr);
    assert_eq!(server.counts().registrations, 0, "nothing was registered");
}

/// `--permission-config` reads the profile from the files a gateway serves
/// with, layered as `--config` layers them (the first definition wins),
/// instead of the configuration discovered where the command runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_reads_the_profile_from_the_permission_config_layers() {
    let server = OAuthServer::start(OAuthServerOptions::default())
        .await
        .unwrap();
    let sandbox = std::sync::Arc::new(Sandbox::new());
    sandbox.write(
        "extpool.yaml",
        "mcp_servers:\n  elsewhere:\n    url: http://127.0.0.1:9/mcp\n",
    );
    let base = sandbox.write(
        "layers/base/extpool.yaml",
        &format!(
            "mcp_servers:\n  demo:\n    url: {}\n    oauth: {{}}\n",
            server.mcp_url()
        ),
    );
    let team = sandbox.write(
        "layers/team/extpool.yaml",
        "mcp_servers:\n  demo:\n    url: http://127.0.0.1:9/shadowed\n    oauth: {}\n",
    );
    let (base, team) = (base.display().to_string(), team.display().to_string());

    let sb = sandbox.clone();
    let discovered =
        blocking(move || extpool(&sb, &["mcp", "login", "demo", "--no-browser"])).await;
    assert_eq!(discovered.code, 2, "{}", discovered.stderr);
    assert!(
        discovered.stderr.contains("no MCP server named \"demo\""),
        "{}",
        discovered.stderr
    );

    let sb = sandbox.clone();
    let args = ["--permission-config", &base, "--permission-config", &team];
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let login = blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        login_no_browser(&sb, &args)
    })
    .await;
    assert_eq!(login.code, 0, "{}\n{}", login.stdout, login.stderr);
    assert!(
        login.stdout.contains("logged in to demo"),
        "{}",
        login.stdout
    );
    assert_eq!(server.counts().authorizations, 1, "the base layer's server");

    let sb = sandbox.clone();
    let (base2, team2) = (base.clone(), team.clone());
    let status = blocking(move || {
        extpool(
            &sb,
            &[
                "--json",
                "mcp",
                "auth-status",
                "--permission-config",
                &base2,
                "--permission-config",
                &team2,
            ],
        )
    })
    .await;
    assert_eq!(status.code, 0, "{}", status.stderr);
    let rows: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(rows[0]["server"], "demo");
    assert_eq!(rows[0]["state"], "valid");

    let sb = sandbox.clone();
    let both = blocking(move || {
        extpool(
            &sb,
            &[
                "mcp",
                "login",
                "demo",
                "--file",
                &base,
                "--permission-config",
                &team,
            ],
        )
    })
    .await;
    assert_eq!(both.code, 2, "{}", both.stderr);
    assert!(
        both.stderr.contains("cannot be used with"),
        "{}",
        both.stderr
    );
}

/// A `$BROWSER` that records its arguments (their count, then each on a
/// line) at `name` under the sandbox — a FIFO when `waited` (read with
/// [`recorded`]), else a file whose existence says it ran — and that
/// record's path.
fn recording_browser(sandbox: &Sandbox, name: &str, waited: bool) -> (String, std::path::PathBuf) {
    let record = if waited {
        sandbox.fifo(name)
    } else {
        sandbox.work().join(name)
    };
    let script = sandbox.write(
        &format!("{name}.sh"),
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$#\" \"$@\" > {:?}\n",
            record.display().to_string()
        ),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (script.display().to_string(), record)
}

/// What the recording browser of FIFO `path` was given, once it ran
/// (extpool does not wait for its browser).
fn recorded(path: &std::path::Path) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let fifo = path.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(fifo));
    });
    let text = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("the browser never ran: {}", path.display()))
        .unwrap();
    text.lines().map(str::to_owned).collect()
}

/// `extpool mcp login demo` started with `browser` as `$BROWSER`, its
/// stderr as `stderr` says (it waits for a redirect: the caller ends it).
fn login_opening_with(sandbox: &Sandbox, browser: &str, stderr: Stdio) -> std::process::Child {
    let mut command = sandbox.command();
    for (k, v) in env(sandbox) {
        command.env(k, v);
    }
    command
        .args(["mcp", "login", "demo"])
        .env("BROWSER", browser)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    command.spawn().unwrap()
}

/// A stand-in for a gateway (a hostile or broken one, which the real
/// gateway cannot be made into) speaking its login API: the login of
/// `kit` answers `url` as its page, and its status is then `failed`.
async fn gateway_giving(url: &'static str) -> String {
    use axum::routing::post;
    let app = axum::Router::new().route(
        "/v1/login/kit",
        post(move || async move {
            axum::Json(serde_json::json!({"status": "pending", "authorization_url": url}))
        })
        .get(|| async {
            axum::Json(serde_json::json!({"status": "failed", "error": "stopped by the test"}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_opens_only_web_pages_and_shows_every_url_escaped() {
    let sandbox = std::sync::Arc::new(Sandbox::new());
    let run = |gateway: String, browser: String| {
        let sb = sandbox.clone();
        blocking(move || {
            sb.run_with(
                &["mcp", "login", "kit", "--gateway", &gateway],
                &[("BROWSER", browser.as_str())],
            )
        })
    };
    // Pages that are no web page: refused, never handed to the opener.
    let mut refused = Vec::new();
    for (i, (url, why)) in [
        ("file:///etc/passwd", "its scheme is \"file\""),
        (
            "javascript:alert(document.cookie)",
            "its scheme is \"javascript\"",
        ),
        (
            "data:text/html,<script>alert(1)</script>",
            "its scheme is \"data\"",
        ),
        ("/oauth/login?state=x", "it is not a URL"),
    ]
    .into_iter()
    .enumerate()
    {
        let (browser, record) = recording_browser(&sandbox, &format!("refused{i}"), false);
        let out = run(gateway_giving(url).await, browser).await;
        assert_eq!(out.code, 1, "{url}: {}", out.stderr);
        assert!(out.stderr.contains(why), "{url}: {}", out.stderr);
        assert!(out.stderr.contains("it was not opened"), "{}", out.stderr);
        refused.push(record);
    }
    // Plain http to another machine: shown, not opened, said why.
    let (browser, record) = recording_browser(&sandbox, "plain", false);
    let out = run(
        gateway_giving("http://gw.example/oauth/login?state=x").await,
        browser,
    )
    .await;
    assert!(
        out.stderr.contains("http://gw.example/oauth/login?state=x"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "not opened in a browser: it is plain http:// to another machine (gw.example)"
        ),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("stopped by the test"), "{}", out.stderr);
    refused.push(record);
    // An https page with control characters and `&`: opened as one
    // argument of the browser (no shell reads the `&`), and shown with
    // nothing a terminal would act on.
    let hostile = "https://idp.example/a\u{1b}]0;pwned\u{7}b\n\u{1b}[2J?x=1&calc.exe";
    let (browser, record) = recording_browser(&sandbox, "opened", true);
    let reading = std::thread::spawn(move || recorded(&record));
    let out = run(gateway_giving(hostile).await, browser).await;
    let args = reading.join().unwrap();
    assert_eq!(args.len(), 2, "{args:?}");
    assert_eq!(args[0], "1", "one argument: {args:?}");
    assert_eq!(
        args[1], "https://idp.example/a%1B]0;pwned%07b%1B[2J?x=1&calc.exe",
        "{args:?}"
    );
    assert!(
        !out.stderr.contains('\u{1b}') && !out.stderr.contains('\u{7}'),
        "{:?}",
        out.stderr
    );
    assert!(out.stderr.contains(&args[1]), "{}", out.stderr);
    // A loopback http page (a gateway on this machine) is opened.
    let (browser, record) = recording_browser(&sandbox, "loopback", true);
    let reading = std::thread::spawn(move || recorded(&record));
    run(
        gateway_giving("http://127.0.0.1:1/oauth/login?state=a&b=c").await,
        browser,
    )
    .await;
    assert_eq!(
        reading.join().unwrap(),
        ["1", "http://127.0.0.1:1/oauth/login?state=a&b=c"]
    );
    // The browsers that were to open nothing never ran (they would have
    // been started before the runs above ended, long before these ran).
    for record in refused {
        assert!(!record.exists(), "{} ran", record.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_never_opens_an_authorization_servers_url_that_is_no_web_page() {
    let server = OAuthServer::start(OAuthServerOptions {
        authorization_endpoint: Some("file:///etc/passwd".into()),
        ..OAuthServerOptions::default()
    })
    .await
    .unwrap();
    let sandbox = std::sync::Arc::new(Sandbox::new());
    config(&sandbox, &server.mcp_url(), "{}");
    let (browser, record) = recording_browser(&sandbox, "file", false);
    let sb = sandbox.clone();
    let login = blocking(move || {
        let mut env = env(&sb);
        env.push(("BROWSER".into(), browser));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        sb.run_with(&["mcp", "login", "demo"], &env)
    })
    .await;
    assert_eq!(login.code, 1, "{}", login.stderr);
    assert!(
        login
            .stderr
            .contains("authorization URL is not a web page (its scheme is \"file\""),
        "{}",
        login.stderr
    );
    // Plain http to another machine: shown escaped, not opened.
    let plain = OAuthServer::start(OAuthServerOptions {
        authorization_endpoint: Some("http://idp.example/auth\u{1b}[31m".into()),
        ..OAuthServerOptions::default()
    })
    .await
    .unwrap();
    config(&sandbox, &plain.mcp_url(), "{}");
    let (browser, plain_record) = recording_browser(&sandbox, "plain", false);
    let mut child = login_opening_with(&sandbox, &browser, Stdio::piped());
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut shown = String::new();
    for line in stderr.lines() {
        let line = line.unwrap();
        shown.push_str(&line);
        shown.push('\n');
        if line.contains("Could not open a browser") || line.contains("error:") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        shown.contains("not opened: it is plain http:// to another machine (idp.example)"),
        "{shown}"
    );
    assert!(shown.contains("http://idp.example/auth"), "{shown}");
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
    // A run that opens (the testkit's own endpoint, on loopback) shows the
    // browser runs at all; the two above never started it.
    let ok = OAuthServer::start(OAuthServerOptions::default())
        .await
        .unwrap();
    config(&sandbox, &ok.mcp_url(), "{}");
    let (browser, opened) = recording_browser(&sandbox, "ok", true);
    let mut child = login_opening_with(&sandbox, &browser, Stdio::null());
    let args = blocking(move || recorded(&opened)).await;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(args[0], "1", "{args:?}");
    assert!(args[1].starts_with("http://127.0.0.1:"), "{args:?}");
    assert!(!record.exists() && !plain_record.exists());
}
