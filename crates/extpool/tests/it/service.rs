//! `extpool service install|uninstall|status` on Linux: the systemd user
//! unit written under a temporary home, verified by `systemd-analyze
//! --user verify` (with its own temporary runtime directory, never the
//! user's systemd), and the service manager driven through a stand-in
//! that records what it was asked.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::support::Sandbox;

/// `systemd-analyze --user verify UNIT` in the sandbox: its exit code and output.
fn verify(sb: &Sandbox, unit: &std::path::Path) -> (i32, String) {
    let runtime = sb.dir.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .args(["--user", "verify"])
        .arg(unit)
        .env("HOME", sb.home())
        .env("XDG_CONFIG_HOME", sb.home().join(".config"))
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .output()
        .expect("systemd-analyze is needed for this test (apt install systemd)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_installed_unit_passes_systemd_analyze_verify_and_states_its_places() {
    let sb = Sandbox::new();
    let config = sb.write("team 100%.yaml", "mcp_servers: {}\n");
    let installed = sb.run(&[
        "service",
        "install",
        "--no-start",
        "--listen",
        "127.0.0.1:9520",
        "--serve-config",
        "team 100%.yaml",
    ]);
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    let out = &installed.stdout;
    assert!(out.contains("service: installed"), "{out}");
    assert!(
        out.contains("file:  ~/.config/systemd/user/extpool.service"),
        "{out}"
    );
    assert!(
        out.contains("store: ~/.local/share/extpool/state.db"),
        "{out}"
    );
    assert!(
        out.contains("log:   journalctl --user -u extpool.service"),
        "{out}"
    );
    let unit = sb.home().join(".config/systemd/user/extpool.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(
        text.contains(&format!(
            "\"--config\" \"{}\"",
            config.display().to_string().replace('%', "%%")
        )),
        "{text}"
    );
    assert!(text.contains("\"--listen\" \"127.0.0.1:9520\""), "{text}");
    let (code, said) = verify(&sb, &unit);
    assert_eq!(code, 0, "{said}\n{text}");
    assert!(
        !said.contains("extpool.service"),
        "no warning of the unit: {said}"
    );
    // Again: unchanged; other settings: refused without --force.
    let again = sb.run(&[
        "service",
        "install",
        "--no-start",
        "--listen",
        "127.0.0.1:9520",
        "--serve-config",
        "team 100%.yaml",
    ]);
    assert!(
        again.stdout.contains("service: unchanged"),
        "{}",
        again.stdout
    );
    let other = sb.run(&["service", "install", "--no-start"]);
    assert_eq!(other.code, 1, "{}", other.stdout);
    assert!(other.stderr.contains("--force"), "{}", other.stderr);
    assert_eq!(std::fs::read_to_string(&unit).unwrap(), text);
    let forced = sb.run(&["service", "install", "--no-start", "--force"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(verify(&sb, &unit).0, 0);
}

#[test]
fn install_status_and_uninstall_drive_the_service_manager() {
    let sb = Sandbox::new();
    let asked = sb.dir.path().join("asked.log");
    let manager = sb.dir.path().join("systemctl");
    std::fs::write(
        &manager,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\ncase \"$2\" in is-active) echo active ;; esac\n",
            asked.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&manager, std::fs::Permissions::from_mode(0o755)).unwrap();
    let manager = manager.display().to_string();
    let env = [("EXTPOOL_SERVICE_MANAGER", manager.as_str())];
    let installed = sb.run_with(&["service", "install"], &env);
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    assert!(
        installed.stdout.contains("state: started"),
        "{}",
        installed.stdout
    );
    let status = sb.run_with(&["--json", "service", "status"], &env);
    assert_eq!(status.code, 0, "{}", status.stderr);
    let said: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(said["outcome"], "installed");
    assert_eq!(said["running"], "active");
    let removed = sb.run_with(&["service", "uninstall"], &env);
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert!(
        !sb.home()
            .join(".config/systemd/user/extpool.service")
            .exists()
    );
    let log = std::fs::read_to_string(&asked).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "--user daemon-reload",
            "--user enable --now extpool.service",
            "--user is-active extpool.service",
            "--user disable --now extpool.service",
            "--user daemon-reload",
        ],
        "{log}"
    );
    let none = sb.run_with(&["service", "status"], &env);
    assert!(
        none.stdout.contains("service: not installed"),
        "{}",
        none.stdout
    );
}
