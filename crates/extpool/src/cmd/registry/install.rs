//! A registry's server.json as an `mcp_servers` entry: the first package
//! extpool can run over stdio (npm with npx, PyPI with uvx, OCI images
//! with docker, NuGet with dnx), else the first streamable-HTTP remote.
//!
//! What the registry gives is written as text, never as a reference: a
//! `${` in it is escaped (`$${`), so an entry cannot make extpool put one
//! of its environment's variables in an argument or a header. A value the
//! user must give (a secret, a required input without a default) becomes
//! a `${VAR}` reference of extpool's own, named for where it goes, to
//! export. The argument and package names that reach a command line are
//! checked: none may be taken for an option of the runtime.

use std::collections::BTreeMap;

use extpool_host::McpServerConfig;
use extpool_host::config::secrets::SecretSite;

use super::api::{Argument, Input, KeyValueInput, Package, Remote, ServerDetail};

/// What adding a registry server writes, and what it says about it.
#[derive(Debug)]
pub struct Plan {
    /// The entry.
    pub config: McpServerConfig,
    /// What it runs or reaches, as lines for people.
    pub shown: Vec<String>,
    /// The variables to export (secrets and inputs without a default).
    pub inputs: Vec<(String, String)>,
}

/// The plan for `detail` as server `name`, or why none can be made.
pub fn plan(detail: &ServerDetail, name: &str) -> Result<Plan, String> {
    let mut skipped = Vec::new();
    for package in &detail.packages {
        match package_plan(package, name) {
            Ok(plan) => return Ok(plan),
            Err(why) => skipped.push(why),
        }
    }
    for remote in &detail.remotes {
        match remote_plan(remote, name) {
            Ok(plan) => return Ok(plan),
            Err(why) => skipped.push(why),
        }
    }
    if skipped.is_empty() {
        skipped.push("it lists no package and no remote".into());
    }
    Err(skipped.join("; "))
}

/// Registry text as extpool configuration text: `${` escaped.
fn literal(text: &str) -> String {
    text.replace("${", "$${")
}

/// What fills inputs.
struct Inputs<'a> {
    server: &'a str,
    needed: Vec<(String, String)>,
}

impl Inputs<'_> {
    /// `input`'s value: its value (variables filled), its default, or a
    /// reference to export when it is required or secret; `None` when it
    /// may be left out.
    fn value(&mut self, input: &Input, site: SecretSite, label: &str) -> Option<String> {
        if let Some(value) = &input.value {
            return Some(self.fill(value, &input.variables, label));
        }
        if !input.is_secret
            && let Some(default) = &input.default
        {
            return Some(literal(default));
        }
        if input.is_required || input.is_secret {
            return Some(self.reference(site, input, label));
        }
        None
    }

    fn reference(&mut self, site: SecretSite, input: &Input, label: &str) -> String {
        let var = match &site {
            SecretSite::Env(name) => extpool_host::config::secrets::env_name_part(name),
            _ => site.env_name(self.server),
        };
        let about = input
            .description
            .clone()
            .unwrap_or_else(|| label.to_owned());
        if !self.needed.iter().any(|(v, _)| *v == var) {
            self.needed.push((var.clone(), about));
        }
        format!("${{{var}}}")
    }

    /// `{name}` variables of `template` filled from `variables`.
    fn fill(&mut self, template: &str, variables: &BTreeMap<String, Input>, label: &str) -> String {
        let mut out = String::new();
        // Registry text not yet written: escaped as one piece, so a `$`
        // before an unknown `{name}` is escaped with it.
        let mut pending = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}').map(|c| open + c) else {
                break;
            };
            let key = &rest[open + 1..close];
            pending.push_str(&rest[..open]);
            match variables.get(key) {
                Some(var) => {
                    out.push_str(&literal(&std::mem::take(&mut pending)));
                    let site = SecretSite::Arg(key.to_owned());
                    let filled = self
                        .value(var, site.clone(), &format!("{label}: {key}"))
                        .unwrap_or_else(|| self.reference(site, var, key));
                    out.push_str(&filled);
                }
                None => pending.push_str(&rest[open..=close]),
            }
            rest = &rest[close + 1..];
        }
        pending.push_str(rest);
        out.push_str(&literal(&pending));
        out
    }

    /// Arguments as words of a command line.
    fn arguments(&mut self, args: &[Argument], words: &mut Vec<String>) -> Result<(), String> {
        for arg in args {
            match arg.kind.as_str() {
                "named" => {
                    let flag = arg.name.as_deref().unwrap_or_default();
                    if !flag.starts_with('-') || flag.contains(char::is_whitespace) {
                        return Err(format!("a named argument {flag:?} is not a flag"));
                    }
                    let site = SecretSite::Arg(flag.to_owned());
                    if let Some(value) = self.value(&arg.input, site, flag) {
                        words.push(literal(flag));
                        words.push(value);
                    } else if arg.input.is_required {
                        words.push(literal(flag));
                    }
                }
                "positional" => {
                    let hint = arg.value_hint.as_deref().unwrap_or("value");
                    let site = SecretSite::Arg(hint.to_owned());
                    if let Some(value) = self.value(&arg.input, site, hint) {
                        words.push(value);
                    }
                }
                other => return Err(format!("an argument of type {other:?}")),
            }
        }
        Ok(())
    }
}

/// A package name or image that goes on a command line as one word.
fn checked_identifier(id: &str) -> Result<&str, String> {
    if id.is_empty()
        || id.starts_with('-')
        || id.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "its identifier {id:?} cannot be one word of a command line"
        ));
    }
    Ok(id)
}

fn package_plan(package: &Package, name: &str) -> Result<Plan, String> {
    let kind = package
        .transport
        .as_ref()
        .map_or("stdio", |t| t.kind.as_str());
    let what = format!("{} package {}", package.registry_type, package.identifier);
    if kind != "stdio" {
        return Err(format!(
            "the {what} is served over {kind}, not run over stdio"
        ));
    }
    let id = checked_identifier(&package.identifier).map_err(|e| format!("the {what}: {e}"))?;
    let version = package.version.as_deref().filter(|v| !v.is_empty());
    let mut inputs = Inputs {
        server: name,
        needed: Vec::new(),
    };
    let mut env = BTreeMap::new();
    for var in &package.environment_variables {
        env_entry(&mut inputs, var, &mut env);
    }
    let mut words = Vec::new();
    let runtime_args = |inputs: &mut Inputs<'_>, words: &mut Vec<String>| {
        inputs
            .arguments(&package.runtime_arguments, words)
            .map_err(|e| format!("the {what}: {e}"))
    };
    let command = match package.registry_type.as_str() {
        "npm" => {
            if package.runtime_arguments.is_empty() {
                words.push("-y".into());
            }
            runtime_args(&mut inputs, &mut words)?;
            words.push(literal(&match version {
                Some(v) => format!("{id}@{v}"),
                None => id.to_owned(),
            }));
            "npx"
        }
        "pypi" => {
            runtime_args(&mut inputs, &mut words)?;
            words.push(literal(&match version {
                Some(v) => format!("{id}=={v}"),
                None => id.to_owned(),
            }));
            "uvx"
        }
        "oci" => {
            words.extend(["run", "-i", "--rm"].map(String::from));
            runtime_args(&mut inputs, &mut words)?;
            for key in env.keys() {
                words.push("-e".into());
                words.push(key.clone());
            }
            let tagged = id
                .rsplit('/')
                .next()
                .is_some_and(|last| last.contains(':') || last.contains('@'));
            words.push(literal(&match version {
                Some(v) if !tagged => format!("{id}:{v}"),
                _ => id.to_owned(),
            }));
            "docker"
        }
        "nuget" => {
            runtime_args(&mut inputs, &mut words)?;
            words.push(literal(&match version {
                Some(v) => format!("{id}@{v}"),
                None => id.to_owned(),
            }));
            words.push("--yes".into());
            if !package.package_arguments.is_empty() {
                words.push("--".into());
            }
            "dnx"
        }
        other => return Err(format!("the {what}: extpool cannot run {other} packages")),
    };
    inputs
        .arguments(&package.package_arguments, &mut words)
        .map_err(|e| format!("the {what}: {e}"))?;
    let mut config = McpServerConfig::stdio(command, words);
    config.env = env;
    let mut shown = vec![format!(
        "runs: {}",
        std::iter::once(command.to_owned())
            .chain(config.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    )];
    for (k, v) in &config.env {
        shown.push(format!("env:  {k}={v}"));
    }
    Ok(Plan {
        config,
        shown,
        inputs: inputs.needed,
    })
}

fn env_entry(inputs: &mut Inputs<'_>, var: &KeyValueInput, env: &mut BTreeMap<String, String>) {
    let site = SecretSite::Env(var.name.clone());
    if let Some(value) = inputs.value(&var.input, site, &var.name) {
        env.insert(var.name.clone(), value);
    }
}

fn remote_plan(remote: &Remote, name: &str) -> Result<Plan, String> {
    if remote.kind != "streamable-http" {
        return Err(format!(
            "the remote {} is served over {}; extpool speaks streamable HTTP",
            remote.url, remote.kind
        ));
    }
    let mut inputs = Inputs {
        server: name,
        needed: Vec::new(),
    };
    let url = inputs.fill(&remote.url, &remote.variables, "url");
    let mut config = McpServerConfig::http(url.as_str());
    for header in &remote.headers {
        let site = SecretSite::Header(header.name.clone());
        if let Some(value) = inputs.value(&header.input, site, &header.name) {
            config.headers.insert(header.name.clone(), value);
        }
    }
    let mut shown = vec![format!("connects to: {url}")];
    for (k, v) in &config.headers {
        shown.push(format!("header: {k}: {v}"));
    }
    Ok(Plan {
        config,
        shown,
        inputs: inputs.needed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail(json: serde_json::Value) -> ServerDetail {
        serde_json::from_value(json).unwrap()
    }

    /// The registry's own example (docs/reference/server-json/examples/valid/with-package.json).
    #[test]
    fn an_npm_package_runs_with_npx_and_its_secret_is_a_reference() {
        let d = detail(serde_json::json!({
            "name": "io.github.user/local-weather", "description": "Local MCP server distributed as an npm package.",
            "version": "1.0.0",
            "packages": [{"registryType": "npm", "identifier": "@modelcontextprotocol/server-weather", "version": "1.0.0",
                "transport": {"type": "stdio"}, "runtimeHint": "npx",
                "packageArguments": [{"type": "positional", "valueHint": "config_path"}, {"type": "named", "name": "--port", "value": "8080"}],
                "environmentVariables": [{"name": "API_KEY", "isSecret": true, "isRequired": true}]}]
        }));
        let plan = plan(&d, "weather").unwrap();
        assert_eq!(plan.config.command.as_deref(), Some("npx"));
        assert_eq!(
            plan.config.args,
            [
                "-y",
                "@modelcontextprotocol/server-weather@1.0.0",
                "--port",
                "8080"
            ]
        );
        assert_eq!(plan.config.env["API_KEY"], "${API_KEY}");
        assert_eq!(plan.inputs[0].0, "API_KEY");
    }

    #[test]
    fn a_remote_fills_its_url_and_registry_text_is_never_a_reference() {
        let d = detail(serde_json::json!({
            "name": "io.github.user/remote-weather", "version": "2.1.0",
            "remotes": [{"type": "streamable-http", "url": "https://{host}/mcp",
                "headers": [{"name": "Authorization", "isSecret": true, "isRequired": true},
                            {"name": "X-Leak", "value": "${HOME}"}],
                "variables": {"host": {"description": "API host", "default": "api.example.com"}}}]
        }));
        let plan = plan(&d, "weather").unwrap();
        assert_eq!(
            plan.config.url.as_deref(),
            Some("https://api.example.com/mcp")
        );
        assert_eq!(plan.config.headers["Authorization"], "${WEATHER_TOKEN}");
        assert_eq!(plan.config.headers["X-Leak"], "$${HOME}");
    }

    #[test]
    fn what_cannot_run_is_said() {
        let d = detail(serde_json::json!({"name": "a/b", "version": "1",
            "packages": [{"registryType": "mcpb", "identifier": "https://x.example/b.mcpb"},
                         {"registryType": "npm", "identifier": "--require=evil"}],
            "remotes": [{"type": "sse", "url": "https://x.example/sse"}]}));
        let e = plan(&d, "b").unwrap_err();
        assert!(
            e.contains("cannot run mcpb") && e.contains("one word") && e.contains("sse"),
            "{e}"
        );
    }
}
