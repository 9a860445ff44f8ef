//! Against `@modelcontextprotocol/server-everything` (npm, installed by scripts/peers.sh).

use extpool_catalog::CommandKind;
use serde_json::json;

use crate::support::{args, cap, config, everything, pool, shutdown, started};

#[tokio::test]
async fn tools_are_namespaced_resources_and_prompts_are_reachable() {
    let pool = pool();
    let (catalog, registry, _) = started(&[cap("everything", everything(), &pool)], config()).await;
    let rev = catalog.current();

    // Tools: every one namespaced, none under its bare name.
    assert!(
        rev.tools().len() >= 5,
        "{:?}",
        rev.tools().iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    for t in rev.tools() {
        assert_eq!(t.name, format!("mcp__everything__{}", t.original()));
        assert_eq!(&*t.server, "everything");
        assert!(rev.tool(t.original()).is_none());
    }
    let echo = rev
        .call("mcp__everything__echo", args(json!({"message": "hello"})))
        .await
        .unwrap();
    assert!(
        echo.joined_text().contains("hello"),
        "{}",
        echo.joined_text()
    );

    // Resources: listed by ListMcpResources, read by ReadMcpResource.
    assert!(!rev.resources().is_empty());
    let listed = rev
        .call("ListMcpResources", args(json!({"server": "everything"})))
        .await
        .unwrap();
    let resources = listed.structured.unwrap()["resources"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!resources.is_empty());
    let text_resource = resources
        .iter()
        .find(|r| {
            r["mimeType"]
                .as_str()
                .is_some_and(|m| m.starts_with("text/"))
        })
        .expect("server-everything lists a text resource");
    let uri = text_resource["uri"].as_str().unwrap();
    let read = rev
        .call(
            "ReadMcpResource",
            args(json!({"server": "everything", "uri": uri})),
        )
        .await
        .unwrap();
    assert!(!read.joined_text().is_empty(), "{uri} read empty");
    let missing = rev
        .call(
            "ReadMcpResource",
            args(json!({"server": "nope", "uri": uri})),
        )
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("nope"));

    // Prompts: commands named /mcp__everything__<prompt>.
    let simple = rev
        .command("mcp__everything__simple-prompt")
        .expect("simple-prompt");
    assert_eq!(simple.kind, CommandKind::McpPrompt);
    assert_eq!(simple.original, "simple-prompt");
    let rendered = rev
        .run_command("/mcp__everything__args-prompt city=Paris state=\"Île-de-France\"")
        .await
        .unwrap();
    assert!(rendered.contains("Paris, Île-de-France"), "{rendered}");
    let err = rev
        .run_command("/mcp__everything__args-prompt")
        .await
        .unwrap_err();
    assert!(err.is_invalid_arguments(), "{err}");
    shutdown(catalog, registry).await;
}
