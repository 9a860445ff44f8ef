//! The 2026-07-28 era's standard headers (SEP-2243): `Mcp-Method`,
//! `Mcp-Name` and `Mcp-Param-*` are checked against the body on the way
//! in, against the names and schemas the gateway lists; on the way out
//! they are computed again for the upstream, from the upstream's own names.

use extpool_server::GatewayOptions;
use extpool_testkit::{StateDir, stdio_command};
use serde_json::json;

use crate::support::{Project, Served, modern_http_upstream, raw_2026, remote_yaml, server_yaml};

fn modern_stdio_yaml(state: &StateDir) -> String {
    let mut args = state.args();
    args.push("--modern".into());
    server_yaml("testkit", stdio_command(args))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_that_contradict_the_body_are_refused_with_the_mismatch_named() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&modern_stdio_yaml(&state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let url = served.url.as_str();
    let echo = json!({"name": "mcp__testkit__echo", "arguments": {"message": "hi"}});

    let (status, answer) = raw_2026(
        url,
        "tools/call",
        echo.clone(),
        &[
            ("mcp-method", "tools/call"),
            ("mcp-name", "mcp__testkit__add"),
        ],
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "Mcp-Name header `mcp__testkit__add` does not match body value `mcp__testkit__echo`"
        ),
        "{message}"
    );

    let (status, answer) = raw_2026(
        url,
        "tools/call",
        echo.clone(),
        &[
            ("mcp-method", "tools/list"),
            ("mcp-name", "mcp__testkit__echo"),
        ],
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Method header `tools/list` does not match body method `tools/call`"),
        "{answer}"
    );

    // The gateway checks them itself, before rmcp's transport does: its
    // refusal names the method the header should have said.
    let (status, answer) = raw_2026(
        url,
        "tools/call",
        echo.clone(),
        &[("mcp-name", "mcp__testkit__echo")],
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
    assert!(
        answer["error"]["message"].as_str().unwrap().contains(
            "missing required Mcp-Method header: a 2026-07-28 request names its method (`tools/call`)"
        ),
        "{answer}"
    );

    // The gateway's listed schema is what `Mcp-Param-*` is checked against.
    let regional = json!({"name": "mcp__testkit__regional", "arguments": {"region": "eu"}});
    let named = [
        ("mcp-method", "tools/call"),
        ("mcp-name", "mcp__testkit__regional"),
    ];
    let (status, answer) = raw_2026(url, "tools/call", regional.clone(), &named).await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing Mcp-Param-Region header for `region`"),
        "{answer}"
    );
    let wrong = [named[0], named[1], ("mcp-param-region", "us")];
    let (status, answer) = raw_2026(url, "tools/call", regional.clone(), &wrong).await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Param-Region header `us` does not match body value `eu`"),
        "{answer}"
    );

    let right = [named[0], named[1], ("mcp-param-region", "eu")];
    let (status, answer) = raw_2026(url, "tools/call", regional, &right).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "region=eu",
        "{answer}"
    );
    let right = [
        ("mcp-method", "tools/call"),
        ("mcp-name", "mcp__testkit__echo"),
    ];
    let (status, answer) = raw_2026(url, "tools/call", echo, &right).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reaches_a_2026_upstream_under_its_own_names_and_without_the_clients_authorization()
{
    use sha2::Digest;
    let state = StateDir::new();
    let upstream = modern_http_upstream(&state, &[]).await;
    let project = Project::new();
    project.config(&remote_yaml("remote", upstream.url(), "2026-07-28", ""));
    let options = GatewayOptions {
        bearer: Some("client-secret".into()),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let (status, answer) = raw_2026(
        &served.url,
        "tools/call",
        json!({"name": "mcp__remote__regional", "arguments": {"region": "eu"}}),
        &[
            ("authorization", "Bearer client-secret"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "mcp__remote__regional"),
            ("mcp-param-region", "eu"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "region=eu",
        "{answer}"
    );

    // The upstream's rmcp server checked the headers the gateway computed
    // from the call it sent: the upstream's own tool name and its argument.
    let requests = state.requests();
    let calls: Vec<_> = requests
        .iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 1, "{requests:?}");
    let headers = &calls[0]["headers"];
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28", "{headers}");
    assert_eq!(headers["mcp-method"], "tools/call", "{headers}");
    assert_eq!(headers["mcp-name"], "regional", "{headers}");
    assert_eq!(headers["mcp-param-region"], "eu", "{headers}");

    // The client's Authorization header never went upstream.
    let client_token = hex::encode(sha2::Sha256::digest(b"Bearer client-secret"));
    assert!(requests.len() > 1, "startup requests too: {requests:?}");
    assert!(
        requests
            .iter()
            .all(|r| r["authorization_sha256"] != json!(client_token)),
        "{requests:?}"
    );
    assert!(
        requests.iter().all(|r| r["authorization_sha256"].is_null()),
        "no upstream credential is configured: {requests:?}"
    );
    served.stop().await;
}

/// A caller's rules (`permissions.principals`) hide a tool from its
/// headers' check as from its call: a caller that may not call
/// `regional` is not told which `Mcp-Param-*` header the tool wants (its
/// schema), and its call is refused as for any tool it does not see;
/// another caller's headers are checked against the schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_rules_hide_a_tools_header_schema_and_its_call() {
    let data = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", data.path().join("state.db").display());
    let store = extpool_state::StateStore::open_url(&url).await.unwrap();
    let contractor = store
        .create_api_key("contractor", false)
        .await
        .unwrap()
        .secret;
    let staff = store.create_api_key("staff", false).await.unwrap().secret;
    let state = StateDir::new();
    let project = Project::new();
    project.config(&format!(
        "{}permissions:\n  principals:\n    - match: {{sub: contractor}}\n      allow: [\"mcp__testkit__echo\"]\n",
        modern_stdio_yaml(&state)
    ));
    let options = GatewayOptions {
        state: Some(store),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let regional = json!({"name": "mcp__testkit__regional", "arguments": {"region": "eu"}});
    let as_caller = |key: &str| {
        [
            ("mcp-method", "tools/call"),
            ("mcp-name", "mcp__testkit__regional"),
            ("authorization", format!("Bearer {key}").leak()),
        ]
    };

    let (status, answer) = raw_2026(
        &served.url,
        "tools/call",
        regional.clone(),
        &as_caller(&staff),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing Mcp-Param-Region header for `region`"),
        "{answer}"
    );

    let (_, answer) = raw_2026(&served.url, "tools/call", regional, &as_caller(&contractor)).await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.contains("Mcp-Param"), "{answer}");
    assert!(answer["result"].is_null(), "{answer}");
    assert!(message.contains("mcp__testkit__regional"), "{answer}");
    served.stop().await;
}
