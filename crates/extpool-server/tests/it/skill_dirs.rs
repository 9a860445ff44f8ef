//! SEP-2640 `resources/directory/read` through the gateway, asked by the
//! Python SDK client (which has no method of its own for it: the request
//! goes through its generic `send_request`): a local skill's folders read
//! from disk, page by page, with traversal refused; an MCP-hosted skill's
//! forwarded to a server that declared `directoryRead`, and answered from
//! the skill's manifest for one that did not (never sent to it). A
//! 2026-07-28 rmcp client reads them too, with rmcp's typed method.

use extpool_server::GatewayOptions;
use extpool_testkit::{StateDir, stdio_command};
use serde_json::{Value, json};

use crate::support::{Project, Sdk, Served, sdk_client, server_yaml};

/// Files in the local skill's `references/many` folder: more than a page.
const MANY: usize = 150;

/// `(uri, mimeType)` of every child of one answer line.
fn children(line: &Value) -> Vec<(String, String)> {
    line["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("no resources in {line}"))
        .iter()
        .map(|r| {
            (
                r["uri"].as_str().unwrap().to_owned(),
                r["mimeType"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pair(uri: &str, mime: &str) -> (String, String) {
    (uri.to_owned(), mime.to_owned())
}

/// The error line of a refused read: its JSON-RPC code and message.
fn refused(line: &Value) -> (i64, &str) {
    (
        line["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not refused: {line}")),
        line["error"].as_str().unwrap(),
    )
}

/// A project with local skill `review` (`SKILL.md`, `references/notes.md`,
/// `references/many/` of [`MANY`] files, a symlink to a folder outside the
/// skill) and a testkit server started with `testkit_args`.
fn project(state: &StateDir, testkit_args: &[&str]) -> Project {
    let project = Project::new();
    let mut args = state.args();
    args.extend(testkit_args.iter().map(|a| (*a).to_owned()));
    project.config(&server_yaml("testkit", stdio_command(args)));
    project.skill("review", "Review the change.");
    let refs = project.path().join("skills/review/references");
    std::fs::create_dir_all(refs.join("many")).unwrap();
    for i in 0..MANY {
        std::fs::write(refs.join(format!("many/f{i:03}.md")), "x").unwrap();
    }
    let outside = project.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "not the skill's").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, refs.join("out")).unwrap();
    project
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_reads_a_local_skill_directory_page_by_page_confined() {
    let state = StateDir::new();
    let served = Served::start(project(&state, &[]), GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "extensions"},
            {"op": "read_directory", "uri": "skill://review"},
            {"op": "read_directory", "uri": "skill://review/references/"},
            {"op": "read_directory", "uri": "skill://review/references/many", "all_pages": true},
            {"op": "read_directory", "uri": "skill://review/../review/references", "expect_error": true},
            {"op": "read_directory", "uri": "skill://review/references/%2e%2e/%2e%2e/..", "expect_error": true},
            {"op": "read_directory", "uri": "skill://review/references/out", "expect_error": true},
            {"op": "read_directory", "uri": "skill://review/SKILL.md", "expect_error": true},
            {"op": "read_directory", "uri": "skill://review/nothing", "expect_error": true},
            {"op": "read_directory", "uri": "skill://no-such-skill", "expect_error": true},
        ]),
    )
    .await;
    // The gateway declares directoryRead in the skills extension.
    assert_eq!(
        out[1]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{out:?}"
    );
    // Direct children only; folders as inode/directory.
    assert_eq!(
        children(&out[2]),
        [
            pair("skill://review/SKILL.md", "text/markdown"),
            pair("skill://review/references", "inode/directory"),
        ]
    );
    assert_eq!(out[2]["next_cursor"], Value::Null);
    // The symlink out of the skill is not listed; a trailing slash is the folder.
    assert_eq!(
        children(&out[3]),
        [
            pair("skill://review/references/many", "inode/directory"),
            pair("skill://review/references/notes.md", "text/markdown"),
        ]
    );
    // Two pages, each asked with the cursor of the one before: every file
    // once, in order.
    let first = children(&out[4]);
    let second = children(&out[5]);
    assert_eq!((first.len(), second.len()), (100, MANY - 100), "{out:?}");
    assert!(out[4]["next_cursor"].is_string());
    assert_eq!(out[5]["next_cursor"], Value::Null);
    let uris: Vec<String> = first.into_iter().chain(second).map(|(u, _)| u).collect();
    let expected: Vec<String> = (0..MANY)
        .map(|i| format!("skill://review/references/many/f{i:03}.md"))
        .collect();
    assert_eq!(uris, expected);
    // Traversal, in the clear and percent-encoded, and a symlink out of
    // the skill: refused as invalid params, nothing of outside shown.
    for line in &out[6..9] {
        let (code, message) = refused(line);
        assert_eq!(code, -32602, "{line}");
        assert!(!message.contains("secret"), "{message}");
    }
    assert!(refused(&out[6]).1.contains("traversal"), "{:?}", out[6]);
    assert!(
        refused(&out[8]).1.contains("outside the skill"),
        "{:?}",
        out[8]
    );
    // A file, a missing folder, an unknown skill: invalid params, saying so.
    let (code, message) = refused(&out[9]);
    assert_eq!(code, -32602);
    assert!(message.contains("not a directory"), "{message}");
    for line in &out[10..12] {
        let (code, message) = refused(line);
        assert_eq!(code, -32602, "{line}");
        assert!(
            message.contains("no skill visible here has the directory"),
            "{message}"
        );
    }
    served.stop().await;
}

/// Symlinks back to a folder that holds them (`self -> .`,
/// `references/up -> ..`, `references/again -> ../references`) are loops:
/// a listing leaves them out, so a client that walks every folder it is
/// given comes to an end, and a read through one is refused naming it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_loop_in_a_local_skill_is_never_listed_nor_followed() {
    use std::os::unix::fs::symlink;
    let state = StateDir::new();
    let project = project(&state, &[]);
    let skill = project.path().join("skills/review");
    symlink(".", skill.join("self")).unwrap();
    symlink("..", skill.join("references/up")).unwrap();
    symlink("../references", skill.join("references/again")).unwrap();
    // A symlink to a sibling folder is no loop: listed as the folder.
    symlink("many", skill.join("references/alias")).unwrap();
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "read_directory", "uri": "skill://review"},
            {"op": "read_directory", "uri": "skill://review/references"},
            {"op": "read_directory", "uri": "skill://review/self", "expect_error": true},
            {"op": "read_directory", "uri": "skill://review/self/self/self/references", "expect_error": true},
            {"op": "read_directory", "uri": "skill://review/references/up/references/again", "expect_error": true},
        ]),
    )
    .await;
    assert_eq!(
        children(&out[1]),
        [
            pair("skill://review/SKILL.md", "text/markdown"),
            pair("skill://review/references", "inode/directory"),
        ],
        "{out:?}"
    );
    assert_eq!(
        children(&out[2]),
        [
            pair("skill://review/references/alias", "inode/directory"),
            pair("skill://review/references/many", "inode/directory"),
            pair("skill://review/references/notes.md", "text/markdown"),
        ],
        "{out:?}"
    );
    for (line, link) in [
        (&out[3], "self"),
        (&out[4], "self"),
        (&out[5], "references/up"),
    ] {
        let (code, message) = refused(line);
        assert_eq!(code, -32602, "{line}");
        assert!(
            message.contains(&format!("{link:?} is a symlink loop")),
            "{message}"
        );
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_hosted_skill_directory_is_forwarded_to_a_server_that_declared_directory_read() {
    let state = StateDir::new();
    let project = project(&state, &["--directory-read", "--page-size", "1"]);
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "read_directory", "uri": "skill://testkit-skill", "all_pages": true},
            {"op": "read_directory", "uri": "skill://testkit-skill/references"},
            {"op": "read_directory", "uri": "skill://testkit-skill/SKILL.md", "expect_error": true},
        ]),
    )
    .await;
    // The server's pages (one child each, with --page-size 1), its cursor
    // passed through.
    assert_eq!(
        children(&out[1]),
        [pair("skill://testkit-skill/SKILL.md", "text/markdown")],
        "{out:?}"
    );
    assert!(out[1]["next_cursor"].is_string());
    assert_eq!(
        children(&out[2]),
        [pair("skill://testkit-skill/references", "inode/directory")]
    );
    assert_eq!(out[2]["next_cursor"], Value::Null);
    assert_eq!(
        children(&out[3]),
        [pair(
            "skill://testkit-skill/references/guide.md",
            "text/markdown"
        )]
    );
    let (code, message) = refused(&out[4]);
    assert_eq!(code, -32602);
    assert!(
        message.contains("server testkit") && message.contains("not a directory"),
        "{message}"
    );
    // Every read went to the server: two pages, one folder, one file.
    assert_eq!(state.counter("directory_reads"), 4);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_hosted_skill_directory_is_answered_from_its_manifest_without_directory_read() {
    let state = StateDir::new();
    let served = Served::start(project(&state, &[]), GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "read_directory", "uri": "skill://testkit-skill"},
            {"op": "read_directory", "uri": "skill://testkit-skill/references"},
            {"op": "read_directory", "uri": "skill://testkit-skill/references/guide.md", "expect_error": true},
            {"op": "read_directory", "uri": "skill://testkit-skill/nothing", "expect_error": true},
        ]),
    )
    .await;
    assert_eq!(
        children(&out[1]),
        [
            pair("skill://testkit-skill/SKILL.md", "text/markdown"),
            pair("skill://testkit-skill/references", "inode/directory"),
        ],
        "{out:?}"
    );
    assert_eq!(
        children(&out[2]),
        [pair(
            "skill://testkit-skill/references/guide.md",
            "text/markdown"
        )]
    );
    let (code, message) = refused(&out[3]);
    assert_eq!(code, -32602);
    assert!(message.contains("not a directory"), "{message}");
    assert_eq!(refused(&out[4]).0, -32602);
    // The server did not declare directoryRead: it was never asked.
    assert_eq!(state.counter("directory_reads"), 0);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_reads_skill_directories_with_rmcp_typed_method() {
    use rmcp::model::ReadResourceDirectoryRequestParams as Params;
    let state = StateDir::new();
    let served = Served::start(project(&state, &[]), GatewayOptions::default()).await;
    let client = crate::support::modern(&served.url).await;
    // rmcp's client sends the method only when server/discover declared it.
    assert!(
        client
            .peer_info()
            .unwrap()
            .capabilities
            .supports_directory_read()
    );
    let read = |params: Params| {
        let client = &client;
        async move { crate::support::within(client.read_resource_directory(params)).await }
    };
    let first = read(Params::new("skill://review/references/many"))
        .await
        .unwrap();
    let cursor = first.next_cursor.clone().expect("a second page");
    let second = read(Params::new("skill://review/references/many").with_cursor(cursor))
        .await
        .unwrap();
    assert_eq!(
        (first.resources.len(), second.resources.len()),
        (100, MANY - 100)
    );
    assert_eq!(second.next_cursor, None);
    let hosted = read(Params::new("skill://testkit-skill/references"))
        .await
        .unwrap();
    let uris: Vec<&str> = hosted.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["skill://testkit-skill/references/guide.md"]);
    let error = read(Params::new("skill://review/references/out"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, rmcp::ServiceError::McpError(e) if e.code == rmcp::model::ErrorCode::INVALID_PARAMS),
        "{error:?}"
    );
    client.cancel().await.unwrap();
    served.stop().await;
}
