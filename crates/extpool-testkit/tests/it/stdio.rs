//! The test server over stdio: every tool, resource and prompt through a
//! real rmcp client, and the process exiting when stdin closes.

use std::process::Stdio;

use base64::{Engine, prelude::BASE64_STANDARD};
use rmcp::{
    ServiceExt,
    model::{ContentBlock, GetPromptRequestParams, ReadResourceRequestParams, ResourceContents},
    service::ServiceError,
};
use serde_json::json;

use crate::common::{
    BUILTIN_TOOL_COUNT, NO_ARGS, args, call, call_text, connect_stdio, connect_tokio_command,
    text_of, within,
};

const BUILTIN_TOOLS: [&str; BUILTIN_TOOL_COUNT] = [
    "echo",
    "add",
    "counter",
    "count",
    "fail",
    "tool_error",
    "sleep",
    "barrier",
    "crash",
    "add_tool",
    "add_resource",
    "add_prompt",
    "notify",
    "http_status",
    "large_text",
    "structured",
    "nested",
    "json_block",
    "mixed_content",
    "env",
    "stderr",
    "sample",
    "elicit",
];

#[tokio::test]
async fn stdio_lists_every_tool_with_an_input_schema() {
    let (client, _) = connect_stdio(&[]).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, BUILTIN_TOOLS);
    for tool in &tools {
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name
        );
    }
    let echo = &tools[0];
    assert_eq!(echo.input_schema.get("required"), Some(&json!(["message"])));
    let structured = tools.iter().find(|t| t.name == "structured").unwrap();
    assert!(structured.output_schema.is_some());
    let info = client.peer_info().unwrap();
    assert_eq!(
        info.server_info.as_ref().unwrap().name,
        "extpool-testkit-server"
    );
}

#[tokio::test]
async fn stdio_echo_add_and_counters() {
    let (client, _) = connect_stdio(&[]).await;
    assert_eq!(
        call_text(&client, "echo", json!({"message": "hi there"})).await,
        "hi there"
    );
    assert_eq!(
        call_text(&client, "add", json!({"a": 2, "b": 40})).await,
        "42"
    );
    assert_eq!(
        call_text(&client, "add", json!({"a": 1.5, "b": 2})).await,
        "3.5"
    );
    assert_eq!(call_text(&client, "counter", json!({})).await, "1");
    assert_eq!(
        call_text(&client, "counter", json!({"key": "default"})).await,
        "2"
    );
    assert_eq!(
        call_text(&client, "counter", json!({"key": "other"})).await,
        "1"
    );
    assert_eq!(
        call_text(&client, "count", json!({"key": "default"})).await,
        "2"
    );
    assert_eq!(
        call_text(&client, "count", json!({"key": "never"})).await,
        "0"
    );
}

#[tokio::test]
async fn stdio_fail_is_a_json_rpc_error_and_tool_error_a_tool_result() {
    let (client, _) = connect_stdio(&[]).await;
    match call(&client, "fail", json!({"message": "boom"})).await {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32603);
            assert_eq!(e.message, "boom");
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
    assert_eq!(
        call_text(&client, "count", json!({"key": "fail"})).await,
        "1"
    );

    let result = call(&client, "tool_error", json!({"message": "bad input"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_of(&result), "bad input");
}

#[tokio::test]
async fn stdio_bad_arguments_are_invalid_params() {
    let (client, _) = connect_stdio(&[]).await;
    for (tool, arguments) in [
        ("echo", json!({})),
        ("add", json!({"a": "x", "b": 1})),
        ("counter", json!({"key": "../escape"})),
        ("large_text", json!({"bytes": -1})),
        ("no_such_tool", json!({})),
    ] {
        match call(&client, tool, arguments).await {
            Err(ServiceError::McpError(e)) => assert_eq!(e.code.0, -32602, "{tool}: {e:?}"),
            other => panic!("{tool}: expected invalid params, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn stdio_large_structured_and_json_results() {
    let (client, _) = connect_stdio(&[]).await;
    let big = call_text(&client, "large_text", json!({"bytes": 100_000})).await;
    assert_eq!(big.len(), 100_000);
    assert_eq!(
        call_text(&client, "large_text", json!({"bytes": 0})).await,
        ""
    );

    let expected = json!({"items": [{"id": 0, "name": "item-0"}, {"id": 1, "name": "item-1"}]});
    let structured = call(&client, "structured", json!({"count": 2}))
        .await
        .unwrap();
    assert_eq!(structured.structured_content, Some(expected.clone()));
    let text: serde_json::Value = serde_json::from_str(&text_of(&structured)).unwrap();
    assert_eq!(text, expected);

    let block = call(&client, "json_block", json!({"count": 2}))
        .await
        .unwrap();
    assert_eq!(block.structured_content, None);
    let doc: serde_json::Value = serde_json::from_str(&text_of(&block)).unwrap();
    assert_eq!(doc, expected);
}

#[tokio::test]
async fn stdio_nested_builds_documents_of_any_depth() {
    let (client, _) = connect_stdio(&[]).await;
    let nested = call(&client, "nested", json!({"depth": 3})).await.unwrap();
    assert_eq!(
        nested.structured_content,
        Some(json!({"a": {"a": {"a": {}}}}))
    );
    // 20,000 is the most (extpool-mcp's tests read 10,000 levels from it).
    let err = call(&client, "nested", json!({"depth": 20_001}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("at most 20000"), "{err}");
    assert_eq!(
        call_text(&client, "echo", json!({"message": "up"})).await,
        "up"
    );
}

#[tokio::test]
async fn stdio_mixed_content_keeps_every_part_in_order() {
    let (client, _) = connect_stdio(&[]).await;
    let result = call(&client, "mixed_content", json!({})).await.unwrap();
    let kinds: Vec<&str> = result
        .content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            ContentBlock::Resource(_) => "resource",
            ContentBlock::ResourceLink(_) => "resource_link",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["text", "image", "audio", "resource", "resource_link"]
    );
    let image = result.content[1].as_image().unwrap();
    assert_eq!(image.mime_type, "image/png");
    let png = BASE64_STANDARD.decode(&image.data).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let audio = result.content[2].as_audio().unwrap();
    assert_eq!(audio.mime_type, "audio/wav");
    let wav = BASE64_STANDARD.decode(&audio.data).unwrap();
    assert_eq!(&wav[..4], b"RIFF");
    assert_eq!(
        result.content[4].as_resource_link().unwrap().uri,
        "testkit://info"
    );
}

#[tokio::test]
async fn stdio_env_and_stderr_tools() {
    let mut command = extpool_testkit::stdio_command(NO_ARGS).tokio_command();
    command.env("EXTPOOL_TESTKIT_PROBE", "probe-value");
    command.env_remove("EXTPOOL_TESTKIT_UNSET");
    let log = tempfile::NamedTempFile::new().unwrap();
    let stderr = Stdio::from(log.reopen().unwrap());
    let (client, _) = connect_tokio_command(command, stderr).await;
    assert_eq!(
        call_text(&client, "env", json!({"name": "EXTPOOL_TESTKIT_PROBE"})).await,
        "probe-value"
    );
    assert_eq!(
        call_text(&client, "env", json!({"name": "EXTPOOL_TESTKIT_UNSET"})).await,
        "<unset>"
    );
    assert_eq!(
        call_text(&client, "stderr", json!({"message": "to-stderr-marker"})).await,
        "ok"
    );
    // The tool writes and flushes the line before it answers.
    let written = std::fs::read_to_string(log.path()).unwrap();
    assert!(written.contains("to-stderr-marker"), "{written}");
}

#[tokio::test]
async fn stdio_reads_text_binary_and_skill_resources() {
    let (client, _) = connect_stdio(&[]).await;
    let resources = within(client.list_all_resources()).await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "testkit://info",
            "testkit://blob",
            "skill://testkit-skill/SKILL.md",
            "skill://testkit-skill/references/guide.md"
        ]
    );

    let info = within(client.read_resource(ReadResourceRequestParams::new("testkit://info")))
        .await
        .unwrap();
    match &info.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => assert!(text.contains("testkit")),
        other => panic!("expected text, got {other:?}"),
    }
    let blob = within(client.read_resource(ReadResourceRequestParams::new("testkit://blob")))
        .await
        .unwrap();
    match &blob.contents[0] {
        ResourceContents::BlobResourceContents {
            blob, mime_type, ..
        } => {
            assert_eq!(mime_type.as_deref(), Some("image/png"));
            assert_eq!(&BASE64_STANDARD.decode(blob).unwrap()[1..4], b"PNG");
        }
        other => panic!("expected a blob, got {other:?}"),
    }
    let skill = within(client.read_resource(ReadResourceRequestParams::new(
        "skill://testkit-skill/SKILL.md",
    )))
    .await
    .unwrap();
    match &skill.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => {
            assert!(text.starts_with("---\nname: testkit-skill\n"));
        }
        other => panic!("expected text, got {other:?}"),
    }
    let missing =
        within(client.read_resource(ReadResourceRequestParams::new("testkit://nope"))).await;
    assert!(
        matches!(missing, Err(ServiceError::McpError(_))),
        "{missing:?}"
    );
}

#[tokio::test]
async fn stdio_prompts_take_arguments() {
    let (client, _) = connect_stdio(&[]).await;
    let prompts = within(client.list_all_prompts()).await.unwrap();
    let greet = prompts.iter().find(|p| p.name == "greet").unwrap();
    let arguments = greet.arguments.as_ref().unwrap();
    assert_eq!(arguments[0].name, "name");
    assert_eq!(arguments[0].required, Some(true));
    assert_eq!(arguments[1].name, "style");
    assert_eq!(arguments[1].required, Some(false));
    assert!(prompts.iter().any(|p| p.name == "summarize"));

    let get = |name: &'static str, a: serde_json::Value| {
        client.get_prompt(GetPromptRequestParams::new(name).with_arguments(args(a)))
    };
    let plain = within(get("greet", json!({"name": "Ada"}))).await.unwrap();
    assert_eq!(plain.messages.len(), 1);
    let text = |r: &rmcp::model::GetPromptResult| match &r.messages[0].content {
        ContentBlock::Text(t) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    };
    assert_eq!(text(&plain), "Hello, Ada!");
    let styled = within(get("greet", json!({"name": "Ada", "style": "formal"})))
        .await
        .unwrap();
    assert_eq!(text(&styled), "Hello, Ada! (style: formal)");
    let summary = within(get("summarize", json!({"topic": "MCP"})))
        .await
        .unwrap();
    assert_eq!(text(&summary), "Please summarize MCP.");
    assert!(within(get("greet", json!({}))).await.is_err());
}

#[tokio::test]
async fn stdio_server_exits_when_stdin_closes() {
    let mut child = extpool_testkit::stdio_command(NO_ARGS)
        .tokio_command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let client = within(().serve((stdout, stdin))).await.unwrap();
    assert_eq!(
        within(client.list_all_tools()).await.unwrap().len(),
        BUILTIN_TOOLS.len()
    );
    // Closing the client closes the server's stdin; nothing else is sent.
    within(client.cancel()).await.unwrap();
    let status = within(child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
}

/// Clients that start servers with socket pairs for stdio (Python's
/// asyncio, libuv) get the same service: the server makes the socket
/// non-blocking and serves it like a pipe.
#[tokio::test]
async fn stdio_server_serves_a_socket_pair() {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let stdout = theirs.try_clone().unwrap();
    let child = extpool_testkit::stdio_command(NO_ARGS)
        .tokio_command()
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(stdout)))
        .stderr(Stdio::piped())
        .env("RUST_LOG", "info")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    ours.set_nonblocking(true).unwrap();
    let client = within(().serve(tokio::net::UnixStream::from_std(ours).unwrap()))
        .await
        .unwrap();
    let echo = within(
        client.call_tool(
            rmcp::model::CallToolRequestParams::new("echo")
                .with_arguments(args(json!({"message": "over a socket"}))),
        ),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&echo), "over a socket");
    within(client.cancel()).await.unwrap();
    let out = within(child.wait_with_output()).await.unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("nonblocking=true"), "{log}");
}

/// The real server process over pipes: a line that is not JSON is ignored,
/// JSON that is no message is answered with Invalid Request, and calls
/// before and after both work.
#[tokio::test]
async fn stdio_server_survives_bad_lines() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = extpool_testkit::stdio_command(NO_ARGS)
        .tokio_command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answer = async || -> serde_json::Value {
        let line = within(stdout.next_line()).await.unwrap().expect("a line");
        serde_json::from_str(&line).unwrap()
    };
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\nnot json at all\n",
                r#"{"jsonrpc":"2.0","id":2}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"still here"}}}"#,
                "\n",
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(answer().await["id"], 1);
    let invalid = answer().await;
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    let echo = answer().await;
    assert_eq!(echo["id"], 3, "{echo}");
    assert_eq!(echo["result"]["content"][0]["text"], "still here");
    drop(stdin);
    let status = within(child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
}
