//! What only the SQLite backend has: a file, its forms of URL, its
//! permissions.

use std::os::unix::fs::PermissionsExt;

use extpool_mcp::config::McpServerConfig;
use extpool_state::{Backend, NewSession, SessionId, StateError, StateStore};

/// A bare path, `sqlite:PATH` and `sqlite://PATH` open one file, created
/// private (0600) in a private directory (0700) made for it.
#[tokio::test]
async fn every_url_form_opens_one_private_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("deep").join("er").join("state.db");
    let id = SessionId::new("s").expect("id");
    let bare = StateStore::open_url(&path.display().to_string())
        .await
        .expect("bare path");
    assert_eq!(bare.backend(), Backend::Sqlite);
    bare.create(&NewSession::new(id.clone()))
        .await
        .expect("create");
    for url in [
        format!("sqlite:{}", path.display()),
        format!("sqlite://{}", path.display()),
    ] {
        let s = StateStore::open_url(&url).await.expect(&url);
        s.get(&id).await.expect("same file");
    }
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().expect("dir")), 0o700);
}

/// The file holds `${VAR}` references as given, never a resolved value.
#[tokio::test]
async fn the_file_holds_references_not_secrets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("state.db");
    let s = StateStore::open_url(&path.display().to_string())
        .await
        .expect("open");
    let mut c = McpServerConfig::stdio("npx", ["server"]);
    c.env
        .insert("GITHUB_TOKEN".into(), "${GITHUB_TOKEN}".into());
    let id = SessionId::new("s").expect("id");
    s.create(&NewSession::new(id.clone()).server("github", c))
        .await
        .expect("create");
    s.close().await;
    let mut bytes = std::fs::read(&path).expect("read db");
    if let Ok(wal) = std::fs::read(dir.path().join("state.db-wal")) {
        bytes.extend(wal);
    }
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("\"GITHUB_TOKEN\":\"${GITHUB_TOKEN}\""));
}

/// A location that cannot hold a file is a clear error naming it.
#[tokio::test]
async fn an_impossible_location_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").expect("write");
    let url = format!("sqlite:{}/state.db", file.display());
    let e = StateStore::open_url(&url)
        .await
        .expect_err("not a directory");
    assert!(matches!(e, StateError::Open { .. }), "{e:?}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("cannot open state store {url}: ")),
        "{shown}"
    );
}
