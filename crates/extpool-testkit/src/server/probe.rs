//! Tools that try what a permission profile forbids (`--probe`): read a
//! file, write a file, connect to an address, read the parent process's
//! environment. Each answers what happened — `read N bytes`, `wrote N
//! bytes`, `connected`, or the operating system's error (`Permission
//! denied (os error 13)`, `Connection refused (os error 111)`) as a tool
//! error — so a test can tell a denial from a success through any client.

use std::sync::LazyLock;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool};
use serde_json::json;

use super::url_elicitation::{arg, schema};

/// Reads a file.
pub const READ_FILE: &str = "read_file";
/// Writes a file.
pub const WRITE_FILE: &str = "write_file";
/// Opens a TCP connection.
pub const CONNECT: &str = "connect";
/// Reads the parent process's environment from `/proc`.
pub const PARENT_ENVIRON: &str = "parent_environ";

/// How long `connect` waits for an answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The four tools, in the order tools/list returns them.
pub(crate) fn tools() -> &'static [Tool] {
    static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        let path = json!({"path": {"type": "string", "description": "The file"}});
        vec![
            Tool::new(
                READ_FILE,
                "Reads the file at `path`; returns `read N bytes: <its first 4 KiB>` or the OS error",
                schema(path, &["path"]),
            ),
            Tool::new(
                WRITE_FILE,
                "Writes `text` to the file at `path`; returns `wrote N bytes` or the OS error",
                schema(
                    json!({"path": {"type": "string"}, "text": {"type": "string"}}),
                    &["path", "text"],
                ),
            ),
            Tool::new(
                CONNECT,
                "Opens a TCP connection to `address` (host:port); returns `connected` or the OS error",
                schema(json!({"address": {"type": "string"}}), &["address"]),
            ),
            Tool::new(
                PARENT_ENVIRON,
                "Reads /proc/<parent pid>/environ; returns the variable names or the OS error",
                schema(json!({}), &[]),
            ),
        ]
    });
    &TOOLS
}

/// Whether `name` is one of these tools.
pub(crate) fn is_tool(name: &str) -> bool {
    tools().iter().any(|t| t.name == name)
}

fn answer(result: Result<String, String>) -> CallToolResult {
    match result {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
    }
}

/// Answers a call of one of these tools.
pub(crate) async fn call(request: &CallToolRequestParams) -> Result<CallToolResult, ErrorData> {
    let result = match request.name.as_ref() {
        READ_FILE => {
            let path = arg(request, "path")?;
            std::fs::read(path)
                .map(|bytes| {
                    let head =
                        String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
                    format!("read {} bytes: {head}", bytes.len())
                })
                .map_err(|e| format!("reading {path}: {e}"))
        }
        WRITE_FILE => {
            let path = arg(request, "path")?;
            let text = arg(request, "text")?;
            std::fs::write(path, text)
                .map(|()| format!("wrote {} bytes", text.len()))
                .map_err(|e| format!("writing {path}: {e}"))
        }
        CONNECT => {
            let address = arg(request, "address")?;
            match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(address))
                .await
            {
                Ok(Ok(_)) => Ok("connected".to_owned()),
                Ok(Err(e)) => Err(format!("connecting to {address}: {e}")),
                Err(_) => Err(format!("connecting to {address}: timed out")),
            }
        }
        _ => {
            let parent = std::os::unix::process::parent_id();
            let path = format!("/proc/{parent}/environ");
            std::fs::read(&path)
                .map(|bytes| {
                    let names: Vec<String> = bytes
                        .split(|b| *b == 0)
                        .filter_map(|kv| kv.split(|b| *b == b'=').next())
                        .filter(|k| !k.is_empty())
                        .map(|k| String::from_utf8_lossy(k).into_owned())
                        .collect();
                    format!("parent environment: {}", names.join(" "))
                })
                .map_err(|e| format!("reading {path}: {e}"))
        }
    };
    Ok(answer(result))
}
