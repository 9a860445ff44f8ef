//! Reading the catalog: the revision a view publishes, the tools the
//! model may call (remote tools, then built-ins), resources, commands, the
//! permission rules' answer, and which visible capabilities are degraded.

use std::sync::Arc;

use extpool_catalog::{CatalogRevision, CommandKind, SourceStatus};
use extpool_core::Capability;

use super::View;
use super::calls::refused;
use crate::error::HostError;
use crate::health::{Degraded, instance};
use crate::info::{ArgInfo, CommandInfo, ModelTool, ResourceInfo, ToolDetails, ToolInfo};
use crate::policy::Resolved;

impl View {
    /// The catalog revision now published for this view. Hold it for a
    /// whole operation to pin it: later publications do not change it.
    pub fn revision(&self) -> Arc<CatalogRevision> {
        self.inner.catalog().current()
    }

    /// What the permission rules say about calling `name` here, and the
    /// rule that decided.
    pub fn permission(&self, name: &str) -> extpool_catalog::Decision {
        self.revision().permission(name)
    }

    /// Every tool the model may call here, in its table's order: remote
    /// tools by catalog name, then the built-ins (what the permission rules
    /// and this view's policy leave, with aliases; deferred ones included).
    pub fn tools(&self) -> Vec<ToolInfo> {
        let plugins = self.inner.host.plugin_servers();
        self.table(super::Pin::now())
            .visible()
            .map(|(_, r)| {
                let mut info = ToolInfo::from(r.tool.clone());
                info.plugin = plugins.get(&info.server).cloned();
                info
            })
            .collect()
    }

    /// One tool by catalog name, alias or listed name, or the same error a
    /// call of that name gets (why it is refused, or the closest name).
    pub fn tool(&self, name: &str) -> Result<ToolInfo, HostError> {
        let table = self.table(super::Pin::now());
        match table.resolve(name) {
            Resolved::Tool(row) => {
                let mut info = ToolInfo::from(row.tool.clone());
                info.plugin = self.inner.host.plugin_of_server(&info.server);
                Ok(info)
            }
            Resolved::Refused(refusal) => Err(refused(refusal, None)),
            _ => Err(self.unknown_tool(table.revision(), name)),
        }
    }

    /// Every resource of the servers visible here.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        let rev = self.revision();
        let mut rows: Vec<ResourceInfo> = rev
            .all_resources()
            .map(|r| ResourceInfo {
                uri: r.entry.uri.clone(),
                name: r.entry.name.clone(),
                server: r.server.to_string(),
                mime_type: r.entry.mime_type.clone(),
                description: r.entry.description.clone(),
                icons: r.entry.icons.clone(),
                meta: r.entry.meta.clone(),
            })
            .collect();
        rows.sort_by(|a, b| (&a.server, &a.uri).cmp(&(&b.server, &b.uri)));
        rows
    }

    /// Every command: skills' slash commands and command files, then MCP
    /// prompts, by name.
    pub fn commands(&self) -> Vec<CommandInfo> {
        let rev = self.revision();
        let host = &self.inner.host;
        let plugins = host.plugin_servers();
        let mut rows: Vec<CommandInfo> = rev
            .all_commands()
            .map(|c| CommandInfo {
                plugin: match c.kind {
                    CommandKind::McpPrompt => plugins.get(c.server.as_ref()).cloned(),
                    _ => host.plugin_of_command(c.server.as_ref(), &c.original),
                },
                name: format!("/{}", c.name),
                description: c.entry.description.clone(),
                arguments: c
                    .entry
                    .arguments
                    .iter()
                    .map(|a| ArgInfo {
                        name: a.name.clone(),
                        required: a.required,
                    })
                    .collect(),
                source: match c.kind {
                    CommandKind::McpPrompt => format!("prompt:{}", c.server),
                    _ if c.server.as_ref() == crate::plugins::COMMANDS_ID => "file".to_owned(),
                    _ => "skill".to_owned(),
                },
                icons: c.entry.icons.clone(),
            })
            .collect();
        let prompt = |c: &CommandInfo| c.source.starts_with("prompt:");
        rows.sort_by(|a, b| (prompt(a), &a.name).cmp(&(prompt(b), &b.name)));
        rows
    }

    /// The catalog's cached status of source `id` as this view sees it (its
    /// own overlay first, then its parents', then the pool's); never
    /// contacts a server.
    pub fn source_status(&self, id: &str) -> Option<SourceStatus> {
        self.inner
            .catalogs()
            .iter()
            .find_map(|c| c.status().source(id).cloned())
    }

    /// The degraded capabilities visible here (see [`crate::health`]).
    /// Asking first recovers those a catalog has listed successfully since
    /// they were marked; it never contacts a server.
    pub fn degraded(&self) -> Vec<Degraded> {
        let health = &self.inner.host.health;
        let entries = health.entries();
        if entries.is_empty() {
            return Vec::new();
        }
        let visible = self.visible_instances();
        let catalogs = self.inner.catalogs();
        let statuses: Vec<_> = catalogs.iter().map(|c| c.status()).collect();
        let mut out = Vec::new();
        for (cap, info) in entries {
            if !visible.contains(&instance(&cap)) {
                continue;
            }
            let status = statuses.iter().find_map(|s| s.source(cap.id()));
            if status.is_some_and(|s| health.recover_if_listed(&cap, s)) {
                continue;
            }
            out.push(info);
        }
        out.sort_by(|a, b| a.capability.cmp(&b.capability));
        out
    }

    /// Identities of every capability visible here and of their children.
    fn visible_instances(&self) -> Vec<usize> {
        fn walk(cap: &Arc<dyn Capability>, out: &mut Vec<usize>, depth: usize) {
            out.push(instance(cap));
            if depth < 8 {
                for child in cap.children() {
                    walk(&child, out, depth + 1);
                }
            }
        }
        let mut out = Vec::new();
        for cap in self.visible().iter() {
            walk(cap, &mut out, 0);
        }
        out
    }
}

/// The model-facing tools of a revision: remote tools by name, then
/// built-ins (the one ordering every front end and agent runtime shows).
pub fn model_tools(rev: &CatalogRevision) -> Vec<ModelTool> {
    let mut rows: Vec<ModelTool> = rev
        .all_tools()
        .map(|t| ModelTool {
            name: t.name.clone(),
            alias: t.alias.clone(),
            server: t.server.to_string(),
            tool: t.original().to_owned(),
            description: t.entry.description.clone(),
            input_schema: t.entry.input_schema.clone(),
            builtin: false,
            details: ToolDetails::of(&t.entry),
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows.extend(rev.all_builtins().into_iter().map(ModelTool::builtin));
    rows
}

/// The model-facing tools of a revision as [`ToolInfo`] rows.
pub(crate) fn tools_of(rev: &CatalogRevision) -> Vec<ToolInfo> {
    model_tools(rev).into_iter().map(ToolInfo::from).collect()
}
