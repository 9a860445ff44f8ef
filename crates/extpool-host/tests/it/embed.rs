//! `examples/embed.rs`, run on the quickstart configuration.

use std::path::Path;

use extpool_host::{HostOptions, Places};
use extpool_testkit::{StateDir, stdio_command};

use crate::support::{Project, wait_until_gone};

#[path = "../../../../examples/embed.rs"]
#[allow(dead_code)]
mod example;

#[tokio::test]
async fn the_embedding_example_runs_on_the_quickstart_configuration() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let project = Project::new();
    let places = Places {
        cwd: root.clone(),
        home: Some(project.path().join("home")),
        ..Places::default()
    };
    let mut loaded = extpool_host::config::load_file(&root.join("extpool.yaml"), &places).unwrap();
    // The quickstart starts its server through `cargo run`; the
    // tests have the same server built already, so only its launch changes.
    let state = StateDir::new();
    let (program, args) = stdio_command(state.args()).into_parts();
    let server = loaded.config.mcp_servers.get_mut("testkit").unwrap();
    server.command = Some(program.display().to_string());
    server.args = args;
    server.cwd = None;
    let options = HostOptions {
        places,
        watch_skills: Some(false),
        ..HostOptions::loaded(loaded)
    };
    example::run(options).await.unwrap();
    assert_eq!(state.starts(), 1, "the example's server started once");
    wait_until_gone(&state.path().display().to_string()).await;
}
