//! The rounds with in-memory calls: held, answered, refused, expired.

use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

const FORM: &str = "elicitation/create";

/// Sets its flag when dropped: the call it lives in was cancelled or ended.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn question(n: usize) -> Value {
    json!({"message": format!("question {n}"), "requestedSchema": {"type": "object", "properties": {}}})
}

/// A call of `client` that asks `n` questions one after the other and
/// ends with their answers; `dropped` is set when it ends or is dropped.
fn asking(
    client: Arc<RoundClient>,
    n: usize,
    dropped: Arc<AtomicBool>,
) -> BoxFuture<'static, Vec<Result<Value, String>>> {
    Box::pin(async move {
        let _dropped = Dropped(dropped);
        let mut answers = Vec::new();
        for i in 1..=n {
            answers.push(client.request(FORM, question(i)).await);
        }
        answers
    })
}

fn elicitation() -> ClientCapabilities {
    serde_json::from_value(json!({"elicitation": {}})).unwrap()
}

async fn started(
    rounds: &Rounds<Vec<Result<Value, String>>>,
    owner: &str,
    n: usize,
) -> (
    Result<Next<Vec<Result<Value, String>>>, ErrorData>,
    Arc<AtomicBool>,
) {
    let (client, questions, _route) = RoundClient::new(Here::default(), elicitation());
    let dropped = Arc::new(AtomicBool::new(false));
    let call = asking(client, n, dropped.clone());
    let next = rounds
        .start(
            call,
            questions,
            owner.into(),
            "t".into(),
            &CancellationToken::new(),
        )
        .await;
    (next, dropped)
}

/// The key, state and question message of a round.
fn asked(next: Result<Next<Vec<Result<Value, String>>>, ErrorData>) -> (String, String, Value) {
    let Ok(Next::Asking(round)) = next else {
        panic!("not a round");
    };
    let requests = round.input_requests.unwrap();
    assert_eq!(requests.len(), 1);
    let (key, request) = requests.into_iter().next().unwrap();
    let request = serde_json::to_value(request).unwrap();
    assert_eq!(request["method"], FORM, "{request}");
    (
        key,
        round.request_state.unwrap(),
        request["params"]["message"].clone(),
    )
}

/// The retry of `state` by `who` (owner, tool) with `responses`, from a
/// request with no way to its client and never cancelled.
async fn retry<T: Send + 'static>(
    rounds: &Rounds<T>,
    state: &str,
    responses: Option<&serde_json::Map<String, Value>>,
    who: (&str, &str),
) -> Result<Next<T>, ErrorData> {
    let never = CancellationToken::new();
    rounds
        .resume(state, responses, who, Here::default(), &never)
        .await
}

fn answer(key: &str, value: Value) -> serde_json::Map<String, Value> {
    json!({ key: value }).as_object().unwrap().clone()
}

#[tokio::test]
async fn a_call_that_asks_is_held_until_its_caller_retries_with_the_answer() {
    let rounds = Rounds::new("0000000a".into());
    let (next, dropped) = started(&rounds, "alice", 2).await;
    let (key, state, message) = asked(next);
    assert!(
        is_ours(&state) && state.len() == STATE_PREFIX.len() + "0000000a-".len() + 32,
        "{state}"
    );
    assert_eq!((key.as_str(), message), ("input-1", json!("question 1")));

    let accepted = answer(&key, json!({"action": "accept", "content": {"a": 1}}));
    // Another caller's retry, or one of another tool, finds nothing.
    let other = retry(&rounds, &state, Some(&accepted), ("bob", "t")).await;
    assert!(
        other
            .err()
            .unwrap()
            .message
            .contains("names no call of yours")
    );
    let tool = retry(&rounds, &state, Some(&accepted), ("alice", "u")).await;
    assert!(
        tool.err()
            .unwrap()
            .message
            .contains("is of a call of t, not of u")
    );
    // A retry without the answer is asked again; one whose answer is
    // not an object is refused. The round still waits after both.
    let again = retry(&rounds, &state, None, ("alice", "t")).await;
    assert_eq!(
        asked(again),
        (key.clone(), state.clone(), json!("question 1"))
    );
    let bad = retry(
        &rounds,
        &state,
        Some(&answer(&key, json!(12345))),
        ("alice", "t"),
    )
    .await;
    assert!(
        bad.err()
            .unwrap()
            .message
            .contains("inputResponses.input-1 is not an object")
    );

    // The answer goes to the call, which asks its second question.
    let next = retry(&rounds, &state, Some(&accepted), ("alice", "t")).await;
    let (key2, state2, message2) = asked(next);
    assert_eq!((key2.as_str(), message2), ("input-2", json!("question 2")));
    assert_ne!(state2, state);
    let replay = retry(&rounds, &state, Some(&accepted), ("alice", "t")).await;
    assert!(replay.is_err(), "a state answered already is spent");

    let declined = answer(&key2, json!({"action": "decline"}));
    let Ok(Next::Done {
        outcome,
        declined: none,
    }) = retry(&rounds, &state2, Some(&declined), ("alice", "t")).await
    else {
        panic!("not done");
    };
    assert_eq!(
        outcome,
        vec![
            Ok(json!({"action": "accept", "content": {"a": 1}})),
            Ok(json!({"action": "decline"}))
        ]
    );
    assert_eq!(none, None);
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(rounds.waiting.lock().len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_caller_does_not_retry_in_time_is_cancelled() {
    let rounds = Rounds::new("0000000a".into());
    let (next, dropped) = started(&rounds, "alice", 1).await;
    let (key, state, _) = asked(next);
    tokio::time::sleep(ROUND_TTL + Duration::from_secs(1)).await;
    assert!(
        dropped.load(Ordering::SeqCst),
        "the held call was cancelled"
    );
    let late = retry(
        &rounds,
        &state,
        Some(&answer(&key, json!({}))),
        ("alice", "t"),
    )
    .await;
    assert!(
        late.err()
            .unwrap()
            .message
            .contains("waited more than 600 s")
    );
}

#[tokio::test]
async fn one_caller_holds_at_most_its_share_of_waiting_calls() {
    let rounds = Rounds::new("0000000a".into());
    for _ in 0..MAX_WAITING_PER_OWNER {
        asked(started(&rounds, "alice", 1).await.0);
    }
    let (refused, dropped) = started(&rounds, "alice", 1).await;
    let message = refused.err().unwrap().message;
    assert!(message.contains("16 of yours"), "{message}");
    // An aborted task is dropped when the runtime next gets to it.
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the refused call was cancelled"
    );
    asked(started(&rounds, "bob", 1).await.0);
}

#[tokio::test]
async fn a_call_that_asks_nothing_ends_in_the_request_and_says_what_was_declined() {
    let rounds: Rounds<()> = Rounds::new("0000000a".into());
    let (client, questions, _route) = RoundClient::new(Here::default(), elicitation());
    assert!(client.accepts(FORM));
    assert!(!client.accepts(extpool_host::mcp::handler::SAMPLING));
    let call = Box::pin(async move {
        client.declined(extpool_host::mcp::handler::SAMPLING);
    });
    let next = rounds
        .start(
            call,
            questions,
            "alice".into(),
            "t".into(),
            &CancellationToken::new(),
        )
        .await;
    let Ok(Next::Done { declined, .. }) = next else {
        panic!("not done");
    };
    assert_eq!(declined.as_deref(), Some("sampling/createMessage"));
    assert_eq!(rounds.waiting.lock().len(), 0);
}

#[tokio::test]
async fn a_retry_that_reaches_another_replica_is_told_so() {
    let here: Rounds<Vec<Result<Value, String>>> = Rounds::new("0000000a".into());
    let there: Rounds<Vec<Result<Value, String>>> = Rounds::new("0000000b".into());
    let (key, state, _) = asked(started(&here, "alice", 1).await.0);
    assert!(state.starts_with("extpool-input-0000000a-"), "{state}");
    let elsewhere = retry(
        &there,
        &state,
        Some(&answer(&key, json!({}))),
        ("alice", "t"),
    )
    .await;
    let message = elsewhere.err().unwrap().message;
    assert!(
        message.contains(
            "held by another replica of this gateway (replica 0000000a; this is 0000000b)"
        ),
        "{message}"
    );
}

/// A request's client that keeps the log messages it is given.
#[derive(Default)]
struct Logs(Mutex<Vec<Value>>);

#[async_trait::async_trait]
impl CallClient for Logs {
    async fn request(&self, method: &str, _: Value) -> Result<Value, String> {
        Err(format!("{method} is not taken here"))
    }

    fn accepts(&self, _: &str) -> bool {
        false
    }

    fn log(&self, params: Value) {
        self.0.lock().push(params);
    }
}

/// A request's ways to its client, and what reaches them.
fn here() -> (Here, Arc<Logs>, mpsc::Receiver<ProgressUpdate>) {
    let logs = Arc::new(Logs::default());
    let (progress, updates) = mpsc::channel(8);
    let here = Here {
        client: Some(logs.clone()),
        progress: Some(Arc::new(progress)),
    };
    (here, logs, updates)
}

fn update(progress: f64) -> ProgressUpdate {
    ProgressUpdate {
        progress,
        total: None,
        message: None,
    }
}

#[tokio::test]
async fn what_a_held_call_says_reaches_the_request_of_the_round_now_running() {
    let rounds = Rounds::new("0000000a".into());
    let never = CancellationToken::new();
    let (first, first_logs, mut first_progress) = here();
    let (client, questions, route) = RoundClient::new(first, elicitation());
    let progress = extpool_host::CallContext::new().with_progress_sink(route.clone());
    let speaker = client.clone();
    let call = Box::pin(async move {
        client.log(json!("before"));
        progress.progress(update(1.0));
        let answer = client.request(FORM, question(1)).await;
        client.log(json!("after"));
        progress.progress(update(2.0));
        answer
    });
    let held = rounds
        .start(call, questions, "alice".into(), "t".into(), &never)
        .await;
    let Ok(Next::Asking(round)) = held else {
        panic!("not a round");
    };
    assert_eq!(first_logs.0.lock().clone(), vec![json!("before")]);
    assert_eq!(first_progress.recv().await.map(|u| u.progress), Some(1.0));

    // Said while the call waits for its retry: no request takes it.
    speaker.log(json!("between"));
    extpool_host::core::ProgressSink::send(route.as_ref(), update(1.5));
    let (retry, retry_logs, mut retry_progress) = here();
    let state = round.request_state.unwrap();
    let accepted = answer("input-1", json!({"action": "accept"}));
    let done = rounds
        .resume(&state, Some(&accepted), ("alice", "t"), retry, &never)
        .await;
    assert!(matches!(done, Ok(Next::Done { .. })));
    assert_eq!(retry_logs.0.lock().clone(), vec![json!("after")]);
    assert_eq!(retry_progress.recv().await.map(|u| u.progress), Some(2.0));
    assert_eq!(first_logs.0.lock().len(), 1);
    assert!(first_progress.try_recv().is_err());
}
