//! [`PluginSkills`]: the enabled plugins' skills as one capability —
//! listed as `plugin:skill` (as Claude Code and Codex name them), read as
//! `skill://<plugin>/<skill>/<path>` (SEP-2640's skill path: a prefix, then
//! the skill's own name), every read confined to the skill's folder, and
//! each user-invocable skill a command `/plugin:skill`. The set is
//! replaced whole when plugins change ([`PluginSkills::replace`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use extpool_core::directory::{DIRECTORY_PAGE_SIZE, MAX_DIRECTORY_ENTRIES, child_entry};
use extpool_core::{
    Capability, CapabilityKind, ChangeKind, ChangeObservable, ChangeStream, CommandEntry,
    CommandResource, DirectoryPage, ExtUri, ExtensionError, ResourceBody, ResourceContent,
    SkillEntry, SkillResource,
};
use extpool_skills::files::{FileContent, FileError, list_confined, read_confined};

use crate::changes::Changes;
use crate::command::Dialect;
use crate::command::render::{HOST_RUNS_NOTE, asks_host_to_run};
use crate::plugin::PluginSkill;

/// The largest skill file served (extpool-skills' bound for local skills).
const MAX_FILE_BYTES: u64 = extpool_skills::files::DEFAULT_MAX_FILE_BYTES;

/// One skill served, with its folder resolved (reads are confined to it).
#[derive(Debug, Clone, PartialEq)]
struct Served {
    skill: PluginSkill,
    canonical_dir: PathBuf,
}

#[derive(Debug, Default)]
struct Set {
    skills: Vec<Served>,
    /// By `(plugin, skill)`, the two first segments of its URI.
    by_path: HashMap<(String, String), usize>,
    /// By qualified name.
    by_name: HashMap<String, usize>,
}

impl Set {
    fn of(skills: Vec<PluginSkill>) -> Self {
        let mut set = Self::default();
        for skill in skills {
            if set.by_name.contains_key(&skill.qualified) {
                continue;
            }
            let Ok(canonical_dir) = std::fs::canonicalize(&skill.dir) else {
                tracing::warn!(skill = %skill.qualified, dir = %skill.dir.display(), "plugin skill folder is gone; not served");
                continue;
            };
            let i = set.skills.len();
            set.by_path
                .insert((skill.plugin.clone(), skill.name.clone()), i);
            set.by_name.insert(skill.qualified.clone(), i);
            set.skills.push(Served {
                skill,
                canonical_dir,
            });
        }
        set
    }

    /// The skill `uri` names, and the path after its folder.
    fn find<'a>(&self, uri: &'a str) -> Result<Option<(&Served, &'a str)>, ExtensionError> {
        let parsed = match ExtUri::parse(uri) {
            Ok(p) => p,
            Err(e) => return Err(ExtensionError::InvalidArgument(e.to_string())),
        };
        if parsed.scheme != "skill" {
            return Ok(None);
        }
        let (skill, rest) = parsed.path.split_once('/').unwrap_or((parsed.path, ""));
        let key = (parsed.authority.to_owned(), skill.to_owned());
        Ok(self.by_path.get(&key).map(|&i| (&self.skills[i], rest)))
    }
}

/// The URI of plugin skill `skill`'s file `rel` (`SKILL.md` when empty).
pub fn skill_uri(skill: &PluginSkill, rel: &str) -> String {
    let rel = if rel.is_empty() { "SKILL.md" } else { rel };
    format!("skill://{}/{}/{rel}", skill.plugin, skill.name)
}

/// The enabled plugins' skills as one capability (see the module's
/// documentation).
#[derive(Debug, Clone)]
pub struct PluginSkills {
    id: String,
    set: Arc<ArcSwap<Set>>,
    changes: Changes,
}

fn file_error(id: &str, e: FileError) -> ExtensionError {
    if e.is_confinement() {
        ExtensionError::Denied(e.to_string())
    } else {
        match e {
            FileError::NotAFile { .. }
            | FileError::TooLarge { .. }
            | FileError::NotADirectory { .. }
            | FileError::TooManyEntries { .. } => ExtensionError::InvalidArgument(e.to_string()),
            other => ExtensionError::source(id, other),
        }
    }
}

impl PluginSkills {
    /// A capability named `id` serving `skills` (one per qualified name:
    /// discovery has reported the others).
    pub fn new(id: impl Into<String>, skills: Vec<PluginSkill>) -> Self {
        let id = id.into();
        Self {
            changes: Changes::new(&id),
            id,
            set: Arc::new(ArcSwap::from_pointee(Set::of(skills))),
        }
    }

    /// The skills served.
    pub fn skills(&self) -> Vec<PluginSkill> {
        self.set
            .load()
            .skills
            .iter()
            .map(|s| s.skill.clone())
            .collect()
    }

    /// The skill served as `qualified` (`plugin:skill`).
    pub fn get(&self, qualified: &str) -> Option<PluginSkill> {
        let set = self.set.load();
        set.by_name
            .get(qualified)
            .map(|&i| set.skills[i].skill.clone())
    }

    /// The skill whose files `uri` names.
    pub fn skill_of_uri(&self, uri: &str) -> Option<PluginSkill> {
        let set = self.set.load();
        set.find(uri).ok().flatten().map(|(s, _)| s.skill.clone())
    }

    /// Serves `skills` from now on; subscribers are told when they differ
    /// from those served.
    pub fn replace(&self, skills: Vec<PluginSkill>) {
        let new = Set::of(skills);
        if new.skills == self.set.load().skills {
            return;
        }
        self.set.store(Arc::new(new));
        self.changes.emit(ChangeKind::SkillsChanged);
        self.changes.emit(ChangeKind::ResourcesChanged);
        self.changes.emit(ChangeKind::CommandsChanged);
    }

    fn entry(s: &PluginSkill) -> SkillEntry {
        SkillEntry::new(skill_uri(s, ""), &s.qualified, &s.meta.description)
    }
}

/// A plugin skill as a command: Claude Code's rendering of a skill (the
/// base directory line, arguments, `${CLAUDE_SKILL_DIR}` and
/// `${CLAUDE_PLUGIN_ROOT}`), its shell lines left as text with the note.
fn render(skill: &PluginSkill, body: &str, args: &[String]) -> String {
    let dir = skill.dir.display().to_string();
    let root = skill.plugin_root.display().to_string();
    let vars = [
        ("CLAUDE_SKILL_DIR", dir.as_str()),
        ("CLAUDE_PLUGIN_ROOT", root.as_str()),
    ];
    let rendered = extpool_skills::args::substitute_vars(body, args, &skill.meta.arguments, &vars);
    let mut out = format!("Base directory for this skill: {dir}\n\n{rendered}");
    if asks_host_to_run(Dialect::ClaudeCode, body) {
        out.push_str("\n\n");
        out.push_str(HOST_RUNS_NOTE);
    }
    out
}

fn body_of(path: &Path, text: &str) -> Result<String, ExtensionError> {
    extpool_skills::skill::body_from_bytes(path, text.as_bytes())
        .map_err(|e| ExtensionError::InvalidArgument(e.to_string()))
}

#[async_trait]
impl SkillResource for PluginSkills {
    async fn list_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError> {
        Ok(self
            .set
            .load()
            .skills
            .iter()
            .map(|s| Self::entry(&s.skill))
            .collect())
    }

    async fn read_skill(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        let set = self.set.load();
        let Some((served, rest)) = set.find(uri)? else {
            return Ok(None);
        };
        let rel = if rest.is_empty() { "SKILL.md" } else { rest };
        let file = match read_confined(&served.canonical_dir, rel, MAX_FILE_BYTES) {
            Ok(f) => f,
            Err(FileError::NotFound { .. }) => return Ok(None),
            Err(e) => {
                if e.is_confinement() {
                    tracing::warn!(skill = %served.skill.qualified, uri, error = %e, "plugin skill read refused");
                }
                return Err(file_error(&self.id, e));
            }
        };
        Ok(Some(ResourceContent {
            uri: uri.to_owned(),
            mime_type: Some(file.mime_type),
            body: match file.content {
                FileContent::Text(t) => ResourceBody::Text(t),
                FileContent::Binary(b) => ResourceBody::Blob(b),
            },
            meta: None,
        }))
    }

    async fn skill_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        Ok(matches!(self.set.load().find(uri), Ok(Some(_))))
    }

    async fn read_skill_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<Option<DirectoryPage>, ExtensionError> {
        let set = self.set.load();
        let Some((served, rest)) = set.find(uri)? else {
            return Ok(None);
        };
        let rel = rest.trim_end_matches('/');
        let children = match list_confined(&served.canonical_dir, rel, MAX_DIRECTORY_ENTRIES) {
            Ok(c) => c,
            Err(FileError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(file_error(&self.id, e)),
        };
        let entries = children
            .into_iter()
            .map(|c| child_entry(skill_uri(&served.skill, &c.path), c.mime_type()))
            .collect();
        Ok(Some(DirectoryPage::of(
            entries,
            cursor,
            DIRECTORY_PAGE_SIZE,
        )))
    }
}

#[async_trait]
impl CommandResource for PluginSkills {
    /// Every user-invocable plugin skill, as `/plugin:skill`.
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError> {
        Ok(self
            .set
            .load()
            .skills
            .iter()
            .filter(|s| s.skill.meta.user_invocable)
            .map(|s| s.skill.meta.command_entry(&s.skill.qualified))
            .collect())
    }

    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError> {
        let served = {
            let set = self.set.load();
            set.by_name.get(name).map(|&i| set.skills[i].clone())
        };
        let Some(served) = served.filter(|s| s.skill.meta.user_invocable) else {
            return Err(ExtensionError::not_found("command", name));
        };
        let file = read_confined(&served.canonical_dir, "SKILL.md", MAX_FILE_BYTES)
            .map_err(|e| file_error(&self.id, e))?;
        let FileContent::Text(text) = file.content else {
            return Err(ExtensionError::InvalidArgument(format!(
                "{}: SKILL.md is not UTF-8 text",
                served.skill.skill_md.display()
            )));
        };
        let body = body_of(&served.skill.skill_md, &text)?;
        Ok(render(&served.skill, &body, args))
    }
}

#[async_trait]
impl Capability for PluginSkills {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> CapabilityKind {
        CapabilityKind::Commands
    }

    fn skills(&self) -> Option<&dyn SkillResource> {
        Some(self)
    }

    fn commands(&self) -> Option<&dyn CommandResource> {
        Some(self)
    }

    fn observable(&self) -> Option<&dyn ChangeObservable> {
        Some(self)
    }
}

impl ChangeObservable for PluginSkills {
    fn on_change(&self) -> Option<ChangeStream> {
        Some(self.changes.subscribe(ChangeKind::SkillsChanged))
    }
}
