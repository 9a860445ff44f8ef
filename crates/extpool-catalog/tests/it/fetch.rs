//! `FetchMcpResource` against a loopback HTTP server: the address policy
//! after DNS resolution, and re-validation of every redirect. The server is
//! reachable only through the explicit test-only override.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use extpool_catalog::{BlockedAddress, CatalogConfig, FetchConfig, FetchError, Fetcher};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A tiny HTTP/1.1 server on 127.0.0.1:0; aborted on drop.
struct Loopback {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn response(status: &str, headers: &[(&str, String)], body: &str) -> String {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out
}

async fn loopback() -> Loopback {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let port = addr.port();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]);
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let text =
                    |b: &str| response("200 OK", &[("Content-Type", "text/plain".into())], b);
                let to = |loc: String| response("302 Found", &[("Location", loc)], "");
                let reply = match path.as_str() {
                    "/ok" => text("hello from loopback"),
                    "/big" => text(&"z".repeat(5000)),
                    "/json" => response(
                        "200 OK",
                        &[("Content-Type", "application/json".into())],
                        "{\"a\":1}",
                    ),
                    "/redirect-ok" => to("/ok".into()),
                    "/redirect-chain" => to(format!("http://127.0.0.1:{port}/redirect-ok")),
                    "/redirect-private" => to("http://10.0.0.7/secret".into()),
                    "/redirect-metadata" => to("http://169.254.169.254/latest/meta-data/".into()),
                    "/redirect-mapped" => to("http://[::ffff:169.254.169.254]/".into()),
                    "/redirect-host" => to(format!("http://internal.test:{port}/ok")),
                    "/redirect-file" => to("file:///etc/passwd".into()),
                    "/loop" => to("/loop".into()),
                    _ => response("404 Not Found", &[], "no"),
                };
                let _ = sock.write_all(reply.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Loopback { addr, task }
}

fn test_fetcher() -> Fetcher {
    let mut hosts = BTreeMap::new();
    // A name that "resolves" to a private address.
    hosts.insert(
        "internal.test".to_owned(),
        vec!["10.9.8.7".parse::<IpAddr>().unwrap()],
    );
    Fetcher::new(FetchConfig {
        test_only_allow_loopback: true,
        test_only_hosts: hosts,
        max_bytes: 1000,
        ..FetchConfig::default()
    })
}

#[tokio::test]
async fn the_default_policy_refuses_loopback_before_and_after_resolution() {
    let server = loopback().await;
    let port = server.addr.port();
    let f = Fetcher::new(FetchConfig::default());
    // http is refused outright.
    let err = f
        .fetch(&format!("http://127.0.0.1:{port}/ok"))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::SchemeNotAllowed { .. }), "{err}");
    // An IP literal is refused before connecting.
    let err = f
        .fetch(&format!("https://127.0.0.1:{port}/ok"))
        .await
        .unwrap_err();
    assert_eq!(
        err.blocked_reason(),
        Some(BlockedAddress::Loopback),
        "{err}"
    );
    // A host name is refused after DNS resolution (localhost → loopback).
    let err = f
        .fetch(&format!("https://localhost:{port}/ok"))
        .await
        .unwrap_err();
    assert_eq!(
        err.blocked_reason(),
        Some(BlockedAddress::Loopback),
        "{err}"
    );
    assert!(err.is_blocked());
}

#[tokio::test]
async fn the_test_override_reaches_loopback_and_nothing_else() {
    let server = loopback().await;
    let base = format!("http://127.0.0.1:{}", server.addr.port());
    let f = test_fetcher();
    let ok = f.fetch(&format!("{base}/ok")).await.unwrap();
    assert_eq!(ok.body, b"hello from loopback");
    assert_eq!(ok.content_type.as_deref(), Some("text/plain"));

    // Size bound.
    let big = f.fetch(&format!("{base}/big")).await.unwrap();
    assert_eq!(big.body.len(), 1000);
    assert_eq!(big.truncated_bytes, Some(4000));

    // Allowed redirects are followed, each hop checked.
    let chained = f.fetch(&format!("{base}/redirect-chain")).await.unwrap();
    assert_eq!(chained.body, b"hello from loopback");
    assert!(chained.url.ends_with("/ok"));

    // Redirects to refused places are refused, whatever the first URL was.
    for (path, reason) in [
        ("/redirect-private", BlockedAddress::Private),
        ("/redirect-metadata", BlockedAddress::Metadata),
        ("/redirect-mapped", BlockedAddress::Metadata),
        ("/redirect-host", BlockedAddress::Private),
    ] {
        let err = f.fetch(&format!("{base}{path}")).await.unwrap_err();
        assert!(err.is_redirect_refused(), "{path}: {err}");
        assert_eq!(err.blocked_reason(), Some(reason), "{path}: {err}");
    }
    let err = f.fetch(&format!("{base}/redirect-file")).await.unwrap_err();
    assert!(err.is_redirect_refused() && err.is_blocked(), "{err}");
    let err = f.fetch(&format!("{base}/loop")).await.unwrap_err();
    assert!(
        matches!(err, FetchError::TooManyRedirects { max: 5, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn fetch_mcp_resource_through_a_revision() {
    use extpool_catalog::Catalog;
    use extpool_core::{Capability, ExtensionRegistry, Scope, ScopeLevel};
    use extpool_testkit::LocalSource;
    use std::sync::Arc;

    let server = loopback().await;
    let base = format!("http://127.0.0.1:{}", server.addr.port());
    let source = LocalSource::with_tools("local", 1);
    let registry = Arc::new(ExtensionRegistry::default());
    let scope = Scope::pool("p");
    registry
        .register(
            source as Arc<dyn Capability>,
            ScopeLevel::Pool,
            &scope,
            None,
        )
        .unwrap();
    let catalog = Catalog::new(CatalogConfig {
        fetch: FetchConfig {
            test_only_allow_loopback: true,
            ..FetchConfig::default()
        },
        ..CatalogConfig::default()
    })
    .unwrap();
    catalog.start(registry, scope).unwrap();
    let rev = catalog.wait_for_revision(1).await;
    let call = |url: String| {
        let rev = rev.clone();
        async move {
            let mut args = serde_json::Map::new();
            args.insert("url".into(), serde_json::Value::String(url));
            rev.call("FetchMcpResource", args).await
        }
    };
    let ok = call(format!("{base}/ok")).await.unwrap();
    assert_eq!(ok.joined_text(), "hello from loopback");
    let err = call(format!("{base}/redirect-metadata")).await.unwrap_err();
    assert_eq!(
        err.fetch_error().and_then(FetchError::blocked_reason),
        Some(BlockedAddress::Metadata)
    );
    catalog.shutdown().await;
}
