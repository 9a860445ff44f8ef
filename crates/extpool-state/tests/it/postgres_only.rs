//! What only the PostgreSQL backend has: a password in the URL.

use extpool_state::{StateError, StateStore};
use extpool_testkit::postgres::{PASSWORD, PgServer};

/// Every error shows the URL masked and never the password, whatever
/// failed: the password itself, the database name, the address, the URL.
#[tokio::test]
async fn a_password_never_appears_in_an_error() {
    let pg = PgServer::shared();
    let wrong = "Wrong-Pass-7731";
    let cases = [
        (
            pg.url_with("postgres", wrong),
            wrong,
            "password authentication failed",
        ),
        (
            pg.url_with("no_such_db", PASSWORD),
            PASSWORD,
            "database \"no_such_db\" does not exist",
        ),
        (
            "postgres://app:Hunter2-Secret@127.0.0.1:1/db".to_owned(),
            "Hunter2-Secret",
            "cannot open state store postgres://app:********@127.0.0.1:1/db",
        ),
        (
            "postgres://app:Hunter2-Secret@host:notaport/db".to_owned(),
            "Hunter2-Secret",
            "postgres://app:********@host:notaport/db",
        ),
    ];
    for (url, secret, says) in cases {
        let e = StateStore::open_url(&url).await.expect_err(&url);
        let shown = format!("{e} / {e:?}");
        assert!(!shown.contains(secret), "{shown}");
        assert!(shown.contains("********"), "{shown}");
        assert!(shown.contains(says), "{shown}");
        assert!(
            matches!(e, StateError::Open { .. } | StateError::BadUrl { .. }),
            "{e:?}"
        );
    }
    // An open store shows itself masked too.
    let store = StateStore::open_url(&pg.url()).await.expect("open");
    let shown = format!("{store:?} {}", store.url());
    assert!(!shown.contains(PASSWORD), "{shown}");
    assert!(shown.contains("extpool:********@localhost"), "{shown}");
}

/// This build has no TLS for PostgreSQL: asking for it is an error that
/// says so, never a silent plain-text connection.
#[tokio::test]
async fn tls_asked_for_is_refused_clearly() {
    let pg = PgServer::shared();
    let url = format!("{}&sslmode=require", pg.url());
    let e = StateStore::open_url(&url).await.expect_err("no TLS");
    assert!(matches!(e, StateError::Open { .. }), "{e:?}");
    let shown = e.to_string();
    assert!(shown.contains("TLS"), "{shown}");
    assert!(!shown.contains(PASSWORD), "{shown}");
}

/// Another replica's writes reach this one through PostgreSQL; when the
/// listening connection is cut, the handle says `Resync` once it listens
/// again, and later events still arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_replicas_writes_arrive_and_a_lost_listener_resyncs() {
    use extpool_state::{NewSession, SessionId, StoreEvent};

    use crate::replicas::next_event;

    let f = crate::support::Fixture::new("postgres").await;
    let here = f.open().await;
    let there = f.open().await;
    let mut events = here.events();
    assert_eq!(
        next_event(&mut events).await,
        StoreEvent::Resync,
        "listening"
    );
    let id = SessionId::new("far").expect("id");
    there
        .create(&NewSession::new(id.clone()))
        .await
        .expect("create");
    there.refresh(&id, ["mcp__a__x"], 1).await.expect("refresh");
    assert_eq!(
        next_event(&mut events).await,
        StoreEvent::Granted(id.clone())
    );
    // Cut the listening connection, as a network failure would: this
    // test's only (the server is shared by the tests running beside it,
    // whose listeners would hear a Resync they do not expect).
    f.exec(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid() \
         AND datname = current_database()",
    )
    .await;
    assert_eq!(
        next_event(&mut events).await,
        StoreEvent::Resync,
        "listening again"
    );
    there.delete(&id).await.expect("delete");
    assert_eq!(next_event(&mut events).await, StoreEvent::Deleted(id));
}

/// Creating and revoking an API key on one replica tells the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_changes_reach_other_replicas() {
    use extpool_state::StoreEvent;

    use crate::replicas::next_event;

    let f = crate::support::Fixture::new("postgres").await;
    let here = f.open().await;
    let there = f.open().await;
    let mut events = here.events();
    assert_eq!(
        next_event(&mut events).await,
        StoreEvent::Resync,
        "listening"
    );
    let key = there.create_api_key("far", false).await.expect("create");
    assert_eq!(next_event(&mut events).await, StoreEvent::ApiKeysChanged);
    assert!(
        here.api_key_for(&key.secret)
            .await
            .expect("lookup")
            .is_some()
    );
    assert!(there.revoke_api_key("far").await.expect("revoke"));
    assert_eq!(next_event(&mut events).await, StoreEvent::ApiKeysChanged);
    assert!(
        here.api_key_for(&key.secret)
            .await
            .expect("lookup")
            .is_none()
    );
}
