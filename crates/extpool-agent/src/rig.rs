//! An adapter for rig's tool traits (feature `rig`; rig-core 0.44): a
//! turn's compiled toolset as rig [`DynamicTool`]s, to hand to a rig agent
//! (`rig_agent::AgentBuilder::dynamic_tools`) or any rig tool registry.
//!
//! Each tool is called through the [`Turn`] — on its pinned revision, under
//! its run's interruption, recorded in its transcript and the audit trail —
//! so a rig agent gets extpool's behaviour whole. A tool error (unknown,
//! denied, bad arguments, a server down after its reconnect) reaches the
//! model as rig's tool failure with extpool's text, which rig shows the
//! model. A tool's liveness probe turns false while its server is degraded,
//! so rig's registries can retire it. When tools are deferred the search
//! tool is among them; tools it loads are offered by the next call of
//! [`dynamic_tools`] (rebuild the rig toolset per turn).

use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolExecutionError, ToolOutput};
use serde_json::{Map, Value};

use crate::compile::ToolDefinition;
use crate::turn::Turn;

/// The tools `turn` offers the model now, as rig tools.
pub fn dynamic_tools(turn: &Turn) -> Vec<DynamicTool> {
    let compiled = turn.compiled();
    compiled
        .definitions()
        .into_iter()
        .filter_map(|definition| {
            let server = compiled
                .tool(&definition.name)
                .map(|t| t.server.clone())
                .unwrap_or_default();
            tool(turn, definition, server)
        })
        .collect()
}

fn tool(turn: &Turn, definition: ToolDefinition, server: String) -> Option<DynamicTool> {
    let name = ToolName::new(definition.name.clone()).ok()?;
    let called = definition.name;
    let parameters = definition.parameters.as_ref().clone();
    let calling = turn.clone();
    let tool = DynamicTool::new(
        name,
        definition.description,
        parameters,
        move |args: Value| {
            let turn = calling.clone();
            let called = called.clone();
            Box::pin(async move {
                let args = match args {
                    Value::Object(map) => map,
                    Value::Null => Map::new(),
                    other => {
                        return Err(ToolExecutionError::invalid_args(format!(
                            "the arguments of {called} must be a JSON object, not {other}"
                        )));
                    }
                };
                match turn.call(&called, args).await {
                    Ok(result) if !result.is_error => Ok(ToolOutput::text(result.joined_text())),
                    Ok(result) => Err(ToolExecutionError::provider(result.joined_text())),
                    Err(e) if e.is_interrupted() => {
                        Err(ToolExecutionError::cancelled(e.to_string()))
                    }
                    Err(e) => Err(ToolExecutionError::other(e.to_string())),
                }
            })
        },
    );
    if server.is_empty() {
        // The search tool: served by extpool itself.
        return Some(tool);
    }
    let view = turn.view().clone();
    Some(tool.with_liveness(move || !view.degraded().iter().any(|d| d.capability == server)))
}
