//! A loaded skill: its metadata (from the frontmatter) and where it lives.
//!
//! Only metadata is held in memory. The body stays on disk until
//! [`Skill::read_body`] is called (the RFC's lazy instructions), so ten
//! thousand skills cost their names and descriptions, not their bodies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use extpool_core::SkillEntry;
use serde::Serialize;
use serde_json::Value;

use crate::error::SkillError;
use crate::files::{DEFAULT_MAX_FILE_BYTES, FileContent, read_confined};
use crate::frontmatter;

/// An MCP server a skill declares in its `mcp_servers` frontmatter field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmbeddedServerSpec {
    /// The server's name within the skill.
    pub name: String,
    /// Its configuration as written (JSON; `null` when the skill only names it).
    pub config: Value,
}

/// What the frontmatter says about a skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillMeta {
    /// The skill's name (the directory name when the frontmatter has none).
    pub name: String,
    /// What the skill does and when to use it, on one line.
    pub description: String,
    /// `license`.
    pub license: Option<String>,
    /// `compatibility`: environment requirements.
    pub compatibility: Option<String>,
    /// `metadata`: extra string properties.
    pub metadata: BTreeMap<String, String>,
    /// `allowed-tools`: when present, the only child tools the skill exposes.
    pub allowed_tools: Option<Vec<String>>,
    /// `disable-model-invocation`: hidden from the model's catalog; only `/name` runs it.
    pub disable_model_invocation: bool,
    /// `user-invocable` (default true): whether `/name` is a command.
    pub user_invocable: bool,
    /// `argument-hint`: display-only text for the command's argument line.
    pub argument_hint: Option<String>,
    /// `arguments`: names of positional arguments, usable as `$name`.
    pub arguments: Vec<String>,
    /// `always_active`: full instructions injected before every model request.
    pub always_active: bool,
    /// `mcp_servers`: MCP servers the skill brings with it.
    pub mcp_servers: Vec<EmbeddedServerSpec>,
    /// The frontmatter's YAML text (CRLF normalised; repaired when lenient
    /// loading had to quote a value). Serialized as JSON, see [`SkillMeta::frontmatter_json`].
    #[serde(rename = "frontmatter", serialize_with = "frontmatter_as_json")]
    pub frontmatter_yaml: String,
}

fn frontmatter_as_json<S: serde::Serializer>(yaml: &str, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&yaml_to_json(yaml), s)
}

fn yaml_to_json(yaml: &str) -> serde_json::Map<String, Value> {
    match crate::yaml::parse(yaml)
        .ok()
        .and_then(|d| d.root)
        .map(|r| r.to_json())
    {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

impl SkillMeta {
    /// Metadata with a name and description and every other field at its default.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            license: None,
            compatibility: None,
            metadata: BTreeMap::new(),
            allowed_tools: None,
            disable_model_invocation: false,
            user_invocable: true,
            argument_hint: None,
            arguments: Vec::new(),
            always_active: false,
            mcp_servers: Vec::new(),
            frontmatter_yaml: String::new(),
        }
    }

    /// The command `/name` of a user-invocable skill with this metadata:
    /// its description, its named arguments (all optional) and its
    /// argument hint — the one rule for local and plugin skills alike.
    pub fn command_entry(&self, name: &str) -> extpool_core::CommandEntry {
        let mut entry = extpool_core::CommandEntry::new(name, &self.description);
        entry.argument_hint = self.argument_hint.clone();
        entry.arguments = self
            .arguments
            .iter()
            .map(|a| extpool_core::CommandArgument {
                name: a.clone(),
                description: None,
                required: false,
            })
            .collect();
        entry
    }

    /// The whole frontmatter as JSON (plain scalars typed per YAML 1.2), as
    /// SEP-2640 `skills/list` entries carry it. Parsed on each call: the
    /// metadata kept in memory is the text.
    pub fn frontmatter_json(&self) -> serde_json::Map<String, Value> {
        yaml_to_json(&self.frontmatter_yaml)
    }
}

/// Which kind of root a skill was found in (its precedence class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RootKind {
    /// A path given in the configuration or on the command line.
    Configured,
    /// A host's project skill folder (`.agents/skills`, `.claude/skills`, …)
    /// between the git root and the working directory.
    Project,
    /// A host's user skill folder (`~/.agents/skills`, `~/.claude/skills`, …).
    User,
}

/// Size and modification time of a SKILL.md, to notice edits cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fingerprint {
    /// File length in bytes.
    pub len: u64,
    /// Modification time, when the filesystem has one.
    #[serde(serialize_with = "extpool_core::time::serialize_option")]
    pub modified: Option<SystemTime>,
}

/// A skill found on disk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skill {
    /// The frontmatter's content.
    pub meta: SkillMeta,
    /// The skill directory as found (under its root).
    pub dir: PathBuf,
    /// The skill directory with symlinks resolved: reads are confined to it.
    pub canonical_dir: PathBuf,
    /// The SKILL.md path.
    pub skill_md: PathBuf,
    /// The root it was found in.
    pub root: PathBuf,
    /// The kind of that root.
    pub kind: RootKind,
    /// SKILL.md's size and mtime at load time.
    pub fingerprint: Fingerprint,
}

impl Skill {
    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// The skill's one-line description.
    pub fn description(&self) -> &str {
        &self.meta.description
    }

    /// `skill://<name>/SKILL.md`.
    pub fn uri(&self) -> String {
        format!("skill://{}/SKILL.md", self.meta.name)
    }

    /// The entry listed by `SkillResource::list_skills`.
    pub fn entry(&self) -> SkillEntry {
        SkillEntry::new(self.uri(), &self.meta.name, &self.meta.description)
    }

    /// True when `path` is this skill's directory or inside it.
    pub fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.dir) || path.starts_with(&self.canonical_dir)
    }

    /// Reads SKILL.md now and returns its body: the markdown after the
    /// frontmatter, CRLF normalised and trimmed. The read is confined like
    /// any `skill://` read (no symlink out of the skill, regular files only,
    /// at most [`DEFAULT_MAX_FILE_BYTES`] bytes).
    pub fn read_body(&self) -> Result<String, SkillError> {
        let file = read_confined(&self.canonical_dir, "SKILL.md", DEFAULT_MAX_FILE_BYTES).map_err(
            |e| SkillError::File {
                path: self.skill_md.clone(),
                error: e,
            },
        )?;
        match file.content {
            FileContent::Text(text) => body_from_bytes(&self.skill_md, text.as_bytes()),
            FileContent::Binary(bytes) => body_from_bytes(&self.skill_md, &bytes),
        }
    }
}

/// The body of a SKILL.md held in memory (MCP-hosted skills, tests).
pub fn body_from_bytes(path: &Path, bytes: &[u8]) -> Result<String, SkillError> {
    frontmatter::body_of(bytes).map_err(|e| match e {
        frontmatter::SplitError::NotUtf8 { line } => SkillError::NotUtf8 {
            path: path.to_owned(),
            line,
        },
        // body_of only fails on encoding.
        _ => SkillError::NotUtf8 {
            path: path.to_owned(),
            line: 1,
        },
    })
}
