use super::*;

/// Every line the fast path decodes must decode to the same message through rmcp.
pub(super) fn same_as_rmcp<R: FastDecode>(line: &str) -> bool {
    let fast = fast::<R>(line.as_bytes());
    let slow = serde_json::from_slice::<RxJsonRpcMessage<R>>(line.as_bytes());
    match (fast, slow) {
        (Some(fast), Ok(slow)) => {
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&slow).unwrap(),
                "{line}"
            );
            // The same variant, not only the same JSON.
            assert_eq!(
                std::mem::discriminant(&fast),
                std::mem::discriminant(&slow),
                "{line}"
            );
            true
        }
        (Some(fast), Err(e)) => panic!("fast path decoded {fast:?}, rmcp failed ({e}): {line}"),
        (None, _) => false,
    }
}

fn variant_name<T: std::fmt::Debug>(value: &T) -> String {
    let debug = format!("{value:?}");
    debug.split('(').next().unwrap_or_default().to_owned()
}

pub(super) const SERVER_SIDE: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
    r#"{"id":"a-1","method":"tools/call","jsonrpc":"2.0","params":{"name":"echo","arguments":{},"_meta":{"progressToken":7}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"c"}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"testkit://info"}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"resources/list","params":{}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"x"}}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"prompts/list"}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"total":2}}"#,
    r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"nope"}}"#,
    r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}"#,
];

pub(super) const CLIENT_SIDE: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"a":1}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":null,"content":[]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"k":"v"},"resultType":"complete"}}"#,
    r#"{"jsonrpc":"2.0","id":"s","result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a://b"}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r"}}"#,
    r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"boom","data":{"x":1}}}"#,
];

#[test]
fn fast_path_decodes_hot_messages_as_rmcp_does() {
    for line in SERVER_SIDE {
        assert!(
            same_as_rmcp::<RoleServer>(line),
            "not on the fast path: {line}"
        );
    }
    for line in CLIENT_SIDE {
        assert!(
            same_as_rmcp::<RoleClient>(line),
            "not on the fast path: {line}"
        );
    }
}

/// Results whose variant is not certain from their members alone, and
/// requests the fast path does not know, are left to rmcp.
#[test]
fn uncertain_messages_take_rmcp_path() {
    let client = [
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"task":{"taskId":"t"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"input_required"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    ];
    for line in client {
        assert!(!same_as_rmcp::<RoleClient>(line), "{line}");
        assert!(matches!(
            decode::<RoleClient>(line.as_bytes()),
            Decoded::Message(_)
        ));
    }
    let server = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"x/custom","params":{"a":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"echo"}}"#,
    ];
    for line in server {
        assert!(!same_as_rmcp::<RoleServer>(line), "{line}");
        assert!(matches!(
            decode::<RoleServer>(line.as_bytes()),
            Decoded::Message(_)
        ));
    }
}

/// A `tools/call` with bad params is what rmcp makes of it (a custom
/// request), not a fast-path error.
#[test]
fn bad_params_decode_like_rmcp() {
    let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#;
    let Decoded::Message(message) = decode::<RoleServer>(line) else {
        panic!("not decoded")
    };
    let JsonRpcMessage::Request(request) = message else {
        panic!("not a request")
    };
    assert_eq!(variant_name(&request.request), "CustomRequest");
}

#[test]
fn malformed_lines_are_classified_as_rmcp_does() {
    // Not JSON: ignored.
    for line in ["hello", "{\"jsonrpc\":", "{]"] {
        assert!(
            matches!(decode::<RoleServer>(line.as_bytes()), Decoded::Skip),
            "{line}"
        );
    }
    // JSON that is no message: answered with Invalid Request.
    for line in [
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"[1,2]"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
    ] {
        assert!(
            matches!(decode::<RoleServer>(line.as_bytes()), Decoded::Invalid),
            "{line}"
        );
    }
    // Notifications outside MCP (LSP, vendor extensions) pass as custom
    // notifications; when they are not even valid JSON-RPC, they are ignored.
    for line in [
        r#"{"jsonrpc":"2.0","method":"$/progress","params":{"x":1}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/vendor/thing","params":{"x":[1]}}"#,
    ] {
        assert!(
            matches!(decode::<RoleClient>(line.as_bytes()), Decoded::Message(_)),
            "{line}"
        );
    }
    for line in [
        r#"{"method":"$/progress","params":{"x":1}}"#,
        r#"{"jsonrpc":"1.0","method":"notifications/vendor/thing"}"#,
    ] {
        assert!(
            matches!(decode::<RoleClient>(line.as_bytes()), Decoded::Skip),
            "{line}"
        );
    }
    // A byte order mark is allowed.
    let bom = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}";
    assert!(matches!(decode::<RoleServer>(bom), Decoded::Message(_)));
}

#[test]
fn key_check_sees_every_member() {
    assert!(object_keys_within(r#"{"a":1,"b":[{"c":2}]}"#, &["a", "b"]));
    assert!(!object_keys_within(r#"{"a":1,"c":2}"#, &["a", "b"]));
    assert!(!object_keys_within("[1]", &["a"]));
    assert!(object_keys_within("{}", &["a"]));
}

#[test]
fn a_client_message_reads_as_rmcp_reads_it_on_either_path() {
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    // Not a `tools/call` rmcp can type: it reads it as a custom request.
    let untyped = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#;
    for line in SERVER_SIDE.iter().chain([&initialize, &untyped]) {
        let read = client_message(line.as_bytes()).expect(line);
        let rmcp = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line.as_bytes()).unwrap();
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(&rmcp).unwrap(),
            "{line}"
        );
        assert_eq!(
            std::mem::discriminant(&read),
            std::mem::discriminant(&rmcp),
            "{line}"
        );
    }
    // What rmcp cannot read is an error here too.
    let wrong = r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#;
    assert!(client_message(wrong.as_bytes()).is_err());
    assert!(serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(wrong.as_bytes()).is_err());
}
