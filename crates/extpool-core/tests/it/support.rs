//! A small configurable capability for the tests: it owns a set of skill
//! names and resource URIs, counts how often it is probed and read, can be
//! observable, and records its shutdown in a shared log.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use extpool_core::{
    Capability, ChangeObservable, ChangeStream, ExtensionError, McpResource, ResourceContent,
    ResourceEntry, SkillEntry, SkillResource, ToolEntry, ToolResult,
};
use parking_lot::Mutex;
use serde_json::{Map, Value};

pub type ChangeFactory = Box<dyn Fn() -> Option<ChangeStream> + Send + Sync>;

#[derive(Default)]
pub struct Counters {
    pub exists_calls: AtomicUsize,
    pub reads: AtomicUsize,
}

pub enum OnShutdown {
    Clean,
    Hang,
    Fail,
}

pub struct TestCap {
    pub id: String,
    pub skills: Option<BTreeSet<String>>,
    pub resources: Option<BTreeSet<String>>,
    pub changes: Option<ChangeFactory>,
    pub children: Mutex<Vec<Arc<dyn Capability>>>,
    pub on_shutdown: OnShutdown,
    pub log: Arc<Mutex<Vec<String>>>,
    pub counters: Counters,
}

impl TestCap {
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            skills: None,
            resources: None,
            changes: None,
            children: Mutex::new(Vec::new()),
            on_shutdown: OnShutdown::Clean,
            log: Arc::new(Mutex::new(Vec::new())),
            counters: Counters::default(),
        }
    }

    pub fn with_skills(mut self, names: &[&str]) -> Self {
        self.skills = Some(names.iter().map(|s| s.to_string()).collect());
        self
    }

    pub fn with_resources(mut self, uris: &[&str]) -> Self {
        self.resources = Some(uris.iter().map(|s| s.to_string()).collect());
        self
    }

    pub fn with_changes(
        mut self,
        f: impl Fn() -> Option<ChangeStream> + Send + Sync + 'static,
    ) -> Self {
        self.changes = Some(Box::new(f));
        self
    }

    pub fn with_log(mut self, log: &Arc<Mutex<Vec<String>>>) -> Self {
        self.log = log.clone();
        self
    }

    pub fn shutting_down(mut self, how: OnShutdown) -> Self {
        self.on_shutdown = how;
        self
    }

    pub fn arc(self) -> Arc<Self> {
        Arc::new(self)
    }

    pub fn exists_calls(&self) -> usize {
        self.counters.exists_calls.load(Ordering::SeqCst)
    }

    fn skill_of(&self, uri: &str) -> Option<String> {
        let rest = uri.strip_prefix("skill://")?;
        let name = rest.split('/').next()?;
        self.skills.as_ref()?.get(name).cloned()
    }
}

#[async_trait]
impl Capability for TestCap {
    fn id(&self) -> &str {
        &self.id
    }

    async fn shutdown(&self) -> Result<(), ExtensionError> {
        match self.on_shutdown {
            OnShutdown::Clean => {
                self.log.lock().push(self.id.clone());
                Ok(())
            }
            OnShutdown::Hang => {
                std::future::pending::<()>().await;
                self.log.lock().push(format!("{} (never)", self.id));
                Ok(())
            }
            OnShutdown::Fail => {
                self.log.lock().push(self.id.clone());
                Err(ExtensionError::Unavailable {
                    capability: self.id.clone(),
                    reason: "refused to stop".into(),
                })
            }
        }
    }

    fn children(&self) -> Vec<Arc<dyn Capability>> {
        self.children.lock().clone()
    }

    fn skills(&self) -> Option<&dyn SkillResource> {
        self.skills.as_ref().map(|_| self as &dyn SkillResource)
    }

    fn mcp(&self) -> Option<&dyn McpResource> {
        self.resources.as_ref().map(|_| self as &dyn McpResource)
    }

    fn observable(&self) -> Option<&dyn ChangeObservable> {
        self.changes.as_ref().map(|_| self as &dyn ChangeObservable)
    }
}

#[async_trait]
impl SkillResource for TestCap {
    async fn list_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError> {
        Ok(self
            .skills
            .iter()
            .flatten()
            .map(|n| SkillEntry::new(format!("skill://{n}/SKILL.md"), n.clone(), "test skill"))
            .collect())
    }

    async fn read_skill(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        self.counters.reads.fetch_add(1, Ordering::SeqCst);
        Ok(self
            .skill_of(uri)
            .map(|name| ResourceContent::text(uri, None, format!("{name} from {}", self.id))))
    }

    async fn skill_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        self.counters.exists_calls.fetch_add(1, Ordering::SeqCst);
        Ok(self.skill_of(uri).is_some())
    }
}

#[async_trait]
impl McpResource for TestCap {
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        Ok(Vec::new())
    }

    async fn call_tool(
        &self,
        name: &str,
        _args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError> {
        Err(ExtensionError::not_found("tool", name))
    }

    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError> {
        Ok(Vec::new())
    }

    async fn read_resource(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        self.counters.reads.fetch_add(1, Ordering::SeqCst);
        let known = self.resources.as_ref().is_some_and(|r| r.contains(uri));
        Ok(known.then(|| ResourceContent::text(uri, None, format!("{uri} from {}", self.id))))
    }

    async fn resource_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        self.counters.exists_calls.fetch_add(1, Ordering::SeqCst);
        Ok(self.resources.as_ref().is_some_and(|r| r.contains(uri)))
    }
}

impl ChangeObservable for TestCap {
    fn on_change(&self) -> Option<ChangeStream> {
        self.changes.as_ref().and_then(|f| f())
    }
}

/// Upcasts for registration.
pub fn cap(c: Arc<TestCap>) -> Arc<dyn Capability> {
    c
}
