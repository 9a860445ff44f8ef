//! The MCP Registry's API, v0.1, as its OpenAPI document
//! (`docs/reference/api/openapi.yaml` of modelcontextprotocol/registry)
//! gives it: `GET /v0.1/servers?search=&limit=&cursor=&version=latest`
//! (a `ServerList`), `GET /v0.1/servers/{name}/versions/latest` (a
//! `ServerResponse`), and server.json's `packages` and `remotes`.
//!
//! Everything a registry sends is outside text: read leniently (unknown
//! fields ignored), bounded (the body's size, the list's length), and
//! escaped wherever it is shown.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use serde::Deserialize;

/// The official registry.
pub const DEFAULT_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// The largest answer read, in bytes.
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// The most servers a page may ask for (the registry's own maximum).
pub const MAX_LIMIT: u32 = 100;

/// `GET /v0.1/servers`'s answer.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerList {
    /// The servers (a version each).
    #[serde(default)]
    pub servers: Vec<ServerResponse>,
    /// Paging.
    #[serde(default)]
    pub metadata: Option<ListMetadata>,
}

/// A list's paging.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMetadata {
    /// The cursor of the next page (none or empty: the last page).
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// One server version with the registry's metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerResponse {
    /// server.json.
    pub server: ServerDetail,
    /// Registry-managed metadata.
    #[serde(rename = "_meta", default)]
    pub meta: Option<ResponseMeta>,
}

/// `_meta` of a [`ServerResponse`].
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResponseMeta {
    /// The official registry's part.
    #[serde(rename = "io.modelcontextprotocol.registry/official", default)]
    pub official: Option<Official>,
}

/// The official registry's metadata of a version.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Official {
    /// `active`, `deprecated` or `deleted`.
    #[serde(default)]
    pub status: Option<String>,
    /// Why, for a deprecated one.
    #[serde(default)]
    pub status_message: Option<String>,
}

impl ServerResponse {
    /// Its lifecycle status (`active` when not said).
    pub fn status(&self) -> &str {
        self.meta
            .as_ref()
            .and_then(|m| m.official.as_ref())
            .and_then(|o| o.status.as_deref())
            .unwrap_or("active")
    }
}

/// server.json: what a server is and how to run or reach it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerDetail {
    /// Reverse-DNS name, `namespace/name`.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its title.
    #[serde(default)]
    pub title: Option<String>,
    /// This version.
    #[serde(default)]
    pub version: String,
    /// Packages to run it locally.
    #[serde(default)]
    pub packages: Vec<Package>,
    /// Remote endpoints.
    #[serde(default)]
    pub remotes: Vec<Remote>,
    /// Its source.
    #[serde(default)]
    pub repository: Option<Repository>,
}

/// Where its source is.
#[derive(Debug, Clone, Deserialize)]
pub struct Repository {
    /// The repository's URL.
    #[serde(default)]
    pub url: String,
}

/// A package of a server.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// `npm`, `pypi`, `oci`, `nuget`, `mcpb`, …
    pub registry_type: String,
    /// The package's name (or URL).
    pub identifier: String,
    /// Its version.
    #[serde(default)]
    pub version: Option<String>,
    /// How it talks (`stdio` when absent).
    #[serde(default)]
    pub transport: Option<Transport>,
    /// Arguments of the runtime.
    #[serde(default)]
    pub runtime_arguments: Vec<Argument>,
    /// Arguments of the package's program.
    #[serde(default)]
    pub package_arguments: Vec<Argument>,
    /// Environment variables it reads.
    #[serde(default)]
    pub environment_variables: Vec<KeyValueInput>,
}

/// A package's transport.
#[derive(Debug, Clone, Deserialize)]
pub struct Transport {
    /// `stdio`, `streamable-http` or `sse`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// A remote endpoint.
#[derive(Debug, Clone, Deserialize)]
pub struct Remote {
    /// `streamable-http` or `sse`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its URL (a template: `{variable}`s).
    pub url: String,
    /// Headers to send.
    #[serde(default)]
    pub headers: Vec<KeyValueInput>,
    /// The URL's variables.
    #[serde(default)]
    pub variables: BTreeMap<String, Input>,
}

/// A value a user may have to give.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub is_required: bool,
    /// A set value (`{variable}`s filled from `variables`).
    #[serde(default)]
    pub value: Option<String>,
    /// A secret (a token, a password).
    #[serde(default)]
    pub is_secret: bool,
    /// The default.
    #[serde(default)]
    pub default: Option<String>,
    /// Variables of `value`.
    #[serde(default)]
    pub variables: BTreeMap<String, Input>,
}

/// A header or environment variable.
#[derive(Debug, Clone, Deserialize)]
pub struct KeyValueInput {
    /// Its name.
    pub name: String,
    /// Its value.
    #[serde(flatten)]
    pub input: Input,
}

/// A command-line argument.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Argument {
    /// `positional` or `named`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A named argument's flag (`--port`).
    #[serde(default)]
    pub name: Option<String>,
    /// A positional argument's label.
    #[serde(default)]
    pub value_hint: Option<String>,
    /// Its value.
    #[serde(flatten)]
    pub input: Input,
}

/// A registry at a base URL.
pub struct Registry {
    base: String,
    client: reqwest::Client,
}

impl Registry {
    /// The registry at `base`: `https://`, or plain `http://` only to this
    /// machine (what it sends is run).
    pub fn new(base: &str) -> Result<Self> {
        let url = url_of(base)?;
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(concat!("extpool/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            base: url.as_str().trim_end_matches('/').to_owned(),
            client,
        })
    }

    /// Its base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The latest versions of servers whose name contains `term`.
    pub async fn search(&self, term: &str, limit: u32, cursor: Option<&str>) -> Result<ServerList> {
        let limit = limit.clamp(1, MAX_LIMIT).to_string();
        let mut query = vec![("search", term), ("version", "latest"), ("limit", &limit)];
        if let Some(cursor) = cursor {
            query.push(("cursor", cursor));
        }
        let url = format!("{}/v0.1/servers", self.base);
        let with_query = url::Url::parse_with_params(&url, &query)?;
        let body = self.get(self.client.get(with_query), &url).await?;
        let mut list: ServerList = serde_json::from_slice(&body)
            .map_err(|e| anyhow!("{url}: the registry's answer is not a server list: {e}"))?;
        list.servers.truncate(MAX_LIMIT as usize);
        Ok(list)
    }

    /// The latest version of server `name` (`None`: the registry has none).
    pub async fn latest(&self, name: &str) -> Result<Option<ServerResponse>> {
        let url = format!(
            "{}/v0.1/servers/{}/versions/latest",
            self.base,
            encode(name)
        );
        let request = self.client.get(&url);
        match self.get(request, &url).await {
            Ok(body) => Ok(Some(serde_json::from_slice(&body).map_err(|e| {
                anyhow!("{url}: the registry's answer is not a server: {e}")
            })?)),
            Err(e) if e.downcast_ref::<NotFound>().is_some() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A GET's body, bounded; an error status with the registry's words.
    async fn get(&self, request: reqwest::RequestBuilder, url: &str) -> Result<Vec<u8>> {
        let mut response = request
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(|e| anyhow!("cannot reach the registry at {}: {e}", self.base))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                bail!("{url}: the registry's answer is larger than {MAX_BODY_BYTES} bytes");
            }
            body.extend_from_slice(&chunk);
        }
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(NotFound.into());
        }
        if !status.is_success() {
            bail!("{url}: the registry answered {status}{}", said(&body));
        }
        Ok(body)
    }
}

/// A 404 of the registry.
#[derive(Debug)]
struct NotFound;

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not found")
    }
}

impl std::error::Error for NotFound {}

/// The words of an error body: huma's problem (`detail`, `title`) or the
/// OpenAPI document's `{"error": …}`; cut to a line.
fn said(body: &[u8]) -> String {
    let value: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let words = ["detail", "error", "title"]
        .iter()
        .find_map(|k| value.get(k).and_then(|v| v.as_str()))
        .map(|s| s.chars().take(300).collect::<String>());
    words.map(|w| format!(": {w}")).unwrap_or_default()
}

/// A server name or version in a path, percent-encoded (`/` too).
fn encode(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A registry's base URL, checked.
fn url_of(base: &str) -> Result<url::Url> {
    let url = url::Url::parse(base).map_err(|e| anyhow!("registry URL {base:?}: {e}"))?;
    let local = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if local => Ok(url),
        "http" => bail!(
            "registry URL {base}: plain http:// is accepted only to this machine; what a registry answers is run, so use https://"
        ),
        other => bail!("registry URL {base}: {other}: is not http(s)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_whole_and_plain_http_stays_local() {
        assert_eq!(encode("io.github.user/weather"), "io.github.user%2Fweather");
        assert!(url_of("https://registry.example").is_ok());
        assert!(url_of("http://127.0.0.1:9").is_ok());
        assert!(url_of("http://registry.example").is_err());
        assert!(url_of("file:///etc").is_err());
    }
}
