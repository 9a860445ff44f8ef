//! Property tests of the transport's decoding of outside input: whatever
//! a peer writes on a line — envelopes with any members in any order,
//! duplicated or mistyped; known messages cut, spliced or with a byte
//! changed; any bytes — decoding never panics, ends within a watchdog, and
//! whatever the fast path decodes is exactly what rmcp's own decoder gives.
//!
//! `EXTPOOL_FUZZ_CASES=200000 cargo test -p extpool-mcp --lib props` runs a
//! long campaign.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use rmcp::service::{RoleClient, RoleServer};

use super::tests::{CLIENT_SIDE, SERVER_SIDE, same_as_rmcp};
use super::*;
use crate::limits;

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("EXTPOOL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A watchdog on one case, not a speed check.
const CASE_LIMIT: Duration = Duration::from_secs(10);

const METHODS: &[&str] = &[
    "\"tools/call\"",
    "\"tools/list\"",
    "\"resources/read\"",
    "\"resources/list\"",
    "\"prompts/get\"",
    "\"prompts/list\"",
    "\"ping\"",
    "\"initialize\"",
    "\"notifications/cancelled\"",
    "\"notifications/progress\"",
    "\"notifications/initialized\"",
    "\"notifications/tools/list_changed\"",
    "\"notifications/resources/updated\"",
    "\"notifications/message\"",
    "\"sampling/createMessage\"",
    "\"x/unknown\"",
    "\"tools\\/call\"",
    "42",
    "null",
];

const VALUES: &[&str] = &[
    "1",
    "-7",
    "0.5",
    "1e400",
    "\"s\"",
    "\"\"",
    "null",
    "true",
    "[]",
    "{}",
    "[1,\"a\",{}]",
    "{\"name\":\"echo\",\"arguments\":{\"message\":\"hi\"}}",
    "{\"name\":\"echo\"}",
    "{\"uri\":\"a://b\"}",
    "{\"requestId\":3,\"reason\":\"x\"}",
    "{\"progressToken\":\"t\",\"progress\":1,\"total\":2}",
    "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}",
    "{\"content\":[{\"type\":\"text\"}]}",
    "{\"content\":[],\"isError\":true,\"structuredContent\":{\"a\":1}}",
    "{\"content\":null}",
    "{\"isError\":\"yes\"}",
    "{\"tools\":[]}",
    "{\"code\":-32601,\"message\":\"nope\"}",
    "{\"code\":\"x\"}",
    "{\"_meta\":{\"k\":\"v\"},\"resultType\":\"complete\"}",
];

const KEYS: &[&str] = &[
    "jsonrpc", "id", "method", "params", "result", "error", "_meta", "jsonrpc", "id",
];

/// One envelope: members chosen from what a message has, in any order,
/// possibly repeated, with values of the right or the wrong kind.
fn envelope() -> impl Strategy<Value = String> {
    let member = (
        prop::sample::select(KEYS),
        prop_oneof![
            3 => prop::sample::select(VALUES),
            2 => prop::sample::select(METHODS),
            2 => Just("\"2.0\""),
        ],
    );
    prop::collection::vec(member, 0..7).prop_map(|members| {
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        format!("{{{}}}", body.join(","))
    })
}

/// A known message changed: cut short, a byte replaced or inserted, or
/// spliced with another.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let known = prop::sample::select(
        SERVER_SIDE
            .iter()
            .chain(CLIENT_SIDE)
            .copied()
            .collect::<Vec<&'static str>>(),
    );
    (
        known.clone(),
        known,
        any::<prop::sample::Index>(),
        any::<u8>(),
        0..4u8,
    )
        .prop_map(|(a, b, at, byte, how)| {
            let a = a.as_bytes();
            let i = at.index(a.len() + 1);
            match how {
                0 => a[..i].to_vec(),
                1 => {
                    let mut v = a.to_vec();
                    if i < v.len() {
                        v[i] = byte;
                    }
                    v
                }
                2 => {
                    let mut v = a.to_vec();
                    v.insert(i, byte);
                    v
                }
                _ => {
                    let b = b.as_bytes();
                    let mut v = a[..i].to_vec();
                    v.extend_from_slice(&b[at.index(b.len() + 1)..]);
                    v
                }
            }
        })
}

fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => envelope().prop_map(String::into_bytes),
        3 => mutated(),
        1 => prop::collection::vec(any::<u8>(), 0..300),
        1 => "\\PC{0,200}".prop_map(String::into_bytes),
    ]
}

/// Decodes `line` as both sides would, as the transport does (the depth
/// check included); checks the fast path against rmcp's decoder.
fn check(line: &[u8]) -> Result<(), TestCaseError> {
    let started = Instant::now();
    let _ = decode::<RoleClient>(line);
    let _ = decode::<RoleServer>(line);
    let _ = limits::nesting_exceeds(line, limits::MAX_NESTING);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if let Ok(text) = std::str::from_utf8(line) {
        same_as_rmcp::<RoleClient>(text);
        same_as_rmcp::<RoleServer>(text);
    }
    prop_assert!(
        started.elapsed() < CASE_LIMIT,
        "took {:?}",
        started.elapsed()
    );
    Ok(())
}

proptest! {
    #![proptest_config(cases(3000))]

    #[test]
    fn any_line_decodes_as_rmcp_would_without_panicking(line in line()) {
        check(&line)?;
    }
}

/// A valid tool result with any id and text is a message, on the fast
/// path, carrying both unchanged.
#[test]
fn tool_results_keep_their_id_and_text() {
    proptest!(cases(500), |(id in any::<i64>(), text in "\\PC{0,40}")| {
        let line = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {"content": [{"type": "text", "text": text}]},
        })
        .to_string();
        prop_assert!(same_as_rmcp::<RoleClient>(&line), "not on the fast path: {line}");
        match decode::<RoleClient>(line.as_bytes()) {
            Decoded::Message(JsonRpcMessage::Response(r)) => {
                prop_assert_eq!(r.id, RequestId::Number(id));
                let ServerResult::CallToolResult(result) = r.result else {
                    return Err(TestCaseError::fail("not a tool result"));
                };
                prop_assert_eq!(&result.content[0].as_text().unwrap().text, &text);
            }
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    });
}
