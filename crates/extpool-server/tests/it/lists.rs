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
