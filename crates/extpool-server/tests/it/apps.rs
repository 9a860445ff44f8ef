//! MCP Apps (SEP-1865, `io.modelcontextprotocol/ui`) through the gateway:
//! a tool's `_meta.ui` reaches the client as its server listed it, the
//! `ui://` view it names reads through the gateway as the server serves
//! it (its `_meta.ui`, CSP and permissions, in the listing and the read),
//! a tool only its app may call is kept from the model's list but answers
//! a call, and the extension is declared to clients only when an upstream
//! server declares it.

use extpool_server::GatewayOptions;
use extpool_testkit::StdioCommand;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

use crate::support::{
    Project, Sdk, Served, SessionEra, sdk_client, sdk_client_with, server_yaml, within,
};

/// The MCP Apps extension's identifier.
const UI: &str = "io.modelcontextprotocol/ui";

/// The tool definitions of a `list_tools` step run with `"whole": true`.
fn definitions(line: &Value) -> &[Value] {
    line["definitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no definitions in {line}"))
}

/// The one definition in `listed` whose `_meta.ui` names a view, and that view's URI.
fn app_tool(listed: &[Value]) -> (&Value, String) {
    let tool = listed
        .iter()
        .find(|t| t["_meta"]["ui"]["resourceUri"].is_string())
        .unwrap_or_else(|| panic!("no tool with _meta.ui.resourceUri in {listed:?}"));
    let uri = tool["_meta"]["ui"]["resourceUri"]
        .as_str()
        .unwrap()
        .to_owned();
    (tool, uri)
}

/// Runs `steps` with the TypeScript SDK client straight against `server`
/// over stdio, without the gateway.
async fn directly(server: StdioCommand, steps: Value) -> Vec<Value> {
    let (program, args) = server.into_parts();
    let mut connect = vec!["--stdio".to_owned(), program.display().to_string()];
    connect.extend(args.iter().map(|a| a.to_string()));
    let connect: Vec<&str> = connect.iter().map(String::as_str).collect();
    sdk_client_with(Sdk::TypeScript, &connect, steps).await
}

/// The official MCP Apps example server behind the gateway: its `get-time`
/// tool is listed with the `_meta` it lists itself, and the view its
/// `_meta.ui.resourceUri` names reads through the gateway as the same HTML
/// the server serves directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apps_tool_and_its_view_reach_the_client_as_the_server_serves_them() {
    let server = extpool_testkit::peers::server_basic_vanillajs();
    let project = Project::new();
    project.config(&server_yaml("clock", server.clone()));
    let served = Served::start(project, GatewayOptions::default()).await;

    let own = directly(server.clone(), json!([{"op": "list_tools", "whole": true}])).await;
    let (own_tool, own_uri) = app_tool(definitions(&own[1]));
    let listed = sdk_client(
        Sdk::TypeScript,
        &served.url,
        json!([{"op": "list_tools", "whole": true}]),
    )
    .await;
    let (tool, uri) = app_tool(definitions(&listed[1]));
    assert_eq!(tool["name"], "mcp__clock__get-time");
    assert_eq!(
        tool["_meta"], own_tool["_meta"],
        "_meta as the server lists it"
    );
    assert_eq!(uri, own_uri);
    assert!(uri.starts_with("ui://"), "{uri}");

    let read = json!([{"op": "read", "uri": uri, "whole": true}]);
    let through = sdk_client(Sdk::TypeScript, &served.url, read.clone()).await;
    let served_directly = directly(server, read).await;
    let html = served_directly[1]["text"][0].as_str().unwrap();
    assert!(
        html.contains("<html"),
        "not HTML: {}",
        &html[..html.len().min(200)]
    );
    assert_eq!(through[1]["text"], served_directly[1]["text"]);
    assert_eq!(
        through[1]["contents"][0]["mimeType"],
        served_directly[1]["contents"][0]["mimeType"]
    );
    assert_eq!(through[1]["contents"][0]["uri"], json!(uri));
    served.stop().await;
}

/// Tools of a testkit server with an MCP App: `show` for the model and its
/// app, `refresh` for its app only, `plain` without `_meta`.
fn app_tools() -> Value {
    let schema = json!({"type": "object"});
    json!([
        {"name": "show", "description": "Shows the board.", "inputSchema": schema,
         "_meta": {"ui": {"resourceUri": "ui://board/view.html", "visibility": ["model", "app"]}}},
        {"name": "refresh", "description": "Refreshes the board's view.", "inputSchema": schema,
         "_meta": {"ui": {"resourceUri": "ui://board/view.html", "visibility": ["app"]}}},
        {"name": "plain", "description": "No app.", "inputSchema": schema}
    ])
}

/// The `_meta` of the board's view: what its sandbox may reach.
fn view_meta() -> Value {
    json!({"ui": {
        "csp": {"connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://cdn.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": true
    }})
}

/// The board's view as listed (`resources`) and as read (`contents`).
fn view_lists() -> Value {
    let mime = "text/html;profile=mcp-app";
    json!({
        "resources": [{"uri": "ui://board/view.html", "name": "board", "mimeType": mime,
                       "_meta": view_meta()}],
        "contents": [{"uri": "ui://board/view.html", "mimeType": mime,
                      "text": "<!doctype html><html><body>board</body></html>",
                      "_meta": view_meta()}]
    })
}

/// A project whose server `board` is the testkit serving [`app_tools`]
/// and the view of [`view_lists`], with `extra` flags.
fn board(extra: &[&str]) -> Project {
    let project = Project::new();
    let file = project.path().join("tools.json");
    std::fs::write(&file, app_tools().to_string()).unwrap();
    let lists = project.path().join("lists.json");
    std::fs::write(&lists, view_lists().to_string()).unwrap();
    let mut args = vec![
        "--tools-file".to_owned(),
        file.display().to_string(),
        "--lists-file".to_owned(),
        lists.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    project.config(&server_yaml("board", extpool_testkit::stdio_command(args)));
    project
}

/// A tool whose `_meta.ui.visibility` leaves out `"model"` is not in the
/// model's `tools/list` but answers a call by its name; the tools the
/// model may see keep their `_meta.ui` whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_only_tool_is_not_listed_but_answers_a_call() {
    let served = Served::start(board(&[]), GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "list_tools", "whole": true},
            {"op": "call", "name": "mcp__board__refresh"}
        ]),
    )
    .await;
    let names = out[1]["tools"].as_array().unwrap();
    assert!(names.contains(&json!("mcp__board__show")), "{names:?}");
    assert!(names.contains(&json!("mcp__board__plain")), "{names:?}");
    assert!(
        !names.contains(&json!("mcp__board__refresh")),
        "an app-only tool listed: {names:?}"
    );
    let show = definitions(&out[1])
        .iter()
        .find(|t| t["name"] == "mcp__board__show")
        .unwrap();
    assert_eq!(show["_meta"], app_tools()[0]["_meta"]);
    assert_eq!(out[2]["is_error"], false, "{}", out[2]);
    assert_eq!(out[2]["text"], json!(["called refresh with {}"]));
    served.stop().await;
}

/// With tool search, an app-only tool is neither named in the search
/// tool's listing of deferred tools nor found by a search that matches
/// its description best; it still answers a call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_search_never_offers_an_app_only_tool() {
    let options = GatewayOptions {
        tool_search: Some(extpool_host::DeferralConfig {
            budget_bytes: 1,
            ..extpool_host::DeferralConfig::default()
        }),
        ..GatewayOptions::default()
    };
    let served = Served::start(board(&[]), options).await;
    let out = sdk_client(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "list_tools", "whole": true},
            {"op": "call", "name": "ToolSearch", "args": {"query": "refreshes the board's view"}},
            {"op": "call", "name": "mcp__board__refresh"}
        ]),
    )
    .await;
    let search = definitions(&out[1])
        .iter()
        .find(|t| t["name"] == "ToolSearch")
        .unwrap_or_else(|| panic!("no ToolSearch: {}", out[1]));
    let listing = search["description"].as_str().unwrap();
    assert!(listing.contains("mcp__board__show"), "{listing}");
    assert!(!listing.contains("mcp__board__refresh"), "{listing}");
    let found = out[2]["text"][0].as_str().unwrap();
    assert!(found.contains("mcp__board__"), "nothing found: {found}");
    assert!(!found.contains("mcp__board__refresh"), "{found}");
    assert_eq!(
        out[3]["text"],
        json!(["called refresh with {}"]),
        "{}",
        out[3]
    );
    served.stop().await;
}

/// Behind `--unprefixed`, an app-only tool answers the name its app knows
/// it by, its server's own, and is still not listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_only_tool_of_an_unprefixed_server_answers_its_own_name() {
    let options = GatewayOptions {
        unprefixed: vec!["board".into()],
        ..GatewayOptions::default()
    };
    let served = Served::start(board(&[]), options).await;
    let out = sdk_client(
        Sdk::TypeScript,
        &served.url,
        json!([{"op": "list_tools"}, {"op": "call", "name": "refresh"}]),
    )
    .await;
    let names = out[1]["tools"].as_array().unwrap();
    assert!(names.contains(&json!("show")), "{names:?}");
    assert!(!names.contains(&json!("refresh")), "{names:?}");
    assert_eq!(
        out[2]["text"],
        json!(["called refresh with {}"]),
        "{}",
        out[2]
    );
    served.stop().await;
}

/// A view's `_meta.ui` (its CSP, permissions, border) reaches the client
/// as its server sent it, in `resources/list` and in `resources/read`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_views_csp_and_permissions_reach_the_client_as_its_server_sent_them() {
    let served = Served::start(board(&[]), GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::TypeScript,
        &served.url,
        json!([
            {"op": "list_resources", "whole": true},
            {"op": "read", "uri": "ui://board/view.html", "whole": true}
        ]),
    )
    .await;
    let view = definitions(&out[1])
        .iter()
        .find(|r| r["uri"] == "ui://board/view.html")
        .unwrap_or_else(|| panic!("the view is not listed: {}", out[1]));
    assert_eq!(view["_meta"], view_meta());
    assert_eq!(out[2]["contents"], view_lists()["contents"]);
    served.stop().await;
}

/// The settings of the MCP Apps extension in the capabilities a session
/// client of `served` is given, if declared.
async fn ui_extension(served: &Served) -> Option<Value> {
    let client =
        within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
            .await
            .unwrap();
    let declared = client
        .peer_info()
        .and_then(|info| info.capabilities.extensions.clone())
        .and_then(|extensions| extensions.get(UI).cloned())
        .map(Value::Object);
    let _ = client.cancel().await;
    declared
}

/// The gateway declares `io.modelcontextprotocol/ui`, with its server's
/// settings, when a server behind it declares it, and not otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_extension_is_declared_only_when_a_server_declares_it() {
    let declaring = Served::start(board(&["--ui-extension"]), GatewayOptions::default()).await;
    assert_eq!(
        ui_extension(&declaring).await,
        Some(json!({"mimeTypes": ["text/html;profile=mcp-app"]}))
    );
    declaring.stop().await;
    let silent = Served::start(board(&[]), GatewayOptions::default()).await;
    assert_eq!(ui_extension(&silent).await, None);
    silent.stop().await;
}

/// A testkit server entry `name` serving `tools` (none: its own) and
/// `lists`, its files written in `project`.
fn server_with(project: &Project, name: &str, tools: Option<Value>, lists: Value) -> String {
    let mut args = Vec::new();
    if let Some(tools) = tools {
        let file = project.path().join(format!("{name}-tools.json"));
        std::fs::write(&file, tools.to_string()).unwrap();
        args.extend(["--tools-file".to_owned(), file.display().to_string()]);
    }
    let file = project.path().join(format!("{name}-lists.json"));
    std::fs::write(&file, lists.to_string()).unwrap();
    args.extend(["--lists-file".to_owned(), file.display().to_string()]);
    server_yaml(name, extpool_testkit::stdio_command(args))
}

/// Lists that claim the board's view URI with other HTML.
fn impostor_lists() -> Value {
    let mime = "text/html;profile=mcp-app";
    json!({
        "resources": [{"uri": "ui://board/view.html", "name": "board", "mimeType": mime}],
        "contents": [{"uri": "ui://board/view.html", "mimeType": mime,
                      "text": "<html><body>impostor</body></html>"}]
    })
}

/// The text `client` reads at `uri` through the gateway, or its error.
async fn read_text(
    client: &extpool_testkit::client::RawClient,
    uri: &str,
) -> Result<String, String> {
    let read = within(client.read_resource(rmcp::model::ReadResourceRequestParams::new(uri))).await;
    match read {
        Ok(read) => Ok(serde_json::to_value(read).unwrap()["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// A `ui://` view is read from the server whose tool names it: another
/// server listed first that lists the same URI (with its own HTML) is
/// never asked for it. Named by tools of two servers, the view is read
/// from neither, and the error says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_is_read_from_the_server_whose_tool_names_it() {
    let project = Project::new();
    let impostor = server_with(&project, "aaa", None, impostor_lists());
    let board = server_with(&project, "board", Some(app_tools()), view_lists());
    project.config(&format!("{impostor}{board}"));
    let served = Served::start(project, GatewayOptions::default()).await;
    let client = extpool_testkit::client::connect_http(&served.url)
        .await
        .unwrap();
    let html = read_text(&client, "ui://board/view.html").await;
    assert_eq!(
        html.as_deref(),
        Ok("<!doctype html><html><body>board</body></html>"),
        "read from the server whose tool names it"
    );
    client.cancel().await.unwrap();
    served.stop().await;

    // A second server whose tool names the same view: neither is read.
    let project = Project::new();
    let claims = json!([{"name": "show", "description": "Shows another board.",
        "inputSchema": {"type": "object"},
        "_meta": {"ui": {"resourceUri": "ui://board/view.html"}}}]);
    let impostor = server_with(&project, "aaa", Some(claims), impostor_lists());
    let board = server_with(&project, "board", Some(app_tools()), view_lists());
    project.config(&format!("{impostor}{board}"));
    let served = Served::start(project, GatewayOptions::default()).await;
    let client = extpool_testkit::client::connect_http(&served.url)
        .await
        .unwrap();
    let refused = read_text(&client, "ui://board/view.html")
        .await
        .unwrap_err();
    assert!(
        refused.contains("ui://board/view.html")
            && refused.contains("aaa")
            && refused.contains("board"),
        "{refused}"
    );
    client.cancel().await.unwrap();
    served.stop().await;
}
