//! A plugin's skills and command files through the gateway: SEP-2640
//! `skills/list` with the plugin skill's files and digests (its
//! frontmatter name the last segment of its skill path), its folders read
//! by the Python SDK client, and a command file's `prompts/get` with its
//! text split into words as a shell would.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use extpool_testkit::plugins::claude_install;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Project, Sdk, Served, raw_2026, sdk_client};

fn project(state: &StateDir) -> Project {
    let project = Project::new();
    project.config("");
    claude_install(
        &project.path().join("home"),
        "mk",
        "demo",
        true,
        &state.args(),
    );
    let prompts = project.path().join("home/.codex/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("draft.md"), "Draft a note about $1 for $2.\n").unwrap();
    project
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_skills_and_command_files_reach_mcp_clients() {
    let state = StateDir::new();
    let served = Served::start(project(&state), GatewayOptions::default()).await;
    let (status, answer) = raw_2026(
        &served.url,
        "skills/list",
        json!({}),
        &[("mcp-method", "skills/list")],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let skill = answer["result"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["uri"] == "skill://demo/hello/SKILL.md")
        .unwrap_or_else(|| panic!("{answer:#}"));
    assert_eq!(skill["frontmatter"]["name"], "hello", "{skill}");
    let notes = skill["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "skill://demo/hello/references/notes.md")
        .unwrap_or_else(|| panic!("{skill:#}"));
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(b"Be kind.\n")));
    assert_eq!(notes["digest"], digest.as_str());

    let out = sdk_client(
        Sdk::Python,
        &served.url,
        json!([
            {"op": "read_directory", "uri": "skill://demo/hello"},
            {"op": "read", "uri": "skill://demo/hello/references/notes.md"},
            {"op": "list_prompts"},
            {"op": "get_prompt", "name": "prompts:draft", "args": {"arguments": "tea 'the team'"}},
        ]),
    )
    .await;
    let children: Vec<&str> = out[1]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{out:?}"))
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        children,
        [
            "skill://demo/hello/SKILL.md",
            "skill://demo/hello/references"
        ],
        "{out:?}"
    );
    assert_eq!(out[2]["text"], json!(["Be kind.\n"]));
    let prompts: Vec<Value> = serde_json::from_value(out[3]["prompts"].clone()).unwrap();
    for name in ["demo:hi", "demo:hello", "prompts:draft"] {
        assert!(prompts.iter().any(|p| p == name), "{name} in {prompts:?}");
    }
    assert_eq!(
        out[4]["text"],
        json!(["Draft a note about tea for the team."]),
        "{out:?}"
    );
    served.stop().await;
}
