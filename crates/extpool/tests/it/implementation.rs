//! What a server says it is (its `serverInfo`: name, version, title,
//! icons, website) kept from its connection and shown where its status is:
//! `extpool list sources` (name, version and title in the table, the whole
//! in `--json`), `GET /v1/sources` of `extpool serve`, and its
//! `ListMcpSources` for the model (without the icons).

use serde_json::{Value, json};

use crate::discovery::sources_until;
use crate::serve::{Served, sigterm};
use crate::support::Sandbox;

/// The implementation the testkit reports (`--server-info`): every field,
/// icons of both kinds of `src`.
fn implementation() -> Value {
    json!({
        "name": "kit-server",
        "title": "Kit Title",
        "version": "9.9.9",
        "description": "A test server that says who it is",
        "icons": [
            {"src": "data:image/png;base64,iVBORw0KGgo=", "mimeType": "image/png", "sizes": ["48x48"]},
            {"src": "https://kit.example/icon.svg", "mimeType": "image/svg+xml", "sizes": ["any"], "theme": "dark"},
        ],
        "websiteUrl": "https://kit.example",
    })
}

/// A sandbox whose one server, `testkit`, reports [`implementation`].
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    let file = sb.write("server-info.json", &implementation().to_string());
    sb.testkit_config(&format!(
        "    args: [\"--server-info\", {:?}]\nskills:\n  default_roots: false\n",
        file.display().to_string()
    ));
    sb
}

/// The `server` row named `name` of a sources listing.
fn server_row<'a>(sources: &'a Value, name: &str) -> &'a Value {
    sources
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "server" && s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {sources:#}"))
}

#[test]
fn list_sources_shows_what_a_server_said_it_is() {
    let sb = sandbox();
    let r = sb.run(&["list", "sources"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let header = r.stdout.lines().next().unwrap();
    assert!(header.contains("IMPLEMENTATION"), "{}", r.stdout);
    let row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("server") && l.contains("testkit"))
        .unwrap_or_else(|| panic!("no testkit row: {}", r.stdout));
    assert!(row.contains("Kit Title (kit-server 9.9.9)"), "{}", r.stdout);

    let r = sb.run(&["list", "sources", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sources: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        server_row(&sources, "testkit")["implementation"],
        implementation(),
        "{sources:#}"
    );
    // Only servers say what they are.
    let others = sources
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] != "server");
    for other in others {
        assert!(other.get("implementation").is_none(), "{other:#}");
    }
}

#[test]
fn a_server_without_a_title_is_shown_by_name_and_version() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let r = sb.run(&["list", "sources", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sources: Value = serde_json::from_str(&r.stdout).unwrap();
    let said = &server_row(&sources, "testkit")["implementation"];
    assert_eq!(said["name"], "extpool-testkit-server", "{sources:#}");
    let version = said["version"].as_str().unwrap();
    let r = sb.run(&["list", "sources"]);
    assert!(
        r.stdout
            .contains(&format!("extpool-testkit-server {version}")),
        "{}",
        r.stdout
    );
}

#[test]
fn v1_sources_of_extpool_serve_shows_what_a_server_said_it_is() {
    let sb = sandbox();
    let mut command = sb.command();
    command.args(["serve", "--listen", "127.0.0.1:0"]);
    let mut served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let answer = sources_until(&base, "the testkit row says what it is", |v| {
        server_row(&v["sources"], "testkit")
            .get("implementation")
            .is_some()
    });
    assert_eq!(
        server_row(&answer["sources"], "testkit")["implementation"],
        implementation(),
        "{answer:#}"
    );
    // The model reads the same through ListMcpSources, less the icons
    // (data URIs of any size are for screens, not for its context).
    let out = crate::serve::python(
        &["--url", &served.url],
        json!([{"op": "call", "name": "ListMcpSources", "args": {}}]),
    );
    let text = out[1]["text"][0]
        .as_str()
        .unwrap_or_else(|| panic!("{out:?}"));
    let listed: Value = serde_json::from_str(text).unwrap();
    let mut expected = implementation();
    expected.as_object_mut().unwrap().remove("icons");
    assert_eq!(
        server_row(&listed["sources"], "testkit")["implementation"],
        expected,
        "{listed:#}"
    );
    assert_eq!(sigterm(&mut served), 143);
}
