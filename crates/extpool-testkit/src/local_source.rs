//! [`LocalSource`]: a small in-process capability (tools, resources,
//! prompts, change notifications) for tests, examples and benchmarks that
//! need a catalog without a network or a child process.
//!
//! It is a real [`Capability`] implementing [`McpResource`],
//! [`CommandResource`] and [`ChangeObservable`]; tests change its contents
//! and fire `list_changed`-style events, or make its listings fail.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use extpool_core::{
    Capability, ChangeEvent, ChangeKind, ChangeObservable, ChangeStream, CommandEntry,
    CommandResource, ExtensionError, McpResource, ResourceContent, ResourceEntry, ToolEntry,
    ToolResult,
};
use futures::StreamExt;
use parking_lot::RwLock;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;

/// What a [`LocalSource`] tool returns.
pub type Handler = Arc<dyn Fn(&Map<String, Value>) -> ToolResult + Send + Sync>;

/// An in-process source of tools, resources and prompts.
pub struct LocalSource {
    id: String,
    tools: RwLock<Vec<(ToolEntry, Option<Handler>)>>,
    resources: RwLock<Vec<(ResourceEntry, String)>>,
    prompts: RwLock<Vec<CommandEntry>>,
    failing: AtomicBool,
    delay_ms: AtomicU64,
    lists: AtomicU64,
    calls: AtomicU64,
    changes: broadcast::Sender<ChangeKind>,
}

impl std::fmt::Debug for LocalSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSource").field("id", &self.id).finish()
    }
}

impl LocalSource {
    /// An empty source named `id`.
    pub fn new(id: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            id: id.into(),
            tools: RwLock::new(Vec::new()),
            resources: RwLock::new(Vec::new()),
            prompts: RwLock::new(Vec::new()),
            failing: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            lists: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            changes: broadcast::channel(4096).0,
        })
    }

    /// A source with `n` echo tools named `tool_0` … `tool_{n-1}`.
    pub fn with_tools(id: impl Into<String>, n: usize) -> Arc<Self> {
        let s = Self::new(id);
        for i in 0..n {
            s.add_tool(format!("tool_{i}"));
        }
        s
    }

    /// Adds an echo tool (returns its arguments as JSON text). Does not notify.
    pub fn add_tool(&self, name: impl Into<String>) {
        let entry = ToolEntry::new(name, "echoes its arguments", json!({"type": "object"}));
        self.tools.write().push((entry, None));
    }

    /// Adds a tool with a custom entry and handler. Does not notify.
    pub fn add_tool_with(&self, entry: ToolEntry, handler: Handler) {
        self.tools.write().push((entry, Some(handler)));
    }

    /// Removes a tool. Does not notify.
    pub fn remove_tool(&self, name: &str) {
        self.tools.write().retain(|(t, _)| t.name != name);
    }

    /// Adds a text resource. Does not notify.
    pub fn add_resource(
        &self,
        uri: impl Into<String>,
        name: impl Into<String>,
        text: impl Into<String>,
    ) {
        let entry = ResourceEntry {
            uri: uri.into(),
            name: name.into(),
            description: String::new(),
            mime_type: Some("text/plain".into()),
            icons: None,
            meta: None,
        };
        self.resources.write().push((entry, text.into()));
    }

    /// Adds a prompt. Does not notify.
    pub fn add_prompt(&self, prompt: CommandEntry) {
        self.prompts.write().push(prompt);
    }

    /// Makes every listing fail (true) or succeed again (false).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// Makes every `list_tools` wait this long first (a slow or hung server).
    pub fn set_list_delay(&self, delay: std::time::Duration) {
        self.delay_ms.store(
            delay.as_millis().min(u64::MAX as u128) as u64,
            Ordering::SeqCst,
        );
    }

    /// Sends a change notification, like an MCP `list_changed`.
    pub fn notify(&self, kind: ChangeKind) {
        let _ = self.changes.send(kind);
    }

    /// Times `list_tools` was called.
    pub fn list_count(&self) -> u64 {
        self.lists.load(Ordering::SeqCst)
    }

    /// Times a tool was called.
    pub fn call_count(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    fn check(&self) -> Result<(), ExtensionError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(ExtensionError::Unavailable {
                capability: self.id.clone(),
                reason: "made to fail by the test".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl McpResource for LocalSource {
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let delay = self.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        }
        self.check()?;
        Ok(self.tools.read().iter().map(|(t, _)| t.clone()).collect())
    }

    async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let handler = {
            let tools = self.tools.read();
            match tools.iter().find(|(t, _)| t.name == name) {
                Some((_, h)) => h.clone(),
                None => return Err(ExtensionError::not_found("tool", name)),
            }
        };
        Ok(match handler {
            Some(h) => h(&args),
            None => ToolResult::text(Value::Object(args).to_string()),
        })
    }

    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError> {
        self.check()?;
        Ok(self
            .resources
            .read()
            .iter()
            .map(|(r, _)| r.clone())
            .collect())
    }

    async fn read_resource(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        Ok(self
            .resources
            .read()
            .iter()
            .find(|(r, _)| r.uri == uri)
            .map(|(r, text)| ResourceContent::text(&r.uri, r.mime_type.clone(), text.clone())))
    }

    async fn resource_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        Ok(self.resources.read().iter().any(|(r, _)| r.uri == uri))
    }
}

#[async_trait]
impl CommandResource for LocalSource {
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError> {
        self.check()?;
        Ok(self.prompts.read().clone())
    }

    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError> {
        let prompts = self.prompts.read();
        let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
            return Err(ExtensionError::not_found("command", name));
        };
        let given: HashMap<&str, &str> = args.iter().filter_map(|a| a.split_once('=')).collect();
        if let Some(missing) = prompt
            .arguments
            .iter()
            .find(|a| a.required && !given.contains_key(a.name.as_str()))
        {
            return Err(ExtensionError::InvalidArgument(format!(
                "missing argument {}",
                missing.name
            )));
        }
        let mut pairs: Vec<_> = given.into_iter().collect();
        pairs.sort();
        let rendered: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Ok(format!("prompt {name}: {}", rendered.join(", ")))
    }
}

impl ChangeObservable for LocalSource {
    fn on_change(&self) -> Option<ChangeStream> {
        let id = self.id.clone();
        // A lagged receiver still means "something changed".
        let rx = BroadcastStream::new(self.changes.subscribe())
            .map(|r| r.unwrap_or(ChangeKind::ToolsChanged));
        Some(
            rx.map(move |kind| Ok(ChangeEvent::new(id.clone(), kind, format!("mcp://{id}"))))
                .boxed(),
        )
    }
}

#[async_trait]
impl Capability for LocalSource {
    fn id(&self) -> &str {
        &self.id
    }

    fn mcp(&self) -> Option<&dyn McpResource> {
        Some(self)
    }

    fn commands(&self) -> Option<&dyn CommandResource> {
        Some(self)
    }

    fn observable(&self) -> Option<&dyn ChangeObservable> {
        Some(self)
    }
}
