//! A lazy server (`lazy: true` with declared `tools:`) as the catalog sees
//! it: its tools come from the configuration, so listing never connects;
//! the first call connects (through `McpServerCap`, which takes its client
//! from the pool on first need).
//!
//! `McpServerCap` already lists a lazy server's tools from configuration,
//! but its resources and prompts are listed from the server, and the
//! catalog lists those too. This wrapper answers them empty until the
//! server is used, so a lazy server stays unstarted for listings.

use std::sync::Arc;

use async_trait::async_trait;
use extpool_core::{
    Capability, ExtensionError, McpResource, ResourceContent, ResourceEntry, ToolEntry, ToolResult,
};
use extpool_mcp::McpServerCap;
use serde_json::{Map, Value};

/// A lazy server with declared tools.
pub struct LazyServer(pub Arc<McpServerCap>);

#[async_trait]
impl Capability for LazyServer {
    fn id(&self) -> &str {
        self.0.id()
    }

    async fn shutdown(&self) -> Result<(), ExtensionError> {
        self.0.shutdown().await
    }

    fn mcp(&self) -> Option<&dyn McpResource> {
        Some(self)
    }
}

#[async_trait]
impl McpResource for LazyServer {
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        self.0.list_tools().await
    }

    async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError> {
        self.0.call_tool(name, args).await
    }

    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError> {
        Ok(Vec::new())
    }

    async fn read_resource(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        self.0.read_resource(uri).await
    }

    async fn resource_exists(&self, _uri: &str) -> Result<bool, ExtensionError> {
        Ok(false)
    }
}
