//! ToolHive: the MCP servers ToolHive runs, from its workloads API.
//!
//! ToolHive (`thv serve`, by default on `http://127.0.0.1:8080`) runs MCP
//! servers in containers behind local proxies and lists them at
//! `GET /api/v1beta/workloads[?group=G]` (its OpenAPI document,
//! `docs/server/swagger.yaml`): `200` with `{"workloads": [core.Workload…]}`
//! — `workloads` is `null` when there are none — where a workload has
//! `name`, `package`, `url`, `port`, `transport_type`, `proxy_mode`,
//! `status`, `status_context`, `created_at`, `labels`, `group`, `tools`,
//! `remote` and `started_at`. Without `all=true` only running workloads
//! are listed. Errors are plain text (`http.Error`): `404` `group not
//! found: G` for an unknown group, `400` for an invalid group name, `500`
//! `Internal Server Error` when its runtime fails.
//!
//! A workload becomes a server named after it (made a valid server name:
//! `sequential-thinking` → `sequential_thinking`, so the name is the same
//! at every poll), reached at its `url` over streamable HTTP. A partial
//! answer — workloads not running, without a URL yet, served over SSE (a
//! transport extpool does not speak), with a name that clashes — keeps the
//! usable ones and notes each one left out.

use std::time::Duration;

use async_trait::async_trait;
use extpool_mcp::McpServerConfig;
use serde::Deserialize;

use super::{Discovered, DiscoveredServer, DiscoveryError, DiscoverySource, TOOLHIVE_SOURCE};

/// Where ToolHive's API is when nothing says otherwise (`thv serve`).
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";
/// The environment variable ToolHive's own clients read for its API.
pub const URL_VAR: &str = "TOOLHIVE_API_URL";
/// The path of the workloads list.
pub const WORKLOADS_PATH: &str = "/api/v1beta/workloads";
/// The largest answer read (ToolHive's own clients read at most 1 MiB).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Workloads considered at most; the rest are noted and left out.
pub const MAX_WORKLOADS: usize = 512;
/// The most of an error body kept in the message.
const MAX_ERROR_TEXT: usize = 300;

/// ToolHive's URL: `url` when given, else `TOOLHIVE_API_URL`, else the default.
pub fn default_url(url: Option<&str>) -> String {
    url.map(str::to_owned)
        .or_else(|| std::env::var(URL_VAR).ok().filter(|u| !u.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_URL.to_owned())
}

/// The answer of `GET /api/v1beta/workloads` (`workloadListResponse`).
#[derive(Debug, Deserialize)]
struct WorkloadList {
    workloads: Option<Vec<Workload>>,
}

/// The fields of `core.Workload` discovery reads; the others are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Workload {
    name: String,
    url: String,
    transport_type: String,
    proxy_mode: String,
    status: String,
    status_context: String,
    group: String,
}

/// The ToolHive source: one GET per consultation.
#[derive(Debug)]
pub struct ToolHiveSource {
    base: String,
    group: Option<String>,
    http: reqwest::Client,
    timeout: Duration,
}

impl ToolHiveSource {
    /// A source for ToolHive at `base` (`http://127.0.0.1:8080`), only
    /// `group`'s workloads when set; `http` is the host's HTTP client.
    pub fn new(
        base: &str,
        group: Option<String>,
        http: reqwest::Client,
        timeout: Duration,
    ) -> Result<Self, String> {
        extpool_core::check_http_url(base).map_err(|e| format!("{base:?}: {e}"))?;
        reqwest::Url::parse(base).map_err(|e| format!("{base:?}: {e}"))?;
        if let Some(g) = &group
            && (g.is_empty() || g.chars().any(char::is_control))
        {
            return Err(format!("invalid ToolHive group {g:?}"));
        }
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            group,
            http,
            timeout,
        })
    }

    fn url(&self) -> String {
        format!("{}{WORKLOADS_PATH}", self.base)
    }

    async fn fetch(&self) -> Result<Vec<u8>, DiscoveryError> {
        let endpoint = self.url();
        let unreachable = |e: reqwest::Error| DiscoveryError::Unreachable {
            endpoint: endpoint.clone(),
            reason: extpool_core::Causes(&e).to_string(),
        };
        let mut url = reqwest::Url::parse(&endpoint).map_err(|e| DiscoveryError::Unreachable {
            endpoint: endpoint.clone(),
            reason: e.to_string(),
        })?;
        if let Some(group) = &self.group {
            url.query_pairs_mut().append_pair("group", group);
        }
        let request = self.http.get(url).header("accept", "application/json");
        let mut response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let limit = if status.is_success() {
            MAX_BODY_BYTES
        } else {
            MAX_ERROR_TEXT * 4
        };
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if body.len() + chunk.len() > limit {
                if status.is_success() {
                    return Err(DiscoveryError::Malformed {
                        endpoint,
                        reason: format!("the answer is larger than {MAX_BODY_BYTES} bytes"),
                    });
                }
                body.extend_from_slice(&chunk[..limit - body.len()]);
                break;
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(DiscoveryError::Status {
                endpoint,
                status: status.as_u16(),
                body: error_text(&body),
            });
        }
        Ok(body)
    }
}

/// An error body as one short line of text.
fn error_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if line.chars().count() > MAX_ERROR_TEXT {
        let cut: String = line.chars().take(MAX_ERROR_TEXT).collect();
        format!("{cut}…")
    } else if line.is_empty() {
        "(no message)".into()
    } else {
        line
    }
}

#[async_trait]
impl DiscoverySource for ToolHiveSource {
    fn id(&self) -> &str {
        TOOLHIVE_SOURCE
    }

    fn endpoint(&self) -> String {
        match &self.group {
            Some(g) => format!("{} (group {g})", self.url()),
            None => self.url(),
        }
    }

    fn polled(&self) -> bool {
        true
    }

    async fn consult(&self) -> Result<Discovered, DiscoveryError> {
        let body = tokio::time::timeout(self.timeout, self.fetch())
            .await
            .map_err(|_| DiscoveryError::Timeout {
                endpoint: self.url(),
                timeout_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            })??;
        parse(&body, self.group.as_deref()).map_err(|reason| DiscoveryError::Malformed {
            endpoint: self.url(),
            reason,
        })
    }
}

/// The servers of a workloads answer; an error when the answer is not one.
fn parse(body: &[u8], group: Option<&str>) -> Result<Discovered, String> {
    let list: WorkloadList = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let workloads = list.workloads.unwrap_or_default();
    let mut out = Discovered::default();
    if workloads.len() > MAX_WORKLOADS {
        out.notes.push(format!(
            "{} workloads listed; only the first {MAX_WORKLOADS} are used",
            workloads.len()
        ));
    }
    let mut names = extpool_core::ServerNames::new();
    for w in workloads.into_iter().take(MAX_WORKLOADS) {
        match server_of(&w, group) {
            Ok(server) => {
                if names.claim(&server.name, ()).is_ok() {
                    out.servers.push(server);
                } else {
                    out.notes.push(format!(
                        "workload {:?} left out: another workload already has the server name {:?}",
                        w.name, server.name
                    ));
                }
            }
            Err(why) => out
                .notes
                .push(format!("workload {:?} left out: {why}", w.name)),
        }
    }
    out.servers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The server of one workload, or why it cannot be used.
fn server_of(w: &Workload, group: Option<&str>) -> Result<DiscoveredServer, String> {
    if let Some(g) = group
        && w.group != g
    {
        return Err(format!("it is in group {:?}, not {g:?}", w.group));
    }
    if w.status != "running" {
        return Err(if w.status_context.is_empty() {
            format!("it is {}", w.status)
        } else {
            format!("it is {} ({})", w.status, w.status_context)
        });
    }
    if w.url.is_empty() {
        return Err("it has no URL yet".into());
    }
    let sse = w.proxy_mode == "sse" || (w.proxy_mode.is_empty() && w.transport_type == "sse");
    if sse {
        return Err(
            "it is served over SSE; extpool connects over streamable HTTP (run it with --proxy-mode streamable-http)"
                .into(),
        );
    }
    extpool_core::check_http_url(&w.url).map_err(|e| format!("its URL {:?}: {e}", w.url))?;
    reqwest::Url::parse(&w.url).map_err(|e| format!("its URL {:?}: {e}", w.url))?;
    let name = extpool_core::sanitize_server_name(&w.name);
    let config = McpServerConfig::http(w.url.clone());
    let origin = if w.group.is_empty() {
        format!("toolhive workload {}", w.name)
    } else {
        format!("toolhive workload {} (group {})", w.name, w.group)
    };
    Ok(DiscoveredServer {
        name,
        written: config.clone(),
        resolved: Ok(config),
        origin,
        plugin: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(name: &str, status: &str, url: &str, proxy: &str) -> serde_json::Value {
        serde_json::json!({
            "name": name, "package": "ghcr.io/example/server:latest", "url": url,
            "port": 40123, "transport_type": "stdio", "proxy_mode": proxy,
            "status": status, "created_at": "2025-06-01T10:00:00Z",
            "labels": {"team": "a"}, "group": "default", "remote": false,
            "started_at": "2025-06-01T10:00:05Z"
        })
    }

    #[test]
    fn running_streamable_workloads_become_servers_and_the_rest_are_noted() {
        let body = serde_json::json!({"workloads": [
            workload("sequential-thinking", "running", "http://127.0.0.1:40123/mcp", "streamable-http"),
            workload("fetch", "running", "http://127.0.0.1:40124/sse#fetch", "sse"),
            workload("starting-one", "starting", "", "streamable-http"),
            workload("Sequential.Thinking", "running", "http://127.0.0.1:40125/mcp", "streamable-http"),
        ]});
        let d = parse(body.to_string().as_bytes(), None).unwrap();
        assert_eq!(d.servers.len(), 1);
        assert_eq!(d.servers[0].name, "sequential_thinking");
        assert_eq!(
            d.servers[0].written.url.as_deref(),
            Some("http://127.0.0.1:40123/mcp")
        );
        assert_eq!(
            d.servers[0].origin,
            "toolhive workload sequential-thinking (group default)"
        );
        assert_eq!(d.notes.len(), 3, "{:?}", d.notes);
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("\"fetch\"") && n.contains("SSE"))
        );
        assert!(d.notes.iter().any(|n| n.contains("starting")));
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("already has the server name"))
        );
    }

    #[test]
    fn null_workloads_is_an_empty_list_and_garbage_is_an_error() {
        let d = parse(br#"{"workloads":null}"#, None).unwrap();
        assert!(d.servers.is_empty() && d.notes.is_empty());
        assert!(parse(b"<html>oops</html>", None).is_err());
        assert!(parse(br#"{"workloads": 5}"#, None).is_err());
    }

    #[test]
    fn a_workload_of_another_group_is_left_out() {
        let body = serde_json::json!({"workloads": [
            workload("a", "running", "http://127.0.0.1:1/mcp", "streamable-http"),
        ]});
        let d = parse(body.to_string().as_bytes(), Some("dev")).unwrap();
        assert!(d.servers.is_empty());
        assert!(d.notes[0].contains("not \"dev\""), "{:?}", d.notes);
    }

    #[test]
    fn error_bodies_become_one_short_line() {
        assert_eq!(
            error_text(b"group not found: dev\n"),
            "group not found: dev"
        );
        assert_eq!(error_text(b""), "(no message)");
        assert!(error_text(&[b'x'; 2000]).ends_with('…'));
    }
}
