//! A headless Chromium (Debian's `chromium`) driven over the DevTools
//! protocol: a WebSocket client small enough to read (text frames, the
//! handshake, no extensions), one browser per test in its own profile
//! directory and process group, killed with the test.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Mutex, oneshot};

use crate::support::PATIENCE;

/// Most bytes of one message read (a screenshot of a long page is a few MB).
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

type Waiters = Arc<parking_lot::Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// A running headless Chromium.
pub struct Browser {
    child: tokio::process::Child,
    _profile: tempfile::TempDir,
    writer: Arc<Mutex<OwnedWriteHalf>>,
    waiters: Waiters,
    next: Arc<AtomicU64>,
}

/// One tab of it.
pub struct Tab {
    session: String,
    writer: Arc<Mutex<OwnedWriteHalf>>,
    waiters: Waiters,
    next: Arc<AtomicU64>,
}

/// The browser's program: `chromium` on the path (scripts/peers.sh
/// installs Debian's), or `$EXTPOOL_CHROMIUM`. Missing, the test fails.
fn program() -> String {
    if let Ok(path) = std::env::var("EXTPOOL_CHROMIUM") {
        return path;
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let candidate = Path::new(dir).join("chromium");
        if candidate.is_file() {
            return candidate.display().to_string();
        }
    }
    panic!(
        "chromium is missing: the operator page's tests drive a real headless browser; run scripts/peers.sh (it installs Debian's chromium) or set EXTPOOL_CHROMIUM"
    );
}

impl Browser {
    /// Starts Chromium headless and connects to its DevTools endpoint.
    pub async fn launch() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(program())
            .args([
                "--headless=new",
                "--remote-debugging-port=0",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--hide-scrollbars",
                "--force-color-profile=srgb",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            // Its own temporary files too, removed with the profile (killed,
            // it cannot remove them itself).
            .env("TMPDIR", profile.path())
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = tokio::time::timeout(PATIENCE, async {
            let mut said = Vec::new();
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return url.trim().to_owned();
                }
                said.push(line);
            }
            panic!(
                "chromium exited without a DevTools endpoint: {}",
                said.join("\n")
            );
        })
        .await
        .expect("chromium did not say where DevTools listens");
        // Keep reading its stderr, so a full pipe never stalls it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let (reader, writer) = connect(&url).await;
        let waiters: Waiters = Arc::default();
        tokio::spawn(read_loop(reader, waiters.clone()));
        Browser {
            child,
            _profile: profile,
            writer: Arc::new(Mutex::new(writer)),
            waiters,
            next: Arc::new(AtomicU64::new(1)),
        }
    }

    /// A new tab, attached (flat sessions over the browser's socket).
    pub async fn tab(&self) -> Tab {
        let browser = Tab {
            session: String::new(),
            writer: self.writer.clone(),
            waiters: self.waiters.clone(),
            next: self.next.clone(),
        };
        let target = browser
            .call("Target.createTarget", json!({"url": "about:blank"}))
            .await;
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await;
        let tab = Tab {
            session: attached["sessionId"].as_str().unwrap().to_owned(),
            ..browser
        };
        tab.call("Page.enable", json!({})).await;
        tab.call("Runtime.enable", json!({})).await;
        tab
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The browser and every process it started (renderers, GPU, zygote).
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Tab {
    /// Sends `method` with `params`; its result (a protocol error fails the test).
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().insert(id, tx);
        send_text(
            &mut *self.writer.lock().await,
            message.to_string().as_bytes(),
        )
        .await;
        let answer = tokio::time::timeout(PATIENCE, rx)
            .await
            .unwrap_or_else(|_| panic!("no answer to {method}"))
            .unwrap_or_else(|_| panic!("the browser closed before answering {method}"));
        if let Some(error) = answer.get("error") {
            panic!("{method} failed: {error}");
        }
        answer["result"].clone()
    }

    /// Loads `url` and waits for its document.
    pub async fn open(&self, url: &str) {
        let answer = self.call("Page.navigate", json!({"url": url})).await;
        assert!(answer.get("errorText").is_none(), "{url}: {answer}");
        self.wait_for("document.readyState === 'complete'", "the page loaded")
            .await;
    }

    /// The value of `expression` in the page (promises awaited).
    pub async fn eval(&self, expression: &str) -> Value {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        if let Some(exception) = answer.get("exceptionDetails") {
            panic!("{expression} threw: {exception}");
        }
        answer["result"]["value"].clone()
    }

    /// Waits until `expression` is truthy in the page (looking again each
    /// 50 ms, up to [`PATIENCE`]); its value. `what` names the condition in
    /// the failure, with the page's text.
    pub async fn wait_for(&self, expression: &str, what: &str) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let value = self.eval(expression).await;
            let truthy = !matches!(&value, Value::Null | Value::Bool(false))
                && value != json!("")
                && value != json!(0);
            if truthy {
                return value;
            }
            if tokio::time::Instant::now() > deadline {
                let text = self
                    .eval("document.body ? document.body.innerText : ''")
                    .await;
                panic!("{what}: still not so ({expression} is {value}); the page says:\n{text}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Clicks the element `selector` names (it must exist).
    pub async fn click(&self, selector: &str) {
        let expression = format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return false; e.click(); return true; }})()",
            json!(selector)
        );
        assert_eq!(
            self.eval(&expression).await,
            json!(true),
            "no {selector} to click"
        );
    }

    /// Shows the page on a screen `width` CSS pixels wide (a phone's below 500).
    pub async fn set_width(&self, width: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": width < 500}),
        )
        .await;
    }

    /// Saves a PNG of the whole page, `width` CSS pixels wide, to `path`.
    pub async fn screenshot(&self, width: u32, path: &Path) {
        let height = self
            .eval("Math.ceil(document.documentElement.scrollHeight)")
            .await
            .as_u64()
            .unwrap();
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true,
                       "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}),
            )
            .await;
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
    }
}

/// Opens the WebSocket at `url` (`ws://host:port/path`).
async fn connect(url: &str) -> (OwnedReadHalf, OwnedWriteHalf) {
    let rest = url.strip_prefix("ws://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let tcp = TcpStream::connect(authority).await.unwrap();
    let (mut reader, mut writer) = tcp.into_split();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ZXh0cG9vbC1wYWdlLXRlc3Q=\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    writer.write_all(request.as_bytes()).await.unwrap();
    // The handshake's answer, byte by byte up to its blank line (frames follow).
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(reader.read_u8().await.unwrap());
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    (reader, writer)
}

/// Sends one masked text frame (clients must mask).
async fn send_text(writer: &mut OwnedWriteHalf, payload: &[u8]) {
    let mut frame = vec![0x81u8];
    let len = payload.len();
    if len < 126 {
        frame.push(0x80 | u8::try_from(len).unwrap());
    } else if let Ok(len) = u16::try_from(len) {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&len.to_be_bytes());
    } else {
        frame.push(0x80 | 127);
        frame.extend_from_slice(&(len as u64).to_be_bytes());
    }
    let mask: [u8; 4] = rand_mask();
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    writer.write_all(&frame).await.unwrap();
}

fn rand_mask() -> [u8; 4] {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    nanos.to_le_bytes()
}

/// Reads messages and hands each answer to whoever waits for its id
/// (events are dropped: the tests look at the page instead).
async fn read_loop(mut reader: OwnedReadHalf, waiters: Waiters) {
    let mut message = Vec::new();
    loop {
        let Ok(first) = reader.read_u8().await else {
            return;
        };
        let Ok(second) = reader.read_u8().await else {
            return;
        };
        let opcode = first & 0x0f;
        let mut len = u64::from(second & 0x7f);
        if len == 126 {
            len = u64::from(reader.read_u16().await.unwrap());
        } else if len == 127 {
            len = reader.read_u64().await.unwrap();
        }
        let len = usize::try_from(len).unwrap();
        assert!(
            message.len() + len <= MAX_MESSAGE,
            "a DevTools message over {MAX_MESSAGE} bytes"
        );
        let mut payload = vec![0u8; len];
        reader.read_exact(&mut payload).await.unwrap();
        match opcode {
            0x8 => return,
            0x9 | 0xa => continue,
            _ => message.extend_from_slice(&payload),
        }
        if first & 0x80 == 0 {
            continue;
        }
        let text = std::mem::take(&mut message);
        let Ok(value) = serde_json::from_slice::<Value>(&text) else {
            continue;
        };
        if let Some(id) = value.get("id").and_then(Value::as_u64)
            && let Some(waiter) = waiters.lock().remove(&id)
        {
            let _ = waiter.send(value);
        }
    }
}
