//! Skills through the SEP-2640 skills extension: each skill's manifest
//! with the SHA-256 digest of every file, computed from the very bytes a
//! client gets from `resources/read` (so a client that verifies digests
//! succeeds).

use std::path::Path;

use extpool_host::{HostError, ResourceBody, SkillInfo, View};
use rmcp::ErrorData;
use rmcp::model::{ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, Skill};

use crate::convert;

/// Most files listed in one skill's manifest (its `SKILL.md` included);
/// a skill with more is listed as `dynamic` (the client reads what it needs).
pub const MAX_SKILL_FILES: usize = 128;
/// Deepest directory of a skill walked for its files.
pub const MAX_SKILL_DEPTH: usize = 6;

/// The manifest of `info` as `skills/list` and `skills/get` give it.
pub async fn manifest(view: &View, info: &SkillInfo) -> Skill {
    let files = match &info.path {
        Some(dir) => match relative_files(dir) {
            Some(rel) => read_all(view, info, &rel).await,
            None => None,
        },
        // An MCP-hosted skill: its server knows its files; SKILL.md alone
        // is what the gateway can vouch for.
        None => read_all(view, info, &[]).await,
    };
    convert::skill(info, files.as_deref())
}

/// `resources/directory/read` (SEP-2640): one page of the direct children
/// of a skill's directory, local or MCP-hosted, as the view reads it. A
/// URI that names no directory of a visible skill, a file, or a path out
/// of a skill is invalid params (`-32602`), as the SEP says.
pub async fn read_directory(
    view: &View,
    request: ReadResourceDirectoryRequestParams,
) -> Result<ReadResourceDirectoryResult, ErrorData> {
    let page = view
        .read_directory(&request.uri, request.cursor.as_deref())
        .await
        .map_err(directory_error)?;
    let resources = page.resources.iter().map(convert::resource).collect();
    Ok(crate::lists::directory(resources, page.next_cursor))
}

fn directory_error(e: HostError) -> ErrorData {
    if e.is_not_found() || e.is_invalid_request() {
        ErrorData::invalid_params(e.to_string(), None)
    } else {
        ErrorData::internal_error(e.to_string(), None)
    }
}

/// `SKILL.md` and then every other file (as URI and bytes), or `None` when
/// one cannot be read the way a client would read it.
async fn read_all(view: &View, info: &SkillInfo, rel: &[String]) -> Option<Vec<(String, Vec<u8>)>> {
    let base = info.uri.strip_suffix("SKILL.md")?;
    let mut out = Vec::with_capacity(rel.len() + 1);
    for uri in std::iter::once(info.uri.clone()).chain(rel.iter().map(|r| format!("{base}{r}"))) {
        let content = view.read(&uri).await.ok()?;
        let bytes = match content.body {
            ResourceBody::Text(text) => text.into_bytes(),
            ResourceBody::Blob(bytes) => bytes,
        };
        out.push((uri, bytes));
    }
    Some(out)
}

/// The skill's files other than `SKILL.md`, relative, `/`-separated and
/// sorted; `None` past [`MAX_SKILL_FILES`] or on a directory that cannot
/// be read. Symlinks are not followed (reads stay confined to the skill).
fn relative_files(dir: &Path) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((path, depth)) = stack.pop() {
        for entry in std::fs::read_dir(&path).ok()? {
            let entry = entry.ok()?;
            let kind = entry.file_type().ok()?;
            let name = entry.file_name();
            let name = name.to_str()?;
            if name.starts_with('.') {
                continue;
            }
            if kind.is_dir() && depth + 1 < MAX_SKILL_DEPTH {
                stack.push((entry.path(), depth + 1));
            } else if kind.is_file() {
                let rel = entry
                    .path()
                    .strip_prefix(dir)
                    .ok()?
                    .to_str()?
                    .replace('\\', "/");
                if rel != "SKILL.md" {
                    out.push(rel);
                }
            }
            if out.len() + 1 > MAX_SKILL_FILES {
                return None;
            }
        }
    }
    out.sort();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_listed_relative_and_sorted_without_hidden_ones() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("SKILL.md"), "x").expect("write");
        std::fs::create_dir_all(dir.path().join("references/deep")).expect("mkdir");
        std::fs::write(dir.path().join("references/b.md"), "b").expect("write");
        std::fs::write(dir.path().join("references/deep/a.md"), "a").expect("write");
        std::fs::write(dir.path().join(".hidden"), "h").expect("write");
        assert_eq!(
            relative_files(dir.path()),
            Some(vec![
                "references/b.md".to_owned(),
                "references/deep/a.md".to_owned()
            ])
        );
        for i in 0..MAX_SKILL_FILES {
            std::fs::write(dir.path().join(format!("f{i}")), "f").expect("write");
        }
        assert_eq!(relative_files(dir.path()), None);
    }
}
