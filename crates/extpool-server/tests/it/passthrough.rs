//! What the gateway passes to the upstream that owns it, with rmcp
//! clients: prompts whole (images, embedded resources), resource
//! templates, completions, and resource subscriptions with their updates.

#![allow(deprecated)] // resources/subscribe is the session era's; the gateway serves that era

use std::sync::Arc;

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CompleteRequestParams, ContentBlock,
    GetPromptRequestParams, Reference, ResourceUpdatedNotificationParam, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;

use crate::support::{
    PATIENCE, Project, Served, SessionEra, conformance_testkit_yaml, modern, next_event,
    raw_listen, subscription_id, within,
};

async fn serve_conformance_testkit(state: &StateDir) -> Served {
    let project = Project::new();
    project.config(&conformance_testkit_yaml("conf", state));
    Served::start(project, GatewayOptions::default()).await
}

/// An rmcp client that keeps the resource updates it receives.
#[derive(Clone, Default)]
struct Updates(Arc<tokio::sync::watch::Sender<Vec<String>>>);

impl Updates {
    /// Waits until `n` updates arrived, failing after [`PATIENCE`].
    async fn arrived(&self, n: usize, what: &str) {
        tokio::time::timeout(PATIENCE, self.0.subscribe().wait_for(|u| u.len() == n))
            .await
            .unwrap_or_else(|_| panic!("never happened: {what}"))
            .unwrap();
    }
}

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0.send_modify(|u| u.push(params.uri));
    }
}

async fn connect(served: &Served, handler: Updates) -> RunningService<RoleClient, Updates> {
    handler
        .serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
        .await
        .unwrap()
}

async fn call_text(client: &RunningService<RoleClient, Updates>, name: &str) -> String {
    let result = client
        .peer()
        .call_tool(CallToolRequestParams::new(name.to_owned()))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.content[0].as_text().unwrap().text.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_come_whole_with_their_images_and_embedded_resources() {
    let state = StateDir::new();
    let served = serve_conformance_testkit(&state).await;
    let client = connect(&served, Updates::default()).await;

    let image = client
        .peer()
        .get_prompt(GetPromptRequestParams::new(
            "mcp__conf__test_prompt_with_image",
        ))
        .await
        .unwrap();
    assert_eq!(image.messages.len(), 2, "{image:?}");
    let Some(png) = image.messages[0].content.as_image() else {
        panic!("the first message is not the image: {image:?}");
    };
    assert_eq!(png.mime_type, "image/png");
    assert!(!png.data.is_empty());

    let mut params = GetPromptRequestParams::new("mcp__conf__test_prompt_with_embedded_resource");
    params.arguments = json!({"resourceUri": "test://example"})
        .as_object()
        .cloned();
    let embedded = client.peer().get_prompt(params).await.unwrap();
    let Some(resource) = embedded.messages[0].content.as_resource() else {
        panic!("the first message is not the resource: {embedded:?}");
    };
    assert_eq!(
        serde_json::to_value(&resource.resource).unwrap()["uri"],
        "test://example"
    );
    assert!(matches!(
        &embedded.messages[1].content,
        ContentBlock::Text(t) if t.text == "Please process the embedded resource above."
    ));

    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_are_listed_and_completions_reach_the_server_that_owns_them() {
    let state = StateDir::new();
    let served = serve_conformance_testkit(&state).await;
    let client = connect(&served, Updates::default()).await;

    let templates = client.peer().list_all_resource_templates().await.unwrap();
    let template = templates
        .iter()
        .find(|t| t.uri_template == "test://template/{id}/data")
        .unwrap_or_else(|| panic!("the template is not listed: {templates:?}"));
    assert_eq!(template.mime_type.as_deref(), Some("application/json"));

    // A prompt as the client knows it, completed by its server under its own name.
    let prompt = client
        .peer()
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("mcp__conf__test_prompt_with_arguments"),
            ArgumentInfo::new("arg1", "pa"),
        ))
        .await
        .unwrap();
    assert_eq!(
        prompt.completion.values,
        ["paris", "park", "party"],
        "{prompt:?}"
    );
    let template = client
        .peer()
        .complete(CompleteRequestParams::new(
            Reference::for_resource("test://template/{id}/data"),
            ArgumentInfo::new("id", "1"),
        ))
        .await
        .unwrap();
    assert_eq!(template.completion.values, ["1", "123"], "{template:?}");

    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_updates_reach_the_subscribed_sessions_through_one_upstream_subscription() {
    let state = StateDir::new();
    let served = serve_conformance_testkit(&state).await;
    let (first, second, bystander) = (Updates::default(), Updates::default(), Updates::default());
    let a = connect(&served, first.clone()).await;
    let b = connect(&served, second.clone()).await;
    let c = connect(&served, bystander.clone()).await;
    const URI: &str = "test://watched-resource";
    for client in [&a, &b] {
        client
            .peer()
            .subscribe(SubscribeRequestParams::new(URI))
            .await
            .unwrap();
    }

    // The upstream has one subscriber: the gateway, for both sessions.
    let told = call_text(&c, "mcp__conf__update_watched_resource").await;
    assert_eq!(told, "updated; 1 subscriber(s) told");
    let what = "both subscribed sessions got notifications/resources/updated";
    first.arrived(1, what).await;
    second.arrived(1, what).await;
    assert_eq!(first.0.borrow()[0], URI);
    assert!(bystander.0.borrow().is_empty());

    // The last session to leave unsubscribes the gateway upstream.
    a.peer()
        .unsubscribe(UnsubscribeRequestParams::new(URI))
        .await
        .unwrap();
    assert_eq!(
        call_text(&c, "mcp__conf__update_watched_resource").await,
        "updated; 1 subscriber(s) told"
    );
    b.peer()
        .unsubscribe(UnsubscribeRequestParams::new(URI))
        .await
        .unwrap();
    assert_eq!(
        call_text(&c, "mcp__conf__update_watched_resource").await,
        "updated; 0 subscriber(s) told"
    );

    for client in [a, b, c] {
        client.cancel().await.unwrap();
    }
    served.stop().await;
}

/// A 2026-07-28 client's `subscriptions/listen` with resource
/// subscriptions: the gateway subscribes upstream as for a session, the
/// acknowledgment names what it subscribed (not a resource no server
/// has), each update reaches the stream under the subscription's id, and
/// when the client goes away the gateway unsubscribes upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_streams_resource_subscriptions_are_kept_upstream_while_it_lasts() {
    const URI: &str = "test://watched-resource";
    let state = StateDir::new();
    let served = serve_conformance_testkit(&state).await;
    let (mut response, mut buffer) = raw_listen(
        &served.url,
        "watch",
        json!({"resourceSubscriptions": [URI, "test://no-such-resource"]}),
        json!({"resourceSubscriptions": [URI]}),
    )
    .await;

    let other = connect(&served, Updates::default()).await;
    let told = call_text(&other, "mcp__conf__update_watched_resource").await;
    assert_eq!(told, "updated; 1 subscriber(s) told");
    let update = next_event(&mut response, &mut buffer).await;
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(update["params"]["uri"], URI, "{update}");
    assert_eq!(subscription_id(&update), Some(json!("watch")), "{update}");

    // The client goes away: the gateway's subscription upstream ends.
    drop(response);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let told = call_text(&other, "mcp__conf__update_watched_resource").await;
        if told == "updated; 0 subscriber(s) told" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still subscribed upstream: {told}"
        );
    }
    other.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_embedded_server_passes_its_templates_and_updates_once() {
    let state = StateDir::new();
    let project = Project::new();
    // The skill's allowed-tools wrap the embedded server in a filter.
    let server = conformance_testkit_yaml("conf", &state).replace("\n  ", "\n    ");
    let dir = project.path().join("skills/kit");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: kit\ndescription: Brings the conformance fixtures\nallowed-tools: [update_watched_resource]\nmcp_servers:\n  {}---\nUse the fixtures.\n",
            server.trim_start()
        ),
    )
    .unwrap();
    project.config("");
    let served = Served::start(project, GatewayOptions::default()).await;
    let updates = Updates::default();
    let client = connect(&served, updates.clone()).await;

    let templates = client.peer().list_all_resource_templates().await.unwrap();
    let listed = templates
        .iter()
        .filter(|t| t.uri_template == "test://template/{id}/data")
        .count();
    assert_eq!(listed, 1, "{templates:?}");

    const URI: &str = "test://watched-resource";
    client
        .peer()
        .subscribe(SubscribeRequestParams::new(URI))
        .await
        .unwrap();
    let told = call_text(&client, "mcp__kit_conf__update_watched_resource").await;
    assert_eq!(told, "updated; 1 subscriber(s) told");
    updates
        .arrived(
            1,
            "the subscribed session got notifications/resources/updated",
        )
        .await;

    client.cancel().await.unwrap();
    served.stop().await;
}

/// The result `--lists-file` makes tool `card` answer: every field MCP
/// gives a result and its content beside the text (annotations, `_meta`,
/// a link's title, size and icons).
fn card_result() -> serde_json::Value {
    json!({
        "content": [
            {"type": "text", "text": "hello secret-12345",
             "annotations": {"audience": ["user"], "priority": 0.5},
             "_meta": {"example.com/part": 1}},
            {"type": "resource_link", "uri": "art://canvas", "name": "canvas",
             "title": "The canvas", "size": 42, "mimeType": "text/plain",
             "icons": [{"src": "https://example.com/c.png", "mimeType": "image/png"}],
             "annotations": {"audience": ["assistant"]}},
            {"type": "resource",
             "resource": {"uri": "art://note", "mimeType": "text/plain", "text": "a note",
                          "_meta": {"example.com/note": true}},
             "annotations": {"priority": 1.0}}
        ],
        "isError": false,
        "_meta": {"example.com/trace": "t-1"}
    })
}

/// A gateway in front of a testkit whose `card` answers [`card_result`]
/// and whose `long` answers 200 bytes of annotated text, with `extra`
/// top-level YAML.
async fn serve_cards(extra: &str) -> Served {
    let project = Project::new();
    let long = json!({
        "content": [{"type": "text", "text": "x".repeat(200),
                     "annotations": {"audience": ["user"]}}],
        "_meta": {"example.com/trace": "t-2"}
    });
    let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
    let lists = json!({"tools": [
        {"tool": tool("card"), "result": card_result()},
        {"tool": tool("long"), "result": long},
    ]});
    let file = project.path().join("lists.json");
    std::fs::write(&file, lists.to_string()).unwrap();
    let command =
        extpool_testkit::stdio_command(["--lists-file".to_owned(), file.display().to_string()]);
    project.config(&format!(
        "{}{extra}",
        crate::support::server_yaml("art", command)
    ));
    Served::start(project, GatewayOptions::default()).await
}

/// Calls `name` with `client` and gives its result as JSON, without the
/// era's `resultType`.
async fn call_json<S: rmcp::service::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    name: &str,
) -> serde_json::Value {
    let result = within(
        client
            .peer()
            .call_tool(CallToolRequestParams::new(name.to_owned())),
    )
    .await
    .unwrap();
    let mut result = serde_json::to_value(result).unwrap();
    result.as_object_mut().unwrap().remove("resultType");
    result
}

/// A tool result reaches the client as its server sent it — its `_meta`,
/// its content's annotations and `_meta`, a link's title, size and icons —
/// in both eras. A result the gateway changes (text over the limit cut, a
/// redaction rule configured) is built again from what the gateway read,
/// so none of that passes unread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_result_comes_whole_unless_the_gateway_changes_it() {
    // What the testkit sends: the written result as rmcp writes it.
    let sent: rmcp::model::CallToolResult = serde_json::from_value(card_result()).unwrap();
    let mut sent = serde_json::to_value(sent).unwrap();
    sent.as_object_mut().unwrap().remove("resultType");
    assert_eq!(sent["_meta"], json!({"example.com/trace": "t-1"}));
    assert_eq!(sent["content"][1]["title"], "The canvas", "{sent}");

    let served = serve_cards("extensions:\n  result_limits: {max_text_bytes: 100}\n").await;
    let session =
        within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
            .await
            .unwrap();
    let new = modern(&served.url).await;
    assert_eq!(
        call_json(&session, "mcp__art__card").await,
        sent,
        "session era"
    );
    assert_eq!(call_json(&new, "mcp__art__card").await, sent, "2026-07-28");
    let long = call_json(&session, "mcp__art__long").await;
    let text = long["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("[truncated: 100 of 200 bytes omitted]"),
        "{long}"
    );
    assert_eq!(long.get("_meta"), None, "{long}");
    let _ = session.cancel().await;
    let _ = new.cancel().await;

    let served =
        serve_cards("guardrails:\n  redact:\n    - name: key\n      pattern: \"secret-[0-9]+\"\n")
            .await;
    let session =
        within(SessionEra.serve(StreamableHttpClientTransport::from_uri(served.url.clone())))
            .await
            .unwrap();
    let card = call_json(&session, "mcp__art__card").await;
    let text = card["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("hello ") && !text.contains("secret-12345"),
        "{card}"
    );
    assert_eq!(card.get("_meta"), None, "{card}");
    assert_eq!(card["content"][0].get("annotations"), None, "{card}");
    let _ = session.cancel().await;
}
