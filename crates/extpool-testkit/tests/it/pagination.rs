//! `--extra-tools` and `--page-size`: catalogs of many tools, and cursors on
//! every list method.

use rmcp::model::PaginatedRequestParams;

use crate::common::{BUILTIN_TOOL_COUNT, connect_stdio, within};

#[tokio::test]
async fn tools_resources_and_prompts_come_in_pages() {
    let (client, _) = connect_stdio(&["--extra-tools", "25", "--page-size", "7"]).await;
    let mut names = Vec::new();
    let mut pages = 0;
    let mut cursor = None;
    loop {
        let page =
            within(client.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor))))
                .await
                .unwrap();
        pages += 1;
        assert!(page.tools.len() <= 7);
        names.extend(page.tools.into_iter().map(|t| t.name.into_owned()));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(names.len(), BUILTIN_TOOL_COUNT + 25);
    assert_eq!(pages, (BUILTIN_TOOL_COUNT + 25usize).div_ceil(7));
    assert_eq!(names[BUILTIN_TOOL_COUNT], "tool_0000");
    assert_eq!(names.last().unwrap(), "tool_0024");
    let all = within(client.list_all_tools()).await.unwrap();
    assert_eq!(all.len(), names.len());

    let first = within(client.list_resources(None)).await.unwrap();
    assert_eq!(first.resources.len(), 4);
    assert!(first.next_cursor.is_none());
    assert_eq!(within(client.list_all_prompts()).await.unwrap().len(), 2);

    assert_eq!(
        crate::common::call_text(&client, "tool_0024", serde_json::json!({})).await,
        "tool_0024"
    );
}

#[tokio::test]
async fn small_pages_split_resources_and_prompts() {
    let (client, _) = connect_stdio(&["--page-size", "1"]).await;
    let first = within(client.list_resources(None)).await.unwrap();
    assert_eq!(first.resources.len(), 1);
    assert!(first.next_cursor.is_some());
    assert_eq!(within(client.list_all_resources()).await.unwrap().len(), 4);
    let prompts = within(client.list_prompts(None)).await.unwrap();
    assert_eq!(prompts.prompts.len(), 1);
    assert_eq!(within(client.list_all_prompts()).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_foreign_cursor_is_refused() {
    let (client, _) = connect_stdio(&["--page-size", "3"]).await;
    let result = within(client.list_tools(Some(
        PaginatedRequestParams::default().with_cursor(Some("bogus".to_owned())),
    )))
    .await;
    assert!(result.is_err(), "{result:?}");
}
