//! `extpool config schema`: the JSON Schema generated from the
//! configuration's types accepts every example configuration of the
//! repository (checked by the Python `jsonschema` validator, a real one)
//! and refuses what the loader refuses; the book's configuration
//! reference is the one `config schema --markdown` renders.

use std::path::{Path, PathBuf};

use extpool_host::config::de::NodeDe;
use extpool_host::config::tree::parse_yaml;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{Sandbox, repo_root};

/// The checked-in configuration reference.
const REFERENCE: &str = "docs/src/reference/config.md";

/// A YAML text as JSON, read by extpool's own YAML reader.
fn as_json(text: &str) -> Value {
    let node = parse_yaml(text).unwrap();
    Value::deserialize(NodeDe(&node)).unwrap()
}

/// The fenced ```yaml blocks of a Markdown file.
fn yaml_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let fence = line.trim_start();
        match &mut current {
            None if fence.starts_with("```yaml") || fence.starts_with("```yml") => {
                current = Some(String::new());
            }
            Some(block) if fence.starts_with("```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Every example configuration of the repository: its `extpool.yaml`
/// files, the Kubernetes ConfigMap's, and the YAML blocks of README.md
/// and the book that are whole configurations (a mapping whose keys are
/// all top-level keys of the schema).
fn examples(sections: &[&str]) -> Vec<(String, Value)> {
    let root = repo_root();
    let mut found = Vec::new();
    for rel in ["extpool.yaml", "deploy/extpool.yaml"] {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        found.push((rel.to_owned(), as_json(&text)));
    }
    let configmap = std::fs::read_to_string(root.join("deploy/kubernetes/configmap.yaml")).unwrap();
    let embedded = as_json(&configmap)["data"]["extpool.yaml"]
        .as_str()
        .unwrap()
        .to_owned();
    found.push((
        "deploy/kubernetes/configmap.yaml".into(),
        as_json(&embedded),
    ));
    let mut docs = vec![root.join("README.md")];
    markdown_files(&root.join("docs"), &mut docs);
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let rel = doc.strip_prefix(&root).unwrap().display().to_string();
        for (i, block) in yaml_blocks(&text).into_iter().enumerate() {
            let Ok(node) = parse_yaml(&block) else {
                continue;
            };
            let Ok(value) = Value::deserialize(NodeDe(&node)) else {
                continue;
            };
            let whole = value
                .as_object()
                .is_some_and(|m| !m.is_empty() && m.keys().all(|k| sections.contains(&k.as_str())));
            if whole {
                found.push((format!("{rel} (yaml block {})", i + 1), value));
            }
        }
    }
    found
}

/// Each document's validation errors under `schema` (Draft 2020-12, the
/// Python `jsonschema` package).
fn validate(schema: &Value, documents: &[Value]) -> Vec<Vec<String>> {
    let script = r#"
import json, sys
from jsonschema import Draft202012Validator
data = json.load(sys.stdin)
Draft202012Validator.check_schema(data["schema"])
v = Draft202012Validator(data["schema"])
print(json.dumps([[f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(d)] for d in data["documents"]]))
"#;
    let mut child = std::process::Command::new(extpool_testkit::peers::python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = json!({"schema": schema, "documents": documents}).to_string();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_schema_accepts_every_example_config_and_refuses_what_the_loader_refuses() {
    let sb = Sandbox::new();
    let printed = sb.run(&["config", "schema"]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let schema: Value = serde_json::from_str(&printed.stdout).unwrap();
    let sections: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let examples = examples(&sections);
    assert!(examples.len() >= 3, "{examples:?}");
    let bad = [
        json!({"mcp_servers": {"a": {"comand": "x"}}}),
        json!({"mcp_servers": {"a": {"command": ["not", "a", "string"]}}}),
        json!({"skills": {"validation": "sometimes"}}),
        json!({"unknown_section": true}),
    ];
    let mut documents: Vec<Value> = examples.iter().map(|(_, v)| v.clone()).collect();
    documents.extend(bad.iter().cloned());
    let errors = validate(&schema, &documents);
    for ((name, _), errors) in examples.iter().zip(&errors) {
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    for (doc, errors) in bad.iter().zip(&errors[examples.len()..]) {
        assert!(!errors.is_empty(), "the schema accepts {doc}");
        // The loader refuses it too.
        sb.write("extpool.yaml", &doc.to_string());
        let checked = sb.run(&["config", "check"]);
        assert_ne!(checked.code, 0, "config check accepts {doc}");
    }
}

#[test]
fn config_reference_is_the_one_the_schema_renders() {
    let sb = Sandbox::new();
    let rendered = sb.run(&["config", "schema", "--markdown"]);
    assert_eq!(rendered.code, 0, "{}", rendered.stderr);
    let path = repo_root().join(REFERENCE);
    if std::env::var_os("EXTPOOL_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &rendered.stdout).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == rendered.stdout,
        "{REFERENCE} differs from what `extpool config schema --markdown` renders from the \
         configuration's types; regenerate it: EXTPOOL_BLESS=1 cargo test -p extpool --test it config_reference"
    );
}
