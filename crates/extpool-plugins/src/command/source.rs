//! A set of command files served as the RFC's `CommandResource` with a
//! local client (no protocol client: rendering is string work), and as a
//! `Capability` the registry can hold like any other source.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use extpool_core::{Capability, CapabilityKind, CommandEntry, CommandResource, ExtensionError};

use super::{CommandSpec, render};

/// Commands read from files (a host's command folders, a plugin's
/// `commands/`), one per name.
#[derive(Debug, Clone)]
pub struct LocalCommandSource {
    id: String,
    commands: Arc<Vec<CommandSpec>>,
    by_name: Arc<HashMap<String, usize>>,
}

impl LocalCommandSource {
    /// A source named `id` serving `commands`; a later command with a name
    /// already taken is left out (discovery has already reported it).
    pub fn new(id: impl Into<String>, commands: Vec<CommandSpec>) -> Self {
        let mut kept = Vec::with_capacity(commands.len());
        let mut by_name = HashMap::with_capacity(commands.len());
        for c in commands {
            if !by_name.contains_key(&c.name) {
                by_name.insert(c.name.clone(), kept.len());
                kept.push(c);
            }
        }
        Self {
            id: id.into(),
            commands: Arc::new(kept),
            by_name: Arc::new(by_name),
        }
    }

    /// The commands served.
    pub fn commands(&self) -> &[CommandSpec] {
        &self.commands
    }

    /// The command named `name`.
    pub fn get(&self, name: &str) -> Option<&CommandSpec> {
        self.by_name.get(name).map(|&i| &self.commands[i])
    }
}

#[async_trait]
impl CommandResource for LocalCommandSource {
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError> {
        Ok(self.commands.iter().map(CommandSpec::entry).collect())
    }

    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError> {
        let spec = self
            .get(name)
            .ok_or_else(|| ExtensionError::not_found("command", name))?;
        render(spec, args).map_err(|e| ExtensionError::InvalidArgument(e.to_string()))
    }
}

#[async_trait]
impl Capability for LocalCommandSource {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> CapabilityKind {
        CapabilityKind::Commands
    }

    fn commands(&self) -> Option<&dyn CommandResource> {
        Some(self)
    }
}
