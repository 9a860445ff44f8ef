//! Policy has no side doors, through the gateway with the testkit server
//! behind it and rmcp clients in front (which read a rate limit's refusal,
//! HTTP 429, by its status and `Retry-After`): a tool's rate limit holds when
//! the tool is reached through `CallMcpWithQuery`, the limit of every tool
//! counts the gateway's own tools too, and a caller's `allow`
//! list (`permissions.principals`, the caller an API key) covers prompts,
//! resources and the built-ins exactly as the same list does as the
//! gateway's own rule.

use extpool_host::config::{RateLimitsConfig, ToolRateLimit};
use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::ServiceExt;
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams,
    ReadResourceRequestParams, Reference,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::support::{Project, Served, testkit_yaml, within};

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// An MCP client of `served`, presenting `key` when given.
async fn client(served: &Served, key: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(served.url.clone());
    if let Some(key) = key {
        config = config.auth_header(key.to_owned());
    }
    within(().serve(StreamableHttpClientTransport::from_config(config)))
        .await
        .unwrap()
}

/// Calls `name` with `args`: its result, or the JSON-RPC error's code and
/// message — or, for a refusal rmcp read as HTTP 429 (SEP-3304's status:
/// rmcp reads its `Retry-After`, not its body), `429` and that header.
async fn call(client: &Client, name: &str, args: Value) -> Result<Value, (i32, String)> {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().unwrap().clone());
    match within(client.call_tool(params)).await {
        Ok(result) => Ok(serde_json::to_value(result).unwrap()),
        Err(rmcp::ServiceError::McpError(e)) => Err((e.code.0, e.message.to_string())),
        Err(e) => match crate::support::http_status_of(&e) {
            Some((status, retry)) => Err((i32::from(status), retry.unwrap_or_default())),
            None => panic!("{name}: {e}"),
        },
    }
}

/// How many calls `/metrics` counts refused under the limit `label`.
async fn refused_under(served: &Served, label: &str) -> u64 {
    let text = within(
        reqwest::get(format!("{}/metrics", served.base))
            .await
            .unwrap()
            .text(),
    )
    .await
    .unwrap();
    let wanted = format!("extpool_rate_limited_total{{limit=\"{label}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&wanted))
        .map_or(0, |n| n.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_rate_limit_holds_through_call_mcp_with_query() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("kit", &state));
    let options = GatewayOptions {
        rate_limits: RateLimitsConfig {
            tools: vec![ToolRateLimit {
                tools: "mcp__kit__echo".into(),
                calls_per_minute: 1,
                burst: Some(2),
            }],
            ..RateLimitsConfig::default()
        },
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let client = client(&served, None).await;
    let query = |tool: &str| json!({"server": "kit", "tool": tool, "args": {"message": "m", "a": 1, "b": 2}, "jq_filter": "."});
    // A direct call and one through the query share the tool's bucket.
    call(&client, "mcp__kit__echo", json!({"message": "m"}))
        .await
        .unwrap();
    call(&client, "CallMcpWithQuery", query("echo"))
        .await
        .unwrap();
    let (status, retry_after) = call(&client, "CallMcpWithQuery", query("echo"))
        .await
        .unwrap_err();
    assert_eq!(status, 429);
    let seconds: u64 = retry_after.parse().unwrap();
    assert!((50..=60).contains(&seconds), "Retry-After {retry_after}");
    assert_eq!(
        refused_under(
            &served,
            "1 calls to mcp__kit__echo a minute per caller (burst 2)"
        )
        .await,
        1
    );
    assert_eq!(state.counter("fail"), 0);
    // Another tool through the query is not under that limit.
    for _ in 0..3 {
        call(&client, "CallMcpWithQuery", query("add"))
            .await
            .unwrap();
    }
    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateways_own_tools_count_against_the_limit_of_every_tool() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("kit", &state));
    let options = GatewayOptions {
        rate_limits: RateLimitsConfig {
            calls_per_minute: Some(1),
            burst: Some(2),
            ..RateLimitsConfig::default()
        },
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let client = client(&served, None).await;
    call(&client, "ListMcpSources", json!({})).await.unwrap();
    call(&client, "RefreshMcpSources", json!({})).await.unwrap();
    let (status, retry_after) = call(&client, "ListMcpSources", json!({}))
        .await
        .unwrap_err();
    assert_eq!(status, 429);
    let seconds: u64 = retry_after.parse().unwrap();
    assert!((50..=60).contains(&seconds), "Retry-After {retry_after}");
    assert_eq!(
        refused_under(&served, "1 tool calls a minute per caller (burst 2)").await,
        1
    );
    client.cancel().await.unwrap();
    served.stop().await;
}

/// What a caller can reach of prompts, resources and the built-ins, each
/// as whether it was answered (or, for lists, the names listed).
async fn reach(client: &Client) -> Value {
    let mut tools: Vec<String> = within(client.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    tools.sort();
    let mut prompts: Vec<String> = within(client.list_all_prompts())
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    prompts.sort();
    let mut greet = GetPromptRequestParams::new("mcp__kit__greet");
    greet.arguments = json!({"name": "ann"}).as_object().cloned();
    let prompt = within(client.get_prompt(greet)).await.is_ok();
    let completed = within(client.complete(CompleteRequestParams::new(
        Reference::for_prompt("mcp__kit__greet"),
        ArgumentInfo::new("name", "a"),
    )))
    .await
    .is_ok();
    let read = within(client.read_resource(ReadResourceRequestParams::new("testkit://info")))
        .await
        .is_ok();
    let mut built_ins = serde_json::Map::new();
    for (name, args) in [
        ("ListMcpResources", json!({})),
        (
            "ReadMcpResource",
            json!({"server": "kit", "uri": "testkit://info"}),
        ),
        (
            "CallMcpWithQuery",
            json!({"server": "kit", "tool": "echo", "args": {"message": "m"}, "jq_filter": "."}),
        ),
        // Refused by the address policy at once, when reached.
        ("FetchMcpResource", json!({"url": "https://127.0.0.1/"})),
    ] {
        // Answered (a tool error of the built-in's own included), or
        // refused as a name the caller may not call.
        let answered = match call(client, name, args).await {
            Ok(_) => "answered".to_owned(),
            Err((code, _)) => format!("refused {code}"),
        };
        built_ins.insert(name.to_owned(), Value::String(answered));
    }
    json!({
        "tools": tools, "prompts": prompts, "prompt": prompt, "complete": completed,
        "protocol_read": read, "built_ins": built_ins,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_allow_list_covers_prompts_resources_and_built_ins_as_the_gateways_does() {
    // The gateway's own rule: every caller gets what it allows.
    let state = StateDir::new();
    let project = Project::new();
    project.config(&format!(
        "{}permissions:\n  allow: [\"mcp__kit__echo\"]\n  default: deny\n",
        testkit_yaml("kit", &state)
    ));
    let served = Served::start(project, GatewayOptions::default()).await;
    let everyone = client(&served, None).await;
    let gateways = reach(&everyone).await;
    everyone.cancel().await.unwrap();
    served.stop().await;
    assert_eq!(gateways["prompts"], json!([]), "{gateways}");
    assert_eq!(gateways["prompt"], false, "{gateways}");

    // The same list for one caller.
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
        "{}permissions:\n  principals:\n    - match: {{sub: contractor}}\n      allow: [\"mcp__kit__echo\"]\n",
        testkit_yaml("kit", &state)
    ));
    let options = GatewayOptions {
        state: Some(store),
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let theirs = client(&served, Some(&contractor)).await;
    let callers = reach(&theirs).await;
    theirs.cancel().await.unwrap();
    assert_eq!(callers, gateways);

    // Another caller is under the gateway's rules only.
    let others = client(&served, Some(&staff)).await;
    let other = reach(&others).await;
    others.cancel().await.unwrap();
    assert_eq!(other["prompt"], true, "{other}");
    assert_eq!(other["built_ins"]["ReadMcpResource"], "answered", "{other}");
    assert!(
        other["prompts"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__kit__greet")),
        "{other}"
    );
    served.stop().await;
}
