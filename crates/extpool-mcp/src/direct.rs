//! Tool calls to a stdio server past rmcp's service loop.
//!
//! rmcp's client sends a request through its service task: the caller
//! hands it over a channel, the service writes it, and the answer goes from
//! the reader to the service and on to the caller. On a stdio connection
//! with its own thread ([`crate::driver`]) that is a thread hop each way
//! on top of the pipe. A direct call does less: its caller writes the
//! `tools/call` into the connection's write queue itself ([`LineSender`]:
//! the connection's writer sends what is queued in one write; calls made
//! one at a time are written at once, from their own thread, when the
//! writer is idle), and the transport's reader hands the answer straight
//! to it. Everything else — the handshake, every other
//! request, notifications, what the server asks — stays with rmcp.
//!
//! - **Ids.** rmcp numbers a connection's requests from 0; direct calls
//!   are numbered from [`FIRST_ID`] (2^40, well within JSON's exact
//!   integers), so neither takes the other's answers.
//! - **Order.** An answer passes [`crate::ordered`] like any other: what
//!   the server sent before it (progress, log lines) is handled first.
//! - **Era.** On a 2026-07-28 connection each call says the protocol
//!   version, the client's info and its capabilities in `_meta`, as rmcp's
//!   own requests do there ([`Direct::set_era`]).
//! - **Cancel.** A call dropped before its answer (a timeout, its caller
//!   gone) tells the server with `notifications/cancelled`, as rmcp does.
//! - **End.** When the connection's input ends, the calls still waiting
//!   fail as rmcp's would (`TransportClosed`), and so does any call after.
//!   The end is also told to whoever waits for it ([`Direct::ended`]): the
//!   client fails every other request in flight on the connection then, and
//!   takes the connection for dead ([`crate::connection::Connection::is_alive`]),
//!   without waiting for rmcp's service to wind down.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use parking_lot::Mutex;
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientCapabilities, ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorData,
    GetMeta, Implementation, JsonRpcMessage, NumberOrString, ProgressToken, ProtocolVersion,
    RequestId, ServerResult,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage};
use tokio::sync::{Notify, oneshot};

use crate::transport::{LineSender, Sent};

/// The id of a connection's first direct call.
pub(crate) const FIRST_ID: i64 = 1 << 40;

/// A call's answer: its result, or the error the server answered.
type Answer = Result<ServerResult, ErrorData>;

/// What a 2026-07-28 request says of its client in `_meta`.
#[derive(Debug, Clone)]
pub(crate) struct Era {
    pub(crate) protocol_version: ProtocolVersion,
    pub(crate) client_info: Implementation,
    pub(crate) client_capabilities: ClientCapabilities,
}

/// One stdio connection's direct calls: shared by the callers (who write)
/// and the transport's reader (which answers).
#[derive(Debug)]
pub(crate) struct Direct {
    sender: LineSender,
    next: AtomicI64,
    state: Mutex<State>,
    era: OnceLock<Era>,
    /// Woken when the connection's input ends.
    ending: Notify,
    /// The connection's input ended (as `State::ended`), read without the
    /// lock: every call's client asks whether its connection is alive,
    /// while the connection's thread takes the lock for every answer.
    ended: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    /// The calls waiting for their answers, by id.
    waiting: HashMap<i64, oneshot::Sender<Answer>>,
    /// The connection's input ended: no answer will come.
    ended: bool,
    /// The last call was made while others waited.
    crowded: bool,
}

impl State {
    /// Takes call `id` as waiting for its answer on `caller`, and says
    /// whether its caller writes it at once: only a call made alone, right
    /// after another made alone (calls one at a time, where the hop to the
    /// connection's thread is the cost). In a burst, even its first call,
    /// alone when the last burst's answers are all in, is queued: the
    /// others follow it into the same write, made on the connection's
    /// thread.
    fn admit(&mut self, id: i64, caller: oneshot::Sender<Answer>) -> bool {
        self.waiting.insert(id, caller);
        let alone = self.waiting.len() == 1;
        let at_once = alone && !self.crowded;
        self.crowded = !alone;
        at_once
    }
}

impl Direct {
    /// Direct calls written through `sender`.
    pub(crate) fn new(sender: LineSender) -> Self {
        Self {
            sender,
            next: AtomicI64::new(FIRST_ID),
            state: Mutex::new(State::default()),
            era: OnceLock::new(),
            ending: Notify::new(),
            ended: AtomicBool::new(false),
        }
    }

    /// Has every call say `era` in its `_meta` (a 2026-07-28 connection,
    /// once its handshake is done).
    pub(crate) fn set_era(&self, era: Era) {
        let _ = self.era.set(era);
    }

    /// The id of the next call; its progress token, when it asks for
    /// progress, is the same number.
    pub(crate) fn next_id(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Calls a tool with `params` as call `id` (from [`Direct::next_id`]),
    /// asking for progress when `progress`.
    pub(crate) async fn call_tool(
        &self,
        id: i64,
        params: CallToolRequestParams,
        progress: bool,
    ) -> Result<ServerResult, ServiceError> {
        let progress = progress.then_some(ProgressToken(NumberOrString::Number(id)));
        let line = self.request_line(id, params, progress)?;
        let (tx, rx) = oneshot::channel();
        let at_once = {
            let mut state = self.state.lock();
            if state.ended {
                return Err(ServiceError::TransportClosed);
            }
            state.admit(id, tx)
        };
        let mut pending = Pending {
            direct: self,
            id: Some(id),
        };
        let sent = if at_once {
            self.sender.send(&line)
        } else {
            self.sender.queue(&line)
        };
        let written = match sent {
            Ok(Sent::Done) => Ok(()),
            Ok(Sent::Full) => self.sender.room().await,
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            // The queue refuses from now on, so no cancel is sent either.
            tracing::debug!(%error, "a tool call could not be written to the MCP server");
            return Err(ServiceError::TransportClosed);
        }
        let answer = rx.await;
        // Answered, or the connection ended: nothing to cancel.
        pending.id = None;
        match answer {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(ServiceError::McpError(error)),
            Err(_) => Err(ServiceError::TransportClosed),
        }
    }

    /// The JSON text of call `id`, with its newline.
    fn request_line(
        &self,
        id: i64,
        params: CallToolRequestParams,
        progress: Option<ProgressToken>,
    ) -> Result<Vec<u8>, ServiceError> {
        let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Asked for only when something goes in (it makes an empty `_meta`).
        if let Some(era) = self.era.get() {
            let meta = request.get_meta_mut();
            meta.set_protocol_version(era.protocol_version.clone());
            meta.set_client_info(era.client_info.clone());
            meta.set_client_capabilities(era.client_capabilities.clone());
        }
        if let Some(token) = progress {
            request.get_meta_mut().set_progress_token(token);
        }
        let message = ClientJsonRpcMessage::request(request, RequestId::Number(id));
        let mut line = serde_json::to_vec(&message).map_err(|error| {
            ServiceError::McpError(ErrorData::internal_error(
                format!("cannot write the tool call: {error}"),
                None,
            ))
        })?;
        line.push(b'\n');
        Ok(line)
    }

    /// Hands `message` to the direct call it answers and returns `None`;
    /// anything else is returned for rmcp. An answer to a direct call no
    /// longer waiting (cancelled, timed out) is dropped.
    pub(crate) fn take(
        &self,
        message: RxJsonRpcMessage<RoleClient>,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        let id = match &message {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let Some(id) = id.and_then(direct_id) else {
            return Some(message);
        };
        let answer = match message {
            JsonRpcMessage::Response(response) => Ok(response.result),
            JsonRpcMessage::Error(error) => Err(error.error),
            other => return Some(other),
        };
        // Taken under the lock, answered after it: waking the caller may
        // wake a thread, which callers admitting their calls need not wait for.
        let waiting = self.state.lock().waiting.remove(&id);
        match waiting {
            Some(caller) => {
                let _ = caller.send(answer);
            }
            None => tracing::debug!(id, "an answer to a tool call no longer waiting; dropped"),
        }
        None
    }

    /// The connection's input ended: fails the calls waiting, and those to come.
    pub(crate) fn end(&self) {
        {
            let mut state = self.state.lock();
            state.ended = true;
            self.ended.store(true, Ordering::Release);
            state.waiting.clear();
        }
        self.ending.notify_waiters();
    }

    /// True once the connection's input has ended ([`Direct::end`]).
    pub(crate) fn is_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// Resolves once the connection's input has ended ([`Direct::end`]).
    pub(crate) async fn ended(&self) {
        loop {
            let ending = self.ending.notified();
            tokio::pin!(ending);
            ending.as_mut().enable();
            if self.is_ended() {
                return;
            }
            ending.await;
        }
    }

    /// Tells the server that call `id` is abandoned.
    fn cancel(&self, id: i64) {
        let param = CancelledNotificationParam::new(
            Some(RequestId::Number(id)),
            Some("request abandoned by the caller".into()),
        );
        let message = ClientJsonRpcMessage::notification(
            ClientNotification::CancelledNotification(CancelledNotification::new(param)),
        );
        if let Ok(mut line) = serde_json::to_vec(&message) {
            line.push(b'\n');
            // Queued at worst; a connection that ended needs no cancel.
            let _ = self.sender.queue(&line);
        }
    }
}

/// The number of a direct call's id (`"5"` read as 5, as rmcp reads it);
/// `None` for an id of rmcp's own requests.
fn direct_id(id: &RequestId) -> Option<i64> {
    let n = match id {
        NumberOrString::Number(n) => *n,
        NumberOrString::String(s) => s.parse().ok()?,
    };
    (n >= FIRST_ID).then_some(n)
}

/// A call sent and not yet answered: dropped, it is forgotten and
/// cancelled on the server (a cancel that cannot be queued, the writes
/// having failed, is not sent).
struct Pending<'a> {
    direct: &'a Direct,
    id: Option<i64>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let was_waiting = self.direct.state.lock().waiting.remove(&id).is_some();
        if was_waiting {
            self.direct.cancel(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use rmcp::model::{CallToolRequestParams, ServerResult};
    use rmcp::service::RoleClient;
    use rmcp::transport::Transport;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::UnixStream;

    use super::*;
    use crate::ordered::{Order, OrderedTransport};
    use crate::transport::LineTransport;

    /// A client transport with direct calls over a socket, the server's
    /// end of it, and what the transport passes on to rmcp.
    struct Pair {
        direct: Arc<Direct>,
        server: BufReader<UnixStream>,
        for_rmcp: tokio::sync::mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
        reader: tokio::task::JoinHandle<()>,
    }

    fn pair() -> Pair {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let transport = LineTransport::<RoleClient>::from_socket(ours).unwrap();
        let direct = Arc::new(Direct::new(transport.sender()));
        let mut transport = OrderedTransport::new(transport, Arc::new(Order::default()))
            .with_direct(direct.clone());
        let (tx, for_rmcp) = tokio::sync::mpsc::unbounded_channel();
        // What rmcp's service would do: read until the input ends.
        let reader = tokio::spawn(async move {
            while let Some(message) = transport.receive().await {
                let _ = tx.send(message);
            }
        });
        theirs.set_nonblocking(true).unwrap();
        Pair {
            direct,
            server: BufReader::new(UnixStream::from_std(theirs).unwrap()),
            for_rmcp,
            reader,
        }
    }

    impl Pair {
        /// A direct call of `echo` with `text`, running on its own task.
        fn call(
            &self,
            text: &str,
            progress: bool,
        ) -> tokio::task::JoinHandle<Result<ServerResult, ServiceError>> {
            let (direct, params) = (self.direct.clone(), echo(text));
            tokio::spawn(async move {
                let id = direct.next_id();
                direct.call_tool(id, params, progress).await
            })
        }

        /// The next message the server reads.
        async fn read(&mut self) -> Value {
            let mut line = String::new();
            tokio::time::timeout(Duration::from_secs(10), self.server.read_line(&mut line))
                .await
                .expect("a message within 10 s")
                .unwrap();
            serde_json::from_str(&line).unwrap()
        }

        async fn write(&mut self, message: Value) {
            let mut line = message.to_string();
            line.push('\n');
            self.server
                .get_mut()
                .write_all(line.as_bytes())
                .await
                .unwrap();
        }
    }

    /// `future`'s output, or a failed test after 10 s.
    async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(10), future)
            .await
            .expect("done within 10 s")
    }

    fn echo(text: &str) -> CallToolRequestParams {
        CallToolRequestParams::new("echo")
            .with_arguments(json!({ "text": text }).as_object().cloned().unwrap())
    }

    fn text_of(result: ServerResult) -> String {
        let ServerResult::CallToolResult(result) = result else {
            panic!("not a tool result: {result:?}");
        };
        result.content[0].as_text().unwrap().text.clone()
    }

    #[tokio::test]
    async fn a_direct_call_gets_its_answer_and_rmcp_gets_the_rest() {
        let mut pair = pair();
        let call = pair.call("hi", false);
        let request = pair.read().await;
        assert_eq!(request["method"], "tools/call");
        assert_eq!(request["params"]["arguments"]["text"], "hi");
        assert_eq!(request["id"], json!(FIRST_ID));
        assert!(
            request["params"].get("_meta").is_none(),
            "no progress asked, no era: no _meta: {request}"
        );
        // An answer to one of rmcp's own requests passes on to rmcp.
        pair.write(json!({"jsonrpc": "2.0", "id": 0, "result": {}}))
            .await;
        pair.write(json!({"jsonrpc": "2.0", "id": FIRST_ID,
            "result": {"content": [{"type": "text", "text": "hi"}]}}))
            .await;
        assert_eq!(text_of(within(call).await.unwrap().unwrap()), "hi");
        let passed = within(pair.for_rmcp.recv()).await.unwrap();
        assert!(
            matches!(&passed, JsonRpcMessage::Response(r) if r.id == RequestId::Number(0)),
            "{passed:?}"
        );
        // The server's error answer is the call's error.
        let call = pair.call("no", false);
        let id = pair.read().await["id"].clone();
        pair.write(json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32602, "message": "no such tool"}}))
            .await;
        match within(call).await.unwrap() {
            Err(ServiceError::McpError(error)) => assert_eq!(error.message, "no such tool"),
            other => panic!("expected the server's error, got {other:?}"),
        }
        assert!(
            pair.for_rmcp.try_recv().is_err(),
            "rmcp saw a direct answer"
        );
    }

    #[tokio::test]
    async fn a_dropped_call_is_cancelled_and_its_late_answer_dropped() {
        let mut pair = pair();
        let call = pair.call("slow", false);
        let id = pair.read().await["id"].clone();
        call.abort();
        let cancelled = pair.read().await;
        assert_eq!(cancelled["method"], "notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], id);
        pair.write(json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}))
            .await;
        // Read in order: the marker after the late answer reaches rmcp,
        // and the late answer does not.
        pair.write(json!({"jsonrpc": "2.0", "id": 7, "result": {}}))
            .await;
        let passed = within(pair.for_rmcp.recv()).await.unwrap();
        assert!(
            matches!(&passed, JsonRpcMessage::Response(r) if r.id == RequestId::Number(7)),
            "{passed:?}"
        );
        assert!(pair.direct.state.lock().waiting.is_empty());
    }

    #[tokio::test]
    async fn calls_fail_as_closed_once_the_input_ends() {
        let mut pair = pair();
        let call = pair.call("never", true);
        let request = pair.read().await;
        assert_eq!(
            request["params"]["_meta"]["progressToken"], request["id"],
            "a call asking for progress is its own token"
        );
        assert!(!pair.direct.is_ended());
        drop(pair.server);
        assert!(matches!(
            within(call).await.unwrap(),
            Err(ServiceError::TransportClosed)
        ));
        within(pair.reader).await.unwrap();
        assert!(pair.direct.is_ended(), "the end is seen without the lock");
        within(pair.direct.ended()).await;
        let id = pair.direct.next_id();
        assert!(matches!(
            pair.direct.call_tool(id, echo("later"), false).await,
            Err(ServiceError::TransportClosed)
        ));
    }

    #[test]
    fn only_calls_made_one_at_a_time_are_written_at_once() {
        let mut state = State::default();
        let admit = |state: &mut State, id| state.admit(id, oneshot::channel().0);
        assert!(admit(&mut state, 1), "the first call, alone");
        state.waiting.clear();
        assert!(admit(&mut state, 2), "the next, alone again");
        assert!(!admit(&mut state, 3), "made while call 2 waits");
        assert!(!admit(&mut state, 4), "made while calls 2 and 3 wait");
        state.waiting.clear();
        assert!(
            !admit(&mut state, 5),
            "alone, but the first after a burst: others may follow it"
        );
        state.waiting.clear();
        assert!(admit(&mut state, 6), "alone after one made alone");
    }

    /// A call with no other waiting is written by its caller; one made
    /// while another waits is queued for the connection's writer, which
    /// runs on the connection's runtime (here: not running until told).
    #[test]
    fn a_call_alone_is_written_at_once_and_one_among_others_waits_for_the_writer() {
        use std::future::Future;
        use std::io::BufRead;
        use std::task::{Context, Poll};

        let connection = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        // The transport's writer task is spawned on `connection`.
        let transport = {
            let _on = connection.enter();
            LineTransport::<RoleClient>::from_socket(ours).unwrap()
        };
        let direct = Direct::new(transport.sender());
        // One turn of the connection's reactor, as a running connection has
        // had: it learns the socket is writable (tokio does not try a write
        // before), and its writer task starts waiting for work.
        connection.block_on(tokio::task::yield_now());
        theirs
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut server = std::io::BufReader::new(theirs);
        let mut read = || {
            let mut line = String::new();
            server.read_line(&mut line).expect("a line within 10 s");
            serde_json::from_str::<Value>(&line).unwrap()
        };
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());

        // Polled once, each call sends and then waits for its answer.
        let mut first = Box::pin(direct.call_tool(direct.next_id(), echo("first"), false));
        assert!(matches!(first.as_mut().poll(&mut cx), Poll::Pending));
        assert_eq!(direct.sender.queued(), 0, "a call alone is not queued");
        assert_eq!(read()["params"]["arguments"]["text"], "first");

        let mut second = Box::pin(direct.call_tool(direct.next_id(), echo("second"), false));
        assert!(matches!(second.as_mut().poll(&mut cx), Poll::Pending));
        assert!(
            direct.sender.queued() > 0,
            "a call made while another waits is queued for the writer"
        );
        // The connection's runtime runs its writer, which writes it.
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let driver = std::thread::spawn(move || {
            let _ = connection.block_on(stopped);
        });
        assert_eq!(read()["params"]["arguments"]["text"], "second");
        drop((first, second, transport));
        let _ = stop.send(());
        driver.join().unwrap();
    }

    #[tokio::test]
    async fn a_2026_07_28_call_says_its_era_in_meta() {
        let mut pair = pair();
        pair.direct.set_era(Era {
            protocol_version: ProtocolVersion::V_2026_07_28,
            client_info: Implementation::new("gateway", "1.0"),
            client_capabilities: ClientCapabilities::default(),
        });
        let _call = pair.call("x", false);
        let meta = pair.read().await["params"]["_meta"].clone();
        let era = serde_json::to_value(ProtocolVersion::V_2026_07_28).unwrap();
        let said: Vec<&Value> = meta.as_object().unwrap().values().collect();
        assert!(said.contains(&&era), "no protocol version in {meta}");
        assert!(
            meta.to_string().contains("\"gateway\""),
            "no client info in {meta}"
        );
    }
}
