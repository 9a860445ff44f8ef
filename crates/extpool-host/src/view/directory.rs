//! Directory reads of skills (SEP-2640 `resources/directory/read`): the
//! skill visible here that holds the directory answers, through the source
//! that serves it in the pinned revision — the skill manager for a local
//! skill (its folder on disk, confined), the hosting server's capability
//! for an MCP-hosted one.

use extpool_catalog::{CatalogRevision, CatalogSkill};
use extpool_core::directory::trim_directory_uri;
use extpool_core::{DirectoryPage, ExtUri, ResolveError};

use crate::shared::SKILLS_ID;

use super::View;
use crate::error::HostError;
use crate::info::{DirectoryInfo, ResourceInfo};

impl View {
    /// The page after `cursor` of the direct children of `uri`: a visible
    /// skill's root (`skill://<skill-path>`) or a folder in it. Subfolders
    /// come with the MIME type `inode/directory`. A malformed or traversing
    /// URI, a file, or a URI no visible skill holds is an error.
    pub async fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<DirectoryInfo, HostError> {
        self.check_open()?;
        ExtUri::parse(uri).map_err(|e| HostError::Read(e.into()))?;
        let rev = self.revision();
        let missing = || HostError::NoSkillDirectory {
            uri: uri.to_owned(),
            known: crate::error::known_skills(
                &self
                    .skills()
                    .into_iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>(),
            ),
        };
        let Some(skill) = holder(&rev, trim_directory_uri(uri)) else {
            return Err(missing());
        };
        let Some(source) = rev.source(&skill.server) else {
            return Err(missing());
        };
        let cap = source.capability.clone();
        let Some(skills) = cap.skills() else {
            return Err(missing());
        };
        match skills.read_skill_directory(uri, cursor).await {
            Ok(Some(page)) => Ok(info(page, source_name(skill))),
            Ok(None) => Err(missing()),
            Err(error) => Err(HostError::Read(ResolveError::Capability {
                capability: cap.id().to_owned(),
                uri: uri.to_owned(),
                error,
            })),
        }
    }
}

/// The skill of `rev` whose root is `dir` or holds it (the longest root
/// wins for nested skills).
fn holder<'a>(rev: &'a CatalogRevision, dir: &str) -> Option<&'a CatalogSkill> {
    rev.all_skills()
        .into_iter()
        .filter_map(|s| Some((s, s.entry.uri.strip_suffix("/SKILL.md")?)))
        .filter(|(_, root)| {
            dir.strip_prefix(root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
        .max_by_key(|(_, root)| root.len())
        .map(|(s, _)| s)
}

/// How a skill's source is shown: `local` for the skill manager's own
/// skills (as [`View::skills`] shows them), else the hosting server.
fn source_name(skill: &CatalogSkill) -> String {
    if skill.server.as_ref() == SKILLS_ID {
        "local".into()
    } else {
        skill.server.to_string()
    }
}

/// `page` as the host shows it, each child from `server`.
fn info(page: DirectoryPage, server: String) -> DirectoryInfo {
    DirectoryInfo {
        resources: page
            .entries
            .into_iter()
            .map(|e| ResourceInfo {
                uri: e.uri,
                name: e.name,
                server: server.clone(),
                mime_type: e.mime_type,
                description: e.description,
                icons: e.icons,
                meta: e.meta,
            })
            .collect(),
        next_cursor: page.next_cursor,
    }
}
