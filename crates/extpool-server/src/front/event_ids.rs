//! SSE event ids that say which replica sent them.
//!
//! A session-era client whose response stream breaks reconnects with
//! `Last-Event-ID` to resume it. The front end numbers events per session
//! and per process (`index/stream`, by the front end), so on another replica the same id names a
//! different stream, or none: replaying it would hand the client another
//! request's messages, and answering with an empty stream makes clients
//! reconnect forever. So every event id this replica sends carries its
//! tag (and, for a request's stream, the JSON-RPC id of the request):
//! `index/stream@tag@hexid`. A `Last-Event-ID` of this replica is resumed
//! as this replica wrote it; one of another replica is not resumable here — for a
//! request's stream the client at once gets that request's JSON-RPC error
//! (the replica that ran it went away, its result with it), for the
//! session's own stream a fresh stream opens (notifications sent meanwhile
//! are lost; lists are re-read on the next `list_changed`).

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;

/// The resumption header.
const LAST_EVENT_ID: &str = "last-event-id";
/// An `id:` line longer than this is passed through untouched (the front
/// end's are a few bytes).
const MAX_ID_LINE: usize = 1024;

/// This replica's tag: 8 hex digits of its id.
pub(crate) fn replica_tag(replica: &str) -> String {
    let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(replica);
    format!("{:08x}", hash & 0xffff_ffff)
}

/// A `Last-Event-ID` taken apart: the stream's own id, the replica tag, and the
/// hex JSON of the request it answers (request streams only).
struct Tagged<'a> {
    orig: &'a str,
    replica: Option<&'a str>,
    request: Option<&'a str>,
}

fn parse(id: &str) -> Tagged<'_> {
    let mut parts = id.splitn(3, '@');
    Tagged {
        orig: parts.next().unwrap_or_default(),
        replica: parts.next(),
        request: parts.next(),
    }
}

/// Sorts out a `Last-Event-ID` of `parts`: one this replica (`tag`)
/// issued is given back to the front end as it wrote it; one of another replica
/// answers at once (`Some`) for a request's stream, or is dropped for the
/// session's own stream (a fresh one opens).
pub(crate) fn resume_header(tag: &str, parts: &mut http::request::Parts) -> Option<Response> {
    let last = parts
        .headers
        .get(LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)?;
    let tagged = parse(&last);
    if tagged.replica == Some(tag) {
        match HeaderValue::from_str(tagged.orig) {
            Ok(v) => {
                parts.headers.insert(LAST_EVENT_ID, v);
            }
            Err(_) => {
                parts.headers.remove(LAST_EVENT_ID);
            }
        }
    } else if tagged.orig.contains('/') {
        return Some(gone(tagged.request));
    } else {
        // The session's own stream, sent elsewhere: open a fresh one.
        parts.headers.remove(LAST_EVENT_ID);
    }
    None
}

/// The JSON-RPC id of the request whose stream this replica (`tag`) sent
/// and `parts` resumes (a `GET` with its `Last-Event-ID`), if it does: the
/// stream still owes that request's answer.
pub(crate) fn resumed_request(tag: &str, parts: &http::request::Parts) -> Option<Value> {
    let last = parts.headers.get(LAST_EVENT_ID)?.to_str().ok()?;
    let tagged = parse(last);
    if tagged.replica != Some(tag) || !tagged.orig.contains('/') {
        return None;
    }
    request_of(tagged.request?)
}

/// A request id from the hex of its JSON.
fn request_of(hex: &str) -> Option<Value> {
    serde_json::from_slice(&hex::decode(hex).ok()?).ok()
}

pub(crate) use crate::wire::is_event_stream;

/// Tags the event ids of an SSE `response` with `tag` and, for a
/// request's stream, `request` (the hex of the request id's JSON).
pub(crate) fn tag(tag: &str, response: Response, request: Option<&str>) -> Response {
    let is_sse = crate::front::event_ids::is_event_stream(&response);
    if !is_sse {
        return response;
    }
    let suffix = match request {
        Some(id) => format!("@{tag}@{id}"),
        None => format!("@{tag}"),
    };
    let (parts, body) = response.into_parts();
    let mut tagger = Tagger::new(suffix);
    let stream = body
        .into_data_stream()
        .map(move |chunk| chunk.map(|bytes| tagger.push(&bytes)));
    Response::from_parts(parts, Body::from_stream(stream))
}

/// The JSON-RPC id of a single request, as hex of its JSON.
#[cfg(test)]
fn request_id(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        id: Option<Value>,
    }
    let envelope: Envelope = serde_json::from_slice(body).ok()?;
    let id = envelope.id?;
    Some(hex::encode(serde_json::to_vec(&id).ok()?))
}

/// The answer to resuming a request stream another replica served: the
/// request's JSON-RPC error when its id is known, else 410 Gone.
fn gone(request: Option<&str>) -> Response {
    let id: Option<Value> = request.and_then(request_of);
    let Some(id) = id else {
        return (
            StatusCode::GONE,
            "this stream was served by another gateway replica and cannot be resumed here\n",
        )
            .into_response();
    };
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32603,
            "message": "the gateway replica running this request went away before it answered; its result is lost (the session goes on: call again)",
        },
    });
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        format!("data: {error}\n\n"),
    )
        .into_response()
}

/// Appends a suffix to every `id:` line of an SSE stream, chunk by chunk;
/// holds back at most the start of one `id:` line.
struct Tagger {
    suffix: String,
    /// The start of the current line, held while it may be an `id:` line.
    held: Vec<u8>,
    /// The current line is not an `id:` line: pass it through.
    passing: bool,
}

impl Tagger {
    fn new(suffix: String) -> Self {
        Self {
            suffix,
            held: Vec::new(),
            passing: false,
        }
    }

    fn push(&mut self, mut chunk: &[u8]) -> Bytes {
        let mut out = Vec::with_capacity(chunk.len() + self.suffix.len());
        while !chunk.is_empty() {
            let end = memchr_newline(chunk);
            let (line, rest) = match end {
                Some(i) => (&chunk[..=i], &chunk[i + 1..]),
                None => (chunk, &[][..]),
            };
            chunk = rest;
            let complete = end.is_some();
            if self.passing {
                out.extend_from_slice(line);
                self.passing = !complete;
                continue;
            }
            self.held.extend_from_slice(line);
            let could_be_id = b"id:".starts_with(&self.held[..self.held.len().min(3)])
                && self.held.len() <= MAX_ID_LINE;
            if !could_be_id {
                out.append(&mut self.held);
                self.passing = !complete;
                continue;
            }
            if !complete {
                continue;
            }
            let mut line = std::mem::take(&mut self.held);
            if line.starts_with(b"id:") {
                let mut body_end = line.len() - 1;
                if body_end > 0 && line[body_end - 1] == b'\r' {
                    body_end -= 1;
                }
                let ending = line.split_off(body_end);
                out.extend_from_slice(&line);
                out.extend_from_slice(self.suffix.as_bytes());
                out.extend_from_slice(&ending);
            } else {
                out.extend_from_slice(&line);
            }
        }
        Bytes::from(out)
    }
}

fn memchr_newline(s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag_all(suffix: &str, chunks: &[&str]) -> String {
        let mut t = Tagger::new(suffix.to_owned());
        chunks
            .iter()
            .map(|c| String::from_utf8(t.push(c.as_bytes()).to_vec()).expect("utf8"))
            .collect()
    }

    #[test]
    fn every_id_line_is_tagged_however_the_stream_is_cut() {
        let event = "data: {\"id\":\"x\"}\nid: 0/3\nretry: 3000\n\ndata: {}\nid: 1/3\n\n";
        let want = "data: {\"id\":\"x\"}\nid: 0/3@t@31\nretry: 3000\n\ndata: {}\nid: 1/3@t@31\n\n";
        assert_eq!(tag_all("@t@31", &[event]), want);
        for cut in 1..event.len() {
            let (a, b) = event.split_at(cut);
            assert_eq!(tag_all("@t@31", &[a, b]), want, "cut at {cut}");
        }
        let bytes: Vec<String> = event.chars().map(String::from).collect();
        let refs: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(tag_all("@t@31", &refs), want, "byte by byte");
        assert_eq!(tag_all("@t", &["id: 7\r\n\r\n"]), "id: 7@t\r\n\r\n");
        assert_eq!(tag_all("@t", &["i", "dle: x\n"]), "idle: x\n");
    }

    #[test]
    fn resumption_ids_come_apart() {
        let t = parse("0/3@abcd@31");
        assert_eq!(
            (t.orig, t.replica, t.request),
            ("0/3", Some("abcd"), Some("31"))
        );
        let t = parse("4");
        assert_eq!((t.orig, t.replica, t.request), ("4", None, None));
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#).as_deref(),
            Some("37")
        );
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","method":"x"}"#), None);
        assert_eq!(request_id(b"[1,2]"), None);
    }

    #[tokio::test]
    async fn a_stream_of_another_replica_answers_its_request_with_an_error() {
        let response = gone(Some(&hex::encode(b"\"req-1\"")));
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .expect("body");
        let text = String::from_utf8(body.to_vec()).expect("utf8");
        let json: Value =
            serde_json::from_str(text.trim().trim_start_matches("data: ")).expect("json");
        assert_eq!(json["id"], "req-1");
        assert!(
            json["error"]["message"]
                .as_str()
                .expect("message")
                .contains("went away")
        );
        assert_eq!(gone(None).status(), StatusCode::GONE);
    }
}
