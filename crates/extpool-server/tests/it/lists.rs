//! Lists in a stated order (tools and prompts by listed name, resources,
//! templates and skills by URI), the same across calls, sessions and
//! protocol eras; and the cache policy: every list and read says
//! `ttlMs: 0`, `cacheScope: "private"`, `resultType: "complete"`.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::ServiceExt;
use rmcp::model::CacheScope;
use rmcp::service::{RoleClient, RunningService, Service};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

use crate::support::{
    Project, Served, SessionEra, conformance_testkit_yaml, modern, raw_2026, within,
};

/// Every list one client sees, as names (tools, prompts) and URIs.
async fn lists<S: Service<RoleClient>>(client: &RunningService<RoleClient, S>) -> Vec<Vec<String>> {
    let tools = within(client.list_all_tools()).await.unwrap();
    let prompts = within(client.list_all_prompts()).await.unwrap();
    let resources = within(client.list_all_resources()).await.unwrap();
    let templates = within(client.list_all_resource_templates()).await.unwrap();
    let skills = within(client.list_skills(None)).await.unwrap().skills;
    vec![
        tools.iter().map(|t| t.name.to_string()).collect(),
        prompts.iter().map(|p| p.name.clone()).collect(),
        resources.iter().map(|r| r.uri.clone()).collect(),
        templates.iter().map(|t| t.uri_template.clone()).collect(),
        skills.iter().map(|s| s.uri.clone()).collect(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_sorted_and_the_same_across_calls_sessions_and_eras() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&conformance_testkit_yaml("testkit", &state));
    project.skill("review", "Review the change.");
    project.skill("audit", "Audit the change.");
    let served = Served::start(project, GatewayOptions::default()).await;
    let first =
        within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
            .await
            .unwrap();
    let second =
        within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
            .await
            .unwrap();
    let new = modern(&served.url).await;
    let seen = lists(&first).await;
    for (kind, items) in ["tools", "prompts", "resources", "templates", "skills"]
        .iter()
        .zip(&seen)
    {
        assert!(!items.is_empty(), "{kind}: {items:?}");
        let mut sorted = items.clone();
        sorted.sort();
        assert_eq!(items, &sorted, "{kind} in byte order");
    }
    assert!(
        seen[0].iter().any(|t| t == "ListMcpSources"),
        "{:?}",
        seen[0]
    );
    assert_eq!(lists(&first).await, seen, "the same on the next call");
    assert_eq!(lists(&second).await, seen, "the same in another session");
    assert_eq!(lists(&new).await, seen, "the same in the 2026-07-28 era");
    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
    new.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_list_and_read_says_it_may_not_be_cached() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&conformance_testkit_yaml("testkit", &state));
    project.skill("review", "Review the change.");
    let served = Served::start(project, GatewayOptions::default()).await;
    let requests: [(&str, Value, Option<&str>); 6] = [
        ("tools/list", json!({}), None),
        ("prompts/list", json!({}), None),
        ("resources/list", json!({}), None),
        ("resources/templates/list", json!({}), None),
        ("skills/list", json!({}), None),
        (
            "resources/read",
            json!({"uri": "skill://review/SKILL.md"}),
            Some("skill://review/SKILL.md"),
        ),
    ];
    for (method, params, name) in requests {
        let mut headers = vec![("mcp-method", method)];
        headers.extend(name.map(|n| ("mcp-name", n)));
        let (status, answer) = raw_2026(&served.url, method, params, &headers).await;
        assert_eq!(status, 200, "{method}: {answer}");
        let result = &answer["result"];
        assert_eq!(result["ttlMs"], 0, "{method}: {result}");
        assert_eq!(result["cacheScope"], "private", "{method}: {result}");
        assert_eq!(result["resultType"], "complete", "{method}: {result}");
    }
    // What an rmcp client of the new era makes of it.
    let client = modern(&served.url).await;
    let tools = within(client.list_tools(None)).await.unwrap();
    assert_eq!(tools.ttl_ms, Some(0));
    assert_eq!(tools.cache_scope, Some(CacheScope::Private));
    client.cancel().await.unwrap();
    served.stop().await;
}

/// A tool's icons reach every client as its server sent them (MCP
/// 2025-11-25 `icons`: `src`, `mimeType`, `sizes`, `theme`), in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_icons_reach_the_client_as_its_server_sent_them() {
    let project = Project::new();
    let icons = json!([
        {"src": "https://example.com/paint.png", "mimeType": "image/png", "sizes": ["48x48"]},
        {"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml",
         "sizes": ["any"], "theme": "dark"}
    ]);
    let tools = json!([
        {"name": "paint", "description": "Paints.", "inputSchema": {"type": "object"},
         "icons": icons},
        {"name": "plain", "description": "No icons.", "inputSchema": {"type": "object"}}
    ]);
    let file = project.path().join("tools.json");
    std::fs::write(&file, tools.to_string()).unwrap();
    let command =
        extpool_testkit::stdio_command(["--tools-file".to_owned(), file.display().to_string()]);
    project.config(&crate::support::server_yaml("art", command));
    let served = Served::start(project, GatewayOptions::default()).await;
    let session =
        within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
            .await
            .unwrap();
    let new = modern(&served.url).await;
    for listed in [
        within(session.list_all_tools()).await.unwrap(),
        within(new.list_all_tools()).await.unwrap(),
    ] {
        let find = |name: &str| {
            listed
                .iter()
                .find(|t| t.name == name)
                .unwrap_or_else(|| panic!("{name} not listed"))
                .clone()
        };
        let paint = find("mcp__art__paint");
        assert_eq!(serde_json::to_value(&paint.icons).unwrap(), icons);
        assert_eq!(find("mcp__art__plain").icons, None);
    }
    let _ = session.cancel().await;
    let _ = new.cancel().await;
}

/// A prompt's, a resource's and a resource template's icons reach every
/// client as their server sent them, in both eras; those without icons
/// have none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_resource_and_template_icons_reach_the_client_as_their_server_sent_them() {
    let project = Project::new();
    let icons = json!([
        {"src": "https://example.com/paint.png", "mimeType": "image/png", "sizes": ["48x48"]},
        {"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml",
         "sizes": ["any"], "theme": "light"}
    ]);
    let lists = json!({
        "prompts": [{"name": "sketch", "description": "Sketches.", "icons": icons}],
        "resources": [{"uri": "art://canvas", "name": "canvas", "icons": icons}],
        "resourceTemplates": [
            {"uriTemplate": "art://works/{id}", "name": "work", "icons": icons}
        ]
    });
    let file = project.path().join("lists.json");
    std::fs::write(&file, lists.to_string()).unwrap();
    let command =
        extpool_testkit::stdio_command(["--lists-file".to_owned(), file.display().to_string()]);
    project.config(&crate::support::server_yaml("art", command));
    let served = Served::start(project, GatewayOptions::default()).await;
    let session =
        within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
            .await
            .unwrap();
    let new = modern(&served.url).await;
    let icons_of = |listed: Option<&Value>| listed.cloned().unwrap_or(Value::Null);
    for (era, client) in [("session", session.peer()), ("2026-07-28", new.peer())] {
        let prompts =
            serde_json::to_value(within(client.list_all_prompts()).await.unwrap()).unwrap();
        let resources =
            serde_json::to_value(within(client.list_all_resources()).await.unwrap()).unwrap();
        let templates =
            serde_json::to_value(within(client.list_all_resource_templates()).await.unwrap())
                .unwrap();
        let find = |items: &Value, key: &str, value: &str| {
            items
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i[key] == value)
                .unwrap_or_else(|| panic!("{era}: {value} not listed in {items}"))
                .clone()
        };
        let sketch = find(&prompts, "name", "mcp__art__sketch");
        assert_eq!(icons_of(sketch.get("icons")), icons, "{era}: {sketch}");
        let canvas = find(&resources, "uri", "art://canvas");
        assert_eq!(icons_of(canvas.get("icons")), icons, "{era}: {canvas}");
        let work = find(&templates, "uriTemplate", "art://works/{id}");
        assert_eq!(icons_of(work.get("icons")), icons, "{era}: {work}");
        let greet = find(&prompts, "name", "mcp__art__greet");
        assert_eq!(greet.get("icons"), None, "{era}: {greet}");
        let info = find(&resources, "uri", "testkit://info");
        assert_eq!(info.get("icons"), None, "{era}: {info}");
    }
    let _ = session.cancel().await;
    let _ = new.cancel().await;
}
