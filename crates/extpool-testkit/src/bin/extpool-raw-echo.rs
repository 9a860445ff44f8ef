//! `extpool-raw-echo`: a hand-written MCP stdio server for benchmarks only.
//!
//! No SDK and no async runtime: one thread reads newline-delimited
//! JSON-RPC from stdin, answers `initialize`, `tools/list`, `ping` and
//! `tools/call` (any tool: the text of `arguments.message`), and writes
//! the answers with one flush per batch of input. It is the cheapest
//! server there can be, so a client measured against it measures the
//! client — the floor every MCP client is compared on. Not a conforming
//! server: anything else is answered with "method not found".

use std::io::{BufRead, BufWriter, Write};

use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    arguments: Option<Arguments<'a>>,
}

#[derive(Deserialize)]
struct Arguments<'a> {
    #[serde(borrow)]
    message: Option<&'a RawValue>,
}

const INITIALIZE: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"extpool-raw-echo","version":"0.1.0"}}"#;
const TOOLS: &str = r#"{"tools":[{"name":"echo","description":"Echo back","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}"#;

fn answer(out: &mut impl Write, line: &[u8]) -> std::io::Result<()> {
    let Ok(request) = serde_json::from_slice::<Request>(line) else {
        return Ok(());
    };
    let Some(id) = request.id else {
        return Ok(()); // a notification
    };
    let id = id.get().as_bytes();
    out.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
    out.write_all(id)?;
    match request.method.as_ref() {
        "tools/call" => {
            let message = request
                .params
                .and_then(|p| p.arguments)
                .and_then(|a| a.message)
                .map_or("\"\"", |m| m.get());
            out.write_all(br#","result":{"content":[{"type":"text","text":"#)?;
            out.write_all(message.as_bytes())?;
            out.write_all(b"}]}}\n")
        }
        "initialize" => {
            write!(out, r#","result":{INITIALIZE}}}"#).and_then(|()| out.write_all(b"\n"))
        }
        "tools/list" => write!(out, r#","result":{TOOLS}}}"#).and_then(|()| out.write_all(b"\n")),
        "ping" => out.write_all(b",\"result\":{}}\n"),
        _ => out.write_all(b",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n"),
    }
}

fn main() -> std::io::Result<()> {
    let mut input = std::io::BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut out = BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return out.flush();
        }
        answer(&mut out, &line)?;
        // One flush for everything that arrived together.
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
}
