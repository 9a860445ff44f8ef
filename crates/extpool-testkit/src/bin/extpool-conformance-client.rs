//! `extpool-conformance-client`: the MCP client the official conformance
//! suite (`@modelcontextprotocol/conformance client --command …`) launches,
//! built on extpool's own MCP client (`extpool_mcp::McpClient`) and OAuth
//! (`extpool_auth`).
//!
//! The suite passes the server URL as the last argument and the scenario in
//! `MCP_CONFORMANCE_SCENARIO` (plus `MCP_CONFORMANCE_CONTEXT`, JSON, for
//! scenarios with pre-registered credentials). For `auth/*` scenarios the
//! server gets an OAuth profile (pre-registered client from the context,
//! else a client ID metadata document URL, else dynamic registration) with
//! a temporary credential store, and the host allows logins through a
//! headless authorizer: the suite's authorization servers approve at once
//! and redirect, so the code is read from `Location` — the same login and
//! serving code paths `extpool mcp login` and serving use.
//!
//! Exit code 0 when the scenario's operations succeeded, 1 otherwise.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use extpool_auth::{AuthContext, HeadlessAuthorizer, OAuthProfile};
use extpool_mcp::{
    ClientOptions, Elicitation, ElicitationHandler, McpClient, McpServerConfig, ServerName,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

/// The client ID metadata document URL offered to servers that support CIMD.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Redirect URI registered by the headless login (never contacted).
const REDIRECT_URI: &str = "http://localhost:3000/callback";

#[derive(Debug, Default, serde::Deserialize)]
struct ScenarioContext {
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

/// Arguments for a tool from its input schema: numbers for number fields
/// (the suite checks `add_numbers` gets numbers), strings otherwise.
fn arguments_for(tool: &rmcp::model::Tool) -> Map<String, Value> {
    let mut args = Map::new();
    if let Some(Value::Object(props)) = tool.input_schema.get("properties") {
        for (name, schema) in props {
            let kind = schema
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("string");
            let value = match kind {
                "number" | "integer" => Value::from(if name == "b" { 3 } else { 5 }),
                "boolean" => Value::Bool(true),
                "object" => Value::Object(Map::new()),
                "array" => Value::Array(Vec::new()),
                _ => Value::String("test".into()),
            };
            args.insert(name.clone(), value);
        }
    }
    args
}

/// Answers elicitation as a user who accepts every suggested default.
struct AcceptDefaults;

#[async_trait::async_trait]
impl ElicitationHandler for AcceptDefaults {
    async fn elicit(
        &self,
        _server: &ServerName,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        let mut content = Map::new();
        if let Some(Value::Object(props)) = schema.get("properties") {
            for (name, prop) in props {
                if let Some(default) = prop.get("default") {
                    content.insert(name.clone(), default.clone());
                }
            }
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content)))
    }
}

async fn run(url: &str, scenario: &str) -> Result<()> {
    let context: ScenarioContext = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let store = tempfile::tempdir().context("temporary credential store")?;
    let mut config = McpServerConfig::http(url);
    let mut options = ClientOptions {
        elicitation: Some(Elicitation(Arc::new(AcceptDefaults))),
        ..ClientOptions::default()
    };
    if scenario.starts_with("auth/") {
        config.oauth = Some(OAuthProfile {
            client_id: context.client_id,
            client_secret: context.client_secret,
            client_metadata_url: Some(CLIENT_METADATA_URL.into()),
            store: Some(store.path().to_owned()),
            ..OAuthProfile::default()
        });
        options.auth = AuthContext {
            authorizer: Some(Arc::new(HeadlessAuthorizer::new(REDIRECT_URI))),
            ..AuthContext::default()
        };
    }
    let name = ServerName::new("conformance").context("server name")?;
    let client = McpClient::connect(name, config, Arc::new(options))
        .await
        .context("connect")?;
    let result = exercise(&client).await;
    client.close().await;
    result
}

async fn exercise(client: &McpClient) -> Result<()> {
    let tools = client.list_tools().await.context("tools/list")?;
    for tool in &tools {
        let result = client
            .call_tool(&tool.name, Some(arguments_for(tool)))
            .await
            .with_context(|| format!("tools/call {}", tool.name))?;
        tracing::info!(tool = %tool.name, is_error = ?result.is_error, "called");
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    init_tracing();
    let Some(url) = std::env::args().skip(1).last() else {
        tracing::error!("usage: extpool-conformance-client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url, &scenario).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(scenario, "{error:#}");
            ExitCode::from(1)
        }
    }
}
