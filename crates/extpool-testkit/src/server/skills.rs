//! The one skill the server hosts, `testkit-skill`, served two ways:
//! as plain `skill://` resources (always) and through the SEP-2640 skills
//! extension (`skills/list`, `skills/get`) unless `--no-skills-extension`.
//!
//! The manifest's digests are computed from the very bytes `resources/read`
//! returns, so a client that verifies them succeeds — except with
//! `--bad-digest`, which corrupts the digest of the reference file on
//! purpose.

use rmcp::model::{
    DIRECTORY_MIME_TYPE, Resource, Skill, SkillFrontmatter, SkillResource, SkillResources,
};
use sha2::{Digest, Sha256};

/// Name of the hosted skill (frontmatter `name`, last URI segment).
pub(crate) const SKILL_NAME: &str = "testkit-skill";
/// URI of its SKILL.md.
pub(crate) const SKILL_MD_URI: &str = "skill://testkit-skill/SKILL.md";
/// URI of its one supporting file.
pub(crate) const GUIDE_URI: &str = "skill://testkit-skill/references/guide.md";
/// The frontmatter description, repeated in the manifest.
pub(crate) const DESCRIPTION: &str = "Exercises MCP-hosted skills in extpool tests. Use when a test needs a skill served by an MCP server.";

/// The SKILL.md file, byte for byte.
pub(crate) const SKILL_MD: &str = "---
name: testkit-skill
description: Exercises MCP-hosted skills in extpool tests. Use when a test needs a skill served by an MCP server.
license: Apache-2.0
metadata:
  author: extpool
  version: \"1\"
---
# Testkit skill

This skill is served by the extpool test server. It has one reference file,
[the guide](references/guide.md), that a client reads with `resources/read`.
";

/// The supporting file `references/guide.md`.
pub(crate) const GUIDE_MD: &str = "# Guide

The testkit skill's guide. Reading this file proves that a client can fetch
the supporting files of an MCP-hosted skill.
";

/// The markdown MIME type the SEP recommends for skill files.
pub(crate) const MARKDOWN_MIME: &str = "text/markdown";

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The `skills/list` / `skills/get` entry of the hosted skill.
pub(crate) fn entry(bad_digest: bool) -> Skill {
    let frontmatter = SkillFrontmatter::new(SKILL_NAME, DESCRIPTION)
        .with_field("license", "Apache-2.0")
        .with_field(
            "metadata",
            serde_json::json!({"author": "extpool", "version": "1"}),
        );
    let guide_digest = if bad_digest {
        // Well-formed, but the digest of different bytes.
        digest(b"not the guide")
    } else {
        digest(GUIDE_MD.as_bytes())
    };
    Skill::new(
        SKILL_MD_URI,
        frontmatter,
        SkillResources::Files(vec![
            SkillResource::new(
                SKILL_MD_URI,
                digest(SKILL_MD.as_bytes()),
                SKILL_MD.len() as u64,
            ),
            SkillResource::new(GUIDE_URI, guide_digest, GUIDE_MD.len() as u64),
        ]),
    )
}

/// The skill's root, `skill://<name>`.
const ROOT_URI: &str = "skill://testkit-skill";
/// Its one folder.
const REFERENCES_URI: &str = "skill://testkit-skill/references";

/// The direct children `resources/directory/read` answers for `uri`
/// (`--directory-read`), or why `uri` is no directory of the skill.
pub(crate) fn directory(uri: &str) -> Result<Vec<Resource>, String> {
    let file = |uri: &str, name: &str| {
        let mut r = Resource::new(uri, name);
        r.mime_type = Some(MARKDOWN_MIME.into());
        r
    };
    match uri.trim_end_matches('/') {
        ROOT_URI => {
            let mut references = Resource::new(REFERENCES_URI, "references");
            references.mime_type = Some(DIRECTORY_MIME_TYPE.into());
            Ok(vec![file(SKILL_MD_URI, "SKILL.md"), references])
        }
        REFERENCES_URI => Ok(vec![file(GUIDE_URI, "guide.md")]),
        SKILL_MD_URI | GUIDE_URI => Err(format!("not a directory: {uri}")),
        _ => Err(format!("no skill directory {uri}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_is_valid_and_digests_match() {
        let skill = entry(false);
        skill.validate().unwrap();
        let SkillResources::Files(files) = &skill.resources else {
            panic!("static manifest expected")
        };
        files[0].verify(SKILL_MD.as_bytes()).unwrap();
        files[1].verify(GUIDE_MD.as_bytes()).unwrap();
    }

    #[test]
    fn directory_reads_list_direct_children_and_refuse_files() {
        let uris = |uri: &str| -> Vec<String> {
            directory(uri).unwrap().into_iter().map(|r| r.uri).collect()
        };
        assert_eq!(
            uris("skill://testkit-skill"),
            [SKILL_MD_URI, REFERENCES_URI]
        );
        assert_eq!(uris("skill://testkit-skill/references/"), [GUIDE_URI]);
        assert!(
            directory(GUIDE_URI)
                .unwrap_err()
                .contains("not a directory")
        );
        assert!(directory("skill://other").is_err());
        // Every file of the manifest is under a folder the reads list.
        let SkillResources::Files(files) = &entry(false).resources else {
            panic!("static manifest expected")
        };
        let listed = [uris("skill://testkit-skill"), uris(REFERENCES_URI)].concat();
        assert!(files.iter().all(|f| listed.contains(&f.uri)));
    }

    #[test]
    fn bad_digest_is_well_formed_but_wrong() {
        let skill = entry(true);
        skill.validate().unwrap();
        let SkillResources::Files(files) = &skill.resources else {
            panic!("static manifest expected")
        };
        assert!(files[1].verify(GUIDE_MD.as_bytes()).is_err());
    }

    #[test]
    fn frontmatter_json_is_the_file_frontmatter() {
        // Read as extpool reads a hosted SKILL.md to check it.
        let parsed = extpool_skills::frontmatter_json(SKILL_MD).unwrap();
        let entry = serde_json::to_value(&entry(false).frontmatter).unwrap();
        assert_eq!(parsed, entry);
    }
}
