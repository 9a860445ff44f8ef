//! The state-store suite: every function runs once on SQLite and once on
//! PostgreSQL (see `main.rs`), through the public API only.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use extpool_mcp::config::McpServerConfig;
use extpool_state::{
    API_KEY_PREFIX, Limits, NewSession, SCHEMA_VERSION, SessionCursor, SessionId, SessionStatus,
    StateError, StateStore, StoreEvent, api_key_digest,
};
use extpool_testkit::postgres::PASSWORD;
use tokio::sync::Barrier;

use crate::support::{Fixture, names};

fn sid(s: &str) -> SessionId {
    SessionId::new(s).expect("session id")
}

fn set<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> BTreeSet<String> {
    names.into_iter().map(Into::into).collect()
}

fn github() -> McpServerConfig {
    let mut c = McpServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-github"]);
    c.env
        .insert("GITHUB_TOKEN".into(), "${GITHUB_TOKEN}".into());
    c
}

fn remote() -> McpServerConfig {
    McpServerConfig {
        url: Some("https://mcp.example.com/mcp".into()),
        headers: [("Authorization".to_owned(), "Bearer ${API_TOKEN}".to_owned())].into(),
        ..McpServerConfig::default()
    }
}

pub async fn migrations_apply_once_when_opened_twice(f: &Fixture) {
    let first = f.open().await;
    assert_eq!(
        first.schema_version().await.expect("version"),
        SCHEMA_VERSION
    );
    first.close().await;
    let second = f.open().await;
    assert_eq!(
        second.schema_version().await.expect("version"),
        SCHEMA_VERSION
    );
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM extpool_schema").await,
        SCHEMA_VERSION
    );
}

pub async fn migrations_apply_once_when_opened_concurrently(f: &Fixture) {
    const OPENERS: usize = 6;
    let barrier = Arc::new(Barrier::new(OPENERS));
    let tasks: Vec<_> = (0..OPENERS)
        .map(|_| {
            let url = f.url();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                StateStore::open_url(&url).await
            })
        })
        .collect();
    let mut stores = Vec::new();
    for t in tasks {
        stores.push(
            t.await
                .expect("join")
                .expect("every concurrent open succeeds"),
        );
    }
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM extpool_schema").await,
        SCHEMA_VERSION,
        "each migration recorded once"
    );
    for (i, s) in stores.iter().enumerate() {
        s.create(&NewSession::new(sid(&format!("s{i}"))))
            .await
            .expect("create on every handle");
    }
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM sessions").await,
        OPENERS as i64
    );
}

pub async fn a_store_from_a_newer_extpool_is_refused_untouched(f: &Fixture) {
    f.open().await.close().await;
    f.exec(
        "INSERT INTO extpool_schema (version, description, applied_at_ms) \
         VALUES (999, 'from the future', 0)",
    )
    .await;
    let e = StateStore::open_url(&f.url())
        .await
        .expect_err("a newer schema is refused");
    match &e {
        StateError::SchemaTooNew {
            found, supported, ..
        } => {
            assert_eq!(*found, 999);
            assert_eq!(*supported, SCHEMA_VERSION);
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    let shown = format!("{e} / {e:?}");
    assert!(shown.contains("schema version 999"), "{shown}");
    assert!(shown.contains("run a newer extpool"), "{shown}");
    assert!(!shown.contains(PASSWORD), "{shown}");
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM extpool_schema").await,
        SCHEMA_VERSION + 1,
        "nothing migrated or removed"
    );
}

pub async fn a_session_round_trips_through_another_handle(f: &Fixture) {
    let a = f.open().await;
    let id = sid("s-1");
    let new = NewSession::new(id.clone())
        .server("github", github())
        .server("api", remote())
        .granting(["mcp__a__x", "mcp__b__y", "mcp__a__x"], 7);
    let created = a.create(&new).await.expect("create");
    let sum = &created.summary;
    assert_eq!(sum.id, id);
    assert_eq!(sum.status, SessionStatus::Idle);
    assert!(!sum.auto_grant);
    assert_eq!(sum.revision, 7);
    assert_eq!(sum.granted_count, 2);
    assert_eq!(sum.server_count, 2);
    assert!(sum.created_at_ms > 0);
    assert_eq!(sum.last_seen_ms, sum.created_at_ms);
    assert_eq!(sum.refreshed_at_ms, None);
    assert_eq!(created.authority.granted, set(["mcp__a__x", "mcp__b__y"]));
    assert_eq!(
        created.servers,
        BTreeMap::from([
            ("api".to_owned(), remote()),
            ("github".to_owned(), github())
        ])
    );
    // Another handle (a second replica's pool) reads the same session.
    let b = f.open().await;
    assert_eq!(b.get(&id).await.expect("get on b"), created);
    assert_eq!(
        b.authority(&id).await.expect("authority"),
        created.authority
    );
}

pub async fn creating_an_existing_id_is_refused_and_changes_nothing(f: &Fixture) {
    let s = f.open().await;
    let id = sid("dup");
    let first = s
        .create(&NewSession::new(id.clone()).granting(["mcp__a__x"], 1))
        .await
        .expect("create");
    let e = s
        .create(
            &NewSession::new(id.clone())
                .granting(["mcp__b__y"], 2)
                .server("github", github()),
        )
        .await
        .expect_err("duplicate");
    assert!(matches!(e, StateError::AlreadyExists { .. }), "{e:?}");
    assert_eq!(e.to_string(), "session dup already exists");
    assert_eq!(s.get(&id).await.expect("get"), first);
}

pub async fn delete_returns_the_servers_and_removes_everything(f: &Fixture) {
    let s = f.open().await;
    let id = sid("to-close");
    s.create(
        &NewSession::new(id.clone())
            .server("github", github())
            .server("api", remote())
            .granting(names("a", 3), 1),
    )
    .await
    .expect("create");
    s.create(&NewSession::new(sid("kept")).granting(["mcp__k__x"], 1))
        .await
        .expect("create kept");
    let closed = f.open().await.delete(&id).await.expect("delete");
    assert_eq!(
        closed,
        BTreeMap::from([
            ("api".to_owned(), remote()),
            ("github".to_owned(), github())
        ])
    );
    let gone = |e: StateError| {
        assert!(
            matches!(&e, StateError::NotFound { session } if *session == id),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "session to-close does not exist");
    };
    gone(s.get(&id).await.expect_err("get"));
    gone(s.delete(&id).await.expect_err("delete twice"));
    gone(s.authority(&id).await.expect_err("authority"));
    gone(s.refresh(&id, ["mcp__a__x"], 2).await.expect_err("refresh"));
    gone(
        s.set_status(&id, SessionStatus::Active)
            .await
            .expect_err("status"),
    );
    gone(s.touch(&id).await.expect_err("touch"));
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM session_grants WHERE session_id = 'to-close'")
            .await,
        0
    );
    assert_eq!(f.scalar("SELECT COUNT(*) FROM session_servers").await, 0);
    assert_eq!(
        s.authority(&sid("kept")).await.expect("kept").granted,
        set(["mcp__k__x"])
    );
}

pub async fn refresh_grants_the_active_names_and_a_retry_confirms(f: &Fixture) {
    let s = f.open().await;
    let id = sid("r");
    s.create(&NewSession::new(id.clone()).granting(["mcp__a__x"], 1))
        .await
        .expect("create");
    let active = ["mcp__a__x", "mcp__b__y", "mcp__c__z"];
    let out = s.refresh(&id, active, 2).await.expect("refresh");
    assert_eq!(out.session, id);
    assert_eq!(out.revision, 2);
    assert!(out.changed);
    assert_eq!(out.added, ["mcp__b__y", "mcp__c__z"]);
    assert_eq!(out.granted_count, 3);
    // The same refresh retried (say after an ambiguous failure) confirms.
    let retry = s.refresh(&id, active, 2).await.expect("retry");
    assert_eq!(retry.revision, 2);
    assert!(!retry.changed);
    assert!(retry.added.is_empty());
    assert_eq!(retry.granted_count, 3);
    // The revision reported is the one this call pinned, even if older.
    let older = f.open().await.refresh(&id, active, 1).await.expect("older");
    assert_eq!(older.revision, 1);
    let got = s.get(&id).await.expect("get");
    assert_eq!(got.authority.granted, set(active));
    assert_eq!(got.summary.revision, 1);
    assert!(got.summary.refreshed_at_ms.is_some());
}

pub async fn a_vanished_name_stays_granted_and_applies_again_when_it_returns(f: &Fixture) {
    let s = f.open().await;
    let id = sid("v");
    s.create(&NewSession::new(id.clone()).granting(["mcp__a__x", "mcp__b__y"], 1))
        .await
        .expect("create");
    // mcp__b__y vanishes from the catalog; a refresh now removes nothing.
    let out = s.refresh(&id, ["mcp__a__x"], 2).await.expect("refresh");
    assert!(!out.changed);
    assert_eq!(out.granted_count, 2);
    let auth = s.authority(&id).await.expect("authority");
    assert_eq!(auth.granted, set(["mcp__a__x", "mcp__b__y"]));
    // Unavailable while gone; a new name appears available but ungranted.
    assert_eq!(auth.visible(["mcp__a__x", "mcp__n__new"]), ["mcp__a__x"]);
    // When the exact name returns, the existing grant applies again.
    assert_eq!(
        auth.visible(["mcp__a__x", "mcp__b__y", "mcp__n__new"]),
        ["mcp__a__x", "mcp__b__y"]
    );
    // Only a refresh grants the new one; an empty catalog removes nothing.
    s.refresh(&id, ["mcp__n__new"], 3).await.expect("refresh");
    let out = s
        .refresh(&id, Vec::<String>::new(), 4)
        .await
        .expect("empty");
    assert!(!out.changed);
    assert_eq!(
        s.authority(&id).await.expect("authority").granted,
        set(["mcp__a__x", "mcp__b__y", "mcp__n__new"])
    );
}

pub async fn refresh_works_in_every_status_and_keeps_it(f: &Fixture) {
    let s = f.open().await;
    for status in [
        SessionStatus::Idle,
        SessionStatus::Completed,
        SessionStatus::Active,
    ] {
        let id = sid(&format!("st-{status}"));
        s.create(
            &NewSession::new(id.clone())
                .status(status)
                .granting(["mcp__a__x"], 1),
        )
        .await
        .expect("create");
        let out = s
            .refresh(&id, ["mcp__a__x", "mcp__b__y"], 2)
            .await
            .expect("refresh in any status");
        assert_eq!(out.added, ["mcp__b__y"], "{status}");
        assert_eq!(s.get(&id).await.expect("get").summary.status, status);
    }
}

pub async fn status_and_last_seen_are_recorded(f: &Fixture) {
    let s = f.open().await;
    let id = sid("life");
    let created = s
        .create(&NewSession::new(id.clone()))
        .await
        .expect("create");
    s.set_status(&id, SessionStatus::Active)
        .await
        .expect("active");
    let active = s.get(&id).await.expect("get").summary;
    assert_eq!(active.status, SessionStatus::Active);
    assert!(active.last_seen_ms >= created.summary.created_at_ms);
    s.touch(&id).await.expect("touch");
    let touched = s.get(&id).await.expect("get").summary;
    assert!(touched.last_seen_ms >= active.last_seen_ms);
    assert_eq!(touched.status, SessionStatus::Active);
    s.set_status(&id, SessionStatus::Completed)
        .await
        .expect("completed");
    assert_eq!(
        f.open().await.get(&id).await.expect("get").summary.status,
        SessionStatus::Completed
    );
    let e = s
        .set_status(&sid("nobody"), SessionStatus::Idle)
        .await
        .expect_err("unknown");
    assert_eq!(e.to_string(), "session nobody does not exist");
}

pub async fn concurrent_refreshes_from_two_pools_lose_no_grant(f: &Fixture) {
    const TASKS: usize = 16;
    const ROUNDS: usize = 4;
    let a = f.open().await;
    let b = f.open().await;
    let id = sid("contended");
    a.create(&NewSession::new(id.clone()).granting(["mcp__base__t"], 0))
        .await
        .expect("create");
    let barrier = Arc::new(Barrier::new(TASKS));
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let (id, barrier) = (id.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let mut asked = BTreeSet::new();
                let mut added = Vec::new();
                for r in 0..ROUNDS {
                    let names = [
                        format!("mcp__t{i}__r{r}"),
                        format!("mcp__shared__r{r}"),
                        format!("mcp__pair{}__r{r}", i / 2),
                        "mcp__base__t".to_owned(),
                    ];
                    asked.extend(names.iter().cloned());
                    let out = store
                        .refresh(&id, &names, (i * ROUNDS + r) as u64)
                        .await
                        .expect("refresh under contention");
                    added.extend(out.added);
                }
                (asked, added)
            })
        })
        .collect();
    let mut expected = set(["mcp__base__t"]);
    let mut added_all = Vec::new();
    for t in tasks {
        let (asked, added) = t.await.expect("join");
        expected.extend(asked);
        added_all.extend(added);
    }
    for store in [&a, &b] {
        assert_eq!(
            store.authority(&id).await.expect("authority").granted,
            expected
        );
    }
    // Every new name was reported granted by exactly one refresh.
    let added_set: BTreeSet<String> = added_all.iter().cloned().collect();
    assert_eq!(added_all.len(), added_set.len(), "a name added twice");
    let mut new_names = expected.clone();
    new_names.remove("mcp__base__t");
    assert_eq!(added_set, new_names);
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM session_grants").await,
        expected.len() as i64
    );
}

pub async fn a_refresh_retried_after_a_failed_save_completes_the_union(f: &Fixture) {
    let s = f.open().await;
    let id = sid("retry");
    s.create(&NewSession::new(id.clone()).granting(["mcp__a__t0"], 1))
        .await
        .expect("create");
    // 250 names (more than one insert statement) and one the database
    // refuses to save, sorted last so earlier inserts did succeed.
    let mut active = names("a", 250);
    active.push("mcp__zz__boom".into());
    f.fail_saving("mcp__zz__boom").await;
    let e = s.refresh(&id, &active, 2).await.expect_err("save fails");
    assert!(
        matches!(&e, StateError::Database { op: "refresh", .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("simulated save failure"), "{e}");
    assert_eq!(e.session(), Some(&id));
    assert_eq!(
        s.authority(&id).await.expect("authority").granted,
        set(["mcp__a__t0"]),
        "a failed refresh grants nothing"
    );
    f.stop_failing().await;
    let out = s.refresh(&id, &active, 2).await.expect("retry");
    assert_eq!(out.added.len(), 250);
    assert_eq!(out.granted_count, 251);
    assert_eq!(
        s.authority(&id).await.expect("authority").granted,
        active.iter().cloned().collect::<BTreeSet<_>>()
    );
}

pub async fn an_auto_grant_session_sees_every_active_name(f: &Fixture) {
    let s = f.open().await;
    let auto = sid("auto");
    let plain = sid("plain");
    s.create(
        &NewSession::new(auto.clone())
            .auto_grant(true)
            .granting(["mcp__a__x"], 1),
    )
    .await
    .expect("create auto");
    s.create(&NewSession::new(plain.clone()).granting(["mcp__a__x"], 1))
        .await
        .expect("create plain");
    let active = ["mcp__a__x", "mcp__n__new"];
    let auth = s.authority(&auto).await.expect("auto");
    assert!(auth.auto_grant);
    assert_eq!(auth.visible(active), active);
    assert_eq!(
        s.authority(&plain).await.expect("plain").visible(active),
        ["mcp__a__x"]
    );
    assert!(s.get(&auto).await.expect("get").summary.auto_grant);
}

pub async fn limits_are_enforced_naming_the_session_and_writing_nothing(f: &Fixture) {
    let limits = Limits {
        max_names_per_session: 4,
        max_name_bytes: 32,
        max_servers_per_session: 1,
        max_config_bytes: 256,
        max_page: 500,
        max_init_bytes: 1024,
    };
    let s = f.open_with(limits).await;
    let e = s
        .create(&NewSession::new(sid("big")).granting(names("x", 5), 1))
        .await
        .expect_err("too many names at creation");
    assert!(
        matches!(
            e,
            StateError::TooManyNames {
                would_hold: 5,
                limit: 4,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("session big: "), "{e}");

    let id = sid("lim");
    s.create(&NewSession::new(id.clone()).granting(names("x", 3), 1))
        .await
        .expect("create");
    let e = s
        .refresh(&id, names("x", 5), 2)
        .await
        .expect_err("too many names");
    assert_eq!(
        e.to_string(),
        "session lim: granting 2 more names would hold 5, over the limit of 4 names per \
         session; nothing was granted"
    );
    assert_eq!(s.authority(&id).await.expect("auth").granted.len(), 3);

    let long = format!("mcp__{}", "x".repeat(40));
    let e = s.refresh(&id, [&long], 2).await.expect_err("long name");
    assert!(matches!(e, StateError::InvalidName { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("session lim: invalid name \"mcp__xxxx"),
        "{e}"
    );
    assert!(
        e.to_string().ends_with("45 bytes, over the limit of 32"),
        "{e}"
    );

    let e = s
        .create(
            &NewSession::new(sid("srv"))
                .server("a", github())
                .server("b", github()),
        )
        .await
        .expect_err("two servers");
    assert_eq!(
        e.to_string(),
        "session srv: 2 per-session servers, over the limit of 1"
    );
    let huge = McpServerConfig::stdio("x", ["y".repeat(300)]);
    let e = s
        .create(&NewSession::new(sid("srv")).server("a", huge))
        .await
        .expect_err("huge config");
    assert!(
        e.to_string()
            .starts_with("session srv: per-session server \"a\" config is 3"),
        "{e}"
    );
    let mut resolved = github();
    resolved
        .env
        .insert("GITHUB_TOKEN".into(), "ghp_0123456789abcdefghij0123".into());
    resolved.secrets.push("ghp_0123456789abcdefghij0123".into());
    let e = s
        .create(&NewSession::new(sid("srv")).server("github", resolved))
        .await
        .expect_err("resolved secrets");
    assert!(matches!(e, StateError::ResolvedSecrets { .. }), "{e:?}");
    assert!(!format!("{e} {e:?}").contains("ghp_0123"), "{e:?}");
    assert_eq!(f.scalar("SELECT COUNT(*) FROM sessions").await, 1);

    // With the limit raised (another replica's configuration), the same
    // refresh completes the union.
    let roomy = f.open().await;
    let out = roomy.refresh(&id, names("x", 5), 3).await.expect("roomy");
    assert_eq!(out.added, ["mcp__x__t3", "mcp__x__t4"]);
}

pub async fn list_pages_through_every_session_once(f: &Fixture) {
    let s = f
        .open_with(Limits {
            max_page: 4,
            ..Limits::default()
        })
        .await;
    for i in 0..10 {
        let mut new = NewSession::new(sid(&format!("p{i:02}"))).granting(names("p", i), 1);
        if i == 0 {
            new = new.server("github", github());
        }
        s.create(&new).await.expect("create");
    }
    let mut seen = Vec::new();
    let mut cursor: Option<SessionCursor> = None;
    let mut pages = 0;
    loop {
        let page = s.list(cursor.as_ref(), 3).await.expect("list");
        pages += 1;
        assert!(page.sessions.len() <= 3);
        seen.extend(page.sessions);
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
        assert!(pages <= 10, "the list never ends");
    }
    assert_eq!(pages, 4);
    let ids: BTreeSet<String> = seen.iter().map(|s| s.id.to_string()).collect();
    assert_eq!(seen.len(), 10);
    assert_eq!(ids.len(), 10);
    let p0 = seen.iter().find(|s| s.id.as_str() == "p00").expect("p00");
    assert_eq!((p0.granted_count, p0.server_count), (0, 1));
    let p7 = seen.iter().find(|s| s.id.as_str() == "p07").expect("p07");
    assert_eq!((p7.granted_count, p7.server_count), (7, 0));
    // Pages larger than the bound are served at the bound.
    assert_eq!(s.list(None, 100).await.expect("list").sessions.len(), 4);
    assert_eq!(s.list(None, 0).await.expect("list").sessions.len(), 4);
    let e = s
        .list(Some(&SessionCursor("not-a-cursor".into())), 3)
        .await
        .expect_err("bad cursor");
    assert_eq!(
        e.to_string(),
        "invalid session list cursor \"not-a-cursor\""
    );
}

pub async fn a_reopened_store_restores_every_session_and_authority(f: &Fixture) {
    let s = f.open().await;
    let ids = [sid("one"), sid("two"), sid("three")];
    for (i, id) in ids.iter().enumerate() {
        s.create(
            &NewSession::new(id.clone())
                .server("github", github())
                .auto_grant(i == 2)
                .granting(names("r", i + 1), 1),
        )
        .await
        .expect("create");
    }
    s.refresh(&ids[0], ["mcp__late__x"], 2)
        .await
        .expect("refresh");
    s.set_status(&ids[1], SessionStatus::Completed)
        .await
        .expect("status");
    let mut before = Vec::new();
    for id in &ids {
        before.push(s.get(id).await.expect("get"));
    }
    s.close().await;
    let again = f.open().await;
    for (id, was) in ids.iter().zip(before) {
        assert_eq!(again.get(id).await.expect("get after reopen"), was);
    }
}

/// Every page of `owner`'s sessions (`None`: every session), `size` at a
/// time; returns the ids in order and how many pages it took.
async fn all_pages(s: &StateStore, owner: Option<&str>, size: usize) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut cursor: Option<SessionCursor> = None;
    let mut pages = 0;
    loop {
        let page = s
            .list_owned(owner, cursor.as_ref(), size)
            .await
            .expect("list owned");
        pages += 1;
        assert!(
            size == 0 || page.sessions.len() <= size,
            "0 asks for the largest"
        );
        for summary in &page.sessions {
            if let Some(o) = owner {
                assert_eq!(summary.owner.as_deref(), Some(o), "{}", summary.id);
            }
            ids.push(summary.id.to_string());
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => return (ids, pages),
        }
        assert!(pages <= 20, "the list never ends");
    }
}

pub async fn sessions_are_listed_per_owner_with_paging(f: &Fixture) {
    const ALICE: &str = "https://idp.example/ alice";
    const BOB: &str = "https://idp.example/ bob";
    let s = f.open().await;
    // Interleaved, so each owner's sessions are not one run of the list.
    for i in 0..3 {
        for (who, owner) in [("a", ALICE), ("b", BOB)] {
            let created = s
                .create(&NewSession::new(sid(&format!("{who}{i}"))).owner(owner))
                .await
                .expect("create owned");
            assert_eq!(created.summary.owner.as_deref(), Some(owner));
        }
    }
    let other = f.open().await;
    assert_eq!(
        all_pages(&other, Some(ALICE), 2).await,
        (vec!["a0".into(), "a1".into(), "a2".into()], 2)
    );
    assert_eq!(
        all_pages(&other, Some(BOB), 2).await,
        (vec!["b0".into(), "b1".into(), "b2".into()], 2)
    );
    let (every, pages) = all_pages(&other, None, 2).await;
    assert_eq!(pages, 3);
    assert_eq!(
        every.iter().cloned().collect::<BTreeSet<_>>(),
        set(["a0", "a1", "a2", "b0", "b1", "b2"])
    );
    assert_eq!(every.len(), 6);
    // `list` is the list of every session.
    let listed: Vec<String> = other
        .list(None, 0)
        .await
        .expect("list")
        .sessions
        .iter()
        .map(|s| s.id.to_string())
        .collect();
    assert_eq!(listed, every);
    assert!(
        all_pages(&other, Some("https://idp.example/ carol"), 2)
            .await
            .0
            .is_empty()
    );
    // The owner travels with the session, and shows only when there is one.
    let got = other.get(&sid("b1")).await.expect("get");
    assert_eq!(got.summary.owner.as_deref(), Some(BOB));
    let json = serde_json::to_value(&got).expect("json");
    assert_eq!(json["owner"], BOB);
    let unowned = s
        .create(&NewSession::new(sid("nobody")))
        .await
        .expect("create unowned");
    assert_eq!(unowned.summary.owner, None);
    let json = serde_json::to_value(&unowned).expect("json");
    assert!(json.get("owner").is_none(), "{json}");
    assert_eq!(all_pages(&s, None, 2).await.0.len(), 7);
    assert_eq!(all_pages(&s, Some(ALICE), 0).await.0.len(), 3);
    // An owner is opaque but bounded: 512 bytes fit, 513 are refused.
    let longest = "x".repeat(512);
    s.create(&NewSession::new(sid("long")).owner(longest.as_str()))
        .await
        .expect("512 bytes");
    assert_eq!(all_pages(&s, Some(&longest), 2).await.0, ["long"]);
    let e = s
        .create(&NewSession::new(sid("too-long")).owner("x".repeat(513)))
        .await
        .expect_err("513 bytes");
    assert!(matches!(e, StateError::InvalidOwner { .. }), "{e:?}");
    assert_eq!(e.session(), Some(&sid("too-long")));
    let shown = e.to_string();
    assert!(
        shown.starts_with("session too-long: invalid owner \"xxx"),
        "{shown}"
    );
    assert!(
        shown.ends_with("513 bytes, over the limit of 512"),
        "{shown}"
    );
    let e = s
        .create(&NewSession::new(sid("empty")).owner(""))
        .await
        .expect_err("empty");
    assert!(matches!(e, StateError::InvalidOwner { .. }), "{e:?}");
    assert_eq!(f.scalar("SELECT COUNT(*) FROM sessions").await, 8);
    let e = s
        .list_owned(Some(&"x".repeat(513)), None, 2)
        .await
        .expect_err("no such owner can exist");
    assert!(e.to_string().starts_with("invalid owner \"xxx"), "{e}");
}

pub async fn an_mcp_sessions_owner_is_kept_when_rmcp_stores_it_again(f: &Fixture) {
    const ALICE: &str = "https://idp.example/ alice";
    let a = f.open().await;
    let b = f.open().await;
    a.create(&NewSession::new(sid("s1"))).await.expect("create");
    a.put_mcp_session("s1", "m1", r#"{"v":1}"#)
        .await
        .expect("put");
    assert_eq!(
        b.mcp_session_owner("s1", "m1").await.expect("owner"),
        Some(None),
        "kept, without owner"
    );
    assert!(
        a.set_mcp_session_owner("s1", "m1", ALICE)
            .await
            .expect("set owner")
    );
    assert_eq!(
        b.mcp_session_owner("s1", "m1").await.expect("owner"),
        Some(Some(ALICE.to_owned()))
    );
    // rmcp stores the record again (from another replica): the parameters
    // change, the owner stays.
    b.put_mcp_session("s1", "m1", r#"{"v":2}"#)
        .await
        .expect("put again");
    assert_eq!(
        a.mcp_session("s1", "m1").await.expect("load").as_deref(),
        Some(r#"{"v":2}"#)
    );
    assert_eq!(
        a.mcp_session_owner("s1", "m1").await.expect("owner"),
        Some(Some(ALICE.to_owned()))
    );
    // Only the record on its endpoint has one.
    for (endpoint, id) in [("", "m1"), ("s2", "m1"), ("s1", "m2"), ("s1", "bad id")] {
        assert_eq!(
            a.mcp_session_owner(endpoint, id).await.expect("owner"),
            None,
            "{endpoint:?} {id:?}"
        );
        assert!(
            !a.set_mcp_session_owner(endpoint, id, ALICE)
                .await
                .expect("set owner"),
            "{endpoint:?} {id:?}"
        );
    }
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM mcp_sessions").await,
        1,
        "setting an owner creates no record"
    );
    let e = a
        .set_mcp_session_owner("s1", "m1", &"x".repeat(513))
        .await
        .expect_err("too long");
    assert!(matches!(e, StateError::BadMcpSession { .. }), "{e:?}");
    assert!(
        e.to_string().ends_with("513 bytes, over the limit of 512"),
        "{e}"
    );
    assert_eq!(
        a.mcp_session_owner("s1", "m1").await.expect("owner"),
        Some(Some(ALICE.to_owned())),
        "a refused owner changes nothing"
    );
    // Ended, it has no owner either.
    assert!(a.delete_mcp_session("s1", "m1").await.expect("end"));
    assert_eq!(a.mcp_session_owner("s1", "m1").await.expect("owner"), None);
}

pub async fn an_api_key_round_trips_and_its_secret_never_shows(f: &Fixture) {
    let s = f.open().await;
    let mut events = s.events();
    let key = s.create_api_key("ci-bot", false).await.expect("create");
    assert_eq!(key.name, "ci-bot");
    assert!(!key.operator);
    assert!(key.created_at_ms > 0);
    let secret = key.secret.clone();
    let body = secret.strip_prefix(API_KEY_PREFIX).expect("epk_ prefix");
    assert_eq!(body.len(), 43, "{secret}");
    assert!(
        body.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')),
        "URL-safe base64: {secret}"
    );
    assert!(!format!("{key:?}").contains(body), "Debug hides the secret");
    let admin = s.create_api_key("admin", true).await.expect("create admin");
    assert_ne!(admin.secret, secret);

    // Found by its secret, through any handle; nothing else finds it.
    let other = f.open().await;
    let found = other
        .api_key_for(&secret)
        .await
        .expect("lookup")
        .expect("found");
    assert_eq!(
        (
            found.name.as_str(),
            found.operator,
            found.created_at_ms,
            found.last_used_ms
        ),
        ("ci-bot", false, key.created_at_ms, None)
    );
    assert!(
        other
            .api_key_for(&admin.secret)
            .await
            .expect("lookup")
            .expect("admin")
            .operator
    );
    let megabyte = format!("{secret}{}", "x".repeat(1024 * 1024));
    for wrong in [
        "",
        body,
        &secret[..secret.len() - 1],
        &format!("{secret}x"),
        &secret.to_uppercase(),
        &megabyte,
    ] {
        assert_eq!(
            other.api_key_for(wrong).await.expect("lookup"),
            None,
            "{:?}",
            &wrong[..wrong.len().min(60)]
        );
    }

    // Listed by name, without secret or digest; stored as the digest only.
    let listed = other.api_keys().await.expect("list");
    let names: Vec<&str> = listed.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["admin", "ci-bot"]);
    let digest = api_key_digest(&secret);
    let shown = format!(
        "{listed:?} {}",
        serde_json::to_string(&listed).expect("json")
    );
    assert!(!shown.contains(body), "{shown}");
    assert!(!shown.contains(&digest), "{shown}");
    assert_eq!(
        f.scalar(&format!(
            "SELECT COUNT(*) FROM api_keys WHERE name = 'ci-bot' AND digest = '{digest}'"
        ))
        .await,
        1
    );
    assert_eq!(
        f.scalar(&format!(
            "SELECT COUNT(*) FROM api_keys WHERE name LIKE '%{body}%' OR digest LIKE '%{body}%'"
        ))
        .await,
        0,
        "the secret is stored nowhere"
    );

    // Use is recorded.
    other.touch_api_key("ci-bot").await;
    other.touch_api_key("no-such-key").await;
    other.touch_api_key("bad name").await;
    let used = s
        .api_key_for(&secret)
        .await
        .expect("lookup")
        .expect("found");
    assert!(used.last_used_ms.is_some_and(|t| t >= key.created_at_ms));

    // Refusals name the key, never a secret.
    let mut errors = Vec::new();
    let e = other
        .create_api_key("ci-bot", true)
        .await
        .expect_err("duplicate name");
    assert!(
        matches!(&e, StateError::ApiKeyExists { name } if name == "ci-bot"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "API key \"ci-bot\" already exists");
    errors.push(e);
    for bad in ["", "a b", "a/b", ".", "..", &"k".repeat(65)] {
        let e = s.create_api_key(bad, false).await.expect_err(bad);
        assert!(matches!(e, StateError::InvalidApiKeyName { .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("1 to 64 characters of A-Z, a-z, 0-9 and _ . -"),
            "{e}"
        );
        errors.push(e);
    }
    for e in &errors {
        let shown = format!("{e} {e:?}");
        for s in [body, admin.secret.as_str(), &digest] {
            assert!(!shown.contains(s), "{shown}");
        }
    }
    assert!(
        !other
            .api_key_for(&secret)
            .await
            .expect("lookup")
            .expect("found")
            .operator,
        "a refused duplicate changes nothing"
    );

    // Revoked: found no more, listed no more.
    assert!(other.revoke_api_key("ci-bot").await.expect("revoke"));
    assert!(!other.revoke_api_key("ci-bot").await.expect("again"));
    assert!(!other.revoke_api_key("bad name").await.expect("bad name"));
    assert_eq!(s.api_key_for(&secret).await.expect("lookup"), None);
    let names: Vec<String> = s
        .api_keys()
        .await
        .expect("list")
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, ["admin"]);
    // The name is free again, with a new secret.
    let again = s.create_api_key("ci-bot", true).await.expect("recreate");
    assert_ne!(again.secret, secret);
    assert_eq!(s.api_key_for(&secret).await.expect("lookup"), None);

    // This handle heard its own changes (create, create, recreate); on
    // PostgreSQL the other handle's revoke reaches it too, in any order.
    let mut heard = 0;
    while heard < 3 {
        match tokio::time::timeout(std::time::Duration::from_secs(60), events.recv())
            .await
            .expect("an event within a minute")
            .expect("open")
        {
            StoreEvent::ApiKeysChanged => heard += 1,
            StoreEvent::Resync => {}
            other => panic!("unexpected event {other:?}"),
        }
    }
}

pub async fn a_schema_2_store_opens_at_3_with_its_sessions_intact_and_unowned(f: &Fixture) {
    let s = f.open().await;
    let ids = [sid("old-1"), sid("old-2")];
    for (i, id) in ids.iter().enumerate() {
        s.create(
            &NewSession::new(id.clone())
                .server("github", github())
                .granting(names("m", i + 1), 5),
        )
        .await
        .expect("create");
    }
    s.put_mcp_session("old-1", "m-old", "{}")
        .await
        .expect("put");
    let mut before = Vec::new();
    for id in &ids {
        before.push(s.get(id).await.expect("get"));
    }
    s.close().await;
    // Back to schema version 2, as an extpool of that version left it.
    f.back_to_schema(2).await;
    let again = StateStore::open_url(&f.url()).await.expect("migrate");
    assert_eq!(again.schema_version().await.expect("version"), 4);
    assert_eq!(SCHEMA_VERSION, 4);
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM extpool_schema").await,
        4,
        "versions 3 and 4 recorded once"
    );
    for (id, was) in ids.iter().zip(before) {
        let got = again.get(id).await.expect("kept");
        assert_eq!(got, was);
        assert_eq!(got.summary.owner, None);
    }
    let page = again.list_owned(None, None, 0).await.expect("list");
    assert_eq!(page.sessions.len(), 2);
    assert!(page.sessions.iter().all(|s| s.owner.is_none()));
    assert!(
        again
            .list_owned(Some("https://idp.example/ alice"), None, 0)
            .await
            .expect("list owned")
            .sessions
            .is_empty()
    );
    assert_eq!(
        again
            .mcp_session_owner("old-1", "m-old")
            .await
            .expect("owner"),
        Some(None)
    );
    // What version 3 added works.
    assert!(
        again
            .set_mcp_session_owner("old-1", "m-old", "https://idp.example/ alice")
            .await
            .expect("set owner")
    );
    let key = again.create_api_key("k", true).await.expect("api key");
    assert!(
        again
            .api_key_for(&key.secret)
            .await
            .expect("lookup")
            .is_some()
    );
    again
        .create(&NewSession::new(sid("new")).owner("https://idp.example/ alice"))
        .await
        .expect("owned session");
    assert_eq!(
        again
            .list_owned(Some("https://idp.example/ alice"), None, 0)
            .await
            .expect("list owned")
            .sessions
            .len(),
        1
    );
}

pub async fn an_owners_bound_holds_under_concurrent_creates_from_two_handles(f: &Fixture) {
    const MAX: usize = 5;
    const TRIES: usize = 24;
    let a = f.open().await;
    let b = f.open().await;
    // Another owner's, and unowned, sessions are not counted as hers.
    a.create(&NewSession::new(sid("bobs")).owner("bob").at_most_owned(MAX))
        .await
        .expect("bob's");
    a.create(&NewSession::new(sid("local")).at_most_owned(MAX))
        .await
        .expect("unowned");
    let barrier = Arc::new(Barrier::new(TRIES));
    let tasks: Vec<_> = (0..TRIES)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                store
                    .create(
                        &NewSession::new(sid(&format!("alice-{i}")))
                            .owner("alice")
                            .at_most_owned(MAX),
                    )
                    .await
            })
        })
        .collect();
    let mut made = 0;
    for task in tasks {
        match task.await.expect("join") {
            Ok(_) => made += 1,
            Err(e) => {
                assert!(
                    matches!(
                        &e,
                        StateError::TooManySessions { held, limit: MAX, .. } if *held == MAX as u64
                    ),
                    "{e:?}"
                );
                assert_eq!(
                    e.to_string(),
                    "\"alice\" holds 5 sessions, the most one caller may (5); delete sessions it no longer needs"
                );
            }
        }
    }
    assert_eq!(made, MAX);
    assert_eq!(a.count_owned(Some("alice")).await.unwrap(), MAX as u64);
    assert_eq!(b.count_owned(Some("bob")).await.unwrap(), 1);
    assert_eq!(b.count_owned(None).await.unwrap(), 1);
    // One deleted, one more may be made.
    let hers = a.list_owned(Some("alice"), None, 0).await.unwrap();
    a.delete(&hers.sessions[0].id).await.unwrap();
    b.create(
        &NewSession::new(sid("alice-again"))
            .owner("alice")
            .at_most_owned(MAX),
    )
    .await
    .expect("room again");
}
