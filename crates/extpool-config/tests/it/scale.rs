//! Large configs load in linear time: 40,000 servers in `extpool.yaml`,
//! 4,000 names in one minified `.mcp.json` that all become `x_`. (The
//! time is measured by `cargo bench -p extpool-config --bench load`; the
//! watchdog here only turns a quadratic regression into a failure rather
//! than a stalled run.)

use std::fmt::Write as _;

use extpool_config::{LoadRequest, load, load_file};

use crate::support::{Dirs, within};

#[test]
fn forty_thousand_servers_load() {
    let dirs = Dirs::new();
    let mut yaml = String::from("mcp_servers:\n");
    for i in 0..40_000 {
        let _ = write!(yaml, "  s{i}:\n    command: echo\n    args: [\"{i}\"]\n");
    }
    let path = dirs.project("extpool.yaml", yaml);
    let places = dirs.places();
    let loaded = within(120, move || load_file(&path, &places)).unwrap();
    assert_eq!(loaded.config.mcp_servers.len(), 40_000);
    assert_eq!(loaded.server_sources["s39999"].pos.line, 3 * 39_999 + 2);
}

#[test]
fn four_thousand_colliding_names_load() {
    let dirs = Dirs::new();
    let mut json = String::from("{\"mcpServers\":{");
    for i in 0..4000u32 {
        let c = char::from_u32(0x100 + i).unwrap();
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(
            json,
            "{sep}\"x{c}\":{{\"command\":\"echo\",\"args\":[\"{i}\"]}}"
        );
    }
    json.push_str("}}");
    dirs.project(".mcp.json", json);
    let places = dirs.places();
    let loaded = within(120, move || {
        load(&LoadRequest {
            files: Vec::new(),
            places,
        })
    })
    .unwrap();
    assert_eq!(loaded.config.mcp_servers.len(), 4000);
    assert!(loaded.config.mcp_servers.contains_key("x"));
    assert!(loaded.config.mcp_servers.contains_key("x_4000"));
}
