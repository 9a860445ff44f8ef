//! A deliberately tiny streamable HTTP endpoint that initializes normally
//! and then answers every `tools/call` with a fixed HTTP failure, counting
//! how many `tools/call` requests reached it. It exists to prove that
//! server-declared HTTP failures (400/429/502/503/504) are never replayed;
//! no real server answers those on demand.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How `tools/call` is answered.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// This status with a plain-text body.
    Status(u16),
    /// HTTP 400 carrying a JSON-RPC error body.
    JsonRpcError400,
    /// 200 with an SSE event carrying the call's id and an `error` that is
    /// no error object: a message no SDK can read.
    SseMalformedError,
}

/// The running endpoint; stops when dropped.
pub struct FakeHttp {
    pub url: String,
    pub calls: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeHttp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeHttp {
    pub async fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let counter = counter.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, answer, counter).await;
                });
            }
        });
        Self { url, calls, task }
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<(String, String)>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[header_end..]).into_owned();
    Ok(Some((head, body)))
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    stream.write_all(out.as_bytes()).await?;
    stream.shutdown().await
}

async fn serve(
    mut stream: TcpStream,
    answer: Answer,
    calls: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    let Some((head, body)) = read_request(&mut stream).await? else {
        return Ok(());
    };
    if !head.starts_with("POST") {
        return respond(&mut stream, "405 Method Not Allowed", &[], "").await;
    }
    let msg: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let id = msg.get("id").cloned().unwrap_or(serde_json::Value::Null);
    match msg.get("method").and_then(|m| m.as_str()) {
        Some("initialize") => {
            let reply = serde_json::json!({
                "jsonrpc": "2.0", "id": id,
                "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake", "version": "1"}
                }
            });
            respond(
                &mut stream,
                "200 OK",
                &[
                    ("content-type", "application/json"),
                    ("mcp-session-id", "s1"),
                ],
                &reply.to_string(),
            )
            .await
        }
        Some("tools/call") => {
            calls.fetch_add(1, Ordering::SeqCst);
            match answer {
                Answer::Status(code) => {
                    let status = format!("{code} Failure");
                    respond(
                        &mut stream,
                        &status,
                        &[("content-type", "text/plain"), ("retry-after", "7")],
                        "server says no",
                    )
                    .await
                }
                Answer::SseMalformedError => {
                    let event = format!(
                        "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":\"x\"}}}}\n\n"
                    );
                    respond(
                        &mut stream,
                        "200 OK",
                        &[("content-type", "text/event-stream")],
                        &event,
                    )
                    .await
                }
                Answer::JsonRpcError400 => {
                    let reply = serde_json::json!({
                        "jsonrpc": "2.0", "id": id,
                        "error": {"code": -32602, "message": "bad arguments"}
                    });
                    respond(
                        &mut stream,
                        "400 Bad Request",
                        &[("content-type", "application/json")],
                        &reply.to_string(),
                    )
                    .await
                }
            }
        }
        _ => respond(&mut stream, "202 Accepted", &[], "").await,
    }
}
