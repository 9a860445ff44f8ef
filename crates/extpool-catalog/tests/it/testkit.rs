//! Against the testkit MCP server over stdio, through `McpServerCap`.

use std::time::Duration;

use extpool_catalog::{CallError, PermissionsConfig};
use extpool_core::{ContentPart, ScopeLevel};
use serde_json::json;

use crate::support::{args, cap, config, pool, shutdown, started, testkit};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_run_pins_revision_n_while_the_server_adds_a_tool() {
    let pool = pool();
    let (catalog, registry, _) = started(&[cap("kit", testkit(&[]), &pool)], config()).await;
    let pinned = catalog.current();
    let n = pinned.number();
    assert!(n >= 1);
    assert!(pinned.tool("mcp__kit__echo").is_some());
    assert!(pinned.tool("mcp__kit__fresh").is_none());

    // The run asks the server to add a tool; the server sends tools/list_changed.
    pinned
        .call("mcp__kit__add_tool", args(json!({"name": "fresh"})))
        .await
        .unwrap();
    let next = tokio::time::timeout(WAIT, catalog.wait_for_revision(n + 1))
        .await
        .expect("revision N+1 was not published after tools/list_changed");
    assert_eq!(next.number(), n + 1);
    assert!(next.tool("mcp__kit__fresh").is_some());

    // The pinned run still sees N: no new name, same dispatch, same schemas.
    assert_eq!(pinned.number(), n);
    assert!(pinned.tool("mcp__kit__fresh").is_none());
    let err = pinned
        .call("mcp__kit__fresh", args(json!({})))
        .await
        .unwrap_err();
    assert!(err.is_unknown_tool(), "{err}");
    let echo = pinned
        .call("mcp__kit__echo", args(json!({"message": "still N"})))
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "still N");
    // The next operation pins N+1 and can call the new tool.
    let fresh = catalog
        .call("mcp__kit__fresh", args(json!({"message": "new"})))
        .await
        .unwrap();
    assert!(!fresh.is_error);
    shutdown(catalog, registry).await;
}

#[tokio::test]
async fn a_failing_source_keeps_revision_n_and_reports_stale() {
    let pool = pool();
    let (catalog, registry, scope) = started(&[cap("kit", testkit(&[]), &pool)], config()).await;
    let n = catalog.current().number();

    // A second server that exits before serving.
    let broken = cap("broken", testkit(&["--die-on-start"]), &pool);
    registry
        .register(broken, ScopeLevel::Pool, &scope, None)
        .unwrap();
    let status = tokio::time::timeout(
        WAIT,
        catalog.status_when(|s| s.source("broken").is_some_and(|b| b.stale)),
    )
    .await
    .expect("the broken source was never reported stale");
    assert_eq!(status.revision, n, "a failed candidate is never published");
    let broken = status.source("broken").unwrap();
    assert!(broken.revision.is_none());
    let error = broken.last_error.as_ref().expect("the last error is kept");
    assert!(error.extension_error().is_some(), "{error}");
    assert!(!status.source("kit").unwrap().stale);
    assert!(
        catalog.current().tool("mcp__kit__echo").is_some(),
        "the last usable revision stays"
    );
    // The status query answers from the cache while retries go on.
    assert!(catalog.status().failures >= 1);

    // Removing the broken source clears the condition.
    registry
        .unregister("broken", ScopeLevel::Pool, &scope)
        .unwrap();
    let status = tokio::time::timeout(WAIT, catalog.status_when(|s| s.source("broken").is_none()))
        .await
        .unwrap();
    assert!(!status.any_stale());
    shutdown(catalog, registry).await;
}

#[tokio::test]
async fn a_burst_of_100_list_changed_costs_few_reconciliations() {
    let pool = pool();
    let mut cfg = config();
    cfg.reconcile.coalesce_ms = 300;
    let (catalog, registry, _) = started(&[cap("kit", testkit(&[]), &pool)], cfg).await;
    let before = catalog.settled().await.reconciliations;
    let rev = catalog.current();

    // 100 tools added concurrently: 100 tools/list_changed notifications.
    let calls = (0..100).map(|i| {
        let rev = rev.clone();
        async move {
            rev.call(
                "mcp__kit__add_tool",
                args(json!({"name": format!("burst_{i}")})),
            )
            .await
            .unwrap()
        }
    });
    futures::future::join_all(calls).await;
    let mut revisions = catalog.subscribe();
    let last = tokio::time::timeout(WAIT, async {
        loop {
            revisions.borrow_and_update();
            let cur = catalog.current();
            if (0..100).all(|i| cur.tool(&format!("mcp__kit__burst_{i}")).is_some()) {
                break cur;
            }
            revisions.changed().await.expect("the catalog lives");
        }
    })
    .await
    .expect("the burst's tools were never all published");
    let status = catalog.settled().await;
    let cycles = status.reconciliations - before;
    assert!(
        (1..=10).contains(&cycles),
        "100 notifications cost {cycles} reconciliations"
    );
    assert!(last.number() - rev.number() <= cycles);
    assert!(status.events >= 1);
    shutdown(catalog, registry).await;
}

#[tokio::test]
async fn results_are_shaped_and_queried_with_jq() {
    let pool = pool();
    let (catalog, registry, _) = started(&[cap("kit", testkit(&[]), &pool)], config()).await;

    // Oversized plain text: truncated with a marker.
    let big = catalog
        .call("mcp__kit__large_text", args(json!({"bytes": 300_000})))
        .await
        .unwrap();
    let text = big.joined_text();
    assert!(text.len() < 100_100);
    assert!(
        text.ends_with("[truncated: 200000 of 300000 bytes omitted]"),
        "{}",
        &text[text.len() - 80..]
    );

    // Oversized structured results (outputSchema, and a plain JSON block): errors.
    for tool in ["mcp__kit__structured", "mcp__kit__json_block"] {
        let result = catalog.call(tool, args(json!({"count": 5000}))).await;
        match result {
            Err(CallError::StructuredTooLarge(e)) => {
                assert!(e.to_string().contains("CallMcpWithQuery"));
            }
            Err(other) => panic!("{tool}: {other}"),
            Ok(r) => panic!(
                "{tool}: expected the structured-result error, got {} parts",
                r.parts.len()
            ),
        }
    }
    // Small structured results pass whole.
    let small = catalog
        .call("mcp__kit__structured", args(json!({"count": 2})))
        .await
        .unwrap();
    assert_eq!(small.structured.unwrap()["items"][1]["name"], "item-1");

    // CallMcpWithQuery reduces the result before it enters context.
    let q = |filter: &str| {
        args(
            json!({"server": "kit", "tool": "structured", "args": {"count": 5000}, "jq_filter": filter}),
        )
    };
    let out = catalog
        .call(
            "CallMcpWithQuery",
            q("[.items[] | select(.id % 1000 == 0) | .name]"),
        )
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!([
            "item-0",
            "item-1000",
            "item-2000",
            "item-3000",
            "item-4000"
        ]))
    );
    // A JSON text block works too.
    let out = catalog
        .call(
            "CallMcpWithQuery",
            args(json!({"server": "kit", "tool": "json_block", "args": {"count": 3000}, "jq_filter": ".items | length"})),
        )
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!(3000)));

    // A filter error names its position; loops and environment access are stopped.
    let err = catalog
        .call("CallMcpWithQuery", q(".items[] | {id,"))
        .await
        .unwrap_err();
    let jq = err.query_error().expect("a jq error");
    assert!(jq.is_filter_error() && jq.position().is_some(), "{err}");
    let err = catalog
        .call("CallMcpWithQuery", q("def f: f; f"))
        .await
        .unwrap_err();
    assert!(err.query_error().unwrap().is_budget_exceeded(), "{err}");
    for filter in ["env", "$ENV.PATH", "input"] {
        let err = catalog
            .call("CallMcpWithQuery", q(filter))
            .await
            .unwrap_err();
        assert!(
            err.query_error().unwrap().is_filter_error(),
            "{filter}: {err}"
        );
    }
    // Remote tool errors stay plain text.
    let err = catalog
        .call("mcp__kit__tool_error", args(json!({"message": "nope"})))
        .await
        .unwrap();
    assert!(err.is_error && err.structured.is_none());
    shutdown(catalog, registry).await;
}

#[tokio::test]
async fn typed_parts_are_kept() {
    let pool = pool();
    let (catalog, registry, _) = started(&[cap("kit", testkit(&[]), &pool)], config()).await;
    let r = catalog
        .call("mcp__kit__mixed_content", args(json!({})))
        .await
        .unwrap();
    let kinds: Vec<&str> = r
        .parts
        .iter()
        .map(|p| match p {
            ContentPart::Text { .. } => "text",
            ContentPart::Image { .. } => "image",
            ContentPart::Audio { .. } => "audio",
            ContentPart::Resource { .. } => "resource",
            ContentPart::ResourceLink { .. } => "resource_link",
        })
        .collect();
    assert_eq!(
        kinds,
        ["text", "image", "audio", "resource", "resource_link"]
    );
    shutdown(catalog, registry).await;
}

#[tokio::test]
async fn permissions_hide_and_refuse_real_tools() {
    let pool = pool();
    let mut cfg = config();
    cfg.permissions = PermissionsConfig {
        deny: vec!["mcp__kit__add*".into(), "mcp__kit__crash".into()],
        ..PermissionsConfig::default()
    };
    let (catalog, registry, _) = started(&[cap("kit", testkit(&[]), &pool)], cfg).await;
    let rev = catalog.current();
    assert!(rev.tool("mcp__kit__echo").is_some());
    for hidden in ["mcp__kit__add", "mcp__kit__add_tool", "mcp__kit__crash"] {
        assert!(rev.tool(hidden).is_none(), "{hidden} is advertised");
        let err = rev.call(hidden, args(json!({}))).await.unwrap_err();
        assert!(err.is_denied(), "{hidden}: {err}");
    }
    // CallMcpWithQuery cannot be used to reach a denied tool.
    let err = rev
        .call(
            "CallMcpWithQuery",
            args(
                json!({"server": "kit", "tool": "add", "args": {"a": 1, "b": 2}, "jq_filter": "."}),
            ),
        )
        .await
        .unwrap_err();
    assert!(err.is_denied(), "{err}");
    shutdown(catalog, registry).await;
}

/// Issue 17 item 13: a server's failure reaches the caller once, in the
/// same words whether the text goes to a model (`to_string`) or is printed
/// as a chain (`{:#}`, as the CLI does).
#[tokio::test]
async fn a_server_failure_is_shown_once() {
    let pool = pool();
    let mut slow = testkit(&[]);
    slow.request_timeout_ms = Some(200);
    let (catalog, registry, _) = started(&[cap("kit", slow, &pool)], config()).await;
    let err = catalog
        .call("mcp__kit__sleep", args(json!({"ms": 10_000})))
        .await
        .unwrap_err();
    let expected = "mcp__kit__sleep: MCP server \"kit\": tools/call timed out after 200 ms";
    assert_eq!(err.to_string(), expected);
    assert_eq!(format!("{:#}", anyhow::Error::new(err)), expected);
    let err = catalog
        .call("mcp__kit__fail", args(json!({"message": "no"})))
        .await
        .unwrap_err();
    let expected = "mcp__kit__fail: MCP server \"kit\" returned error -32603: no";
    assert_eq!(err.to_string(), expected);
    assert_eq!(format!("{:#}", anyhow::Error::new(err)), expected);
    shutdown(catalog, registry).await;
}
