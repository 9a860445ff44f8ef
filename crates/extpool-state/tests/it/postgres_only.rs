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

/// The rules of the rate tests: 1 call a minute in bursts of 3, and a
/// stricter one under it (1 an hour, one at once) — slow enough that no
/// token comes back while a test runs, however loaded the machine.
fn rate_rules() -> (extpool_state::RateRule, extpool_state::RateRule) {
    (
        extpool_state::RateRule {
            key: "1 tool calls a minute per caller (burst 3)".into(),
            burst: 3.0,
            per_second: 1.0 / 60.0,
        },
        extpool_state::RateRule {
            key: "calls to mcp__gh__create* once an hour per caller (burst 1)".into(),
            burst: 1.0,
            per_second: 1.0 / 3600.0,
        },
    )
}

/// Two replicas (two stores on one database) share each caller's bucket:
/// a burst of 3 spread over both gives 3 calls, not 6; another caller has
/// its own; a call refused under one rule takes nothing of the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_buckets_are_shared_by_replicas() {
    let f = crate::support::Fixture::new("postgres").await;
    let (a, b) = (f.open().await, f.open().await);
    let (all, create) = rate_rules();
    let all = std::slice::from_ref(&all);
    let took = |t: &[extpool_state::RateTaken]| t.iter().all(|t| t.took);
    assert!(took(&a.take_rate("alice", all).await.unwrap()));
    assert!(took(&b.take_rate("alice", all).await.unwrap()));
    assert!(took(&a.take_rate("alice", all).await.unwrap()));
    let refused = b.take_rate("alice", all).await.unwrap();
    assert!(!refused[0].took, "{refused:?}");
    assert!(refused[0].tokens < 1.0, "{refused:?}");
    assert!(took(&b.take_rate("bob", all).await.unwrap()), "bob's own");

    // A refused call gives back what it took under the other rule.
    let both = [all[0].clone(), create.clone()];
    assert!(took(&a.take_rate("carol", &both).await.unwrap()));
    let refused = b.take_rate("carol", &both).await.unwrap();
    assert!(refused.iter().any(|t| !t.took), "{refused:?}");
    // Two of the three all-tools tokens are left (refilling meanwhile).
    assert!(took(&a.take_rate("carol", all).await.unwrap()));
    assert!(took(&b.take_rate("carol", all).await.unwrap()));
    assert_eq!(a.rate_bucket_count().await.unwrap(), 4);

    // A bucket full again is expired; one that is not stays.
    f.exec("UPDATE rate_buckets SET full_ms = 0 WHERE owner = 'bob'")
        .await;
    f.exec("UPDATE rate_buckets SET full_ms = 9000000000000000 WHERE owner = 'carol'")
        .await;
    assert!(b.expire_rate_buckets().await.unwrap() >= 1);
    let kept = |owner: &str| format!("SELECT COUNT(*) FROM rate_buckets WHERE owner = '{owner}'");
    assert_eq!(f.scalar(&kept("bob")).await, 0);
    assert_eq!(f.scalar(&kept("carol")).await, 2);
}

/// Bad input is refused, naming what is wrong; SQLite shares nothing.
#[tokio::test]
async fn a_bad_take_is_refused_and_sqlite_keeps_no_shared_buckets() {
    let f = crate::support::Fixture::new("postgres").await;
    let store = f.open().await;
    let (all, _) = rate_rules();
    let e = store
        .take_rate("", std::slice::from_ref(&all))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("owner"), "{e}");
    let mut zero = all.clone();
    zero.burst = 0.0;
    let e = store.take_rate("alice", &[zero]).await.unwrap_err();
    assert!(e.to_string().contains("a burst of at least 1"), "{e}");
    let sqlite = crate::support::Fixture::new("sqlite").await;
    let e = sqlite
        .open()
        .await
        .take_rate("alice", &[all])
        .await
        .unwrap_err();
    assert!(matches!(e, StateError::NotShared { .. }), "{e:?}");
}

/// What one take costs a call on PostgreSQL (run by hand:
/// `cargo test -p extpool-state --test it rate_take_cost -- --ignored --nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn rate_take_cost() {
    let f = crate::support::Fixture::new("postgres").await;
    let store = f.open().await;
    let (all, create) = rate_rules();
    let mut generous = all;
    generous.burst = 1e9;
    let rules = [generous, create];
    let owners: Vec<String> = (0..32).map(|i| format!("caller-{i}")).collect();
    for owner in &owners {
        store.take_rate(owner, &rules[..1]).await.unwrap();
    }
    for (label, rules) in [("one rule", &rules[..1]), ("two rules", &rules[..])] {
        let n = 2000;
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let started = std::time::Instant::now();
            store
                .take_rate(&owners[i % owners.len()], rules)
                .await
                .unwrap();
            times.push(started.elapsed());
        }
        times.sort();
        let mean = times.iter().sum::<std::time::Duration>() / n as u32;
        println!(
            "{label}: mean {mean:?}, p50 {:?}, p99 {:?} over {n} takes",
            times[n / 2],
            times[n * 99 / 100]
        );
    }
}

/// Claims of one owner's MCP sessions from two replicas at once never pass
/// the owner's bound: of 12 concurrent claims with room for 3, 3 pass;
/// another owner is not counted; an ended session frees its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_session_claims_hold_an_owners_bound_across_replicas() {
    let f = crate::support::Fixture::new("postgres").await;
    let (a, b) = (f.open().await, f.open().await);
    let live = std::time::Duration::from_secs(15);
    let mut claims = tokio::task::JoinSet::new();
    for i in 0..12 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        claims.spawn(async move {
            let id = format!("m-{i}");
            store
                .claim_mcp_session(("", &id), "alice", 3, live)
                .await
                .unwrap()
                .map(|()| id)
        });
    }
    let results: Vec<Result<String, u64>> = claims.join_all().await;
    let passed: Vec<String> = results.iter().filter_map(|r| r.clone().ok()).collect();
    assert_eq!(passed.len(), 3, "{results:?}");
    assert!(
        results.iter().all(|r| r.as_ref().is_ok() || r == &Err(3)),
        "{results:?}"
    );
    assert_eq!(
        b.claim_mcp_session(("", "bob-1"), "bob", 3, live)
            .await
            .unwrap(),
        Ok(())
    );
    assert!(a.delete_mcp_session("", &passed[0]).await.unwrap());
    assert_eq!(
        b.claim_mcp_session(("", "again"), "alice", 3, live)
            .await
            .unwrap(),
        Ok(())
    );
}
