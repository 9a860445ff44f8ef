//! Tool search: 24 services of the kind agents use (20 tools each, with
//! the descriptions and arguments such servers have) and the real testkit
//! server — 25 servers, over 500 tools. The compiled context carries names only;
//! realistic queries rank the right tool first; a deferred tool found by
//! search, or called by name, works and stays loaded across revisions.

use std::sync::Arc;

use extpool_agent::{AgentOptions, DeferralConfig, FunctionTools, SEARCH_TOOL};
use extpool_host::ToolResult;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, args, names, testkit_yaml, within};

/// The services of `fixtures/services.txt`: (service, label) → objects.
fn services() -> Vec<(String, Vec<Vec<String>>)> {
    let text = include_str!("fixtures/services.txt");
    let mut out: Vec<(String, Vec<Vec<String>>)> = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let fields: Vec<String> = line.splitn(9, '|').map(str::to_owned).collect();
        assert_eq!(fields.len(), 9, "{line}");
        match out.last_mut() {
            Some((name, objects)) if *name == fields[0] => objects.push(fields),
            _ => out.push((fields[0].clone(), vec![fields])),
        }
    }
    out
}

fn schema(args: &[&str]) -> Value {
    let props: serde_json::Map<String, Value> = args
        .iter()
        .map(|a| ((*a).to_owned(), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": props, "required": args})
}

fn split(list: &str) -> Vec<&str> {
    list.split(',').filter(|s| !s.is_empty()).collect()
}

/// The tools of one service: five per object, described the way such
/// servers describe them.
fn service_tools(name: &str, objects: &[Vec<String>]) -> Arc<FunctionTools> {
    let mut tools = FunctionTools::new(name).unwrap();
    for o in objects {
        let [
            _,
            label,
            object,
            plural,
            create,
            update,
            context,
            fields,
            what,
        ] = &o[..]
        else {
            unreachable!()
        };
        let (context, fields) = (split(context), split(fields));
        let id = format!("{object}_id");
        let with_id: Vec<&str> = context.iter().copied().chain([id.as_str()]).collect();
        let list: Vec<&str> = context
            .iter()
            .copied()
            .chain(["query", "limit", "cursor"])
            .collect();
        let created: Vec<&str> = context.iter().chain(&fields).copied().collect();
        let updated: Vec<&str> = with_id.iter().chain(&fields).copied().collect();
        let (one, many) = (object.replace('_', " "), plural.replace('_', " "));
        for (tool, description, args) in [
            (
                format!("list_{plural}"),
                format!("List, show or search {many} in {label}: {what}."),
                list,
            ),
            (
                format!("get_{object}"),
                format!("Get or read one {one} in {label} by id: {what}."),
                with_id.clone(),
            ),
            (
                format!("create_{object}"),
                format!("{create} a new {one} in {label}: {what}."),
                created,
            ),
            (
                format!("update_{object}"),
                format!("{update} an existing {one} in {label}: {what}."),
                updated,
            ),
            (
                format!("delete_{object}"),
                format!("Delete or remove a {one} from {label}: {what}."),
                with_id,
            ),
        ] {
            let reply = format!("{name}.{tool} done");
            tools = tools.tool(&tool, &description, schema(&args), move |_| {
                let reply = reply.clone();
                async move { ToolResult::text(reply) }
            });
        }
    }
    tools.build()
}

/// Twenty requests a user might make, and the tool that serves each.
const QUERIES: [(&str, &str); 20] = [
    (
        "open a new issue in the GitHub repository about the login bug",
        "mcp__github__create_issue",
    ),
    (
        "post a message in the #general slack channel",
        "mcp__slack__create_message",
    ),
    ("send an email to a colleague", "mcp__gmail__create_email"),
    (
        "get the weather forecast for Paris this weekend",
        "mcp__weather__get_forecast",
    ),
    (
        "cancel the customer's stripe subscription",
        "mcp__stripe__delete_subscription",
    ),
    (
        "issue a refund for the last payment",
        "mcp__stripe__create_refund",
    ),
    (
        "get driving directions from the office to the airport",
        "mcp__maps__get_route",
    ),
    (
        "schedule a zoom meeting with the design team tomorrow",
        "mcp__zoom__create_meeting",
    ),
    (
        "restart the api deployment in kubernetes",
        "mcp__kubernetes__update_deployment",
    ),
    (
        "insert a row into the orders table",
        "mcp__postgres__create_row",
    ),
    (
        "show the pipelines of the gitlab project",
        "mcp__gitlab__list_pipelines",
    ),
    (
        "mute the datadog monitor for disk usage",
        "mcp__datadog__update_monitor",
    ),
    (
        "add a new contact to the CRM",
        "mcp__hubspot__create_contact",
    ),
    (
        "create a playlist of jazz songs on spotify",
        "mcp__spotify__create_playlist",
    ),
    (
        "upload the report file to the S3 bucket",
        "mcp__s3__create_object",
    ),
    (
        "share a drive file with alice",
        "mcp__drive__create_permission",
    ),
    (
        "list the pods in the staging namespace",
        "mcp__kubernetes__list_pods",
    ),
    (
        "export the login frame from figma as a PNG",
        "mcp__figma__create_frame_export",
    ),
    ("what is the sum of two numbers", "mcp__testkit__add"),
    (
        "delete the old feature branch on github",
        "mcp__github__delete_branch",
    ),
];

#[tokio::test]
async fn five_hundred_tools_from_25_servers_are_deferred_searched_and_called() {
    let project = Project::new();
    let state = StateDir::new();
    project.config(&format!(
        "mcp_servers:\n  testkit:\n{}skills:\n  default_roots: false\n",
        testkit_yaml(&state, 4)
    ));
    let (host, factory) = project.start().await;
    let services = services();
    assert_eq!(services.len(), 24);
    for (name, objects) in &services {
        host.register(service_tools(name, objects)).await.unwrap();
    }
    let session = host.session("s").unwrap();
    let agent = factory.open_agent(&session, "main").unwrap();
    let compiled = agent.compile().await.unwrap();
    let deferred: Vec<&str> = compiled.deferred().map(|t| t.name.as_str()).collect();
    let testkit = compiled
        .deferred()
        .filter(|t| t.server == "testkit")
        .count();
    assert!(testkit >= 20, "the testkit server's tools: {testkit}");
    assert_eq!(
        deferred.len(),
        24 * 20 + testkit,
        "every server tool is deferred"
    );
    assert!(deferred.len() >= 500);
    // The model gets the catalog's built-ins and the search tool, with
    // schemas, and every other tool by name and one line, without schema.
    let definitions: Vec<String> = compiled.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(definitions.last().map(String::as_str), Some(SEARCH_TOOL));
    assert!(
        definitions.iter().all(|d| !d.starts_with("mcp__")),
        "{definitions:?}"
    );
    let listing = &compiled.instructions().last().unwrap().text;
    for name in &deferred {
        assert!(listing.contains(&format!("- {name}: ")), "{name} listed");
    }
    assert!(!listing.contains("\"properties\"") && !listing.contains("required"));
    let full = AgentOptions {
        deferral: DeferralConfig::never(),
        ..AgentOptions::default()
    };
    let everything = extpool_agent::AgentFactory::with_options(host.clone(), full)
        .compile(&session)
        .await
        .unwrap();
    assert!(
        compiled.tool_payload_bytes() * 2 < everything.tool_payload_bytes(),
        "{} vs {}",
        compiled.tool_payload_bytes(),
        everything.tool_payload_bytes()
    );

    // Search ranks the right tool first for each request.
    let turn = agent.turn("t1", "plan the week").await.unwrap();
    let mut misses = Vec::new();
    for (query, expected) in QUERIES {
        let found = turn
            .call(SEARCH_TOOL, args(json!({"query": query, "limit": 3})))
            .await
            .unwrap();
        let hits: Value = serde_json::from_str(&found.joined_text()).unwrap();
        let first = hits["tools"][0]["name"].as_str().unwrap_or("").to_owned();
        if first != expected {
            let all: Vec<&str> = hits["tools"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|t| t["name"].as_str())
                .collect();
            misses.push(format!("{query:?}: {all:?} (wanted {expected})"));
        }
        assert_eq!(hits["tools"][0]["input_schema"]["type"], "object");
    }
    assert!(misses.is_empty(), "{misses:#?}");

    // A tool found by search is loaded: offered with its schema from now on.
    let compiled = turn.compiled();
    assert!(names(&compiled).contains(&"mcp__github__create_issue".to_owned()));
    let created = turn
        .call(
            "mcp__github__create_issue",
            args(json!({"owner": "o", "repo": "r", "title": "t", "body": "b", "labels": "x", "assignees": "y"})),
        )
        .await
        .unwrap();
    assert_eq!(created.joined_text(), "github.create_issue done");
    // A deferred tool called by name works, and is loaded too.
    assert!(
        !agent
            .loaded_tools()
            .contains(&"mcp__testkit__echo".to_owned())
    );
    let echoed = turn
        .call("mcp__testkit__echo", args(json!({"message": "deferred"})))
        .await
        .unwrap();
    assert_eq!(echoed.joined_text(), "deferred");
    assert!(
        agent
            .loaded_tools()
            .contains(&"mcp__testkit__echo".to_owned())
    );
    turn.end().await;

    // Across a new catalog revision: loaded tools stay loaded, new ones are
    // deferred and searchable.
    let before = host.catalog().current().number();
    let t2 = agent.turn("t2", "grow").await.unwrap();
    t2.call(
        "mcp__testkit__add_tool",
        args(json!({"name": "translate_text"})),
    )
    .await
    .unwrap();
    within(host.catalog().wait_for_revision(before + 1)).await;
    t2.end().await;
    let next = agent.compile().await.unwrap();
    assert!(next.revision().number() > before);
    let offered = names(&next);
    for loaded in [
        "mcp__github__create_issue",
        "mcp__testkit__echo",
        "mcp__weather__get_forecast",
    ] {
        assert!(
            offered.contains(&loaded.to_owned()),
            "{loaded} still loaded"
        );
    }
    assert!(
        next.deferred()
            .any(|t| t.name == "mcp__testkit__translate_text")
    );
    let t3 = agent.turn("t3", "translate").await.unwrap();
    let found = t3
        .call(SEARCH_TOOL, args(json!({"query": "translate text"})))
        .await
        .unwrap();
    assert!(found.joined_text().contains("mcp__testkit__translate_text"));
    assert_eq!(
        t3.call(
            "mcp__testkit__translate_text",
            args(json!({"message": "hola"}))
        )
        .await
        .unwrap()
        .joined_text(),
        "hola"
    );
    t3.end().await;
    agent.complete().await;
    host.shutdown().await;
}
