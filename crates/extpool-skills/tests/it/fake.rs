//! An in-memory child capability: tools, MCP-hosted skills, prompts and
//! change events, with a switch that makes it fail like a dead server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use extpool_core::{
    Capability, ChangeEvent, ChangeKind, ChangeObservable, ChangeStream, CommandEntry,
    CommandResource, ExtensionError, McpResource, ResourceContent, ResourceEntry, SkillEntry,
    SkillResource, ToolEntry, ToolResult,
};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;

/// A fake MCP server capability.
pub struct FakeServer {
    id: String,
    tools: Vec<String>,
    /// (name, SKILL.md text) served as `skill://<name>/SKILL.md`.
    skills: Vec<(String, String)>,
    prompts: Vec<String>,
    down: AtomicBool,
    pub calls: AtomicUsize,
    pub shutdowns: AtomicUsize,
    events: broadcast::Sender<ChangeEvent>,
}

impl FakeServer {
    pub fn new(id: &str, tools: &[&str]) -> Arc<Self> {
        Self::with(id, tools, &[], &[])
    }

    pub fn with(id: &str, tools: &[&str], skills: &[(&str, &str)], prompts: &[&str]) -> Arc<Self> {
        Arc::new(Self {
            id: id.to_owned(),
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            skills: skills
                .iter()
                .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
                .collect(),
            prompts: prompts.iter().map(|p| (*p).to_owned()).collect(),
            down: AtomicBool::new(false),
            calls: AtomicUsize::new(0),
            shutdowns: AtomicUsize::new(0),
            events: broadcast::channel(16).0,
        })
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    pub fn notify(&self, kind: ChangeKind) {
        let _ = self.events.send(ChangeEvent::new(&self.id, kind, ""));
    }

    fn check(&self) -> Result<(), ExtensionError> {
        if self.down.load(Ordering::SeqCst) {
            Err(ExtensionError::Unavailable {
                capability: self.id.clone(),
                reason: "connection closed".into(),
            })
        } else {
            Ok(())
        }
    }

    fn skill_uri(name: &str) -> String {
        format!("skill://{name}/SKILL.md")
    }
}

#[async_trait]
impl Capability for FakeServer {
    fn id(&self) -> &str {
        &self.id
    }

    async fn shutdown(&self) -> Result<(), ExtensionError> {
        self.shutdowns.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn mcp(&self) -> Option<&dyn McpResource> {
        Some(self)
    }

    fn skills(&self) -> Option<&dyn SkillResource> {
        (!self.skills.is_empty()).then_some(self as &dyn SkillResource)
    }

    fn commands(&self) -> Option<&dyn CommandResource> {
        (!self.prompts.is_empty()).then_some(self as &dyn CommandResource)
    }

    fn observable(&self) -> Option<&dyn ChangeObservable> {
        Some(self)
    }
}

#[async_trait]
impl McpResource for FakeServer {
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        self.check()?;
        Ok(self
            .tools
            .iter()
            .map(|t| ToolEntry::new(t, format!("{t} of {}", self.id), json!({"type": "object"})))
            .collect())
    }

    async fn call_tool(
        &self,
        name: &str,
        _args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError> {
        self.check()?;
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.tools.iter().any(|t| t == name) {
            Ok(ToolResult::text(format!("{} ran {name}", self.id)))
        } else {
            Err(ExtensionError::not_found("tool", name))
        }
    }

    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError> {
        self.check()?;
        Ok(vec![ResourceEntry {
            uri: format!("mcp://{}/readme", self.id),
            name: "readme".into(),
            description: String::new(),
            mime_type: Some("text/plain".into()),
            icons: None,
            meta: None,
        }])
    }

    async fn read_resource(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        self.check()?;
        Ok((uri == format!("mcp://{}/readme", self.id))
            .then(|| ResourceContent::text(uri, None, format!("readme of {}", self.id))))
    }

    async fn resource_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        Ok(uri == format!("mcp://{}/readme", self.id))
    }
}

#[async_trait]
impl SkillResource for FakeServer {
    async fn list_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError> {
        self.check()?;
        Ok(self
            .skills
            .iter()
            .map(|(n, _)| SkillEntry::new(Self::skill_uri(n), n, format!("remote {n}")))
            .collect())
    }

    async fn read_skill(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        self.check()?;
        Ok(self
            .skills
            .iter()
            .find(|(n, _)| Self::skill_uri(n) == uri)
            .map(|(_, text)| ResourceContent::text(uri, Some("text/markdown".into()), text)))
    }

    async fn skill_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        Ok(self.skills.iter().any(|(n, _)| Self::skill_uri(n) == uri))
    }
}

#[async_trait]
impl CommandResource for FakeServer {
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError> {
        Ok(self
            .prompts
            .iter()
            .map(|p| CommandEntry::new(p, format!("prompt {p}")))
            .collect())
    }

    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError> {
        if self.prompts.iter().any(|p| p == name) {
            Ok(format!("{} prompt {name} {}", self.id, args.join(",")))
        } else {
            Err(ExtensionError::not_found("command", name))
        }
    }
}

impl ChangeObservable for FakeServer {
    fn on_change(&self) -> Option<ChangeStream> {
        Some(
            BroadcastStream::new(self.events.subscribe())
                .filter_map(|e| async move { e.ok().map(Ok) })
                .boxed(),
        )
    }
}
