//! The transport between two rmcp services in one process, and against a
//! raw peer writing bytes by hand.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ErrorData, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;

use super::*;

/// Echoes `message`, or answers `size` bytes of text.
#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = match args.get("size").and_then(serde_json::Value::as_u64) {
            Some(n) => "x".repeat(n as usize),
            None => args
                .get("message")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

fn pipes<R: FastDecode, S: FastDecode>() -> (LineTransport<R>, LineTransport<S>) {
    let (a_tx, a_rx) = pipe::pipe().unwrap();
    let (b_tx, b_rx) = pipe::pipe().unwrap();
    (
        LineTransport::from_pipes(a_rx, b_tx).unwrap(),
        LineTransport::from_pipes(b_rx, a_tx).unwrap(),
    )
}

fn call(args: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new("echo").with_arguments(args.as_object().cloned().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_server_talk_over_pipes() {
    let (client_side, server_side) = pipes::<RoleClient, RoleServer>();
    let server =
        tokio::spawn(async move { Echo.serve(server_side).await.unwrap().waiting().await });
    let client = ().serve(client_side).await.unwrap();
    let result = client
        .call_tool(call(serde_json::json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text().unwrap().text, "hi");

    // Many in flight at once, each answered with its own message.
    let peer = client.peer().clone();
    let calls = (0..500).map(|i| {
        let peer = peer.clone();
        async move {
            let r = peer
                .call_tool(call(serde_json::json!({"message": format!("m{i}")})))
                .await
                .unwrap();
            assert_eq!(r.content[0].as_text().unwrap().text, format!("m{i}"));
        }
    });
    futures::future::join_all(calls).await;
    client.cancel().await.unwrap();
    // The server sees the end of its input and finishes.
    server.await.unwrap().unwrap();
}

/// Results larger than a pipe's buffer go through the writer's queue, and
/// several at once stay whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_messages_are_queued_and_arrive_whole() {
    let (client_side, server_side) = pipes::<RoleClient, RoleServer>();
    tokio::spawn(async move { Echo.serve(server_side).await.unwrap().waiting().await });
    let client = ().serve(client_side).await.unwrap();
    let sizes = [3 << 20, 1, 700_000, 5 << 20, 10];
    let calls = sizes.map(|size| {
        let peer = client.peer().clone();
        async move {
            let r = peer
                .call_tool(call(serde_json::json!({"size": size})))
                .await
                .unwrap();
            assert_eq!(r.content[0].as_text().unwrap().text.len(), size);
        }
    });
    futures::future::join_all(calls).await;
    client.cancel().await.unwrap();
}

/// A raw peer on the other end of a server transport.
struct Raw {
    to: pipe::Sender,
    from: BufReader<pipe::Receiver>,
}

impl Raw {
    async fn send(&mut self, bytes: &[u8]) {
        self.to.write_all(bytes).await.unwrap();
    }

    async fn line(&mut self) -> serde_json::Value {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(10), self.from.read_line(&mut line))
            .await
            .expect("an answer")
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

async fn raw_server() -> Raw {
    let (to, server_rx) = pipe::pipe().unwrap();
    let (server_tx, from) = pipe::pipe().unwrap();
    let transport = LineTransport::<RoleServer>::from_pipes(server_rx, server_tx).unwrap();
    tokio::spawn(async move { Echo.serve(transport).await.unwrap().waiting().await });
    let mut raw = Raw {
        to,
        from: BufReader::new(from),
    };
    raw.send(
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
"#,
    )
    .await;
    assert_eq!(raw.line().await["id"], 0);
    raw.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await;
    raw
}

fn echo_line(id: u32, message: &str) -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"{message}\"}}}}}}\n"
    )
    .into_bytes()
}

#[tokio::test]
async fn bad_lines_are_ignored_or_answered_and_the_connection_survives() {
    let mut raw = raw_server().await;
    // Not JSON: ignored. An oversized line: dropped. Neither is answered.
    raw.send(b"this is not json\n").await;
    let mut big = vec![b'x'; MAX_LINE_LENGTH + 10];
    big.push(b'\n');
    raw.send(&big).await;
    // JSON that is no message: Invalid Request, without an id.
    raw.send(b"{\"jsonrpc\":\"2.0\",\"id\":5}\n").await;
    let invalid = raw.line().await;
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    assert!(invalid.get("id").is_none(), "{invalid}");
    // \r\n line ends and a call split across writes still work.
    let line = echo_line(1, "after");
    raw.send(&line[..20]).await;
    raw.send(&line[20..line.len() - 1]).await;
    raw.send(b"\r\n").await;
    let answer = raw.line().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["content"][0]["text"], "after");
}

#[tokio::test]
async fn many_lines_in_one_write_are_all_answered() {
    let mut raw = raw_server().await;
    let batch: Vec<u8> = (1..=200).flat_map(|i| echo_line(i, "b")).collect();
    raw.send(&batch).await;
    let mut ids: Vec<u64> = Vec::new();
    for _ in 0..200 {
        ids.push(raw.line().await["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..=200).collect::<Vec<u64>>());
}

#[tokio::test]
async fn end_of_input_ends_the_connection() {
    let (to, rx) = pipe::pipe().unwrap();
    let (tx, _from) = pipe::pipe().unwrap();
    let mut transport = LineTransport::<RoleServer>::from_pipes(rx, tx).unwrap();
    drop(to);
    assert!(transport.receive().await.is_none());
    assert!(transport.receive().await.is_none());
}

#[tokio::test]
async fn a_send_after_the_reader_went_fails() {
    let (_to, rx) = pipe::pipe().unwrap();
    let (tx, from) = pipe::pipe().unwrap();
    let mut transport = LineTransport::<RoleClient>::from_pipes(rx, tx).unwrap();
    drop(from);
    let message = || {
        TxJsonRpcMessage::<RoleClient>::notification(
            rmcp::model::InitializedNotification::default().into(),
        )
    };
    // The first send may be queued before the pipe's state is known; the
    // writer then fails, the read side ends, and later sends fail at once.
    let _ = transport.send(message()).await;
    assert!(transport.receive().await.is_none());
    let error = transport.send(message()).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
}

#[tokio::test]
async fn sockets_work_like_pipes() {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let server_side = LineTransport::<RoleServer>::from_socket(a).unwrap();
    let client_side = LineTransport::<RoleClient>::from_socket(b).unwrap();
    tokio::spawn(async move { Echo.serve(server_side).await.unwrap().waiting().await });
    let client = ().serve(client_side).await.unwrap();
    let r = client
        .call_tool(call(serde_json::json!({"message": "sock"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text().unwrap().text, "sock");
    client.cancel().await.unwrap();
}
