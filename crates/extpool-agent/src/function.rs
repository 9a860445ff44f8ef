//! [`FunctionTools`]: an embedding program's own tools as a capability.
//!
//! Registered at any scope (the pool, a session, an agent, a turn), they
//! enter the catalog exactly like an MCP server's tools — named
//! `mcp__<id>__<tool>` by the one naming rule, allowed or denied by the same
//! permission rules, dispatched, shaped (size limits) and recorded the same
//! way — so the model and the operator cannot tell them apart.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use extpool_host::core::{ResourceEntry, ServerNameError, check_server_name};
use extpool_host::{
    Capability, CapabilityKind, ExtensionError, McpResource, ResourceContent, ToolEntry, ToolResult,
};
use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// A tool's handler: arguments in, result out. A failure the model should
/// read is a [`ToolResult::error`].
pub type ToolHandler =
    Arc<dyn Fn(Map<String, Value>) -> BoxFuture<'static, ToolResult> + Send + Sync>;

/// Tools implemented by the embedding program, under one id.
pub struct FunctionTools {
    id: String,
    entries: Vec<ToolEntry>,
    handlers: HashMap<String, ToolHandler>,
}

impl std::fmt::Debug for FunctionTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionTools")
            .field("id", &self.id)
            .field("tools", &self.entries.len())
            .finish()
    }
}

impl FunctionTools {
    /// An empty set named `id` (a server name: `[A-Za-z0-9_]+`, no `__`):
    /// its tools are `mcp__<id>__<tool>`.
    pub fn new(id: &str) -> Result<Self, ServerNameError> {
        check_server_name(id)?;
        Ok(Self {
            id: id.to_owned(),
            entries: Vec::new(),
            handlers: HashMap::new(),
        })
    }

    /// Adds tool `name` with its description, argument schema (a JSON
    /// Schema object) and handler. A later tool of the same name replaces
    /// the earlier one.
    pub fn tool<F, Fut>(mut self, name: &str, description: &str, schema: Value, handler: F) -> Self
    where
        F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        self.entries.retain(|e| e.name != name);
        self.entries.push(ToolEntry::new(name, description, schema));
        let handler: ToolHandler = Arc::new(move |args| Box::pin(handler(args)));
        self.handlers.insert(name.to_owned(), handler);
        self
    }

    /// The capability, ready to register.
    pub fn build(self) -> Arc<Self> {
        Arc::new(self)
    }
}

#[async_trait]
impl McpResource for FunctionTools {
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        Ok(self.entries.clone())
    }

    async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError> {
        let Some(handler) = self.handlers.get(name) else {
            return Err(ExtensionError::not_found("tool", name));
        };
        Ok(handler(args).await)
    }

    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError> {
        Ok(Vec::new())
    }

    async fn read_resource(&self, _uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        Ok(None)
    }

    async fn resource_exists(&self, _uri: &str) -> Result<bool, ExtensionError> {
        Ok(false)
    }
}

#[async_trait]
impl Capability for FunctionTools {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> CapabilityKind {
        CapabilityKind::McpServer
    }

    fn mcp(&self) -> Option<&dyn McpResource> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tools_are_listed_and_called_by_name() {
        let tools = FunctionTools::new("app")
            .unwrap()
            .tool(
                "hello",
                "Greets",
                serde_json::json!({"type": "object"}),
                |args| async move { ToolResult::text(format!("hello {}", args.len())) },
            )
            .build();
        assert_eq!(tools.list_tools().await.unwrap()[0].name, "hello");
        let r = tools.call_tool("hello", Map::new()).await.unwrap();
        assert_eq!(r.joined_text(), "hello 0");
        assert!(
            tools
                .call_tool("nope", Map::new())
                .await
                .unwrap_err()
                .is_not_found()
        );
        assert!(FunctionTools::new("bad__id").is_err());
    }
}
