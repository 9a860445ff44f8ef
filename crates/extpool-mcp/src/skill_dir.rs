//! Directory reads of MCP-hosted skills (SEP-2640
//! `resources/directory/read`).
//!
//! A server that declared `directoryRead` is asked, and only the children
//! it gives inside the directory asked for are kept (a skill never names
//! another place). A server that did not is never sent the method (the SEP
//! forbids it): its directory is answered from what the gateway knows of
//! the skill — the files of its manifest, or the `skill://` resources
//! under its root — and a skill whose manifest is `dynamic` is an error
//! naming the server.

use extpool_core::directory::{
    DIRECTORY_PAGE_SIZE, MAX_DIRECTORY_ENTRIES, child_entry, trim_directory_uri,
};
use extpool_core::{DIRECTORY_MIME_TYPE, DirectoryPage, ExtensionError, ResourceEntry};
use rmcp::model::{ErrorCode, SkillResources};

use crate::client::McpClient;
use crate::error::ClientError;
use crate::skills::{HostedSkill, Origin};

/// The hosted skill whose root is `dir` or holds it (the longest root wins
/// for nested skills).
pub(crate) fn owner<'a>(skills: &'a [HostedSkill], dir: &str) -> Option<&'a HostedSkill> {
    skills
        .iter()
        .filter(|s| s.root == dir || s.owns(dir))
        .max_by_key(|s| s.root.len())
}

/// Why a hosted skill's directory could not be listed.
#[derive(Debug)]
pub(crate) enum DirError {
    /// Asking the server failed.
    Client(ClientError),
    /// The server cannot be asked and what is known does not tell.
    Refused(ExtensionError),
}

impl From<ClientError> for DirError {
    fn from(e: ClientError) -> Self {
        Self::Client(e)
    }
}

/// The page after `cursor` of the children of directory `uri` of `skill`;
/// `None` when the skill has no such directory.
pub(crate) async fn read(
    client: &McpClient,
    skill: &HostedSkill,
    uri: &str,
    cursor: Option<&str>,
) -> Result<Option<DirectoryPage>, DirError> {
    let dir = trim_directory_uri(uri);
    if client.supports_directory_read().await? {
        return forwarded(client, dir, cursor).await.map(Some);
    }
    known(client.name().as_str(), skill, dir, cursor).map_err(DirError::Refused)
}

/// The page after `cursor` of directory `dir` of `skill` from what is known
/// of its files (its manifest, or its resources), for server `server` that
/// cannot be asked; `None` when no file of the skill is under `dir`.
fn known(
    server: &str,
    skill: &HostedSkill,
    dir: &str,
    cursor: Option<&str>,
) -> Result<Option<DirectoryPage>, ExtensionError> {
    let files: Vec<&str> = match &skill.origin {
        Origin::Extension(manifest) => match &manifest.resources {
            SkillResources::Files(files) => files.iter().map(|f| f.uri.as_str()).collect(),
            _ => {
                return Err(ExtensionError::InvalidArgument(format!(
                    "server {server} does not declare directoryRead and lists the files of \
                     skill {} as dynamic: its directory {dir} cannot be listed",
                    skill.entry.name
                )));
            }
        },
        Origin::Resources { files } => files.iter().map(String::as_str).collect(),
    };
    if files.contains(&dir) {
        return Err(ExtensionError::InvalidArgument(format!(
            "not a directory: {dir} is a file of skill {}",
            skill.entry.name
        )));
    }
    let children = known_children(&files, dir);
    if children.is_empty() {
        return Ok(None);
    }
    Ok(Some(DirectoryPage::of(
        children,
        cursor,
        DIRECTORY_PAGE_SIZE,
    )))
}

/// `resources/directory/read` sent to the server, its children outside
/// `dir` left out.
async fn forwarded(
    client: &McpClient,
    dir: &str,
    cursor: Option<&str>,
) -> Result<DirectoryPage, DirError> {
    let result = match client.read_resource_directory(dir, cursor).await {
        Ok(result) => result,
        // The server's word that the URI is no directory of its (a file,
        // an unknown folder, a cursor of nobody's) stays invalid params.
        Err(ClientError::Rpc { server, error }) if error.code == ErrorCode::INVALID_PARAMS => {
            return Err(DirError::Refused(ExtensionError::InvalidArgument(format!(
                "server {server} refused the directory read of {dir}: {}",
                error.message
            ))));
        }
        Err(e) => return Err(e.into()),
    };
    if result.resources.len() > MAX_DIRECTORY_ENTRIES {
        return Err(DirError::Refused(ExtensionError::InvalidArgument(format!(
            "server {} answered {} children of {dir} in one page, over {MAX_DIRECTORY_ENTRIES}",
            client.name(),
            result.resources.len()
        ))));
    }
    let mut entries = Vec::with_capacity(result.resources.len());
    for resource in &result.resources {
        if is_child(dir, &resource.uri) {
            entries.push(crate::convert::resource_entry(resource));
        } else {
            tracing::warn!(server = %client.name(), dir, uri = %resource.uri, "directory child outside the directory left out");
        }
    }
    Ok(DirectoryPage {
        entries,
        next_cursor: result.next_cursor,
    })
}

/// True when `uri` is a direct child of `dir` (a folder may end in `/`).
fn is_child(dir: &str, uri: &str) -> bool {
    uri.strip_prefix(dir)
        .and_then(|rest| rest.strip_prefix('/'))
        .map(|rest| rest.strip_suffix('/').unwrap_or(rest))
        .is_some_and(|name| !name.is_empty() && !name.contains('/') && name != "." && name != "..")
}

/// The direct children of `dir` among the skill's `files`: each file right
/// in it, and each folder on the way to a deeper one.
fn known_children(files: &[&str], dir: &str) -> Vec<ResourceEntry> {
    let mut out: Vec<ResourceEntry> = Vec::new();
    for file in files {
        let Some(rest) = file.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) else {
            continue;
        };
        let entry = match rest.split_once('/') {
            Some((folder, _)) if !folder.is_empty() => {
                child_entry(format!("{dir}/{folder}"), DIRECTORY_MIME_TYPE)
            }
            None if !rest.is_empty() => {
                child_entry((*file).to_owned(), extpool_skills::files::mime_for(rest))
            }
            _ => continue,
        };
        if !out.iter().any(|e| e.uri == entry.uri) {
            out.push(entry);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILES: [&str; 4] = [
        "skill://acme/demo/SKILL.md",
        "skill://acme/demo/references/guide.md",
        "skill://acme/demo/references/deep/a.md",
        "skill://acme/demo/scripts/run.py",
    ];

    fn listed(dir: &str) -> Vec<(String, String)> {
        let mut out: Vec<_> = known_children(&FILES, dir)
            .into_iter()
            .map(|e| (e.uri, e.mime_type.unwrap_or_default()))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_manifest_tells_each_folder_its_direct_children() {
        assert_eq!(
            listed("skill://acme/demo"),
            [
                ("skill://acme/demo/SKILL.md".into(), "text/markdown".into()),
                (
                    "skill://acme/demo/references".into(),
                    DIRECTORY_MIME_TYPE.into()
                ),
                (
                    "skill://acme/demo/scripts".into(),
                    DIRECTORY_MIME_TYPE.into()
                ),
            ]
        );
        assert_eq!(
            listed("skill://acme/demo/references"),
            [
                (
                    "skill://acme/demo/references/deep".into(),
                    DIRECTORY_MIME_TYPE.into()
                ),
                (
                    "skill://acme/demo/references/guide.md".into(),
                    "text/markdown".into()
                ),
            ]
        );
        assert!(listed("skill://acme/demo/nothing").is_empty());
        assert!(listed("skill://acme/dem").is_empty());
    }

    fn hosted(resources: SkillResources) -> HostedSkill {
        let manifest = rmcp::model::Skill::new(
            "skill://acme/demo/SKILL.md",
            rmcp::model::SkillFrontmatter::new("demo", "A demo."),
            resources,
        );
        HostedSkill {
            entry: extpool_core::SkillEntry::new("skill://acme/demo/SKILL.md", "demo", "A demo."),
            root: "skill://acme/demo".into(),
            origin: Origin::Extension(Box::new(manifest)),
        }
    }

    #[test]
    fn a_manifest_answers_pages_files_and_dynamic_skills_for_a_server_not_asked() {
        let files = FILES
            .iter()
            .map(|uri| rmcp::model::SkillResource::from_bytes(*uri, b"x"))
            .collect();
        let skill = hosted(SkillResources::Files(files));
        let page = known("kit", &skill, "skill://acme/demo/references", None)
            .unwrap()
            .unwrap();
        assert_eq!(page.entries.len(), 2);
        assert_eq!(page.next_cursor, None);
        let file = known("kit", &skill, "skill://acme/demo/SKILL.md", None).unwrap_err();
        assert!(file.to_string().contains("not a directory"), "{file}");
        assert!(matches!(
            known("kit", &skill, "skill://acme/demo/none", None),
            Ok(None)
        ));
        let dynamic = hosted(SkillResources::Dynamic);
        let refused = known("kit", &dynamic, "skill://acme/demo", None).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("server kit does not declare directoryRead"),
            "{refused}"
        );
    }

    #[test]
    fn only_direct_children_of_the_directory_pass_from_a_server() {
        let dir = "skill://acme/demo/references";
        assert!(is_child(dir, "skill://acme/demo/references/guide.md"));
        assert!(is_child(dir, "skill://acme/demo/references/deep/"));
        assert!(!is_child(dir, "skill://acme/demo/references/deep/a.md"));
        assert!(!is_child(dir, "skill://acme/demo/SKILL.md"));
        assert!(!is_child(dir, "skill://acme/demo/references/.."));
        assert!(!is_child(dir, "skill://acme/demo/referencesX/a.md"));
        assert!(!is_child(dir, "file:///etc/passwd"));
    }
}
