//! The resource protocols of extpool-core, implemented over the client:
//! tools and resources (`McpResource`), MCP-hosted skills
//! (`SkillResource`), prompts as commands (`CommandResource`).

use async_trait::async_trait;
use extpool_core::directory::trim_directory_uri;
use extpool_core::{
    CommandEntry, CommandResource, DirectoryPage, ExtensionError, McpResource, ResourceContent,
    ResourceEntry, ResourceTemplateEntry, SkillEntry, SkillResource, ToolEntry, ToolResult,
};
#[allow(deprecated)] // logging (SEP-2577) is deprecated but servers still offer it
use rmcp::model::LoggingLevel;
use rmcp::model::{CompleteRequestParams, ErrorCode};
use serde_json::{Map, Value};

use super::McpServerCap;
use super::cache::template_matches;
use crate::convert;
use crate::error::ClientError;
use crate::{skill_dir, skills};

#[async_trait]
impl McpResource for McpServerCap {
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        self.tools()
            .await
            .map(|t| t.as_ref().clone())
            .map_err(|e| self.err(e))
    }

    async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError> {
        let client = self.ensure_client().await.map_err(|e| self.err(e))?;
        let result = client
            .call_tool_in_context(name, Some(args))
            .await
            .map_err(|e| self.err(e))?;
        Ok(convert::tool_result(result))
    }

    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError> {
        if self.is_dormant() {
            return Ok(Vec::new());
        }
        self.resource_index()
            .await
            .map(|i| i.resources.clone())
            .map_err(|e| self.err(e))
    }

    async fn read_resource(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        let client = self.ensure_client().await.map_err(|e| self.err(e))?;
        match skills::fetch(&client, uri).await {
            Ok(content) => Ok(Some(content)),
            Err(ClientError::Rpc { error, .. }) if error.code == ErrorCode::RESOURCE_NOT_FOUND => {
                Ok(None)
            }
            Err(e) => Err(self.err(e)),
        }
    }

    async fn resource_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        if self.is_dormant() {
            return Ok(false);
        }
        let index = self.resource_index().await.map_err(|e| self.err(e))?;
        Ok(index.resources.iter().any(|r| r.uri == uri)
            || index
                .templates
                .iter()
                .any(|t| template_matches(&t.uri_template, uri)))
    }

    async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplateEntry>, ExtensionError> {
        if self.is_dormant() {
            return Ok(Vec::new());
        }
        self.resource_index()
            .await
            .map(|i| i.templates.clone())
            .map_err(|e| self.err(e))
    }

    async fn complete(&self, request: Value) -> Result<Option<Value>, ExtensionError> {
        let params: CompleteRequestParams = serde_json::from_value(request)
            .map_err(|e| ExtensionError::InvalidArgument(format!("completion request: {e}")))?;
        let client = self.ensure_client().await.map_err(|e| self.err(e))?;
        let result = client.complete(params).await.map_err(|e| self.err(e))?;
        serde_json::to_value(result)
            .map(Some)
            .map_err(|e| ExtensionError::InvalidArgument(format!("completion result: {e}")))
    }

    async fn subscribe(&self, uri: &str, on: bool) -> Result<bool, ExtensionError> {
        let client = self.ensure_client().await.map_err(|e| self.err(e))?;
        if !client
            .supports_subscriptions()
            .await
            .map_err(|e| self.err(e))?
        {
            return Ok(false);
        }
        client.subscribe(uri, on).await.map_err(|e| self.err(e))?;
        Ok(true)
    }

    fn resource_updates(&self) -> Option<futures::stream::BoxStream<'static, String>> {
        Some(self.updates())
    }

    #[allow(deprecated)] // logging (SEP-2577) is deprecated but servers still offer it
    async fn set_log_level(&self, level: &str) -> Result<bool, ExtensionError> {
        let level: LoggingLevel =
            serde_json::from_value(Value::String(level.to_owned())).map_err(|_| {
                ExtensionError::InvalidArgument(format!("{level:?} is not an MCP logging level"))
            })?;
        let client = self.ensure_client().await.map_err(|e| self.err(e))?;
        if !client.supports_logging().await.map_err(|e| self.err(e))? {
            return Ok(false);
        }
        client.set_level(level).await.map_err(|e| self.err(e))?;
        Ok(true)
    }

    /// What the current connection's server declared (nothing before it
    /// connected: a lazy server is not started to answer).
    fn extensions(&self) -> Map<String, Value> {
        let declared = self
            .client()
            .and_then(|c| c.capabilities())
            .and_then(|c| c.extensions);
        declared
            .into_iter()
            .flatten()
            .map(|(id, settings)| (id, Value::Object(settings)))
            .collect()
    }

    fn declared_capability(&self, name: &str) -> Option<Value> {
        self.client()?.declared_capability(name)
    }

    fn tool_task_support(&self, tool: &str) -> Option<String> {
        self.client()?.task_support(tool)
    }

    async fn request_whole(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Option<Value>, ExtensionError> {
        let client = self.ensure_client().await.map_err(|e| self.err(e))?;
        client
            .request_whole(method, params)
            .await
            .map(Some)
            .map_err(|e| self.err(e))
    }

    fn task_status(&self) -> Option<futures::stream::BoxStream<'static, Value>> {
        Some(self.task_status_stream())
    }
}

#[async_trait]
impl SkillResource for McpServerCap {
    async fn list_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError> {
        if self.is_dormant() {
            return Ok(Vec::new());
        }
        let (_, index) = self.skill_index().await.map_err(|e| self.err(e))?;
        Ok(index.iter().map(|s| s.entry.clone()).collect())
    }

    async fn read_skill(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        let Some((client, skill)) = self.skill_for(uri).await.map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        if let skills::Origin::Resources { files } = &skill.origin
            && !files.iter().any(|f| f == uri)
        {
            return Ok(None);
        }
        let (content, refreshed) = skills::read(&client, &skill, uri)
            .await
            .map_err(|e| self.err(e))?;
        if let Some(fresh) = refreshed {
            self.remember_skill(&client, fresh);
        }
        Ok(Some(content))
    }

    /// Forwarded when the server declared `directoryRead`, else answered
    /// from the skill's manifest (see module `skill_dir`).
    async fn read_skill_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<Option<DirectoryPage>, ExtensionError> {
        if !uri.starts_with("skill://") || self.is_dormant() {
            return Ok(None);
        }
        let dir = trim_directory_uri(uri);
        let (client, index) = self.skill_index().await.map_err(|e| self.err(e))?;
        let Some(skill) = skill_dir::owner(&index, dir) else {
            return Ok(None);
        };
        match skill_dir::read(&client, skill, dir, cursor).await {
            Ok(page) => Ok(page),
            Err(skill_dir::DirError::Client(e)) => Err(self.err(e)),
            Err(skill_dir::DirError::Refused(e)) => Err(e),
        }
    }

    async fn skill_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        if !uri.starts_with("skill://") || self.is_dormant() {
            return Ok(false);
        }
        let (_, index) = self.skill_index().await.map_err(|e| self.err(e))?;
        Ok(skills::find(&index, uri).is_some_and(|s| match &s.origin {
            skills::Origin::Resources { files } => files.iter().any(|f| f == uri),
            skills::Origin::Extension(_) => true,
        }))
    }
}

#[async_trait]
impl CommandResource for McpServerCap {
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError> {
        if self.is_dormant() {
            return Ok(Vec::new());
        }
        self.prompts()
            .await
            .map(|p| p.as_ref().clone())
            .map_err(|e| self.err(e))
    }

    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError> {
        let prompts = self.prompts().await.map_err(|e| self.err(e))?;
        let Some(command) = prompts.iter().find(|c| c.name == name) else {
            return Err(ExtensionError::not_found("command", name));
        };
        let arguments = convert::prompt_arguments(command, args)
            .map_err(|e| ExtensionError::InvalidArgument(e.to_string()))?;
        let client = self.ensure_client().await.map_err(|e| self.err(e))?;
        let rendered = client
            .get_prompt(name, Some(arguments))
            .await
            .map_err(|e| self.err(e))?;
        Ok(convert::prompt_text(&rendered))
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Option<Value>, ExtensionError> {
        let prompts = self.prompts().await.map_err(|e| self.err(e))?;
        if !prompts.iter().any(|c| c.name == name) {
            return Err(ExtensionError::not_found("command", name));
        }
        let client = self.ensure_client().await.map_err(|e| self.err(e))?;
        let result = client
            .get_prompt(name, Some(arguments))
            .await
            .map_err(|e| self.err(e))?;
        serde_json::to_value(result)
            .map(Some)
            .map_err(|e| ExtensionError::InvalidArgument(format!("prompt result: {e}")))
    }
}
