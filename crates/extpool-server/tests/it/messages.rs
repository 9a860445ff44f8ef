//! What a gateway's client and its model read in an error: the fact and
//! the name to use, never a command of the extpool CLI (which shows more is
//! the CLI's to say, where it renders an error itself).

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::json;

use crate::support::{Project, Sdk, Served, sdk_client, testkit_yaml};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateways_client_reads_the_name_to_use_and_no_cli_command() {
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&(testkit_yaml("kit", &kit) + "  bad:\n    command: ./does-not-exist\n"));
    // A skill whose SKILL.md has errors: its root's row says it is not loaded.
    let broken = project.path().join("skills/broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("SKILL.md"), "---\nname: Not_Valid\n---\nBody\n").unwrap();
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "call", "name": "mcp__kit__ech", "args": {"message": "x"}, "expect_error": true},
            {"op": "call", "name": "mcp__bad__add", "args": {"a": 1, "b": 2}},
            {"op": "call", "name": "ListMcpSources", "args": {}},
        ]),
    )
    .await;
    let unknown = out[1]["error"].as_str().unwrap_or_default();
    assert!(
        unknown.contains("unknown tool mcp__kit__ech; did you mean mcp__kit__echo?"),
        "{}",
        out[1]
    );
    assert!(
        unknown.contains("(servers that failed to start: bad)"),
        "{unknown}"
    );
    let unavailable = out[2]["text"].to_string();
    assert_eq!(out[2]["is_error"], true, "{}", out[2]);
    assert!(
        unavailable
            .contains("mcp__bad__add is unavailable: MCP server \\\"bad\\\" failed to start"),
        "{unavailable}"
    );
    let sources = out[3]["text"].to_string();
    assert!(sources.contains("1 not loaded"), "{sources}");
    for shown in [unknown, &unavailable, &sources] {
        assert!(
            !shown.contains("extpool "),
            "a CLI command reached the client: {shown}"
        );
    }
    served.stop().await;
}
