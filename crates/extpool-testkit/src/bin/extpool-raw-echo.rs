//! `extpool-raw-echo`: a hand-written MCP stdio server for benchmarks, and
//! for tests that need an answer no SDK would send.
//!
//! No SDK and no async runtime: one thread reads newline-delimited
//! JSON-RPC from stdin, answers `initialize`, `tools/list`, `ping` and
//! `tools/call` (any tool: the text of `arguments.message`), and writes
//! the answers with one flush per batch of input. It is the cheapest
//! server there can be, so a client measured against it measures the
//! client — the floor every MCP client is compared on. Not a conforming
//! server: anything else is answered with "method not found".
//!
//! `--tools FILE`: `tools/list` answers the JSON array in FILE as its
//! `tools`, as written — entries no SDK would accept included (a tool
//! `{"name": 5}`), for tests of how a client takes them.
//!
//! `--answer METHOD=LINE`: METHOD is answered with LINE as written, `{id}`
//! in it replaced by the request's id (a malformed answer:
//! `--answer 'tools/call={"jsonrpc":"2.0","id":{id},"error":{"code":"x"}}'`).
//!
//! `--endless METHOD`: METHOD is answered with a line that never ends —
//! the start of a result, then text without end, written until the client
//! goes (the server still ends when its input does).
#![allow(clippy::print_stdout, clippy::print_stderr)]

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

const USAGE: &str =
    "usage: extpool-raw-echo [--tools FILE] [--answer METHOD=LINE]... [--endless METHOD]...

  --tools FILE          answer tools/list with the JSON array in FILE
  --answer METHOD=LINE  answer METHOD with LINE as written, {id} replaced by the request's id
  --endless METHOD      answer METHOD with a line that never ends
  -h, --help            print this help";

/// What the command line asks for.
#[derive(Default)]
struct Options {
    /// The `tools/list` result.
    tools: String,
    /// Answers written as given, by method.
    answers: Vec<(String, String)>,
    /// Methods answered with a line that never ends.
    endless: Vec<String>,
}

/// Why the command line cannot be followed.
enum Usage {
    /// `--help`: the usage, on stdout, exit 0.
    Help,
    /// A wrong argument: what is wrong, then the usage on stderr, exit 2.
    Wrong(String),
}

fn options(args: impl IntoIterator<Item = String>) -> Result<Options, Usage> {
    let mut options = Options {
        tools: TOOLS.to_owned(),
        ..Options::default()
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .ok_or_else(|| Usage::Wrong(format!("{flag} needs a value")))
        };
        match arg.as_str() {
            "-h" | "--help" => return Err(Usage::Help),
            "--tools" => {
                let file = value("--tools")?;
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| Usage::Wrong(format!("cannot read {file}: {e}")))?;
                // On one line: JSON's own line breaks are only whitespace.
                options.tools =
                    format!(r#"{{"tools":{}}}"#, text.trim().replace(['\n', '\r'], " "));
            }
            "--answer" => {
                let given = value("--answer")?;
                let Some((method, line)) = given.split_once('=') else {
                    return Err(Usage::Wrong(format!(
                        "--answer {given:?} is not METHOD=LINE"
                    )));
                };
                options
                    .answers
                    .push((method.to_owned(), line.replace(['\n', '\r'], " ")));
            }
            "--endless" => options.endless.push(value("--endless")?),
            other => return Err(Usage::Wrong(format!("unknown argument {other:?}"))),
        }
    }
    Ok(options)
}

/// What answering a line did.
enum Answered {
    /// Wrote the answer (or nothing, for a notification).
    Written,
    /// Started a line that never ends: nothing more may be written.
    Endless,
}

fn answer(out: &mut impl Write, line: &[u8], options: &Options) -> std::io::Result<Answered> {
    let Ok(request) = serde_json::from_slice::<Request>(line) else {
        return Ok(Answered::Written);
    };
    let Some(id) = request.id else {
        return Ok(Answered::Written); // a notification
    };
    let method = request.method.as_ref();
    if let Some((_, given)) = options.answers.iter().find(|(m, _)| m == method) {
        out.write_all(given.replace("{id}", id.get()).as_bytes())?;
        out.write_all(b"\n")?;
        return Ok(Answered::Written);
    }
    if options.endless.iter().any(|m| m == method) {
        out.flush()?;
        endless(id.get().to_owned());
        return Ok(Answered::Endless);
    }
    let id = id.get().as_bytes();
    out.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
    out.write_all(id)?;
    match method {
        "tools/call" => {
            let message = request
                .params
                .and_then(|p| p.arguments)
                .and_then(|a| a.message)
                .map_or("\"\"", |m| m.get());
            out.write_all(br#","result":{"content":[{"type":"text","text":"#)?;
            out.write_all(message.as_bytes())?;
            out.write_all(b"}]}}\n")?;
        }
        "initialize" => {
            write!(out, r#","result":{INITIALIZE}}}"#)?;
            out.write_all(b"\n")?;
        }
        "tools/list" => {
            write!(out, r#","result":{}}}"#, options.tools)?;
            out.write_all(b"\n")?;
        }
        "ping" => out.write_all(b",\"result\":{}}\n")?,
        _ => out.write_all(b",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n")?,
    }
    Ok(Answered::Written)
}

/// Answers request `id` with a line that never ends, from a thread of its
/// own, so that the end of input still ends the server. Nothing else is
/// written after it: it would be part of that line.
fn endless(id: String) {
    std::thread::spawn(move || {
        let mut out = std::io::stdout().lock();
        let start = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
        );
        let chunk = [b'x'; 64 * 1024];
        if out.write_all(start.as_bytes()).is_err() {
            return;
        }
        while out.write_all(&chunk).and_then(|()| out.flush()).is_ok() {}
    });
}

fn main() -> std::process::ExitCode {
    let options = match options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(Usage::Help) => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(Usage::Wrong(problem)) => {
            eprintln!("extpool-raw-echo: {problem}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    match serve(&options) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("extpool-raw-echo: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn serve(options: &Options) -> std::io::Result<()> {
    let mut input = std::io::BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut out = BufWriter::with_capacity(64 * 1024, std::io::stdout());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return out.flush();
        }
        if let Answered::Endless = answer(&mut out, &line, options)? {
            // The endless line holds standard output: read on until the
            // input ends, then go without writing (or flushing) anything.
            while input.read_until(b'\n', &mut line)? != 0 {
                line.clear();
            }
            std::process::exit(0);
        }
        // One flush for everything that arrived together.
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
}
