//! The raw benchmark echo server answers a real rmcp client.

use std::process::Stdio;

use serde_json::json;

use crate::common::{call_text, connect_tokio_command, within};

#[tokio::test]
async fn raw_echo_answers_an_rmcp_client() {
    let command = tokio::process::Command::new(extpool_testkit::raw_echo_binary());
    let (client, _) = connect_tokio_command(command, Stdio::null()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "echo");
    let text = call_text(&client, "echo", json!({"message": "raw \"quoted\" ✓"})).await;
    assert_eq!(text, "raw \"quoted\" ✓");
    within(client.cancel()).await.unwrap();
}

#[test]
fn raw_echo_prints_its_usage_for_help_and_refuses_a_wrong_argument() {
    let run = |args: &[&str]| {
        std::process::Command::new(extpool_testkit::raw_echo_binary())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for help in ["--help", "-h"] {
        let out = run(&[help]);
        assert_eq!(out.status.code(), Some(0), "{help}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("usage: extpool-raw-echo "), "{stdout}");
        assert!(stdout.contains("--endless METHOD"), "{stdout}");
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for (args, problem) in [
        (&["--bogus"][..], "unknown argument \"--bogus\""),
        (
            &["--answer", "no-equals"],
            "--answer \"no-equals\" is not METHOD=LINE",
        ),
        (&["--tools"], "--tools needs a value"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!(
                "extpool-raw-echo: {problem}\nusage: extpool-raw-echo "
            )),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("Custom {"), "{stderr}");
    }
}
