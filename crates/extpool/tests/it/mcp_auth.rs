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
