//! A set of command files served as the RFC's `CommandResource` with a
//! local client (no protocol client: rendering is string work), and as a
//! `Capability` the registry can hold like any other source. The set is
//! replaced whole when the folders or the plugins change
//! ([`LocalCommandSource::replace`]), and subscribers are told.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use extpool_core::{
    Capability, CapabilityKind, ChangeKind, ChangeObservable, ChangeStream, CommandEntry,
    CommandResource, ExtensionError,
};

use super::{CommandSpec, render};
use crate::changes::Changes;

/// The published commands, one per name.
#[derive(Debug, Default)]
struct Set {
    commands: Vec<CommandSpec>,
    by_name: HashMap<String, usize>,
}

impl Set {
    fn of(commands: Vec<CommandSpec>) -> Self {
        let mut kept = Vec::with_capacity(commands.len());
        let mut by_name = HashMap::with_capacity(commands.len());
        for c in commands {
            if !by_name.contains_key(&c.name) {
                by_name.insert(c.name.clone(), kept.len());
                kept.push(c);
            }
        }
        Self {
            commands: kept,
            by_name,
        }
    }
}

/// Commands read from files (a host's command folders, a plugin's
/// `commands/`), one per name.
#[derive(Debug, Clone)]
pub struct LocalCommandSource {
    id: String,
    set: Arc<ArcSwap<Set>>,
    changes: Changes,
}

impl LocalCommandSource {
    /// A source named `id` serving `commands`; a later command with a name
    /// already taken is left out (discovery has already reported it).
    pub fn new(id: impl Into<String>, commands: Vec<CommandSpec>) -> Self {
        let id = id.into();
        Self {
            changes: Changes::new(&id),
            id,
            set: Arc::new(ArcSwap::from_pointee(Set::of(commands))),
        }
    }

    /// The commands served.
    pub fn commands(&self) -> Vec<CommandSpec> {
        self.set.load().commands.clone()
    }

    /// The command named `name`.
    pub fn get(&self, name: &str) -> Option<CommandSpec> {
        let set = self.set.load();
        set.by_name.get(name).map(|&i| set.commands[i].clone())
    }

    /// Serves `commands` from now on; subscribers are told when they
    /// differ from those served.
    pub fn replace(&self, commands: Vec<CommandSpec>) {
        let new = Set::of(commands);
        if new.commands == self.set.load().commands {
            return;
        }
        self.set.store(Arc::new(new));
        self.changes.emit(ChangeKind::CommandsChanged);
    }
}

#[async_trait]
impl CommandResource for LocalCommandSource {
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError> {
        Ok(self
            .set
            .load()
            .commands
            .iter()
            .map(CommandSpec::entry)
            .collect())
    }

    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError> {
        let spec = self
            .get(name)
            .ok_or_else(|| ExtensionError::not_found("command", name))?;
        render(&spec, args).map_err(|e| ExtensionError::InvalidArgument(e.to_string()))
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

    fn observable(&self) -> Option<&dyn ChangeObservable> {
        Some(self)
    }
}

impl ChangeObservable for LocalCommandSource {
    fn on_change(&self) -> Option<ChangeStream> {
        Some(self.changes.subscribe(ChangeKind::CommandsChanged))
    }
}
