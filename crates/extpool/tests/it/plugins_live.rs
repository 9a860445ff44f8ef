//! Plugins installed, disabled and removed while `extpool serve` runs,
//! seen by the Python MCP SDK client without a restart: one Claude Code
//! installs (its records laid out as `claude plugin install` writes them)
//! and one extpool installs itself; their tools callable, their commands
//! prompts, their skills readable, their page rows shown; gone when
//! disabled.

use std::time::Duration;

use extpool_testkit::StateDir;
use extpool_testkit::plugins::{claude_enable, claude_install, claude_plugin, kit_grants};
use serde_json::{Value, json};

use crate::discovery::sources_until;
use crate::serve::{Served, python, sigterm};
use crate::support::Sandbox;

/// Whether the configuration source serves `server` now.
fn serving(sources: &Value, server: &str) -> bool {
    sources["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["source"] == "config")
        .any(|d| d["servers"].as_array().unwrap().iter().any(|s| s == server))
}

fn tools(url: &str) -> Vec<String> {
    let out = python(&["--url", url], json!([{"op": "list_tools"}]));
    serde_json::from_value(out[1]["tools"].clone()).unwrap()
}

fn prompts(url: &str) -> Vec<String> {
    let out = python(&["--url", url], json!([{"op": "list_prompts"}]));
    serde_json::from_value(out[1]["prompts"].clone()).unwrap()
}

/// The page's first snapshot (its event stream's first `snapshot` event).
fn page_snapshot(base: &str) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut response = reqwest::get(format!("{base}/v1/page/events"))
            .await
            .unwrap();
        let mut text = String::new();
        let read = async {
            while let Some(chunk) = response.chunk().await.unwrap() {
                text.push_str(&String::from_utf8_lossy(&chunk));
                if let Some(at) = text.find("event: snapshot\ndata: ") {
                    let rest = &text[at + "event: snapshot\ndata: ".len()..];
                    if let Some(end) = rest.find('\n') {
                        return serde_json::from_str::<Value>(&rest[..end]).unwrap();
                    }
                }
            }
            panic!("the page's stream ended before a snapshot: {text}");
        };
        tokio::time::timeout(Duration::from_secs(60), read)
            .await
            .expect("a snapshot")
    })
}

#[test]
fn a_plugin_installed_while_serving_is_callable_without_a_restart_and_gone_when_disabled() {
    let sb = Sandbox::new();
    let state = StateDir::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers: {{}}\ndiscovery:\n  interval_ms: 100\nskills:\n  default_roots: false\n{}",
            kit_grants(&["demo", "kit"], &[state.path()])
        ),
    );
    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0", "--toolhive=false"]);
    let mut served = Served::spawn(command);
    let url = served.url.clone();
    let base = url.trim_end_matches("/mcp").to_owned();
    assert!(!tools(&url).iter().any(|t| t.starts_with("mcp__plugin_")));

    // `claude plugin install demo@mk`, as Claude Code records it.
    claude_install(&sb.home(), "mk", "demo", true, &state.args());
    sources_until(&base, "the installed plugin's server", |s| {
        serving(s, "plugin_demo_kit")
    });
    let steps = json!([
        {"op": "call", "name": "mcp__plugin_demo_kit__echo", "args": {"message": "plugged in"}},
        {"op": "get_prompt", "name": "demo:hi", "args": {"arguments": "Ada"}},
        {"op": "read", "uri": "skill://demo/hello/SKILL.md"}
    ]);
    let out = python(&["--url", &url], steps);
    assert_eq!(out[1]["text"], json!(["plugged in"]), "{out:?}");
    let prompt = out[2]["text"][0].as_str().unwrap();
    assert!(prompt.contains("Say hi to Ada."), "{prompt}");
    assert!(
        prompt.contains("extpool ran and included nothing"),
        "{prompt}"
    );
    assert!(
        out[3]["text"][0]
            .as_str()
            .unwrap()
            .contains("Greet $ARGUMENTS warmly."),
        "{out:?}"
    );
    let listed = prompts(&url);
    assert!(
        listed.contains(&"demo:hi".to_owned()) && listed.contains(&"demo:hello".to_owned()),
        "{listed:?}"
    );
    let page = page_snapshot(&base);
    let row = page["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "demo")
        .unwrap_or_else(|| panic!("{page:#}"));
    assert_eq!(row["enabled"], true);
    assert_eq!(row["hooks"], 1);

    // `claude plugin disable demo@mk`.
    claude_enable(&sb.home(), "demo@mk", false);
    sources_until(&base, "the disabled plugin's server gone", |s| {
        !serving(s, "plugin_demo_kit")
    });
    assert!(
        !tools(&url)
            .iter()
            .any(|t| t.starts_with("mcp__plugin_demo_kit__"))
    );
    assert!(!prompts(&url).iter().any(|p| p.starts_with("demo:")));

    // extpool's own manager, while the gateway runs.
    claude_plugin(&sb.work().join("kit-src"), "kit", &state.args());
    let added = sb.run(&["plugins", "add", "kit-src", "--yes"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    sources_until(&base, "extpool's plugin served", |s| {
        serving(s, "plugin_kit_kit")
    });
    let out = python(
        &["--url", &url],
        json!([{"op": "call", "name": "mcp__plugin_kit_kit__echo", "args": {"message": "mine"}}]),
    );
    assert_eq!(out[1]["text"], json!(["mine"]), "{out:?}");
    assert_eq!(sb.run(&["plugins", "disable", "kit"]).code, 0);
    sources_until(&base, "extpool's disabled plugin gone", |s| {
        !serving(s, "plugin_kit_kit")
    });
    assert!(
        !tools(&url)
            .iter()
            .any(|t| t.starts_with("mcp__plugin_kit_kit__"))
    );
    assert_eq!(sigterm(&mut served), 143);
}
