//! Local skills for the CLI: discovery over the configured and default
//! roots, `skill://` reads confined to the skill directory, and skills as
//! slash commands — all through extpool-skills' public functions.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use extpool_config::{Loaded, Places, ValidationMode};
use extpool_core::{CommandArgument, CommandEntry, ResourceBody, ResourceContent};
use extpool_skills::{Discovery, DiscoveryConfig, Skill};

/// Largest skill file `read` returns.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The skills of one invocation.
pub struct LocalSkills {
    /// What discovery found.
    pub discovery: Discovery,
}

impl LocalSkills {
    /// Discovers skills for `loaded` (configured paths, then the default roots).
    pub fn discover(loaded: &Loaded, places: &Places) -> Self {
        let skills = &loaded.config.skills;
        let mut config = DiscoveryConfig::with_paths(loaded.skill_paths.clone());
        if skills.default_roots {
            config.cwd = Some(places.cwd.clone());
            config.home = places.home.clone();
        }
        config.mode = match skills.validation {
            ValidationMode::Strict => extpool_skills::ValidationMode::Strict,
            ValidationMode::Lenient => extpool_skills::ValidationMode::Lenient,
        };
        Self {
            discovery: extpool_skills::discover(&config),
        }
    }

    /// The roots searched, highest precedence first.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.discovery
            .roots
            .iter()
            .map(|r| r.path.clone())
            .collect()
    }

    /// The loaded skills.
    pub fn skills(&self) -> &[Arc<Skill>] {
        &self.discovery.skills
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.discovery.get(name)
    }

    /// Reads `skill://<name>/<path>` (`SKILL.md` when the path is empty).
    /// `Ok(None)`: no local skill of that name.
    pub fn read(&self, uri: &str) -> Result<Option<ResourceContent>> {
        let parsed = extpool_core::ExtUri::parse(uri)?;
        if parsed.scheme != "skill" {
            return Ok(None);
        }
        let Some(skill) = self.get(parsed.authority) else {
            return Ok(None);
        };
        let rel = if parsed.path.is_empty() {
            "SKILL.md"
        } else {
            parsed.path
        };
        let file = extpool_skills::files::read_confined(&skill.canonical_dir, rel, MAX_FILE_BYTES)
            .map_err(|e| anyhow!("{uri}: {e}"))?;
        let body = match file.content {
            extpool_skills::FileContent::Text(t) => ResourceBody::Text(t),
            extpool_skills::FileContent::Binary(b) => ResourceBody::Blob(b),
        };
        Ok(Some(ResourceContent {
            uri: uri.to_owned(),
            mime_type: Some(file.mime_type),
            body,
        }))
    }

    /// Every user-invocable skill as a command.
    pub fn commands(&self) -> Vec<CommandEntry> {
        self.skills()
            .iter()
            .filter(|s| s.meta.user_invocable)
            .map(|s| CommandEntry {
                name: s.meta.name.clone(),
                description: s.meta.description.clone(),
                arguments: s
                    .meta
                    .arguments
                    .iter()
                    .map(|a| CommandArgument {
                        name: a.clone(),
                        description: None,
                        required: false,
                    })
                    .collect(),
                argument_hint: s.meta.argument_hint.clone(),
            })
            .collect()
    }

    /// Renders skill command `name` with `args` (`$ARGUMENTS`, `$N`, named).
    /// `Ok(None)`: no such skill command.
    pub fn run(&self, name: &str, args: &[String]) -> Result<Option<String>> {
        let Some(skill) = self.get(name) else {
            return Ok(None);
        };
        if !skill.meta.user_invocable {
            bail!("skill {name:?} is not user-invocable (user-invocable: false)");
        }
        let body = skill.read_body()?;
        let dir = skill.dir.display().to_string();
        Ok(Some(extpool_skills::args::substitute(
            &body,
            args,
            &skill.meta.arguments,
            Some(&dir),
        )))
    }
}
