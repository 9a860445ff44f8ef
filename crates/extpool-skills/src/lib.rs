//! extpool-skills: Agent Skills (SKILL.md folders) for extpool.
//!
//! - [`validate`](mod@validate): parsing and validation of SKILL.md in two
//!   modes — strict (the specification, with the reference validator's
//!   messages) and lenient (how hosts load skills);
//! - [`discover()`]: roots and precedence, bounded walks, duplicates reported,
//!   skills and diagnostics returned together;
//! - [`files`]: `skill://<name>/<path>` reads confined to the skill directory;
//! - [`args`]: slash-command argument substitution;
//! - [`SkillManagerCap`]: the RFC's per-agent skill capability (local skills,
//!   MCP-hosted skills of child capabilities, skill-embedded MCP servers,
//!   instructions, commands, hot reload);
//! - [`watch`]: the debounced filesystem watcher behind hot reload.
//!
//! Nothing here executes anything a skill contains.

pub mod args;
pub mod diagnostic;
pub mod discover;
pub mod error;
pub mod files;
mod frontmatter;
pub mod manager;
pub mod skill;
pub mod validate;
pub mod watch;
mod yaml;

pub use diagnostic::{Diagnostic, DiagnosticCode, Severity};
pub use discover::{
    Discovery, DiscoveryConfig, DiscoveryStats, PROJECT_SKILL_DIRS, Root, USER_SKILL_DIRS, discover,
};
pub use error::SkillError;
pub use files::{DirChild, FileContent, FileError, SkillFile};
pub use frontmatter::{FrontmatterError, frontmatter_json};
pub use manager::{
    AllowedTools, ChildFailure, EmbeddedServerFactory, ManagerError, ReloadSummary,
    SkillManagerBuilder, SkillManagerCap, SkillMatcher, is_server_down_default, skill_content,
};
pub use skill::{EmbeddedServerSpec, Fingerprint, RootKind, Skill, SkillMeta};
pub use validate::{
    SkillReport, ValidationMode, ValidationSummary, summarize, validate_content, validate_path,
    validate_paths, validate_skill_dir,
};
pub use watch::{SkillWatcher, WatchBatch, WatchError};
pub use yaml::{PlainScalar, resolve_plain_scalar};
