//! Local skill discovery for the CLI over the configured and default roots.
//! The discovery is handed to the `SkillManagerCap`, which reads, lists and
//! renders skills; the roots are what `list sources` and `watch` show.

use std::path::PathBuf;
use std::sync::Arc;

use extpool_config::{Loaded, Places, ValidationMode};
use extpool_skills::{Discovery, DiscoveryConfig, Skill};

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
}
