//! A plugin installed with `extpool plugins add` runs confined by the
//! permission profile `plugins add` showed, through the real CLI: the
//! plugin's server is the testkit server with its probing tools, kept in
//! the plugin's own folder (so the default profile, which reads that
//! folder, is all it needs: no `plugins.sandbox` entry widens it). It
//! tries to read a key of the fixture HOME, to write outside its data
//! folder and to connect to a loopback port — each refused, as that
//! server's error — while reading its own folder and the project and
//! writing its data folder succeed. The same probes succeed once the user
//! turns confinement off, so each denial is the profile's doing.
//!
//! Listeners are waited on with a deadline, never a sleep.

use std::path::{Path, PathBuf};

use extpool_testkit::plugins::claude_plugin;
use serde_json::{Value, json};

use crate::sandbox::{PATIENCE, allowed, arg, listener, refused, rustix_like_is_root};
use crate::support::{Sandbox, testkit};

/// The extpool name of the probe plugin's server.
const SERVER: &str = "plugin_probe_kit";
/// What the fixture key holds.
const KEY: &str = "PRIVATE KEY MATERIAL";

/// Writes Claude Code plugin `probe` into `dir`: MCP server `kit`, a copy
/// of the testkit server at `bin/server` run with its probing tools.
fn probe_plugin(dir: &Path) {
    std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        json!({"name": "probe", "version": "1.0.0"}).to_string(),
    )
    .unwrap();
    let server = dir.join("bin/server");
    if std::fs::hard_link(testkit(), &server).is_err() {
        std::fs::copy(testkit(), &server).unwrap();
    }
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"kit": {
            "command": "${CLAUDE_PLUGIN_ROOT}/bin/server",
            "args": ["--transport", "stdio", "--probe"]}}})
        .to_string(),
    )
    .unwrap();
}

/// Writes the user's `extpool.yaml` (`~/.config/extpool/extpool.yaml`).
fn user_config(sb: &Sandbox, yaml: &str) {
    let path = sb.home().join(".config/extpool/extpool.yaml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, yaml).unwrap();
}

/// A sandbox whose HOME holds an SSH key and whose project a note, with
/// the user's `config`, and plugin `probe` added by `plugins add --yes`:
/// what it showed (its stderr) and its JSON answer.
fn added(config: &str) -> (Sandbox, String, Value) {
    let sb = Sandbox::new();
    let ssh = sb.home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), KEY).unwrap();
    sb.write("notes.txt", "project notes");
    user_config(&sb, config);
    let source = sb.dir.path().join("probe-src");
    probe_plugin(&source);
    let source = source.display().to_string();
    let r = sb.run(&["plugins", "add", &source, "--yes", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let answer: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(answer["outcome"], "installed", "{answer}");
    (sb, r.stderr, answer)
}

/// The folder plugin `probe` is served from.
fn installed(sb: &Sandbox) -> PathBuf {
    let store = sb.home().join(".local/share/extpool/plugins");
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("lock.json")).unwrap()).unwrap();
    store.join(lock["plugins"][0]["path"].as_str().unwrap())
}

/// Plugin `probe`'s data folder (its `CLAUDE_PLUGIN_DATA`).
fn data_dir(sb: &Sandbox) -> PathBuf {
    sb.home()
        .join(".local/share/extpool/plugin-data/claude-code/probe")
}

/// Calls `tool` of the probe plugin's server with `args`; the tool's text
/// and whether it succeeded.
fn call(sb: &Sandbox, tool: &str, args: &[String]) -> (bool, String) {
    let name = format!("mcp__{SERVER}__{tool}");
    let mut argv: Vec<&str> = vec!["call", &name];
    argv.extend(args.iter().map(String::as_str));
    let r = sb.run(&argv);
    if r.code == 0 {
        (true, r.stdout)
    } else {
        (false, r.stderr)
    }
}

/// The row named `name` of `extpool list <what> --json`.
fn row(sb: &Sandbox, what: &str, name: &str) -> Value {
    let r = sb.run(&["list", what, "--json"]);
    let rows: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("list {what}: {e}: {} {}", r.stdout, r.stderr));
    rows.as_array()
        .and_then(|rows| rows.iter().find(|s| s["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} in list {what}: {rows}"))
}

fn path_arg(path: &Path) -> String {
    arg("path", path.display())
}

#[test]
fn a_plugin_added_runs_confined_by_exactly_the_profile_plugins_add_showed() {
    let (sb, shown, answer) = added("skills:\n  default_roots: false\n");
    let (root, data, work) = (installed(&sb), data_dir(&sb), sb.work());
    for line in [
        "MCP server kit (plugin_probe_kit): runs `<plugin>/bin/server --transport stdio --probe` confined",
        "    sandbox: network none; read 2 paths; write 1 path",
        &format!("      read: <plugin>, {} (the project)", work.display()),
        "      write: ~/.local/share/extpool/plugin-data/claude-code/probe",
        "      network: none; environment: PATH, a private HOME and TMPDIR",
        "plugins.sandbox.probe: false",
    ] {
        assert!(shown.contains(line), "{line}\n{shown}");
    }
    assert!(!shown.contains("cannot enforce"), "{shown}");
    // The profile shown is the default, of the folder it was installed to.
    let profile = answer["sandbox"][SERVER].clone();
    assert_eq!(
        profile,
        json!({"network": "none",
            "read": [root.display().to_string(), work.display().to_string()],
            "write": [data.display().to_string()]}),
        "{answer}"
    );
    // And it is the one its server is started with.
    assert_eq!(row(&sb, "servers", SERVER)["sandbox"], profile);
    let source = row(&sb, "sources", SERVER);
    assert_eq!(source["sandbox"], profile, "{source}");
    assert_eq!(source["state"], "ready", "{source}");

    // What the profile allows: its own folder, the project, its data folder.
    let own = allowed(
        call(&sb, "read_file", &[path_arg(&root.join(".mcp.json"))]),
        "reading its own folder",
    );
    assert!(own.contains("--probe"), "{own}");
    let notes = allowed(
        call(&sb, "read_file", &[path_arg(&work.join("notes.txt"))]),
        "reading the project",
    );
    assert!(notes.contains("project notes"), "{notes}");
    allowed(
        call(
            &sb,
            "write_file",
            &[path_arg(&data.join("state.txt")), arg("text", "kept")],
        ),
        "writing its data folder",
    );
    assert_eq!(
        std::fs::read_to_string(data.join("state.txt")).unwrap(),
        "kept"
    );

    // What it does not: each refused by the kernel, as the server's error.
    refused(
        call(
            &sb,
            "read_file",
            &[path_arg(&sb.home().join(".ssh/id_ed25519"))],
        ),
        "reading ~/.ssh/id_ed25519",
        "Permission denied",
    );
    for outside in [work.join("outside.txt"), root.join("bin/planted")] {
        refused(
            call(&sb, "write_file", &[path_arg(&outside), arg("text", "x")]),
            "writing outside its data folder",
            "Permission denied",
        );
        assert!(!outside.exists(), "{} was not written", outside.display());
    }
    let (port, _accepts) = listener("127.0.0.1:0");
    refused(
        call(
            &sb,
            "connect",
            &[arg("address", format!("127.0.0.1:{port}"))],
        ),
        "connecting to a loopback port",
        "Network is unreachable",
    );
}

#[test]
fn a_plugins_profile_is_widened_or_turned_off_by_the_user_and_plugins_add_says_so() {
    let (sb, _, _) = added("skills:\n  default_roots: false\n");
    let key = path_arg(&sb.home().join(".ssh/id_ed25519"));
    let outside = sb.work().join("outside.txt");
    let (port, accepts) = listener("127.0.0.1:0");
    let target = arg("address", format!("127.0.0.1:{port}"));

    // Widened by a network target: that target is reached, the rest stays.
    user_config(
        &sb,
        &format!("plugins:\n  sandbox:\n    probe: {{network: [\"127.0.0.1:{port}\"]}}\n"),
    );
    let profile = row(&sb, "servers", SERVER)["sandbox"].clone();
    assert_eq!(profile["network"], json!([format!("127.0.0.1:{port}")]));
    assert_eq!(profile["read"].as_array().unwrap().len(), 2, "{profile}");
    let connected = allowed(
        call(&sb, "connect", std::slice::from_ref(&target)),
        "the granted target",
    );
    assert!(connected.contains("connected"), "{connected}");
    accepts
        .recv_timeout(PATIENCE)
        .expect("the granted target received the connection");
    refused(
        call(&sb, "read_file", std::slice::from_ref(&key)),
        "reading the key with a network granted",
        "Permission denied",
    );

    // Turned off for this plugin, then for every plugin: it runs as the user.
    for config in [
        "plugins:\n  sandbox:\n    probe: false\n",
        "plugins:\n  confine: false\n",
    ] {
        user_config(&sb, config);
        assert_eq!(row(&sb, "servers", SERVER)["sandbox"], Value::Null);
        let read = allowed(
            call(&sb, "read_file", std::slice::from_ref(&key)),
            "the key unconfined",
        );
        assert!(read.contains(KEY), "{read}");
        allowed(
            call(&sb, "write_file", &[path_arg(&outside), arg("text", "x")]),
            "writing outside unconfined",
        );
        std::fs::remove_file(&outside).unwrap();
        allowed(
            call(&sb, "connect", std::slice::from_ref(&target)),
            "connecting unconfined",
        );
        accepts
            .recv_timeout(PATIENCE)
            .expect("the port received the unconfined connection");
    }

    // What plugins add shows then says so, and why.
    claude_plugin(&sb.dir.path().join("other-src"), "other", &[]);
    let other = sb.dir.path().join("other-src").display().to_string();
    let shown = sb.run(&["plugins", "add", &other]);
    assert_eq!(shown.code, 2, "no terminal, no --yes: {}", shown.stderr);
    assert!(
        shown
            .stderr
            .contains("runs `<plugin>/bin/kit` as you, unconfined (plugins.confine: false)"),
        "{}",
        shown.stderr
    );
    assert!(!shown.stderr.contains("sandbox:"), "{}", shown.stderr);
}

#[test]
fn a_plugin_profile_this_machine_cannot_enforce_refuses_its_server_naming_the_opt_out() {
    // What this machine cannot enforce of a plugin's profile: a process
    // limit for root, which the kernel exempts. Run as a user, the same
    // profile is enforced, and that is checked instead.
    let bin = testkit().display();
    let (sb, shown, _) = added(&format!(
        "skills:\n  default_roots: false\nplugins:\n  sandbox:\n    probe: {{limits: {{processes: 16}}}}\nmcp_servers:\n  plain:\n    command: {bin}\n"
    ));
    let source = row(&sb, "sources", SERVER);
    if !rustix_like_is_root() {
        assert!(!shown.contains("cannot enforce"), "{shown}");
        assert_eq!(source["state"], "ready", "{source}");
        let limits = allowed(
            call(&sb, "read_file", &[arg("path", "/proc/self/limits")]),
            "reading its limits",
        );
        assert!(
            limits
                .lines()
                .any(|l| l.starts_with("Max processes") && l.contains(" 16 ")),
            "{limits}"
        );
        return;
    }
    let refusal = "the process limit cannot be enforced for root";
    let opt_out = "to run them unconfined, as you, set `plugins.sandbox.probe: false` in extpool.yaml (`plugins.confine: false` for every plugin)";
    assert!(
        shown.contains("this machine cannot enforce it, so the server will not start")
            && shown.contains(refusal)
            && shown.contains(opt_out),
        "plugins add says so before it installs: {shown}"
    );
    let detail = source["detail"].as_str().unwrap_or_default();
    assert_eq!(source["state"], "failed", "{source}");
    assert!(
        detail.contains(refusal) && detail.contains(opt_out),
        "{source}"
    );
    let (ok, text) = call(&sb, "echo", &[arg("message", "hi")]);
    assert!(
        !ok && text.contains(refusal) && text.contains(opt_out),
        "{text}"
    );
    // Every other server keeps working.
    assert_eq!(row(&sb, "sources", "plain")["state"], "ready");
    let r = sb.run(&["call", "mcp__plain__echo", "message=still here"]);
    assert_eq!((r.code, r.stdout.trim()), (0, "still here"), "{}", r.stderr);
}
