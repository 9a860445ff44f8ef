//! Skills hosted by an MCP server: the SEP-2640 skills extension
//! (`skills/list`, `skills/get`, files over `resources/read`) and, for
//! servers that only publish resources, `skill://<path>/SKILL.md` resources.
//!
//! What the SEP asks of a host, and where it happens here:
//! - **Lazy.** Listing reads only manifests; a file is fetched when asked for.
//! - **Integrity.** Every file read through a manifest is checked against its
//!   size and sha256 digest. On a mismatch the manifest is refreshed once via
//!   `skills/get`; if the file still does not match, the read fails with
//!   [`ClientError::SkillIntegrity`] and the content is dropped. A file the
//!   manifest does not list is a verification failure too. A SKILL.md's
//!   frontmatter must equal the manifest's, field by field.
//! - **Limits.** A skill with more than 512 files or 16 MiB is not loaded.
//! - **Identity.** Skills are keyed by this server's label and their URI; the
//!   server's self-reported name is never used.
//!
//! Resource-only skills have no manifest, so there is nothing to verify;
//! their files are the server's resources under the skill's root.

use std::sync::Arc;

use base64::Engine as _;
use extpool_core::{ResourceBody, ResourceContent, SkillEntry};
use rmcp::model::{ResourceContents, Skill, SkillResources};

use crate::client::McpClient;
use crate::error::ClientError;

/// SEP-2640: files per skill.
pub const MAX_SKILL_FILES: usize = 512;
/// SEP-2640: bytes per skill.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

const SKILL_MD_SUFFIX: &str = "/SKILL.md";

/// Where a hosted skill came from.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// Listed by `skills/list`, with its manifest.
    Extension(Box<Skill>),
    /// A `skill://…/SKILL.md` resource; `files` are the resources under its root.
    Resources { files: Vec<String> },
}

/// One skill of this server.
#[derive(Debug, Clone)]
pub(crate) struct HostedSkill {
    pub(crate) entry: SkillEntry,
    /// `skill://<skill-path>` (no trailing slash).
    pub(crate) root: String,
    pub(crate) origin: Origin,
}

impl HostedSkill {
    /// True when `uri` is this skill's SKILL.md or one of its files.
    pub(crate) fn owns(&self, uri: &str) -> bool {
        uri.strip_prefix(&self.root)
            .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
    }
}

/// The skill owning `uri` (the longest root wins for nested skills).
pub(crate) fn find<'a>(skills: &'a [HostedSkill], uri: &str) -> Option<&'a HostedSkill> {
    skills
        .iter()
        .filter(|s| s.owns(uri))
        .max_by_key(|s| s.root.len())
}

fn root_of(skill_md_uri: &str) -> Option<&str> {
    skill_md_uri
        .strip_suffix(SKILL_MD_SUFFIX)
        .filter(|root| root.len() > "skill://".len())
}

fn within_limits(skill: &Skill) -> bool {
    match &skill.resources {
        SkillResources::Files(files) => {
            files.len() <= MAX_SKILL_FILES
                && files.iter().map(|f| f.size).sum::<u64>() <= MAX_SKILL_BYTES
        }
        _ => true,
    }
}

fn extension_skill(server: &str, skill: Skill) -> Option<HostedSkill> {
    if let Err(error) = skill.validate() {
        tracing::warn!(server, uri = %skill.uri, %error, "ignoring invalid MCP skill entry");
        return None;
    }
    if !within_limits(&skill) {
        tracing::warn!(server, uri = %skill.uri, "ignoring MCP skill over 512 files / 16 MiB");
        return None;
    }
    let root = root_of(&skill.uri)?.to_owned();
    let entry = SkillEntry::new(
        skill.uri.clone(),
        skill.frontmatter.name.clone(),
        skill.frontmatter.description.clone(),
    );
    Some(HostedSkill {
        entry,
        root,
        origin: Origin::Extension(Box::new(skill)),
    })
}

/// Lists this server's skills: the extension's list, plus `skill://`
/// SKILL.md resources the list did not cover.
pub(crate) async fn index(client: &McpClient) -> Result<Vec<HostedSkill>, ClientError> {
    let server = client.name().as_str();
    let mut skills: Vec<HostedSkill> = client
        .list_skills()
        .await?
        .into_iter()
        .filter_map(|s| extension_skill(server, s))
        .collect();
    let resources = client.list_resources().await?;
    for resource in &resources {
        let uri = resource.uri.as_str();
        if !uri.starts_with("skill://") || skills.iter().any(|s| s.entry.uri == uri) {
            continue;
        }
        let Some(root) = root_of(uri) else { continue };
        let name = root.rsplit('/').next().unwrap_or(root);
        let files = resources
            .iter()
            .filter(|r| {
                r.uri
                    .strip_prefix(root)
                    .is_some_and(|rest| rest.starts_with('/'))
            })
            .map(|r| r.uri.clone())
            .collect();
        let mut entry =
            SkillEntry::new(uri, name, resource.description.clone().unwrap_or_default());
        if let Some(mime) = &resource.mime_type {
            entry.mime_type = mime.clone();
        }
        skills.push(HostedSkill {
            entry,
            root: root.to_owned(),
            origin: Origin::Resources { files },
        });
    }
    Ok(skills)
}

/// Confirms an unlisted skill with `skills/get` (the SEP allows partial lists).
pub(crate) async fn confirm(
    client: &McpClient,
    skill_md_uri: &str,
) -> Result<Option<HostedSkill>, ClientError> {
    if !skill_md_uri.ends_with(SKILL_MD_SUFFIX) || !client.supports_skills().await? {
        return Ok(None);
    }
    match client.get_skill(skill_md_uri).await {
        Ok(skill) => Ok(extension_skill(client.name().as_str(), skill)),
        Err(ClientError::Rpc { .. }) => Ok(None),
        Err(other) => Err(other),
    }
}

/// Reads one file of `skill`, verified when the skill has a manifest.
///
/// Returns the content and, when the manifest had to be refreshed, the
/// refreshed skill (so the caller can update its index).
pub(crate) async fn read(
    client: &McpClient,
    skill: &HostedSkill,
    uri: &str,
) -> Result<(ResourceContent, Option<HostedSkill>), ClientError> {
    let content = fetch(client, uri).await?;
    let Origin::Extension(manifest) = &skill.origin else {
        return Ok((content, None));
    };
    if !matches!(manifest.resources, SkillResources::Files(_)) {
        // "dynamic": no digests to check; only the size limit.
        if content.len() as u64 > MAX_SKILL_BYTES {
            return Err(integrity(client, uri, "larger than 16 MiB".into()));
        }
        return Ok((content, None));
    }
    match verify(manifest, uri, &content) {
        Ok(()) => Ok((content, None)),
        Err(first) => {
            tracing::warn!(server = %client.name(), uri, reason = %first, "skill file failed verification; refreshing manifest");
            let fresh = client.get_skill(&manifest.uri).await?;
            let Some(fresh) = extension_skill(client.name().as_str(), fresh) else {
                return Err(integrity(client, uri, first));
            };
            let Origin::Extension(fresh_manifest) = &fresh.origin else {
                return Err(integrity(client, uri, first));
            };
            let content = fetch(client, uri).await?;
            match verify(fresh_manifest, uri, &content) {
                Ok(()) => Ok((content, Some(fresh))),
                Err(reason) => Err(integrity(client, uri, reason)),
            }
        }
    }
}

fn integrity(client: &McpClient, uri: &str, reason: String) -> ClientError {
    ClientError::SkillIntegrity {
        server: client.name().clone(),
        uri: uri.to_owned(),
        reason,
    }
}

fn body_bytes(content: &ResourceContent) -> &[u8] {
    match &content.body {
        ResourceBody::Text(t) => t.as_bytes(),
        ResourceBody::Blob(b) => b,
    }
}

fn verify(manifest: &Skill, uri: &str, content: &ResourceContent) -> Result<(), String> {
    let SkillResources::Files(files) = &manifest.resources else {
        return Ok(());
    };
    let Some(file) = files.iter().find(|f| f.uri == uri) else {
        return Err("not listed in the skill's manifest".into());
    };
    file.verify(body_bytes(content))
        .map_err(|e| e.to_string())?;
    if uri == manifest.uri {
        let Some(text) = content.as_text() else {
            return Err("SKILL.md is not text".into());
        };
        let expected = serde_json::to_value(&manifest.frontmatter).map_err(|e| e.to_string())?;
        match extpool_skills::frontmatter_json(text) {
            Ok(actual) if actual == expected => {}
            Ok(_) => return Err("SKILL.md frontmatter differs from the manifest".into()),
            Err(e) => return Err(format!("SKILL.md frontmatter cannot be read: {e}")),
        }
    }
    Ok(())
}

/// `resources/read` of one URI, as core content.
pub(crate) async fn fetch(client: &McpClient, uri: &str) -> Result<ResourceContent, ClientError> {
    let result = client.read_resource(uri).await?;
    first_content(client, uri, result.contents)
}

/// Picks the content for `uri` (or the first) and decodes it.
pub(crate) fn first_content(
    client: &McpClient,
    uri: &str,
    contents: Vec<ResourceContents>,
) -> Result<ResourceContent, ClientError> {
    let mut chosen = None;
    for c in contents {
        let matches = match &c {
            ResourceContents::TextResourceContents { uri: u, .. }
            | ResourceContents::BlobResourceContents { uri: u, .. } => u == uri,
            _ => false,
        };
        if matches || chosen.is_none() {
            chosen = Some(c);
            if matches {
                break;
            }
        }
    }
    let Some(chosen) = chosen else {
        return Err(ClientError::Protocol {
            server: client.name().clone(),
            operation: "resources/read",
            error: Arc::new(EmptyRead),
        });
    };
    match chosen {
        ResourceContents::BlobResourceContents {
            uri: u,
            mime_type,
            blob,
            meta,
        } => match base64::engine::general_purpose::STANDARD.decode(blob.as_bytes()) {
            Ok(bytes) => Ok(ResourceContent {
                uri: u,
                mime_type,
                body: ResourceBody::Blob(bytes),
                meta: meta.map(|m| serde_json::Value::Object(m.0)),
            }),
            Err(_) => Err(ClientError::Protocol {
                server: client.name().clone(),
                operation: "resources/read",
                error: Arc::new(crate::convert::InvalidBlob { uri: u }),
            }),
        },
        other => crate::convert::resource_content(other).map_err(|e| ClientError::Protocol {
            server: client.name().clone(),
            operation: "resources/read",
            error: Arc::new(e),
        }),
    }
}

/// A `resources/read` result without contents.
#[derive(Debug, thiserror::Error)]
#[error("the server returned no contents")]
pub struct EmptyRead;

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{SkillFrontmatter, SkillResource};
    use serde_json::json;

    const MD: &str =
        "---\nname: demo\ndescription: A demo.\nmetadata:\n  version: \"1\"\n---\n# Demo\n";

    fn skill(md: &str) -> Skill {
        Skill::new(
            "skill://acme/demo/SKILL.md",
            SkillFrontmatter::new("demo", "A demo.")
                .with_field("metadata", json!({"version": "1"})),
            SkillResources::Files(vec![SkillResource::from_bytes(
                "skill://acme/demo/SKILL.md",
                md.as_bytes(),
            )]),
        )
    }

    fn text(uri: &str, t: &str) -> ResourceContent {
        ResourceContent::text(uri, Some("text/markdown".into()), t)
    }

    #[test]
    fn unreadable_frontmatter_fails_saying_where() {
        let md = "---\nname: demo\ndescription: a: b\n---\n# Demo\n";
        let s = skill(md);
        let err = verify(&s, "skill://acme/demo/SKILL.md", &text("u", md)).unwrap_err();
        assert!(
            err.starts_with("SKILL.md frontmatter cannot be read: line 3, column "),
            "{err}"
        );
    }

    #[test]
    fn verified_file_passes() {
        let s = skill(MD);
        assert!(
            verify(
                &s,
                "skill://acme/demo/SKILL.md",
                &text("skill://acme/demo/SKILL.md", MD)
            )
            .is_ok()
        );
    }

    #[test]
    fn tampered_file_fails() {
        let s = skill(MD);
        let tampered = MD.replace("Demo", "Evil");
        let err = verify(&s, "skill://acme/demo/SKILL.md", &text("u", &tampered)).unwrap_err();
        assert!(err.contains("digest"), "{err}");
        let err = verify(&s, "skill://acme/demo/SKILL.md", &text("u", "short")).unwrap_err();
        assert!(err.contains("bytes"), "{err}");
    }

    #[test]
    fn unlisted_file_fails() {
        let s = skill(MD);
        assert!(verify(&s, "skill://acme/demo/other.md", &text("u", "x")).is_err());
    }

    #[test]
    fn frontmatter_must_match_the_manifest() {
        let md = MD.replace("A demo.", "Something else.");
        let mut s = skill(&md);
        s.frontmatter = SkillFrontmatter::new("demo", "A demo.")
            .with_field("metadata", json!({"version": "1"}));
        let err = verify(&s, "skill://acme/demo/SKILL.md", &text("u", &md)).unwrap_err();
        assert!(err.contains("frontmatter"), "{err}");
    }

    #[test]
    fn ownership_by_root() {
        let hosted = extension_skill("s", skill(MD)).unwrap();
        assert_eq!(hosted.root, "skill://acme/demo");
        assert!(hosted.owns("skill://acme/demo/SKILL.md"));
        assert!(hosted.owns("skill://acme/demo/references/a.md"));
        assert!(!hosted.owns("skill://acme/demo2/SKILL.md"));
        assert!(!hosted.owns("skill://acme/demo"));
        let list = [hosted];
        assert!(find(&list, "skill://acme/demo/x").is_some());
        assert!(find(&list, "skill://other/x").is_none());
    }

    #[test]
    fn oversized_skills_are_refused() {
        let mut s = skill(MD);
        s.resources = SkillResources::Files(vec![SkillResource::new(
            "skill://acme/demo/SKILL.md",
            rmcp::model::sha256_digest(b"x"),
            MAX_SKILL_BYTES + 1,
        )]);
        assert!(extension_skill("s", s).is_none());
    }
}
