//! The hosted skill: SEP-2640 `skills/list` / `skills/get` with digests that
//! verify, `--bad-digest`, and the resource-only form of
//! `--no-skills-extension`.

use rmcp::model::{
    GetSkillRequestParams, ReadResourceRequestParams, ResourceContents, SkillResources,
};

use crate::common::{Client, connect_stdio, within};

const SKILL_URI: &str = "skill://testkit-skill/SKILL.md";

async fn read_text(client: &Client, uri: &str) -> String {
    let result = within(client.read_resource(ReadResourceRequestParams::new(uri)))
        .await
        .unwrap();
    match result.contents.into_iter().next() {
        Some(ResourceContents::TextResourceContents { text, .. }) => text,
        other => panic!("expected text for {uri}, got {other:?}"),
    }
}

/// Reads every file of the manifest and verifies it; returns the failures.
async fn verify_all(client: &Client, resources: &SkillResources) -> Vec<String> {
    let SkillResources::Files(files) = resources else {
        panic!("a static manifest is expected, got {resources:?}");
    };
    let mut failures = Vec::new();
    for file in files {
        let bytes = read_text(client, &file.uri).await.into_bytes();
        if let Err(e) = file.verify(&bytes) {
            failures.push(e.to_string());
        }
    }
    failures
}

#[tokio::test]
async fn skills_extension_lists_and_gets_a_skill_whose_digests_verify() {
    let (client, _) = connect_stdio(&[]).await;
    let info = client.peer_info().unwrap();
    assert!(info.capabilities.supports_skills());
    let extensions = serde_json::to_value(&info.capabilities.extensions).unwrap();
    assert_eq!(
        extensions["io.modelcontextprotocol/skills"],
        serde_json::json!({})
    );

    let listed = within(client.list_skills(None)).await.unwrap();
    assert_eq!(listed.skills.len(), 1);
    let skill = &listed.skills[0];
    assert_eq!(skill.uri, SKILL_URI);
    assert_eq!(skill.name(), "testkit-skill");
    assert_eq!(
        skill.frontmatter.extra.get("license"),
        Some(&serde_json::json!("Apache-2.0"))
    );
    let SkillResources::Files(files) = &skill.resources else {
        panic!("static manifest expected")
    };
    let uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
    assert_eq!(
        uris,
        [SKILL_URI, "skill://testkit-skill/references/guide.md"]
    );
    assert!(verify_all(&client, &skill.resources).await.is_empty());

    let got = within(client.get_skill(GetSkillRequestParams::new(SKILL_URI)))
        .await
        .unwrap();
    assert_eq!(&got.skill, skill);

    let unknown =
        within(client.get_skill(GetSkillRequestParams::new("skill://nope/SKILL.md"))).await;
    match unknown {
        Err(rmcp::service::ServiceError::McpError(e)) => assert_eq!(e.code.0, -32602),
        other => panic!("expected -32602, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_digest_fails_verification_of_one_file() {
    let (client, _) = connect_stdio(&["--bad-digest"]).await;
    let listed = within(client.list_skills(None)).await.unwrap();
    let failures = verify_all(&client, &listed.skills[0].resources).await;
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("guide.md"), "{failures:?}");
}

#[tokio::test]
async fn without_the_extension_skills_stay_readable_as_resources() {
    let (client, _) = connect_stdio(&["--no-skills-extension"]).await;
    let info = client.peer_info().unwrap();
    assert!(!info.capabilities.supports_skills());
    assert!(within(client.list_skills(None)).await.is_err());
    let resources = within(client.list_all_resources()).await.unwrap();
    assert!(resources.iter().any(|r| r.uri == SKILL_URI));
    let text = read_text(&client, SKILL_URI).await;
    assert!(text.contains("name: testkit-skill"));
}
