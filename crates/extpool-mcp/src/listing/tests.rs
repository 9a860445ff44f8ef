use std::cell::Cell;

use serde_json::json;

use super::*;

/// A page as rmcp reads it off the wire.
fn wire(result: Value) -> ServerResult {
    serde_json::from_value(result).unwrap()
}

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

fn bounds(pages: usize, items: usize, bytes: u64) -> Bounds {
    Bounds {
        pages,
        items,
        bytes,
    }
}

/// Lists tools from `pages` (given the cursor sent, its 0-based number),
/// counting the requests.
async fn list(
    bounds: Bounds,
    pages: impl Fn(Option<String>, usize) -> Value,
) -> (Result<Listed<Tool>, ListingProblem>, usize) {
    let asked = Cell::new(0);
    let listed = follow(bounds, |cursor| {
        let n = asked.get();
        asked.set(n + 1);
        let page = wire(pages(cursor, n));
        async move { Ok(page) }
    })
    .await
    .unwrap();
    (listed, asked.get())
}

#[tokio::test]
async fn a_new_cursor_on_every_page_stops_at_the_page_bound() {
    let (listed, asked) = list(
        Bounds::new(u64::MAX),
        |_, n| json!({"tools": [tool(&format!("t{n}"))], "nextCursor": (n + 1).to_string()}),
    )
    .await;
    assert_eq!(
        listed.unwrap_err(),
        ListingProblem::TooManyPages {
            limit: MAX_LIST_PAGES
        }
    );
    assert_eq!(asked, MAX_LIST_PAGES);
}

#[tokio::test]
async fn a_repeated_cursor_stops_the_listing_at_once() {
    let (listed, asked) = list(Bounds::new(u64::MAX), |cursor, _| {
        let next = if cursor.as_deref() == Some("b") {
            "a"
        } else if cursor.is_some() {
            "b"
        } else {
            "a"
        };
        json!({"tools": [tool("t")], "nextCursor": next})
    })
    .await;
    let problem = listed.unwrap_err();
    assert_eq!(
        problem,
        ListingProblem::RepeatedCursor {
            page: 3,
            first: 1,
            cursor: "\"a\"".into()
        }
    );
    assert_eq!(asked, 3);
    assert_eq!(
        problem.to_string(),
        "gave the cursor \"a\" again on page 3 (first on page 1); following it would list the same pages forever"
    );
}

#[tokio::test]
async fn entries_and_bytes_are_bounded_over_all_pages() {
    let page = |_: Option<String>, n: usize| {
        let tools: Vec<Value> = (0..10).map(|i| tool(&format!("t{n}_{i}"))).collect();
        json!({"tools": tools, "nextCursor": (n + 1).to_string()})
    };
    let (listed, asked) = list(bounds(100, 25, u64::MAX), page).await;
    assert_eq!(
        listed.unwrap_err(),
        ListingProblem::TooManyItems { limit: 25, page: 3 }
    );
    assert_eq!(asked, 3);
    let one_page = json_size(&page(None, 0)["tools"]);
    let (listed, asked) = list(bounds(100, 10_000, one_page * 4), page).await;
    assert_eq!(
        listed.unwrap_err(),
        ListingProblem::TooManyBytes {
            limit: one_page * 4,
            page: 4
        }
    );
    assert_eq!(asked, 4);
}

#[tokio::test]
async fn the_last_page_has_no_cursor_or_an_empty_one() {
    for last in [
        json!({"tools": [tool("c")]}),
        json!({"tools": [tool("c")], "nextCursor": ""}),
    ] {
        let (listed, asked) = list(Bounds::new(u64::MAX), |cursor, _| match cursor.as_deref() {
            None => json!({"tools": [tool("a")], "nextCursor": "p2"}),
            Some("p2") => json!({"tools": [tool("b")], "nextCursor": "p3"}),
            _ => last.clone(),
        })
        .await;
        let names: Vec<String> = listed
            .unwrap()
            .items
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(asked, 3);
    }
}

#[tokio::test]
async fn a_malformed_entry_is_left_out_naming_its_place_and_field() {
    let (listed, _) = list(Bounds::new(u64::MAX), |cursor, _| match cursor {
        None => json!({"tools": [tool("a")], "nextCursor": "2"}),
        Some(_) => json!({"tools": [
            tool("b"),
            {"name": 5, "inputSchema": {}},
            {"name": "schemaless", "inputSchema": "none"},
            7,
            {"description": "no name", "inputSchema": {}},
            {"name": "c", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}},
            tool("d"),
        ]}),
    })
    .await;
    let listed = listed.unwrap();
    let names: Vec<String> = listed.items.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["a", "b", "d"]);
    assert_eq!(listed.skipped_count, 5);
    let lines: Vec<String> = listed.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "tools/list page 2: tools[1] is not published: field `name`: invalid type: integer `5`, expected a string",
            "tools/list page 2: tools[2] (\"schemaless\") is not published: field `inputSchema`: invalid type: string \"none\", expected a map",
            "tools/list page 2: tools[3] is not published: it is a number, not an object",
            "tools/list page 2: tools[4] is not published: field `name`: missing field `name`",
            "tools/list page 2: tools[5] (\"c\") is not published: field `annotations`: invalid type: string \"yes\", expected a boolean",
        ]
    );
}

#[tokio::test]
async fn past_the_described_ones_malformed_entries_are_counted() {
    let (listed, _) = list(Bounds::new(u64::MAX), |_, _| {
        let mut tools: Vec<Value> = (0..30).map(|_| json!({"name": 5})).collect();
        tools.push(tool("ok"));
        json!({"tools": tools})
    })
    .await;
    let listed = listed.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.skipped.len(), MAX_SKIPPED_DESCRIBED);
    assert_eq!(listed.skipped_count, 30);
    let notes = SkippedNotes::default();
    let server = ServerName::new("s").unwrap();
    notes.record(&server, Tool::METHOD, listed.skipped, listed.skipped_count);
    let lines = notes.lines();
    assert_eq!(lines.len(), MAX_SKIPPED_DESCRIBED + 1);
    assert_eq!(
        lines.last().unwrap(),
        "tools/list: 10 more entries are not published"
    );
    notes.record(&server, Tool::METHOD, Vec::new(), 0);
    assert!(notes.lines().is_empty(), "a clean listing clears the notes");
}

#[tokio::test]
async fn a_page_that_is_no_list_fails_the_listing_naming_why() {
    for (page, reason) in [
        (json!({"tools": 5}), "`tools` is a number, not a list"),
        (json!({"tool": []}), "there is no `tools` list"),
        (
            json!({"tools": [], "nextCursor": 3}),
            "`nextCursor` is a number, not a string",
        ),
    ] {
        let (listed, _) = list(Bounds::new(u64::MAX), |_, _| page.clone()).await;
        assert_eq!(
            listed.unwrap_err().to_string(),
            format!("answered page 1 with no tools/list result: {reason}")
        );
    }
}

#[test]
fn long_names_and_cursors_are_quoted_short_and_escaped() {
    let long = "x".repeat(10_000);
    let quoted = quote(&long);
    assert_eq!(quoted.chars().count(), MAX_QUOTED_CHARS + 3);
    assert_eq!(quote("a\u{1b}b"), "\"a\\u{1b}b\"");
}
