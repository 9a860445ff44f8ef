//! The library helpers themselves: binary lookup, command lines, peers
//! paths, and process cleanup.

use std::path::Path;

use extpool_testkit::{HttpServer, SERVER_BIN_NAME, StateDir, peers, server_binary, stdio_command};

#[test]
fn server_binary_is_built_and_executable() {
    let binary = server_binary();
    assert!(binary.is_file(), "{}", binary.display());
    assert_eq!(binary.file_name().unwrap(), SERVER_BIN_NAME);
    let output = std::process::Command::new(binary)
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for flag in [
        "--transport",
        "--bind",
        "--state-dir",
        "--die-on-start",
        "--hang-on-initialize",
        "--extra-tools",
        "--page-size",
        "--no-skills-extension",
        "--bad-digest",
        "--require-bearer",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}

#[test]
fn stdio_command_is_the_binary_with_its_arguments() {
    let command = stdio_command(["--page-size", "2"]);
    assert_eq!(command.program, server_binary());
    assert_eq!(command.args, ["--transport", "stdio", "--page-size", "2"]);
    let (program, args) = command.into_parts();
    assert_eq!(program, server_binary());
    assert_eq!(args.len(), 4);
}

#[test]
fn peers_are_installed_where_the_helpers_look() {
    let dir = peers::peers_dir();
    assert!(
        dir.is_dir(),
        "peer missing: {} (run scripts/peers.sh)",
        dir.display()
    );
    assert!(peers::python().is_file());
    assert!(peers::server_everything_script().is_file());
    assert!(peers::fastmcp_script().is_file());
    assert!(
        peers::node_modules()
            .join("@modelcontextprotocol/sdk")
            .is_dir()
    );
    assert!(peers::skills_ref().is_file());
    let command = peers::server_everything();
    assert_eq!(command.args.last().map(String::as_str), Some("stdio"));
}

#[test]
fn dropping_an_http_server_kills_its_process() {
    let server = HttpServer::spawn(["--extra-tools", "1"]);
    let proc_dir = format!("/proc/{}", server.pid());
    assert!(Path::new(&proc_dir).exists());
    drop(server);
    assert!(
        !Path::new(&proc_dir).exists(),
        "the server outlived its handle"
    );
}

#[test]
fn dropping_a_peer_server_kills_its_process_group() {
    let server = peers::FastMcpServer::spawn_http();
    let proc_dir = format!("/proc/{}", server.pid());
    assert!(Path::new(&proc_dir).exists());
    drop(server);
    assert!(
        !Path::new(&proc_dir).exists(),
        "the peer outlived its handle"
    );
}

#[test]
fn state_dir_reads_zero_before_anything_ran_and_is_removed_on_drop() {
    let state = StateDir::new();
    let path = state.path().to_path_buf();
    assert_eq!(state.counter("default"), 0);
    assert_eq!(state.starts(), 0);
    assert!(!state.crashed());
    drop(state);
    assert!(!path.exists());
}

#[tokio::test]
async fn raw_clients_connect_over_stdio_and_http() {
    use extpool_testkit::client;
    use rmcp::model::CallToolRequestParams;

    let stdio = crate::common::within(client::connect_stdio(&stdio_command([
        "--extra-tools",
        "3",
    ])))
    .await
    .unwrap();
    assert_eq!(
        crate::common::within(stdio.list_all_tools())
            .await
            .unwrap()
            .len(),
        crate::common::BUILTIN_TOOL_COUNT + 3
    );

    let server = HttpServer::spawn(crate::common::NO_ARGS);
    let http = crate::common::within(client::connect_http(server.url()))
        .await
        .unwrap();
    let result = crate::common::within(
        http.call_tool(
            CallToolRequestParams::new("echo")
                .with_arguments(crate::common::args(serde_json::json!({"message": "raw"}))),
        ),
    )
    .await
    .unwrap();
    assert_eq!(crate::common::text_of(&result), "raw");
}

/// A process group, killed (SIGKILL) when dropped, so a failed test
/// leaves none of it behind.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .status();
    }
}

#[tokio::test]
async fn kill_one_waits_for_the_process_it_killed_not_for_its_restart() {
    use extpool_testkit::procs::{exited, kill_one, pids_with};
    // A supervisor that starts a process carrying the marker again the
    // moment it dies, as a host reconnecting to a crashed server does. The
    // marker is made of two halves, so only the supervised process carries
    // it whole.
    let marker = format!("kill-one-restarted-{}", std::process::id());
    let (head, tail) = marker.split_at(8);
    let script = format!("h='{head}'; while :; do (exec -a \"${{h}}{tail}\" sleep 1000); done");
    let mut supervisor = tokio::process::Command::new("bash")
        .args(["-c", &script])
        .process_group(0)
        .spawn()
        .unwrap();
    let group = Group(supervisor.id().unwrap());
    let first = loop {
        if let [pid] = pids_with(&marker)[..] {
            break pid;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(kill_one(&marker).await, first);
    // The supervisor and all it started, as one process group.
    drop(group);
    supervisor.wait().await.unwrap();
    for pid in pids_with(&marker) {
        exited(pid).await;
    }
}
