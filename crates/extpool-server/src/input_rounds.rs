//! What a session-era upstream asks a 2026-07-28 client during its call
//! (sampling, elicitation), as input rounds (SEP-2322): a client of that
//! era takes no request from the server, so the gateway answers the call
//! `input_required`, with the upstream's question and a `requestState` of
//! its own, and holds the upstream's call open; the client's retry with
//! its answer and that state reaches the same call, which goes on until it
//! ends or asks again.
//!
//! - **Undeclared capabilities.** The upstream is asked only what the
//!   request's `_meta` declares ([`RoundClient::accepts`]); a question it
//!   does not is refused as for any client that does not take it, and kept
//!   ([`RoundClient::declined`]), so a call that then fails is answered
//!   `-32021`, naming the capability.
//! - **Whose.** A state is [`STATE_PREFIX`], the tag of the replica that
//!   holds the call and 128 random bits, bound to the caller who was asked
//!   and to the tool: another caller's retry with it finds nothing, and
//!   one naming another tool is told whose it is. A state without the
//!   prefix is an upstream's own, passed on to it as before.
//! - **Bounds.** A call waits [`ROUND_TTL`] for its client's retry, then is
//!   cancelled; one caller has at most [`MAX_WAITING_PER_OWNER`] calls
//!   waiting and the gateway [`MAX_WAITING`].
//! - **Where.** The call is held by the replica that asked; a retry that
//!   reaches another replica is told so (a client's retries must be routed
//!   to the replica that answered it).
//!
//! - **What it says meanwhile.** The call's log messages and progress go
//!   to the request of the round now running: the first, then each retry
//!   that answers ([`Route`]); none while it waits for a retry. Progress
//!   goes out under each request's own token, so only when the first
//!   request gave one (the upstream is asked for progress then) and the
//!   retry gives one.
//!
//! A call that asks nothing runs in the request's task as before; only one
//! that asks moves to a task of its own.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use extpool_host::{CallClient, ProgressUpdate};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use rmcp::ErrorData;
use rmcp::model::{ClientCapabilities, InputRequest, InputRequests, InputRequiredResult};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::wire::AbortOnDrop;

/// How the gateway's request states begin.
pub(crate) const STATE_PREFIX: &str = "extpool-input-";
/// How long a call waits for its client to retry with the answer.
pub(crate) const ROUND_TTL: Duration = Duration::from_secs(600);
/// Most calls one caller may have waiting for its answers.
pub(crate) const MAX_WAITING_PER_OWNER: usize = 16;
/// Most calls waiting for their clients' answers at once.
pub(crate) const MAX_WAITING: usize = 1024;

/// Whether `state` (a retry's `requestState`) is one the gateway gave.
pub(crate) fn is_ours(state: &str) -> bool {
    state.starts_with(STATE_PREFIX)
}

/// A question an upstream asked during a call, and where its answer goes.
pub(crate) struct Ask {
    method: String,
    params: Value,
    answer: oneshot::Sender<Result<Value, String>>,
}

/// One request's ways to its client: its log messages (and session), its
/// progress (under the request's own token; dropped without one).
#[derive(Clone, Default)]
pub(crate) struct Here {
    /// The client as the request's call sees it.
    pub(crate) client: Option<Arc<dyn CallClient>>,
    /// The request's progress.
    pub(crate) progress: Option<Arc<dyn extpool_host::core::ProgressSink>>,
}

/// Where a call's log messages and progress go: the request of the round
/// now running, none while the call waits for a retry.
pub(crate) struct Route(Mutex<Here>);

impl Route {
    fn client(&self) -> Option<Arc<dyn CallClient>> {
        self.0.lock().client.clone()
    }

    fn set(&self, here: Here) {
        *self.0.lock() = here;
    }
}

/// The call's progress goes to the request of the round now running;
/// an update while the call waits for a retry, or that the request's stream
/// has no room for, is dropped.
impl extpool_host::core::ProgressSink for Route {
    fn send(&self, update: ProgressUpdate) {
        if let Some(progress) = &self.0.lock().progress {
            progress.send(update);
        }
    }

    fn is_open(&self) -> bool {
        true
    }
}

/// The client of a 2026-07-28 request's call, as its upstream servers see
/// it: their questions wait for an input round, their log messages go to
/// the request of the round now running (`route`).
pub(crate) struct RoundClient {
    route: Arc<Route>,
    capabilities: ClientCapabilities,
    asks: mpsc::Sender<Ask>,
    declined: Arc<Mutex<Option<String>>>,
}

impl RoundClient {
    /// The client of a call whose first request, `here`, declared
    /// `capabilities`; the receiver of its upstreams' questions
    /// ([`Rounds::start`]); and the call's route.
    pub(crate) fn new(
        here: Here,
        capabilities: ClientCapabilities,
    ) -> (Arc<Self>, Questions, Arc<Route>) {
        let (asks, receiver) = mpsc::channel(1);
        let declined = Arc::new(Mutex::new(None));
        let route = Arc::new(Route(Mutex::new(here)));
        let client = Arc::new(Self {
            route: route.clone(),
            capabilities,
            asks,
            declined: declined.clone(),
        });
        let questions = Questions {
            receiver,
            declined,
            route: route.clone(),
        };
        (client, questions, route)
    }
}

#[async_trait::async_trait]
impl CallClient for RoundClient {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let (answer, answered) = oneshot::channel();
        let ask = Ask {
            method: method.to_owned(),
            params,
            answer,
        };
        self.asks
            .send(ask)
            .await
            .map_err(|_| format!("the client did not answer {method}: its call ended"))?;
        answered.await.map_err(|_| {
            format!(
                "the client did not answer {method}: it did not retry the call with its answer within {} s",
                ROUND_TTL.as_secs()
            )
        })?
    }

    fn accepts(&self, method: &str) -> bool {
        crate::wire::declares(&self.capabilities, method)
    }

    fn log(&self, params: Value) {
        if let Some(client) = self.route.client() {
            client.log(params);
        }
    }

    fn session(&self) -> Option<Arc<dyn extpool_host::core::ClientSession>> {
        self.route.client()?.session()
    }

    fn declined(&self, method: &str) {
        self.declined
            .lock()
            .get_or_insert_with(|| method.to_owned());
    }
}

/// The questions of one call's upstreams, and what its client did not
/// declare.
pub(crate) struct Questions {
    receiver: mpsc::Receiver<Ask>,
    declined: Arc<Mutex<Option<String>>>,
    /// Where the call's log messages and progress go.
    route: Arc<Route>,
}

/// What became of a call, as far as the request that waits for it goes.
pub(crate) enum Next<T> {
    /// It ended with `T`; `declined` is a method an upstream asked that the
    /// client did not declare (its capability is what a failure lacked).
    Done {
        outcome: T,
        declined: Option<String>,
    },
    /// It asks the client: the answer to send.
    Asking(InputRequiredResult),
    /// The client went away while it waited; the call is cancelled.
    Cancelled,
}

/// A call that asked: running in a task of its own, its questions coming.
struct Parked<T> {
    outcome: oneshot::Receiver<T>,
    questions: Questions,
    /// Aborts the call when the round is dropped (expired, refused).
    _task: AbortOnDrop,
    /// Numbers the call's questions (their keys).
    asked: u32,
}

/// A call waiting for its client's answer to `ask`.
struct Waiting<T> {
    owner: String,
    tool: String,
    key: String,
    request: InputRequest,
    ask: Ask,
    call: Parked<T>,
    /// Drops the round after [`ROUND_TTL`]; stopped when the round is
    /// taken, so there are never more timers than rounds.
    _expiry: AbortOnDrop,
}

/// The calls waiting for their clients' answers, by request state.
pub(crate) struct Rounds<T> {
    waiting: Arc<Mutex<HashMap<String, Waiting<T>>>>,
    /// This replica's tag, in the states it gives.
    replica: String,
}

impl<T> Rounds<T> {
    /// The rounds of the replica tagged `replica`
    /// (the SSE event ids' replica tag).
    pub(crate) fn new(replica: String) -> Self {
        Self {
            waiting: Arc::default(),
            replica,
        }
    }
}

impl<T> std::fmt::Debug for Rounds<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("waiting", &self.waiting.lock().len())
            .finish()
    }
}

/// The answer to a retry whose state names no call of its caller here:
/// one another replica gave (`tag` is not `ours`) says so.
fn unknown_state(state: &str, ours: &str) -> ErrorData {
    let tag = state
        .strip_prefix(STATE_PREFIX)
        .and_then(|rest| rest.split_once('-'))
        .map(|(tag, _)| tag);
    if let Some(tag) = tag.filter(|t| *t != ours && t.len() == ours.len()) {
        return ErrorData::invalid_params(
            format!(
                "requestState names a call held by another replica of this gateway (replica {tag}; this is {ours}): a client's retries must reach the replica that asked"
            ),
            None,
        );
    }
    ErrorData::invalid_params(
        format!(
            "requestState names no call of yours waiting for input: it was answered already, it \
             waited more than {} s, or this gateway did not give it",
            ROUND_TTL.as_secs()
        ),
        None,
    )
}

impl<T: Send + 'static> Rounds<T> {
    /// Runs `call` of `tool` for `owner` until it ends, or until an
    /// upstream asks a question (on `questions`): then the call goes on in
    /// a task of its own and the answer is the round. `ct` is the request's:
    /// cancelled, the call is.
    pub(crate) async fn start(
        &self,
        mut call: BoxFuture<'static, T>,
        questions: Questions,
        owner: String,
        tool: String,
        ct: &CancellationToken,
    ) -> Result<Next<T>, ErrorData> {
        let mut questions = questions;
        let ask = tokio::select! {
            biased;
            outcome = &mut call => {
                let declined = questions.declined.lock().take();
                return Ok(Next::Done { outcome, declined });
            }
            Some(ask) = questions.receiver.recv() => ask,
            () = ct.cancelled() => return Ok(Next::Cancelled),
        };
        let (sender, outcome) = oneshot::channel();
        let task = tokio::spawn(tracing::Instrument::in_current_span(async move {
            let _ = sender.send(call.await);
        }));
        let parked = Parked {
            outcome,
            questions,
            _task: AbortOnDrop(task),
            asked: 0,
        };
        self.hold(parked, ask, owner, tool)
    }

    /// Answers the question of the call `state` names with the client's
    /// `responses` (the retry of `tool` by `owner`), then waits for the
    /// call's next question or its end. A retry without the answer is
    /// asked again.
    pub(crate) async fn resume(
        &self,
        state: &str,
        responses: Option<&serde_json::Map<String, Value>>,
        (owner, tool): (&str, &str),
        here: Here,
        ct: &CancellationToken,
    ) -> Result<Next<T>, ErrorData> {
        let waiting = {
            let mut all = self.waiting.lock();
            match all.get(state) {
                Some(w) if w.owner == owner && w.tool == tool => all.remove(state),
                Some(w) if w.owner == owner => {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "requestState is of a call of {}, not of {tool}: retry that call with it",
                            w.tool
                        ),
                        None,
                    ));
                }
                _ => None,
            }
        }
        .ok_or_else(|| unknown_state(state, &self.replica))?;
        let answer = responses.and_then(|r| r.get(&waiting.key));
        let answer = match answer {
            Some(answer @ Value::Object(_)) => answer.clone(),
            Some(_) => {
                let message = format!(
                    "inputResponses.{} is not an object: it is the client's result of {}",
                    waiting.key, waiting.ask.method
                );
                self.put_back(state.to_owned(), waiting);
                return Err(ErrorData::invalid_params(message, None));
            }
            None => {
                let asked = round(&waiting.key, &waiting.request, state);
                self.put_back(state.to_owned(), waiting);
                return Ok(Next::Asking(asked));
            }
        };
        let Waiting {
            owner,
            tool,
            ask,
            call,
            ..
        } = waiting;
        call.questions.route.set(here);
        let _ = ask.answer.send(Ok(answer));
        self.wait(call, owner, tool, ct).await
    }

    /// Waits for a parked call's next question or its end.
    async fn wait(
        &self,
        mut call: Parked<T>,
        owner: String,
        tool: String,
        ct: &CancellationToken,
    ) -> Result<Next<T>, ErrorData> {
        let ask = tokio::select! {
            biased;
            outcome = &mut call.outcome => {
                let declined = call.questions.declined.lock().take();
                return Ok(match outcome {
                    Ok(outcome) => Next::Done { outcome, declined },
                    Err(_) => Next::Cancelled,
                });
            }
            Some(ask) = call.questions.receiver.recv() => ask,
            () = ct.cancelled() => return Ok(Next::Cancelled),
        };
        self.hold(call, ask, owner, tool)
    }

    /// Keeps `call` waiting for the answer to `ask` under a new state, and
    /// says the round; a question that cannot be put in a round fails the
    /// call (it is cancelled), as does one past the bounds.
    fn hold(
        &self,
        mut call: Parked<T>,
        ask: Ask,
        owner: String,
        tool: String,
    ) -> Result<Next<T>, ErrorData> {
        let request = match serde_json::from_value::<InputRequest>(
            json!({"method": ask.method, "params": ask.params}),
        ) {
            Ok(request) => request,
            Err(e) => {
                let _ = ask.answer.send(Err(format!(
                    "{} cannot be asked in an input round: {e}",
                    ask.method
                )));
                return Err(ErrorData::internal_error(
                    format!(
                        "an upstream server asked {} in a form the client cannot be asked: {e}",
                        ask.method
                    ),
                    None,
                ));
            }
        };
        let state = new_state(&self.replica).ok_or_else(|| {
            ErrorData::internal_error("the gateway could not draw a request state", None)
        })?;
        // Until a retry answers, what the call says has no request to go to.
        call.questions.route.set(Here::default());
        call.asked += 1;
        let key = format!("input-{}", call.asked);
        let asked = round(&key, &request, &state);
        let expiry = self.expire_later(state.clone());
        {
            let mut all = self.waiting.lock();
            let mine = all.values().filter(|w| w.owner == owner).count();
            if mine >= MAX_WAITING_PER_OWNER || all.len() >= MAX_WAITING {
                return Err(ErrorData::invalid_request(
                    format!(
                        "too many calls wait for their clients' input ({mine} of yours, {} in all; at most {MAX_WAITING_PER_OWNER} and {MAX_WAITING}): answer or drop one first",
                        all.len()
                    ),
                    None,
                ));
            }
            all.insert(
                state.clone(),
                Waiting {
                    owner,
                    tool,
                    key,
                    request,
                    ask,
                    call,
                    _expiry: expiry,
                },
            );
        }
        Ok(Next::Asking(asked))
    }

    /// Puts a round taken back, under its state (its expiry still runs).
    fn put_back(&self, state: String, waiting: Waiting<T>) {
        self.waiting.lock().insert(state, waiting);
    }

    /// Drops the round of `state` (cancelling its call) after
    /// [`ROUND_TTL`], if it still waits then.
    fn expire_later(&self, state: String) -> AbortOnDrop {
        let waiting: Weak<_> = Arc::downgrade(&self.waiting);
        AbortOnDrop(tokio::spawn(async move {
            tokio::time::sleep(ROUND_TTL).await;
            if let Some(waiting) = waiting.upgrade() {
                let expired = waiting.lock().remove(&state);
                if expired.is_some() {
                    tracing::info!(
                        "a call waited {} s for its client's input and was cancelled",
                        ROUND_TTL.as_secs()
                    );
                }
            }
        }))
    }
}

/// A new request state of replica `replica`: the prefix, its tag and 128
/// random bits, hex.
fn new_state(replica: &str) -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(format!("{STATE_PREFIX}{replica}-{}", hex::encode(bytes)))
}

/// The round asking `request` under `key`, with `state`.
fn round(key: &str, request: &InputRequest, state: &str) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    requests.insert(key.to_owned(), request.clone());
    InputRequiredResult::new(Some(requests), Some(state.to_owned()))
}

#[cfg(test)]
mod tests;
