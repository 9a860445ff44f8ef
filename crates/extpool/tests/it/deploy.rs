//! The deployment files under `deploy/`, checked as far as this machine
//! can: the Kubernetes manifests and the Compose file parsed and held to
//! what the book's operations chapter promises (two replicas, readiness
//! on `/readyz`, every secret from a Secret or the environment, the same
//! configuration on each replica); the configuration they ship validated by `extpool config
//! check`; the environment-backed OAuth grant read by `extpool mcp
//! auth-status`; nginx's configuration tested by nginx itself (`nginx -t`,
//! installed by `scripts/peers.sh`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::Sandbox;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn read(rel: &str) -> String {
    let path = deploy_dir().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A deployment file read by extpool's own YAML reader, as JSON.
fn yaml(rel: &str) -> Value {
    use extpool_host::config::{de, tree};
    let node = tree::parse_yaml(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let mut v: Value = de::from_node(&node).unwrap_or_else(|e| panic!("{rel}: {e}"));
    merge_keys(&mut v);
    v
}

/// YAML's merge keys (`<<: *anchor`) as Compose reads them: the anchored
/// mapping's entries beneath the ones written beside the key.
fn merge_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Object(base)) = map.remove("<<") {
                for (key, value) in base {
                    map.entry(key).or_insert(value);
                }
            }
            map.values_mut().for_each(merge_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(merge_keys),
        _ => {}
    }
}

fn s<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {v:?}"))
}

fn list<'a>(v: &'a Value, what: &str) -> &'a Vec<Value> {
    v.as_array()
        .unwrap_or_else(|| panic!("{what} is not a list: {v:?}"))
}

/// `${VAR}` references and `credentials_env` variables of a configuration
/// (comments left out).
fn variables_of(config: &str) -> BTreeSet<String> {
    let mut vars = BTreeSet::new();
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let line = line.split(" #").next().unwrap_or_default();
        let mut rest = line;
        while let Some(at) = rest.find("${") {
            let tail = &rest[at + 2..];
            let end = tail.find('}').expect("closed ${");
            vars.insert(tail[..end].to_owned());
            rest = &tail[end..];
        }
        if let Some(var) = line.strip_prefix("credentials_env:") {
            vars.insert(var.trim().to_owned());
        }
    }
    vars
}

/// `extpool --config FILE config check` on `text` succeeds.
fn config_checks(sb: &Sandbox, text: &str) {
    let path = sb.write("shipped.yaml", text);
    let r = sb.run(&["--config", path.to_str().unwrap(), "config", "check"]);
    assert_eq!(r.code, 0, "config check: {}{}", r.stdout, r.stderr);
}

#[test]
fn the_kubernetes_manifests_run_two_ready_replicas_with_secrets_from_a_secret() {
    let kustomization = yaml("kubernetes/kustomization.yaml");
    let mut docs = std::collections::BTreeMap::new();
    for file in list(&kustomization["resources"], "resources") {
        let doc = yaml(&format!("kubernetes/{}", s(file, "resource")));
        docs.insert(s(&doc["kind"], "kind").to_owned(), doc);
    }
    let kinds: Vec<&str> = docs.keys().map(String::as_str).collect();
    assert_eq!(kinds, ["ConfigMap", "Deployment", "Secret", "Service"]);
    let deployment = &docs["Deployment"];
    assert_eq!(deployment["spec"]["replicas"], Value::from(2));
    let pod = &deployment["spec"]["template"]["spec"];
    let containers = list(&pod["containers"], "containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let args: Vec<&str> = list(&c["args"], "args")
        .iter()
        .map(|a| s(a, "arg"))
        .collect();
    assert!(
        args.windows(2).any(|w| w == ["--listen", "0.0.0.0:8520"]),
        "{args:?}"
    );
    assert!(args.contains(&"serve"), "{args:?}");
    // Readiness on /readyz, on the container's port.
    let ready = &c["readinessProbe"]["httpGet"];
    assert_eq!(s(&ready["path"], "readiness path"), "/readyz");
    let port = s(&ready["port"], "readiness port");
    let ports = list(&c["ports"], "ports");
    assert!(
        ports
            .iter()
            .any(|p| p["name"] == port && p["containerPort"] == 8520),
        "{ports:?}"
    );
    assert_eq!(
        s(&c["livenessProbe"]["httpGet"]["path"], "liveness"),
        "/healthz"
    );
    // Every variable comes from the Secret (or the pod's own name).
    let secret = &docs["Secret"];
    let secret_name = s(&secret["metadata"]["name"], "secret name");
    let mut env_vars = BTreeSet::new();
    for e in list(&c["env"], "env") {
        let name = s(&e["name"], "env name").to_owned();
        let from = &e["valueFrom"];
        if let Some(key) = from["secretKeyRef"]["key"].as_str() {
            assert_eq!(s(&from["secretKeyRef"]["name"], "secret ref"), secret_name);
            assert!(
                secret["stringData"][key].is_string(),
                "{name}: the Secret has no {key}"
            );
        } else {
            assert_eq!(name, "EXTPOOL_REPLICA_ID", "{name} is not from the Secret");
            assert_eq!(
                s(&from["fieldRef"]["fieldPath"], "fieldRef"),
                "metadata.name"
            );
        }
        env_vars.insert(name);
    }
    for needed in [
        "EXTPOOL_STATE",
        "EXTPOOL_GATEWAY_TOKEN",
        "EXTPOOL_REPLICA_ID",
    ] {
        assert!(
            env_vars.contains(needed),
            "{needed} is not set: {env_vars:?}"
        );
    }
    assert!(s(&secret["stringData"]["state-url"], "state-url").starts_with("postgres://"));
    // The configuration: mounted from the ConfigMap where --config reads it,
    // valid, and every variable it needs is set.
    let config_map = &docs["ConfigMap"];
    let volume = list(&pod["volumes"], "volumes")
        .iter()
        .find(|v| v["configMap"]["name"] == config_map["metadata"]["name"])
        .expect("a volume of the ConfigMap");
    let mount = list(&c["volumeMounts"], "mounts")
        .iter()
        .find(|m| m["name"] == volume["name"])
        .expect("the ConfigMap mounted");
    let config_path = format!("{}/extpool.yaml", s(&mount["mountPath"], "mountPath"));
    assert!(
        args.windows(2)
            .any(|w| w == ["--config", config_path.as_str()]),
        "{args:?}"
    );
    let config = s(&config_map["data"]["extpool.yaml"], "extpool.yaml");
    let sb = Sandbox::new();
    config_checks(&sb, config);
    let wanted = variables_of(config);
    assert!(!wanted.is_empty());
    for var in &wanted {
        assert!(env_vars.contains(var), "{var} is referenced but not set");
    }
    // The environment-backed OAuth profile reads the Secret's grant record.
    let grant = s(&secret["stringData"]["linear-oauth-grant"], "grant");
    let path = sb.write("shipped.yaml", config);
    let r = sb.run_with(
        &[
            "--config",
            path.to_str().unwrap(),
            "--json",
            "mcp",
            "auth-status",
        ],
        &[("LINEAR_OAUTH_GRANT", grant), ("GITHUB_TOKEN", "x")],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        (&status[0]["location"], &status[0]["state"]),
        (
            &serde_json::json!("env:LINEAR_OAUTH_GRANT"),
            &serde_json::json!("valid")
        ),
        "{status}"
    );
    // The Service reaches the pods on the named port.
    let service = &docs["Service"];
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["template"]["metadata"]["labels"]
    );
    assert_eq!(
        list(&service["spec"]["ports"], "ports")[0]["targetPort"],
        Value::from(port)
    );
}

#[test]
fn the_compose_file_runs_two_replicas_on_postgres_behind_nginx() {
    let compose = yaml("docker-compose.yml");
    let services = &compose["services"];
    let mut ids = BTreeSet::new();
    for name in ["replica-a", "replica-b"] {
        let r = &services[name];
        let command: Vec<&str> = list(&r["command"], "command")
            .iter()
            .map(|a| s(a, "arg"))
            .collect();
        assert_eq!(
            command,
            [
                "--config",
                "/etc/extpool/extpool.yaml",
                "serve",
                "--listen",
                "0.0.0.0:8520"
            ]
        );
        let env = &r["environment"];
        assert!(
            s(&env["EXTPOOL_STATE"], "EXTPOOL_STATE").starts_with("postgres://extpool:"),
            "{env:?}"
        );
        assert!(s(&env["EXTPOOL_STATE"], "state").contains("@postgres:5432/"));
        assert!(
            env["EXTPOOL_GATEWAY_TOKEN"].is_string(),
            "a bearer token off loopback"
        );
        ids.insert(s(&env["EXTPOOL_REPLICA_ID"], "replica id").to_owned());
        assert_eq!(
            list(&r["volumes"], "volumes")[0],
            Value::from("./extpool.yaml:/etc/extpool/extpool.yaml:ro")
        );
        assert_eq!(
            s(&r["depends_on"]["postgres"]["condition"], "depends_on"),
            "service_healthy"
        );
    }
    assert_eq!(ids.len(), 2, "each replica its own id");
    assert!(s(&services["postgres"]["image"], "image").starts_with("postgres:"));
    let nginx = &services["nginx"];
    assert!(
        list(&nginx["volumes"], "volumes")
            .contains(&Value::from("./nginx.conf:/etc/nginx/nginx.conf:ro"))
    );
    // The shipped configuration is valid and its variables are passed.
    let config = read("extpool.yaml");
    config_checks(&Sandbox::new(), &config);
    for var in variables_of(&config) {
        assert!(
            services["replica-a"]["environment"][var.as_str()].is_string(),
            "{var} is not passed to the replicas"
        );
    }
    // nginx balances over both replicas.
    let conf = read("nginx.conf");
    for upstream in ["server replica-a:8520", "server replica-b:8520"] {
        assert!(conf.contains(upstream), "{upstream}");
    }
}

#[test]
fn nginx_accepts_the_shipped_configuration() {
    let nginx = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("nginx is missing: scripts/peers.sh installs Debian's nginx-light");
    let dir = tempfile::tempdir().unwrap();
    // The upstream names resolve inside Compose only: test the same file
    // with addresses in their place.
    let conf = read("nginx.conf")
        .replace("replica-a:8520", "127.0.0.1:18520")
        .replace("replica-b:8520", "127.0.0.1:18521");
    let path = dir.path().join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let out = std::process::Command::new(nginx)
        .arg("-t")
        .arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(&path)
        .args(["-e", "stderr", "-g"])
        .arg(format!("pid {};", dir.path().join("nginx.pid").display()))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nginx -t: {said}");
    assert!(said.contains("test is successful"), "{said}");
}
