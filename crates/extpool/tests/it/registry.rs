//! `extpool search` and `extpool mcp add --from-registry` against a local
//! server answering as the MCP Registry's API v0.1 does (its OpenAPI
//! document's paths, recorded answers in its `ServerList` and
//! `ServerResponse` shapes): the public registry is not reachable here.

use std::sync::{Arc, Mutex};

use extpool_testkit::HttpServer;
use serde_json::Value;

use crate::support::{Sandbox, fixture};

/// A local registry and the request lines it was sent.
struct Registry {
    url: String,
    asked: Arc<Mutex<Vec<String>>>,
    /// Serves until the test ends (dropped with it).
    _runtime: tokio::runtime::Runtime,
}

impl Registry {
    /// Serves the recorded answers, `TESTKIT_BASE` in them replaced by `base`.
    fn start(base: &str) -> Registry {
        let read = |name: &str| -> Value {
            let text = std::fs::read_to_string(fixture(&format!("registry/{name}"))).unwrap();
            serde_json::from_str(&text.replace("TESTKIT_BASE", base)).unwrap()
        };
        let pages = Arc::new([read("search-weather-1.json"), read("search-weather-2.json")]);
        let asked = Arc::new(Mutex::new(Vec::new()));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let kept = asked.clone();
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let (pages, kept) = (pages.clone(), kept.clone());
            async move {
                kept.lock().unwrap().push(uri.to_string());
                answer(&pages[..], &uri)
            }
        });
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move { axum::serve(listener, app).await });
        Registry {
            url,
            asked,
            _runtime: runtime,
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

/// The registry's answer to `uri`.
fn answer(pages: &[Value], uri: &axum::http::Uri) -> axum::response::Response {
    use axum::response::IntoResponse;
    let json = |status: u16, v: Value| {
        (
            axum::http::StatusCode::from_u16(status).unwrap(),
            [("content-type", "application/json")],
            v.to_string(),
        )
            .into_response()
    };
    let path = uri.path();
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let param = |k: &str| query.iter().find(|(q, _)| q == k).map(|(_, v)| v.as_str());
    if path == "/v0.1/servers" {
        let page = match (param("search"), param("cursor")) {
            (_, Some(cursor)) if Some(cursor) == pages[0]["metadata"]["nextCursor"].as_str() => {
                pages[1].clone()
            }
            (Some(term), None) if "weather".contains(term) || term.contains("weather") => {
                pages[0].clone()
            }
            _ => serde_json::json!({"servers": [], "metadata": {"count": 0}}),
        };
        return json(200, page);
    }
    if let Some(rest) = path.strip_prefix("/v0.1/servers/")
        && let Some((name, version)) = rest.split_once("/versions/")
    {
        let name = name.replace("%2F", "/").replace("%2f", "/");
        let found = pages
            .iter()
            .flat_map(|p| p["servers"].as_array().unwrap().iter())
            .find(|s| {
                s["server"]["name"] == name.as_str()
                    && (version == "latest" || s["server"]["version"] == version)
            });
        return match found {
            Some(s) => json(200, s.clone()),
            None => json(404, serde_json::json!({"error": "Server not found"})),
        };
    }
    json(404, serde_json::json!({"error": "Not found"}))
}

#[test]
fn search_lists_the_registrys_servers_and_what_each_runs_page_by_page() {
    let sb = Sandbox::new();
    let registry = Registry::start("https://weather.example");
    let found = sb.run(&["search", "weather", "--registry", &registry.url]);
    assert_eq!(found.code, 0, "{}", found.stderr);
    let out = &found.stdout;
    assert!(out.contains("io.github.example/weather "), "{out}");
    assert!(
        out.contains("runs: npx -y @example/weather-mcp@1.4.0 --units metric"),
        "{out}"
    );
    assert!(out.contains("[deprecated] The old weather server"), "{out}");
    assert!(out.contains("(nothing extpool can run)"), "{out}");
    assert!(
        out.contains(
            "next page: `extpool search weather --cursor io.github.example/weather-legacy:0.9.1`"
        ),
        "{out}"
    );
    // The next page, from the registry EXTPOOL_REGISTRY_URL names.
    let next = sb.run_with(
        &[
            "--json",
            "search",
            "weather",
            "--cursor",
            "io.github.example/weather-legacy:0.9.1",
        ],
        &[("EXTPOOL_REGISTRY_URL", &registry.url)],
    );
    assert_eq!(next.code, 0, "{}", next.stderr);
    let page: Value = serde_json::from_str(&next.stdout).unwrap();
    assert_eq!(
        page["servers"][0]["name"],
        "io.github.example/weather-remote"
    );
    assert_eq!(
        page["servers"][0]["runs"][0],
        "connects to: https://weather.example/mcp"
    );
    assert_eq!(page["next_cursor"], Value::Null);
    let asked = registry.asked();
    assert!(
        asked[0].starts_with("/v0.1/servers?search=weather&version=latest&limit=20"),
        "{asked:?}"
    );
    assert!(
        asked[1].contains("cursor=io.github.example%2Fweather-legacy%3A0.9.1"),
        "{asked:?}"
    );
    let none = sb.run(&["search", "nothing-like-it", "--registry", &registry.url]);
    assert_eq!(none.code, 0, "{}", none.stderr);
    assert!(none.stdout.contains("no server of"), "{}", none.stdout);
}

#[test]
fn a_registry_server_is_shown_before_it_is_added_and_not_added_unasked() {
    let sb = Sandbox::new();
    let registry = Registry::start("https://weather.example");
    let add = |extra: &[&str]| {
        let mut args = vec![
            "mcp",
            "add",
            "weather",
            "--from-registry",
            "io.github.example/weather",
            "--registry",
            &registry.url,
        ];
        args.extend_from_slice(extra);
        sb.run(&args)
    };
    // No terminal, no --yes: shown, refused, nothing written.
    let refused = add(&[]);
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
    let err = &refused.stderr;
    assert!(
        err.contains("runs: npx -y @example/weather-mcp@1.4.0 --units metric"),
        "{err}"
    );
    assert!(
        err.contains("needs:  OPENWEATHER_API_KEY (Your OpenWeatherMap API key)"),
        "{err}"
    );
    assert!(
        err.contains("source: https://github.com/example/weather-mcp"),
        "{err}"
    );
    assert!(err.contains("pass --yes"), "{err}");
    assert!(!sb.work().join("extpool.yaml").exists());
    let added = add(&["--yes", "--scope", "project"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert!(
        added.stderr.contains("export OPENWEATHER_API_KEY"),
        "{}",
        added.stderr
    );
    let shown = sb.run(&["--json", "config", "show"]);
    let config: Value = serde_json::from_str(&shown.stdout).unwrap();
    let entry = &config["config"]["mcp_servers"]["weather"];
    assert_eq!(entry["command"], "npx", "{config:#}");
    assert_eq!(
        entry["args"],
        serde_json::json!(["-y", "@example/weather-mcp@1.4.0", "--units", "metric"])
    );
    assert_eq!(
        entry["env"]["OPENWEATHER_API_KEY"],
        "${OPENWEATHER_API_KEY}"
    );
    assert!(
        registry
            .asked()
            .iter()
            .any(|a| a == "/v0.1/servers/io.github.example%2Fweather/versions/latest"),
        "{:?}",
        registry.asked()
    );
    // One the registry does not list, and one extpool cannot run.
    let unknown = sb.run(&[
        "mcp",
        "add",
        "x",
        "--from-registry",
        "io.github.example/nope",
        "--registry",
        &registry.url,
        "--yes",
    ]);
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);
    assert!(
        unknown
            .stderr
            .contains("lists no server named io.github.example/nope"),
        "{}",
        unknown.stderr
    );
    let legacy = sb.run(&[
        "mcp",
        "add",
        "io.github.example/weather-legacy",
        "--from-registry",
        "--registry",
        &registry.url,
        "--yes",
    ]);
    assert_eq!(legacy.code, 1, "{}", legacy.stderr);
    assert!(
        legacy.stderr.contains("served over sse"),
        "{}",
        legacy.stderr
    );
}

#[test]
fn a_remote_registry_server_added_with_yes_is_called() {
    let sb = Sandbox::new();
    let remote = HttpServer::start();
    let base = remote.url().trim_end_matches("/mcp").to_owned();
    let registry = Registry::start(&base);
    sb.write("extpool.yaml", "skills:\n  default_roots: false\n");
    let added = sb.run(&[
        "mcp",
        "add",
        "io.github.example/weather-remote",
        "--from-registry",
        "--registry",
        &registry.url,
        "--yes",
    ]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert!(
        added.stderr.contains(&format!("connects to: {base}/mcp")),
        "{}",
        added.stderr
    );
    assert!(added.stdout.contains("weather_remote"), "{}", added.stdout);
    let called = sb.run(&[
        "call",
        "mcp__weather_remote__echo",
        "message=from the registry",
    ]);
    assert_eq!(called.code, 0, "{}", called.stderr);
    assert!(
        called.stdout.contains("from the registry"),
        "{}",
        called.stdout
    );
}
