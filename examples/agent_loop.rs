//! An agent loop on extpool: a model behind any OpenAI-compatible chat
//! completions endpoint, given extpool's compiled toolset and instructions,
//! calling tools until it answers.
//!
//!     OPENAI_API_KEY=… cargo run -p extpool-agent --example agent_loop -- "What is 2 + 3?"
//!
//! Environment: `OPENAI_BASE_URL` (default `https://api.openai.com/v1`; any
//! OpenAI-compatible server: vLLM, llama.cpp, Ollama, a gateway),
//! `OPENAI_API_KEY` (sent as a bearer token, never printed), `OPENAI_MODEL`
//! (default `gpt-4o-mini`), `EXTPOOL_CONFIG` (default the example
//! `extpool.yaml` at the repository root).
#![allow(clippy::print_stdout)]

use extpool_agent::{AgentFactory, Turn};
use extpool_host::{Host, HostOptions};
use serde_json::{Value, json};

/// Where the model is.
pub struct Endpoint {
    /// Base URL of the OpenAI-compatible API (`…/v1`).
    pub base_url: String,
    /// The bearer token, if the endpoint needs one.
    pub api_key: Option<String>,
    /// The model name.
    pub model: String,
}

impl Endpoint {
    /// The endpoint the environment names.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self {
            base_url: var("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into()),
            api_key: var("OPENAI_API_KEY"),
            model: var("OPENAI_MODEL").unwrap_or_else(|| "gpt-4o-mini".into()),
        }
    }
}

/// The most model requests one prompt may take.
const MAX_STEPS: usize = 8;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let prompt = if prompt.is_empty() {
        "What is 2 + 3? Use a tool.".to_owned()
    } else {
        prompt
    };
    let config = std::env::var("EXTPOOL_CONFIG").unwrap_or_else(|_| "extpool.yaml".into());
    let answer = run(HostOptions::files([config]), Endpoint::from_env(), &prompt).await?;
    println!("{answer}");
    Ok(())
}

/// Runs one prompt to its answer (the tests run it against a scripted model).
pub async fn run(
    options: HostOptions,
    endpoint: Endpoint,
    prompt: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let host = Host::start(options).await?;
    let factory = AgentFactory::new(host.clone());
    let session = host.session("example")?;
    let agent = factory.open_agent(&session, "assistant")?;
    let turn = agent.turn("1", prompt).await?;
    let answer = converse(&turn, &endpoint, prompt).await;
    turn.end().await;
    agent.complete().await;
    host.shutdown().await;
    answer
}

/// The loop: ask the model; run the tools it calls; until it answers.
async fn converse(
    turn: &Turn,
    endpoint: &Endpoint,
    prompt: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let http = reqwest::Client::new();
    let mut messages = vec![json!({"role": "user", "content": prompt})];
    for _ in 0..MAX_STEPS {
        // Recompiled tools (deferred ones the model loaded) and this
        // request's injected instructions (active skills).
        let compiled = turn.compiled();
        let mut system = compiled.system_prompt();
        for injected in turn.before_model_request().await?.injected() {
            system.push_str("\n\n");
            system.push_str(injected);
        }
        let tools: Vec<Value> = compiled
            .definitions()
            .iter()
            .map(|d| d.to_openai())
            .collect();
        let mut request_messages = vec![json!({"role": "system", "content": system})];
        request_messages.extend(messages.iter().cloned());
        let body = json!({"model": endpoint.model, "messages": request_messages, "tools": tools});
        let message = complete(&http, endpoint, &body).await?;
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages.push(message.clone());
        if calls.is_empty() {
            return Ok(message["content"].as_str().unwrap_or_default().to_owned());
        }
        for call in calls {
            let name = call["function"]["name"].as_str().unwrap_or_default();
            let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
            let content = match serde_json::from_str::<Value>(arguments) {
                Ok(Value::Object(args)) => turn.call(name, args).await?.joined_text(),
                _ => format!("the arguments of {name} are not a JSON object: {arguments}"),
            };
            messages.push(json!({
                "role": "tool",
                "tool_call_id": call["id"],
                "content": content,
            }));
        }
    }
    Err(format!("no answer after {MAX_STEPS} model requests").into())
}

/// One chat completion: the assistant's message.
async fn complete(
    http: &reqwest::Client,
    endpoint: &Endpoint,
    body: &Value,
) -> Result<Value, Box<dyn std::error::Error>> {
    let url = format!(
        "{}/chat/completions",
        endpoint.base_url.trim_end_matches('/')
    );
    let mut request = http
        .post(&url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body)?);
    if let Some(key) = &endpoint.api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await?;
    let status = response.status();
    let bytes = response.bytes().await?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes);
        return Err(format!("{url} answered {status}: {text}").into());
    }
    let reply: Value = serde_json::from_slice(&bytes)?;
    Ok(reply["choices"][0]["message"].clone())
}
