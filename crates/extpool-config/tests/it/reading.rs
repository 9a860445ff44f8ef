//! Reading files: regular files only, a size limit, UTF-8 located; a
//! discovered file of another program that cannot be read is skipped with
//! an error diagnostic, and the other files still load.

use std::process::Command;

use extpool_config::{ConfigError, LoadRequest, Severity, load, load_file};

use crate::support::{Dirs, within};

fn mkfifo(path: &std::path::Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

const HEALTHY: &str = r#"{"mcpServers": {"ok": {"command": "echo"}}}"#;

#[test]
fn a_fifo_named_with_config_is_refused_without_blocking() {
    let dirs = Dirs::new();
    let fifo = dirs.cwd.join(".mcp.json");
    mkfifo(&fifo);
    let places = dirs.places();
    let err = within(60, move || load_file(&fifo, &places)).unwrap_err();
    assert!(matches!(err, ConfigError::NotRegular { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "cannot read .mcp.json: it is a FIFO (named pipe), not a regular file; configuration is read only from regular files"
    );
}

#[test]
fn a_symlink_to_dev_zero_is_refused() {
    let dirs = Dirs::new();
    let link = dirs.cwd.join("extpool.yaml");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let places = dirs.places();
    let err = within(60, move || load_file(&link, &places)).unwrap_err();
    assert!(
        err.to_string()
            .contains("it is a character device, not a regular file"),
        "{err}"
    );
}

#[test]
fn a_file_over_the_limit_is_refused() {
    let dirs = Dirs::new();
    let path = dirs.project(".mcp.json", format!("{HEALTHY}{}", " ".repeat(2000)));
    let mut places = dirs.places();
    places.max_file_bytes = Some(1000);
    let err = load_file(&path, &places).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot read .mcp.json: it is larger than 1000 bytes (the limit; set EXTPOOL_MAX_CONFIG_BYTES to change it)"
    );
    places.max_file_bytes = Some(4000);
    assert!(load_file(&path, &places).is_ok());
}

#[test]
fn invalid_utf8_is_located() {
    let dirs = Dirs::new();
    let path = dirs.project(
        "extpool.yaml",
        b"mcp_servers:\n  a:\n    command: \"caf\xe9\"\n".as_slice(),
    );
    let err = load_file(&path, &dirs.places()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "extpool.yaml:3:18: invalid UTF-8 (byte 35 of the file); configuration files must be UTF-8 text"
    );
}

#[test]
fn one_bad_byte_in_the_user_file_does_not_take_the_project_down() {
    let dirs = Dirs::new();
    dirs.project(".mcp.json", HEALTHY);
    dirs.home(
        ".claude.json",
        b"{\"mcpServers\": {\n  \"u\": {\"command\": \"\xff\"}}}".as_slice(),
    );
    let loaded = load(&LoadRequest {
        files: Vec::new(),
        places: dirs.places(),
    })
    .expect("the project's servers load");
    assert!(loaded.config.mcp_servers.contains_key("ok"));
    let errors: Vec<String> = loaded.errors().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        ["~/.claude.json:2:21: error: invalid UTF-8 (byte 37 of the file); the file is skipped"],
        "{:#?}",
        loaded.diagnostics
    );
}

#[test]
fn a_discovered_fifo_is_skipped_with_an_error() {
    let dirs = Dirs::new();
    dirs.project("extpool.yaml", "mcp_servers:\n  ok:\n    command: echo\n");
    mkfifo(&dirs.cwd.join(".mcp.json"));
    let places = dirs.places();
    let loaded = within(60, move || {
        load(&LoadRequest {
            files: Vec::new(),
            places,
        })
    })
    .expect("the other file loads");
    assert!(loaded.config.mcp_servers.contains_key("ok"));
    let skipped: Vec<_> = loaded.errors().collect();
    assert_eq!(skipped.len(), 1, "{:#?}", loaded.diagnostics);
    assert_eq!(skipped[0].severity, Severity::Error);
    assert_eq!(skipped[0].file, ".mcp.json");
    assert!(
        skipped[0].message.contains("FIFO") && skipped[0].message.ends_with("the file is skipped"),
        "{}",
        skipped[0]
    );
}

#[test]
fn a_strict_load_refuses_what_a_lenient_one_skips_with_its_location() {
    let dirs = Dirs::new();
    dirs.project(
        ".mcp.json",
        "{\"mcpServers\": {\n  \"ok\": {\"command\": \"echo\"},\n  \"bad\": \"just a string\"\n}}\n",
    );
    let request = LoadRequest {
        files: Vec::new(),
        places: dirs.places(),
    };
    let lenient = load(&request).expect("a lenient load skips the bad entry");
    assert!(lenient.config.mcp_servers.contains_key("ok"));
    assert!(!lenient.config.mcp_servers.contains_key("bad"));
    let err = extpool_config::load_strict(&request).unwrap_err();
    let shown = err.to_string();
    assert!(shown.starts_with(".mcp.json:3:"), "{shown}");
    assert!(shown.contains("error"), "{shown}");
}
