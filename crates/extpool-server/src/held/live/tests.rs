//! The session table's slots, admission and expiry, in paused time.

use super::*;

fn key(id: &str) -> Key {
    (String::new(), id.to_owned())
}

#[tokio::test(start_paused = true)]
async fn slots_are_bounded_and_the_refusal_says_when_one_frees() {
    let live = Arc::new(Live::new(2, 2, Duration::from_secs(60)));
    live.reserve(None).unwrap().fill(key("a"));
    tokio::time::advance(Duration::from_secs(10)).await;
    let b = live.reserve(None).unwrap();
    let full = live.reserve(None).unwrap_err();
    assert_eq!(full.frees_in, Some(Duration::from_secs(50)), "{full:?}");
    assert!(
        full.message().contains("expires in 50 s"),
        "{}",
        full.message()
    );
    assert_eq!(full.retry_after(), 50);
    drop(b);
    assert_eq!(live.taken(), 1, "an unfilled slot is given back");
    let _again = live.reserve(None).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_busy_session_never_expires_and_an_idle_one_does() {
    let live = Arc::new(Live::new(8, 8, Duration::from_secs(60)));
    live.reserve(None).unwrap().fill(key("busy"));
    live.reserve(None).unwrap().fill(key("idle"));
    let stream = live.admit(&key("busy"), None).unwrap();
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(live.expire(Instant::now()), vec![key("idle")]);
    let full = Live::new(1, 1, Duration::from_secs(60));
    let full = Arc::new(full);
    full.reserve(None).unwrap().fill(key("x"));
    let _busy = full.admit(&key("x"), None).unwrap();
    assert_eq!(full.reserve(None).unwrap_err().frees_in, None);
    drop(stream);
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(live.expire(Instant::now()).is_empty());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(live.expire(Instant::now()), vec![key("busy")]);
    assert_eq!(live.taken(), 0);
}

#[test]
fn a_request_id_in_flight_is_refused_until_it_ends() {
    let live = Arc::new(Live::new(8, 8, Duration::from_secs(60)));
    assert_eq!(
        live.admit(&key("s"), Some("1")).unwrap_err(),
        Refused::NotHeld
    );
    live.reserve(None).unwrap().fill(key("s"));
    live.reserve(None).unwrap().fill(key("t"));
    let first = live.admit(&key("s"), Some("1")).unwrap();
    assert_eq!(
        live.admit(&key("s"), Some("1")).unwrap_err(),
        Refused::DuplicateId
    );
    let _other_session = live.admit(&key("t"), Some("1")).unwrap();
    let _other_id = live.admit(&key("s"), Some("\"1\"")).unwrap();
    drop(first);
    let _again = live.admit(&key("s"), Some("1")).unwrap();
}

#[tokio::test]
async fn a_resumed_session_holds_its_first_requests_id_and_resumes_once() {
    let live = Arc::new(Live::new(2, 2, Duration::from_secs(60)));
    let (first, resuming) = live
        .resume(&key("r"), Some("alice".into()), Some("42"))
        .unwrap();
    let resuming = resuming.expect("not held: this request resumes it");
    assert_eq!(live.owner(&key("r")), Some(Some("alice".into())));
    // While it runs, its id is in use, and another resume finds the
    // session held: admitted (no second slot), to wait for the first.
    assert_eq!(
        live.admit(&key("r"), Some("42")).unwrap_err(),
        Refused::DuplicateId
    );
    assert_eq!(
        live.resume(&key("r"), None, Some("42")).unwrap_err(),
        Refused::DuplicateId
    );
    let (mut other, again) = live.resume(&key("r"), None, Some("43")).unwrap();
    assert!(again.is_none(), "one resume at a time");
    assert_eq!(live.taken(), 1);
    {
        let mut waiting = std::pin::pin!(other.until_resumed());
        assert!(
            futures::poll!(waiting.as_mut()).is_pending(),
            "waits for the resume"
        );
        drop(resuming);
        waiting.await;
    }
    drop(other);
    drop(first);
    let _reused = live.admit(&key("r"), Some("42")).unwrap();
    let mut plain = live.admit(&key("r"), Some("44")).unwrap();
    plain.until_resumed().await;
}

#[test]
fn a_resume_at_the_limit_is_refused_and_one_that_came_to_nothing_is_forgotten() {
    let live = Arc::new(Live::new(1, 1, Duration::from_secs(60)));
    let (busy, resuming) = live.resume(&key("a"), None, None).unwrap();
    assert!(matches!(
        live.resume(&key("b"), None, Some("1")).unwrap_err(),
        Refused::Full(Full { max: 1, .. })
    ));
    let other = live.admit(&key("a"), Some("2")).unwrap();
    drop(resuming);
    drop(busy);
    live.forget_unused(&key("a"));
    assert!(live.holds(&key("a")), "a request of it is still open");
    drop(other);
    live.forget_unused(&key("a"));
    assert!(!live.holds(&key("a")));
    assert_eq!(live.taken(), 0);
}

#[test]
fn an_endpoint_with_a_request_on_its_way_is_not_idle() {
    let live = Arc::new(Live::new(8, 8, Duration::from_secs(60)));
    let on_mcp = live.arriving("");
    let arriving = live.arriving("d1");
    assert_eq!(live.in_flight("d1"), 1, "counted on its own endpoint only");
    assert!(!live.if_endpoint_idle("d1", || panic!("busy")));
    drop(arriving);
    assert_eq!(live.in_flight("d1"), 0);
    drop(on_mcp);
    let mut ran = false;
    assert!(live.if_endpoint_idle("d1", || ran = true));
    assert!(ran);
    live.reserve(None).unwrap().fill(("d1".into(), "m".into()));
    assert!(!live.if_endpoint_idle("d1", || panic!("held")));
}

#[tokio::test(start_paused = true)]
async fn one_owner_holds_at_most_its_share_and_is_told_when_one_of_its_own_frees() {
    let live = Arc::new(Live::new(8, 2, Duration::from_secs(60)));
    let alice = || Some("alice".to_owned());
    live.reserve(alice()).unwrap().fill(key("a1"));
    tokio::time::advance(Duration::from_secs(10)).await;
    live.reserve(None).unwrap().fill(key("local"));
    let pending = live.reserve(alice()).unwrap();
    let full = live.reserve(alice()).unwrap_err();
    assert!(full.own && full.max == 2, "{full:?}");
    assert_eq!(full.status(), 429);
    assert_eq!(full.frees_in, Some(Duration::from_secs(50)), "{full:?}");
    assert!(
        full.message().contains("the most one caller may"),
        "{}",
        full.message()
    );
    // Others are not held back by her.
    live.reserve(Some("bob".into())).unwrap().fill(key("b1"));
    // A slot given back, a session ended, a resume: counted as hers.
    drop(pending);
    live.reserve(alice()).unwrap().fill(key("a2"));
    assert!(live.reserve(alice()).unwrap_err().own);
    live.forget(&key("a1"));
    let (busy, resuming) = live.resume(&key("a3"), alice(), None).unwrap();
    assert!(matches!(
        live.resume(&key("a4"), alice(), None),
        Err(Refused::Full(Full { own: true, .. }))
    ));
    drop((busy, resuming));
    live.forget_endpoint("");
    assert_eq!(live.taken(), 0);
    assert!(live.state.lock().owners.is_empty());
    // The gateway's own limit is said as such.
    let small = Arc::new(Live::new(1, 1, Duration::from_secs(60)));
    small.reserve(alice()).unwrap().fill(key("x"));
    let full = small.reserve(None).unwrap_err();
    assert!(!full.own && full.status() == 503, "{full:?}");
}
