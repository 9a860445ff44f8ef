//! The credential store: encryption, tampering, keys, permissions, crashes,
//! and refresh coordination between processes.

use extpool_auth::{AuthContext, Grant, OAuthProfile, OAuthSession, Secret};
use extpool_testkit::oauth::OAuthServerOptions;

use crate::child;
use crate::support::{self, SERVER};

fn sample() -> Grant {
    Grant {
        server_url: "https://mcp.example.com/mcp".into(),
        resource: "https://mcp.example.com/mcp".into(),
        issuer: Some("https://as.example.com".into()),
        token_endpoint: "https://as.example.com/token".into(),
        client_id: "client-1".into(),
        client_secret: Some(Secret::new("client-secret-VALUE")),
        auth_method: extpool_auth::TokenAuthMethod::ClientSecretBasic,
        registered_client: false,
        access_token: Secret::new("access-token-VALUE"),
        refresh_token: Some(Secret::new("refresh-token-VALUE")),
        expires_at: Some(4_000_000_000),
        obtained_at: 1_700_000_000,
        scopes: vec!["mcp:read".into()],
        wanted_scopes: vec![],
        dcr_generation: None,
    }
}

const SECRETS: [&str; 3] = [
    "client-secret-VALUE",
    "access-token-VALUE",
    "refresh-token-VALUE",
];

#[test]
fn records_round_trip_encrypted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    store.save(SERVER, &sample()).expect("save");
    let raw = std::fs::read(store.record_path(SERVER, "grant")).expect("read");
    for secret in SECRETS.iter().chain(&["client-1", "mcp.example.com"]) {
        assert!(
            !raw.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} is readable in the file"
        );
    }
    let reopened = support::store(dir.path());
    assert_eq!(
        reopened.load::<Grant>(SERVER).expect("load"),
        Some(sample())
    );
    assert_eq!(
        reopened.profiles("grant").expect("list"),
        vec![SERVER.to_owned()]
    );
}

#[test]
fn tampering_is_detected_and_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    store.save(SERVER, &sample()).expect("save");
    let path = store.record_path(SERVER, "grant");
    let mut raw = std::fs::read(&path).expect("read");
    let last = raw.len() - 20;
    raw[last] ^= 0x40;
    std::fs::write(&path, &raw).expect("write");
    let error = store.load::<Grant>(SERVER).expect_err("tampered record");
    assert!(error.is_corrupt());
    let message = error.to_string();
    assert!(message.contains("modified"), "{message}");
    assert!(message.contains("extpool mcp logout demo"), "{message}");
    // A record copied onto another profile does not open either.
    store.save(SERVER, &sample()).expect("save");
    std::fs::copy(
        store.record_path(SERVER, "grant"),
        store.record_path("other", "grant"),
    )
    .expect("copy");
    assert!(
        store
            .load::<Grant>("other")
            .expect_err("moved")
            .is_corrupt()
    );
}

#[test]
fn a_wrong_key_is_reported_as_such() {
    let dir = tempfile::tempdir().expect("tempdir");
    support::store(dir.path())
        .save(SERVER, &sample())
        .expect("save");
    std::fs::write(dir.path().join(extpool_auth::store::KEY_FILE), [7u8; 32]).expect("key");
    let error = support::store(dir.path())
        .load::<Grant>(SERVER)
        .expect_err("wrong key");
    assert!(error.to_string().contains("another key"), "{error}");
    std::fs::write(dir.path().join(extpool_auth::store::KEY_FILE), [7u8; 5]).expect("key");
    let error = extpool_auth::CredentialStore::open(dir.path()).expect_err("short key");
    assert!(error.to_string().contains("not a 32-byte key"), "{error}");
}

#[cfg(unix)]
#[test]
fn created_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("nested/credentials");
    let store = support::store(&root);
    store.save(SERVER, &sample()).expect("save");
    drop(store.lock(SERVER).expect("lock"));
    let mode =
        |p: std::path::PathBuf| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(root.clone()), 0o700);
    assert_eq!(mode(root.join(extpool_auth::store::KEY_FILE)), 0o600);
    assert_eq!(mode(store.record_path(SERVER, "grant")), 0o600);
    assert_eq!(mode(store.record_path(SERVER, "lock")), 0o600);
}

#[test]
fn a_crash_mid_write_keeps_the_previous_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    store.save(SERVER, &sample()).expect("save");
    let dir_str = dir.path().to_str().expect("utf-8 path");
    let status = child::spawn("crash", &[("CHILD_STORE", dir_str)]).wait();
    assert!(!status.success(), "the writer must have died mid-write");
    assert_eq!(store.load::<Grant>(SERVER).expect("load"), Some(sample()));
    let mut next = sample();
    next.scopes = vec!["mcp:write".into()];
    store.save(SERVER, &next).expect("a later save still works");
    assert_eq!(store.load::<Grant>(SERVER).expect("load"), Some(next));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_refresh_once_and_share_the_result() {
    let server = support::server(OAuthServerOptions::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    let url = server.mcp_url();
    let first = support::login(&url, &store, &OAuthProfile::default()).await;
    support::expire(&store);
    let dir_str = dir.path().to_str().expect("utf-8").to_owned();
    let child_url = url.clone();
    let fingerprints = tokio::task::spawn_blocking(move || {
        let env = [
            ("CHILD_STORE", dir_str.as_str()),
            ("CHILD_URL", child_url.as_str()),
        ];
        let mut children: Vec<_> = (0..2).map(|_| child::spawn("refresh", &env)).collect();
        for c in &mut children {
            c.expect_line("READY");
        }
        for c in &mut children {
            c.send("go");
        }
        let prints: Vec<String> = children
            .iter_mut()
            .map(|c| c.expect_line("TOKEN"))
            .collect();
        for c in children {
            assert!(c.wait().success());
        }
        prints
    })
    .await
    .expect("children");
    assert_eq!(
        fingerprints[0], fingerprints[1],
        "both processes use one token"
    );
    let counts = server.counts();
    assert_eq!(
        counts.refreshes, 1,
        "exactly one refresh reached the server: {counts:?}"
    );
    assert_eq!(counts.refresh_rejections, 0);
    let stored: Grant = store.load(SERVER).expect("load").expect("grant");
    assert_eq!(stored.access_token.fingerprint(), fingerprints[0]);
    assert_ne!(
        stored.refresh_token, first.refresh_token,
        "rotation was persisted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_survives_a_restart() {
    let server = support::server(OAuthServerOptions::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    let url = server.mcp_url();
    let profile = OAuthProfile {
        store: Some(dir.path().to_owned()),
        ..OAuthProfile::default()
    };
    let original = support::login(&url, &store, &profile).await;
    support::expire(&store);
    let session =
        OAuthSession::new(SERVER, &url, profile.clone(), AuthContext::default()).expect("session");
    let refreshed = session
        .access_token()
        .await
        .expect("refresh")
        .expect("token");
    assert_ne!(refreshed, original.access_token);
    drop(session);
    // "Restart": a new store handle and session read what the first one wrote.
    let store = support::store(dir.path());
    let session =
        OAuthSession::new(SERVER, &url, profile, AuthContext::default()).expect("session");
    assert_eq!(
        session.access_token().await.expect("restored"),
        Some(refreshed)
    );
    assert_eq!(
        server.counts().refreshes,
        1,
        "a valid restored token is not refreshed"
    );
    // The rotated refresh token is the one on disk: it works, the old one is dead.
    support::expire(&store);
    let session2 = OAuthSession::new(
        SERVER,
        &url,
        OAuthProfile {
            store: Some(dir.path().to_owned()),
            ..OAuthProfile::default()
        },
        AuthContext::default(),
    )
    .expect("session");
    session2.access_token().await.expect("second refresh");
    let http = extpool_auth::oauth_http::oauth_client();
    let stale = extpool_auth::refresh::refresh(&http, &original).await;
    assert!(
        matches!(stale, Err(extpool_auth::refresh::RefreshError::Rejected(_))),
        "{stale:?}"
    );
    let counts = server.counts();
    assert_eq!(
        (counts.refreshes, counts.refresh_rejections),
        (2, 1),
        "{counts:?}"
    );
}
