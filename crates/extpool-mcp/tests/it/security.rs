//! Bearer tokens: sent, never shown (logs at TRACE for every crate, errors,
//! `Debug`); the HTTPS rule and its loopback exception; server names.

use std::sync::Arc;

use extpool_mcp::{
    BearerToken, ClientError, ClientOptions, ConfigError, McpClient, McpServerCap, McpServerConfig,
    TokenSource,
};
use extpool_testkit::HttpServer;
use serde_json::json;

use crate::support::*;

const TOKEN: &str = "tok-7f3a9c2e51d8-do-not-print";

fn with_token(server: &str, token: &str) -> ClientOptions {
    ClientOptions {
        tokens: TokenSource::Fixed([(server.to_owned(), BearerToken::new(token))].into()),
        ..options()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn bearer_token_never_appears_in_logs_errors_or_debug() {
    let (logs, _guard) = capture_logs();
    let server = HttpServer::spawn(["--require-bearer", TOKEN]);
    let mut seen = String::new();

    let opts = Arc::new(with_token("secure", TOKEN));
    seen.push_str(&format!("{opts:?}"));
    let client = McpClient::connect(name("secure"), http_cfg(server.url()), opts)
        .await
        .unwrap();
    let r = client
        .call_tool("echo", args(json!({"message": "authorised"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "authorised");
    seen.push_str(&format!("{client:?}"));
    let cap = McpServerCap::with_client(client.clone());
    seen.push_str(&format!("{cap:?}"));
    client.close().await;

    // A wrong token: the error names the server and the challenge, never a token.
    let wrong = format!("{TOKEN}-wrong");
    let err = McpClient::connect(
        name("secure"),
        http_cfg(server.url()),
        Arc::new(with_token("secure", &wrong)),
    )
    .await
    .unwrap_err();
    seen.push_str(&format!("{err} {err:?}"));
    let mut source: Option<&dyn std::error::Error> = Some(&err);
    while let Some(e) = source {
        seen.push_str(&format!("{e} {e:?}"));
        source = e.source();
    }

    let logged = logs.text();
    assert!(
        logged.contains("MCP server connected"),
        "log capture is working"
    );
    for hay in [&logged, &seen] {
        assert!(!hay.contains(TOKEN), "token leaked:\n{hay}");
    }
}

#[tokio::test]
async fn missing_token_is_an_authorization_error() {
    let server = HttpServer::spawn(["--require-bearer", TOKEN]);
    let err = McpClient::connect(name("secure"), http_cfg(server.url()), Arc::new(options()))
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
}

#[tokio::test]
async fn token_bearing_http_must_be_https_off_host() {
    let opts = Arc::new(with_token("remote", TOKEN));
    let err = McpClient::new(
        name("remote"),
        http_cfg("http://mcp.example.com/mcp"),
        opts.clone(),
    )
    .unwrap_err();
    assert!(
        matches!(err, ClientError::Config(ConfigError::InsecureHttp { .. })),
        "{err:?}"
    );
    assert!(!format!("{err} {err:?}").contains(TOKEN));
    // HTTPS is fine, and so is one named server opted in to plain HTTP.
    McpClient::new(
        name("remote"),
        http_cfg("https://mcp.example.com/mcp"),
        opts.clone(),
    )
    .unwrap();
    let mut opted_in = http_cfg("http://mcp.example.com/mcp");
    opted_in.insecure_http = true;
    McpClient::new(name("remote"), opted_in, opts.clone()).unwrap();
    // Without a token, plain HTTP is not refused.
    McpClient::new(
        name("other"),
        http_cfg("http://mcp.example.com/mcp"),
        Arc::new(options()),
    )
    .unwrap();
}

#[tokio::test]
async fn loopback_http_may_carry_a_token() {
    let server = HttpServer::spawn(["--require-bearer", TOKEN]);
    let localhost = server.url().replace("127.0.0.1", "localhost");
    for url in [server.url().to_owned(), localhost] {
        let client = McpClient::connect(
            name("local"),
            http_cfg(&url),
            Arc::new(with_token("local", TOKEN)),
        )
        .await
        .unwrap();
        client.ping().await.unwrap();
        client.close().await;
    }
}

#[tokio::test]
async fn server_names_are_checked() {
    let pool = pool();
    for bad in ["my-server", "a b", ""] {
        assert!(
            McpServerCap::new(bad, stdio_cfg::<&str>(&[]), pool.clone()).is_err(),
            "{bad:?}"
        );
    }
    assert!(extpool_mcp::check_names(["GitHub", "github"]).is_err());
}

/// Issue 17 item 11: a failing server that prints what it was given (an
/// `env` value, a `${VAR}`-resolved argument) does not get it shown back,
/// neither in the start error nor in the log.
#[tokio::test(flavor = "current_thread")]
async fn values_passed_to_a_server_are_masked_in_its_stderr() {
    use std::os::unix::fs::PermissionsExt;
    let (logs, _guard) = capture_logs();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("leaky.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"bad key $API_KEY for $1\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = McpServerConfig::stdio(script.to_string_lossy(), ["--arg=v4r-s3cr3t"]);
    config
        .env
        .insert("API_KEY".into(), "sk-ant-0123456789".into());
    // What the config loader records for `args: ["--arg=${VAR}"]`.
    config.secrets = vec!["v4r-s3cr3t".into()];
    let err = McpClient::connect(name("leaky"), config, Arc::new(options()))
        .await
        .unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("stderr: bad key *** for --arg=***"),
        "{shown}"
    );
    let logged = logs.text();
    assert!(logged.contains("bad key *** for --arg=***"), "{logged}");
    for secret in ["sk-ant-0123456789", "v4r-s3cr3t"] {
        assert!(!shown.contains(secret), "{shown}");
        assert!(!logged.contains(secret), "{logged}");
    }
}

/// The same for a running server's stderr, as kept for later errors.
#[tokio::test]
async fn a_running_servers_stderr_is_masked() {
    let mut config = stdio_cfg::<&str>(&[]);
    config
        .env
        .insert("SERVICE_TOKEN".into(), "ghp_0123456789abcdef".into());
    let (client, mut lines) = connect_hearing("kit", config).await;
    client
        .call_tool(
            "stderr",
            args(json!({"message": "token ghp_0123456789abcdef refused"})),
        )
        .await
        .unwrap();
    heard(&mut lines, |l| l.contains("refused")).await;
    let tail = client.stderr_tail().join("\n");
    assert!(tail.contains("token *** refused"), "{tail}");
    assert!(!tail.contains("ghp_0123456789abcdef"), "{tail}");
    client.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_server_under_an_address_rule_is_connected_only_on_an_address_it_allows() {
    use extpool_core::address::AddressRule;
    let server = HttpServer::start();
    let port = server
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp");
    let public_only = Some(AddressRule::default());
    // By IP literal (checked before any connection) and by a name that
    // resolves to loopback (checked as it resolves, at each connection).
    for (url, says) in [
        (
            server.url().to_owned(),
            "127.0.0.1 is a loopback address (127.0.0.1); a per-session server must be on a public address",
        ),
        (
            format!("http://localhost:{port}/mcp"),
            "localhost is a loopback address",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/mcp"),
            "is a loopback address (::ffff:127.0.0.1)",
        ),
    ] {
        let mut config = http_cfg(&url);
        config.address_rule = public_only;
        let err = McpClient::connect(name("ruled"), config, Arc::new(options()))
            .await
            .unwrap_err();
        assert!(err.to_string().contains(says), "{url}: {err}");
    }
    // Allowed where the rule allows private addresses, and without a rule.
    for rule in [
        Some(AddressRule {
            allow_private: true,
        }),
        None,
    ] {
        let mut config = http_cfg(&format!("http://localhost:{port}/mcp"));
        config.address_rule = rule;
        let client = McpClient::connect(name("ruled"), config, Arc::new(options()))
            .await
            .unwrap();
        let r = client
            .call_tool("echo", args(json!({"message": "reached"})))
            .await
            .unwrap();
        assert_eq!(text(&r), "reached");
        client.close().await;
    }
    // Never a metadata address, private ones allowed or not.
    let mut config = http_cfg("http://169.254.169.254/latest/mcp");
    config.address_rule = Some(AddressRule {
        allow_private: true,
    });
    let err = McpClient::connect(name("ruled"), config, Arc::new(options()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("is a cloud metadata address"),
        "{err}"
    );
}
