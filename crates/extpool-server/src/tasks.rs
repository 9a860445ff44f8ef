//! Tasks through the gateway (MCP 2025-11-25): which task is whose.
//!
//! A task-augmented `tools/call` is started at the upstream server that
//! owns the tool (the handler); the client gets an id of the
//! gateway's own, never the server's, and every later task request is
//! answered through this map of gateway ids to `(server, server's task
//! id, owner)`:
//!
//! - **One session's tasks are its own.** A task is found only by the
//!   session that started it; any other session gets the very error an id
//!   nobody made gets (upstream servers are shared, so their own ids and
//!   `tasks/list` would show every session's tasks).
//! - **A task outlives its session for its principal.** Once the session
//!   that started it is gone, the next session of the same principal that
//!   names it takes it over (a session of the gateway's one local caller,
//!   without identity, likewise).
//! - **A restart is a failed task, never a hang.** Ids carry this process's
//!   epoch; the id of an earlier process of this gateway (the map lived in
//!   its memory) is answered as a failed task saying so.
//! - **Bounded.** A session holds at most [`MAX_TASKS_PER_SESSION`] tasks;
//!   a task is forgotten when its server's `ttl` passes (at most
//!   [`MAX_TTL`]).
//!
//! Ids are unguessable: the epoch and a keyed digest of a counter, from a
//! secret drawn at start.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Weak;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmcp::ErrorData;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What every gateway task id starts with.
const PREFIX: &str = "extpool-task-";
/// Hex digits of the epoch in an id.
const EPOCH_LEN: usize = 12;
/// Hex digits of the tag after it.
const TAG_LEN: usize = 32;
/// How many tasks one session may hold at once.
pub(crate) const MAX_TASKS_PER_SESSION: usize = 256;
/// The longest a task is kept, whatever its server's `ttl` says.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
mod held;

pub(crate) use held::{Held, completed_already};

/// The key of a result's related task in its `_meta`.
pub(crate) use extpool_host::RELATED_TASK;

/// Who asks about a task: the session (its id, and a handle that dies
/// with it) and its principal.
#[derive(Clone)]
pub(crate) struct Asker {
    pub session: String,
    pub alive: Weak<dyn Any + Send + Sync>,
    /// The principal's owner key (`None`: the local caller).
    pub owner: Option<String>,
    /// Where the session's notifications go (none: nowhere).
    pub peer: Option<crate::client_peer::ClientPeer>,
}

/// One task the gateway started.
#[derive(Clone)]
pub(crate) struct Entry {
    /// The server that holds it.
    pub server: String,
    /// The catalog name of the tool it runs (what its result's guardrails
    /// know it by).
    pub tool: String,
    /// The server's id of it.
    pub upstream: String,
    /// For a task the gateway answered itself: its result.
    pub held: Option<Held>,
    asker: Asker,
    expires: Instant,
}

impl Entry {
    fn found(&self) -> Found {
        if let Some(held) = &self.held {
            return Found::Held(held.clone());
        }
        Found::Task {
            server: self.server.clone(),
            upstream: self.upstream.clone(),
            tool: self.tool.clone(),
        }
    }
}

/// What an id names for its asker.
pub(crate) enum Found {
    /// A task of the asker's: its server, the server's id of it, and its
    /// tool.
    Task {
        /// The server that holds it.
        server: String,
        /// The server's id of it.
        upstream: String,
        /// The catalog name of the tool it runs.
        tool: String,
    },
    /// A task of the asker's the gateway answered itself.
    Held(Held),
    /// A task of an earlier process of this gateway: lost in its restart.
    Lost,
    /// Nothing the asker may see.
    Unknown,
}

/// The gateway's tasks.
pub(crate) struct Tasks {
    epoch: String,
    secret: [u8; 32],
    next: AtomicU64,
    map: Mutex<HashMap<String, Entry>>,
}

impl Default for Tasks {
    fn default() -> Self {
        let secret = secret();
        let epoch =
            hex::encode(Sha256::digest([&secret[..], b"epoch"].concat()))[..EPOCH_LEN].to_owned();
        Self {
            epoch,
            secret,
            next: AtomicU64::new(0),
            map: Mutex::new(HashMap::new()),
        }
    }
}

/// 32 bytes from the system's random source (the clock and the process
/// id where it cannot be read).
fn secret() -> [u8; 32] {
    let mut out = [0u8; 32];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut out));
    if read.is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let seed = format!("{}-{}-{:p}", now.as_nanos(), std::process::id(), &out);
        out.copy_from_slice(&Sha256::digest(seed.as_bytes()));
    }
    out
}

impl Tasks {
    fn mint(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let tag = Sha256::digest([&self.secret[..], &n.to_be_bytes()].concat());
        format!("{PREFIX}{}-{}", self.epoch, &hex::encode(tag)[..TAG_LEN])
    }

    /// Keeps the task `upstream` of `server`, running tool `tool` (its
    /// catalog name), for `asker`, for `ttl_ms` (its server's `ttl`;
    /// `None`: unlimited, so [`MAX_TTL`]); its gateway id, or the error
    /// when the session holds too many.
    pub(crate) fn insert(
        &self,
        asker: &Asker,
        (server, tool): (&str, &str),
        upstream: &str,
        ttl_ms: Option<u64>,
    ) -> Result<String, ErrorData> {
        let entry = Entry {
            server: server.to_owned(),
            tool: tool.to_owned(),
            upstream: upstream.to_owned(),
            held: None,
            asker: asker.clone(),
            expires: Instant::now(),
        };
        self.add(entry, ttl_ms)
    }

    /// Keeps `result`, the tool result a task-augmented call of `tool` got
    /// at once, as a completed task of `asker`'s for `ttl_ms` (the one
    /// asked for; `None`: [`MAX_TTL`]); its gateway id and the task, or
    /// the error when the session holds too many.
    pub(crate) fn hold(
        &self,
        asker: &Asker,
        tool: &str,
        result: Value,
        ttl_ms: Option<u64>,
    ) -> Result<(String, Held), ErrorData> {
        let ttl = ttl_ms.map_or(MAX_TTL, |ms| Duration::from_millis(ms).min(MAX_TTL));
        let held = Held {
            result,
            created: now_iso(),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
        };
        let entry = Entry {
            server: String::new(),
            tool: tool.to_owned(),
            upstream: String::new(),
            held: Some(held.clone()),
            asker: asker.clone(),
            expires: Instant::now(),
        };
        Ok((self.add(entry, ttl_ms)?, held))
    }

    /// Keeps `entry` for `ttl_ms` (`None`: [`MAX_TTL`]) under a new id,
    /// unless its session holds too many.
    fn add(&self, mut entry: Entry, ttl_ms: Option<u64>) -> Result<String, ErrorData> {
        let now = Instant::now();
        let ttl = ttl_ms.map_or(MAX_TTL, |ms| Duration::from_millis(ms).min(MAX_TTL));
        let mut map = self.map.lock();
        map.retain(|_, e| e.expires > now);
        let held = map
            .values()
            .filter(|e| e.asker.session == entry.asker.session)
            .count();
        if held >= MAX_TASKS_PER_SESSION {
            return Err(ErrorData::invalid_request(
                format!(
                    "this session already holds {MAX_TASKS_PER_SESSION} tasks, the most the gateway keeps for one session; wait for one to expire"
                ),
                None,
            ));
        }
        let id = self.mint();
        entry.expires = now + ttl;
        map.insert(id.clone(), entry);
        Ok(id)
    }

    /// What `id` names for `asker`. A task whose session is gone is taken
    /// over by a session of its principal that names it.
    pub(crate) fn find(&self, id: &str, asker: &Asker) -> Found {
        let mut map = self.map.lock();
        if let Some(entry) = map.get_mut(id)
            && entry.expires > Instant::now()
        {
            if entry.asker.session == asker.session {
                return entry.found();
            }
            if entry.asker.alive.strong_count() == 0 && entry.asker.owner == asker.owner {
                tracing::debug!(task = id, session = %asker.session, "a task outlived its session: its principal's new session takes it");
                entry.asker = asker.clone();
                return entry.found();
            }
            return Found::Unknown;
        }
        if self.of_earlier_process(id) {
            return Found::Lost;
        }
        Found::Unknown
    }

    /// Every live task `asker` may see now (taking over those its
    /// principal's ended sessions left), by gateway id.
    pub(crate) fn list(&self, asker: &Asker) -> Vec<(String, Entry)> {
        let now = Instant::now();
        let mut map = self.map.lock();
        map.retain(|_, e| e.expires > now);
        let mut out = Vec::new();
        for (id, entry) in map.iter_mut() {
            let orphan = entry.asker.alive.strong_count() == 0 && entry.asker.owner == asker.owner;
            if orphan {
                entry.asker = asker.clone();
            }
            if entry.asker.session == asker.session {
                out.push((id.clone(), entry.clone()));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Where notifications about task `id` go now (its session's peer);
    /// `None` once it is forgotten or expired.
    pub(crate) fn peer_of(&self, id: &str) -> Option<crate::client_peer::ClientPeer> {
        let map = self.map.lock();
        let entry = map.get(id)?;
        if entry.expires <= Instant::now() {
            return None;
        }
        entry.asker.peer.clone()
    }

    /// Forgets task `id` (its server no longer knows it).
    pub(crate) fn forget(&self, id: &str) {
        self.map.lock().remove(id);
    }

    /// Whether `id` is shaped as this gateway's ids are, with another
    /// process's epoch.
    fn of_earlier_process(&self, id: &str) -> bool {
        let Some(rest) = id.strip_prefix(PREFIX) else {
            return false;
        };
        let Some((epoch, tag)) = rest.split_once('-') else {
            return false;
        };
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        hex(epoch, EPOCH_LEN) && hex(tag, TAG_LEN) && epoch != self.epoch
    }
}

/// The error for a task id the asker may not see, the same whether nobody
/// made it or another session did.
pub(crate) fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("task {id:?} not found"), None)
}

/// The task a restart lost, as `tasks/get` answers it: failed, saying why.
pub(crate) fn lost(id: &str) -> Value {
    let now = now_iso();
    json!({
        "taskId": id,
        "status": "failed",
        "statusMessage": "the gateway restarted while this task ran; its result is lost (start it again)",
        "createdAt": now,
        "lastUpdatedAt": now,
        "ttl": null,
    })
}

/// The error `tasks/result` answers for a task a restart lost.
pub(crate) fn lost_result(id: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("task {id:?} failed: the gateway restarted while it ran and its result is lost"),
        None,
    )
}

/// Now as an RFC 3339 time in UTC (seconds).
fn now_iso() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The civil date of a day count since 1970-01-01 (Howard Hinnant's).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Puts gateway id `id` where a server's answer or notification names
/// its own: a task's `taskId`, a created task's `task.taskId`, and a
/// result's related task in `_meta`.
pub(crate) fn rename(value: &mut Value, id: &str) {
    let id = Value::String(id.to_owned());
    if let Some(slot) = value.get_mut("taskId") {
        *slot = id.clone();
    }
    if let Some(slot) = value.get_mut("task").and_then(|t| t.get_mut("taskId")) {
        *slot = id.clone();
    }
    if let Some(slot) = value
        .get_mut("_meta")
        .and_then(|m| m.get_mut(RELATED_TASK))
        .and_then(|t| t.get_mut("taskId"))
    {
        *slot = id;
    }
}

/// The `tasks` capability the gateway declares when an upstream server
/// takes task-augmented `tools/call` (`upstream` is its declaration):
/// the gateway lists and cancels tasks itself.
pub(crate) fn declared(upstream: &Value) -> Option<Value> {
    upstream.pointer("/requests/tools/call")?;
    Some(json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}))
}

/// An `initialize` answer (JSON, or SSE events) with `tasks` among its
/// result's capabilities.
pub(crate) fn declare_in(bytes: &[u8], tasks: &Value) -> Option<Vec<u8>> {
    let add = |message: &mut Value| -> bool {
        match message.pointer_mut("/result/capabilities") {
            Some(Value::Object(capabilities)) => {
                capabilities.insert("tasks".into(), tasks.clone());
                true
            }
            _ => false,
        }
    };
    if let Ok(mut message) = serde_json::from_slice::<Value>(bytes) {
        return add(&mut message).then(|| serde_json::to_vec(&message).ok())?;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut done = false;
    let mut out = String::with_capacity(text.len() + 96);
    for line in text.split_inclusive('\n') {
        if let Some(data) = line.strip_prefix("data:")
            && let Ok(mut message) = serde_json::from_str::<Value>(data.trim())
            && add(&mut message)
        {
            done = true;
            out.push_str("data: ");
            out.push_str(&message.to_string());
            out.push_str(if line.ends_with('\n') { "\n" } else { "" });
            continue;
        }
        out.push_str(line);
    }
    done.then(|| out.into_bytes())
}

/// A session-era request as the task handlers take it
/// (the handler's `CustomRequest`s) when `declares` (the session's
/// gateway declares tasks): a `tools/call` whose params (in `body`, the
/// request's JSON) carry `task`, `tasks/get` and `tasks/cancel` (which
/// rmcp reads as the 2026-07-28 extension's), and `tools/list`, whose
/// tools then say which take tasks (`execution`, which rmcp's `Tool` has
/// no field for). Any other request, and every request of a gateway that
/// declares no tasks, as it is: a `tools/call`'s `task` is then ignored,
/// as MCP asks of a server without tasks.
pub(crate) fn session_request(
    request: rmcp::model::ClientRequest,
    body: &[u8],
    declares: impl Fn() -> bool,
) -> rmcp::model::ClientRequest {
    use rmcp::model::{ClientRequest as R, CustomRequest};
    let custom = |method: &str, params: Option<Value>| {
        R::CustomRequest(CustomRequest::new(method.to_owned(), params))
    };
    match request {
        R::CallToolRequest(_) if body.windows(6).any(|w| w == b"\"task\"") && declares() => {
            match serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|mut v| v.get_mut("params").map(Value::take))
            {
                Some(params) if params.get("task").is_some_and(Value::is_object) => {
                    custom("tools/call", Some(params))
                }
                _ => request,
            }
        }
        R::GetTaskRequest(r) if declares() => {
            custom("tasks/get", Some(json!({"taskId": r.params.task_id})))
        }
        R::CancelTaskRequest(r) if declares() => {
            custom("tasks/cancel", Some(json!({"taskId": r.params.task_id})))
        }
        R::ListToolsRequest(list) if declares() => custom(
            "tools/list",
            list.params.and_then(|p| serde_json::to_value(p).ok()),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_an_earlier_process_are_told_from_unknown_ones() {
        let now = Tasks::default();
        let earlier = Tasks::default();
        let id = earlier.mint();
        assert!(now.of_earlier_process(&id));
        assert!(!now.of_earlier_process(&now.mint()));
        assert!(!now.of_earlier_process("extpool-task-zz-00"));
        assert!(!now.of_earlier_process("some-server-id"));
        assert_ne!(now.mint(), now.mint());
    }

    fn asker(session: &str, alive: &std::sync::Arc<()>, owner: Option<&str>) -> Asker {
        let alive: Weak<dyn Any + Send + Sync> = std::sync::Arc::downgrade(alive) as _;
        Asker {
            session: session.into(),
            alive,
            owner: owner.map(str::to_owned),
            peer: None,
        }
    }

    #[test]
    fn an_ended_sessions_task_goes_to_its_principal_only() {
        let tasks = Tasks::default();
        let (one, two, three) = (
            std::sync::Arc::new(()),
            std::sync::Arc::new(()),
            std::sync::Arc::new(()),
        );
        let alice = asker("s1", &one, Some("alice"));
        let id = tasks
            .insert(&alice, ("srv", "t"), "up-1", Some(60_000))
            .unwrap();
        let found = |f: Found| matches!(f, Found::Task { upstream, .. } if upstream == "up-1");
        assert!(found(tasks.find(&id, &alice)));
        // Alice's other session, while the first lives: nothing.
        let alice_again = asker("s2", &two, Some("alice"));
        assert!(matches!(tasks.find(&id, &alice_again), Found::Unknown));
        drop(one);
        // Bob, once it ended: still nothing, and no listing.
        let bob = asker("s3", &three, Some("bob"));
        assert!(matches!(tasks.find(&id, &bob), Found::Unknown));
        assert!(tasks.list(&bob).is_empty());
        // Alice's other session takes it over, and it is hers alone now.
        assert!(found(tasks.find(&id, &alice_again)));
        assert!(matches!(tasks.find(&id, &alice), Found::Unknown));
        assert_eq!(tasks.list(&alice_again).len(), 1);
    }

    #[test]
    fn a_session_holds_a_bounded_number_of_tasks() {
        let tasks = Tasks::default();
        let alive = std::sync::Arc::new(());
        let me = asker("s", &alive, None);
        for n in 0..MAX_TASKS_PER_SESSION {
            tasks
                .insert(&me, ("srv", "t"), &n.to_string(), None)
                .unwrap();
        }
        assert!(tasks.insert(&me, ("srv", "t"), "one more", None).is_err());
        let other = asker("t", &alive, None);
        assert!(tasks.insert(&other, ("srv", "t"), "theirs", None).is_ok());
    }

    #[test]
    fn a_held_task_is_completed_with_its_result_for_its_session_only() {
        let tasks = Tasks::default();
        let alive = std::sync::Arc::new(());
        let me = asker("s", &alive, None);
        let result = json!({"content": [{"type": "text", "text": "blocked"}], "isError": true});
        let (id, _) = tasks.hold(&me, "mcp__s__t", result, Some(1_000)).unwrap();
        let Found::Held(held) = tasks.find(&id, &me) else {
            panic!("held");
        };
        assert_eq!(held.task(&id)["status"], "completed");
        assert_eq!(held.task(&id)["ttl"], 1_000);
        let answered = held.result(&id);
        assert_eq!(answered["isError"], true);
        assert_eq!(answered["_meta"][RELATED_TASK]["taskId"], json!(id));
        let other = asker("t", &alive, None);
        assert!(matches!(tasks.find(&id, &other), Found::Unknown));
    }

    #[test]
    fn a_server_id_is_renamed_wherever_an_answer_names_it() {
        let mut created = json!({"task": {"taskId": "up-1", "status": "working"}});
        rename(&mut created, "gw-1");
        assert_eq!(created["task"]["taskId"], "gw-1");
        let mut result = json!({"content": [], "_meta": {RELATED_TASK: {"taskId": "up-1"}}});
        rename(&mut result, "gw-1");
        assert_eq!(result["_meta"][RELATED_TASK]["taskId"], "gw-1");
        let mut task = json!({"taskId": "up-1"});
        rename(&mut task, "gw-1");
        assert_eq!(task["taskId"], "gw-1");
    }

    #[test]
    fn the_capability_is_added_to_json_and_sse_answers() {
        let tasks = json!({"list": {}});
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{}}}}"#;
        let out: Value = serde_json::from_slice(&declare_in(json, &tasks).unwrap()).unwrap();
        assert_eq!(out["result"]["capabilities"]["tasks"], tasks);
        let sse =
            b"id: 0\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"capabilities\":{}}}\n\n";
        let out = String::from_utf8(declare_in(sse, &tasks).unwrap()).unwrap();
        assert!(out.starts_with("id: 0\ndata: {"), "{out}");
        assert!(out.contains("\"tasks\":{\"list\":{}}"), "{out}");
        assert!(out.ends_with("\n\n"), "{out}");
        assert!(declare_in(br#"{"jsonrpc":"2.0","id":1,"error":{}}"#, &tasks).is_none());
    }

    #[test]
    fn task_requests_are_taken_only_where_the_gateway_declares_tasks() {
        use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"task":{"ttl":5}}}"#;
        let request = || match serde_json::from_slice::<ClientJsonRpcMessage>(body).unwrap() {
            ClientJsonRpcMessage::Request(r) => r.request,
            other => panic!("{other:?}"),
        };
        match session_request(request(), body, || true) {
            ClientRequest::CustomRequest(c) => {
                assert_eq!(c.method, "tools/call");
                assert_eq!(c.params.unwrap()["task"]["ttl"], 5);
            }
            other => panic!("{other:?}"),
        }
        // Without tasks, `task` is ignored: the call is the typed one.
        assert!(matches!(
            session_request(request(), body, || false),
            ClientRequest::CallToolRequest(_)
        ));
        let plain = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task","arguments":{"x":"task"}}}"#;
        let typed = match serde_json::from_slice::<ClientJsonRpcMessage>(plain).unwrap() {
            ClientJsonRpcMessage::Request(r) => r.request,
            other => panic!("{other:?}"),
        };
        assert!(matches!(
            session_request(typed, plain, || true),
            ClientRequest::CallToolRequest(_)
        ));
    }

    #[test]
    fn times_are_written_in_utc() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_424), (2025, 12, 2));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert!(now_iso().ends_with('Z'));
    }

    #[test]
    fn upstreams_that_take_task_calls_make_the_gateway_declare_tasks() {
        assert!(declared(&json!({"requests": {"tools": {"call": {}}}})).is_some());
        assert!(declared(&json!({"list": {}})).is_none());
    }
}
