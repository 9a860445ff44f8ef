//! A real OpenID provider for identity tests: panva's `oidc-provider` (the
//! npm package `scripts/peers.sh` installs), run by this crate's
//! `oidc/provider.mjs` under [`peers::node22`] in a child process.
//!
//! [`OidcProvider::start`] starts it on `127.0.0.1:0` with issuer
//! `http://127.0.0.1:<port>`. It offers what the gateway's identity tests
//! need:
//! - OIDC discovery (`/.well-known/openid-configuration`) and the JWKS
//!   ([`JWKS_PATH`]) with the public part of one RS256 signing key whose
//!   private part this harness holds ([`OidcProvider::sign`]);
//! - accounts [`USERS`] (`alice` in group `eng`, `bob` in `sales`, `ops` in
//!   `operators`, each with an `email`), signed in through the provider's own
//!   development interactions (a login form taking the name, then consent);
//! - RFC 8707 resource indicators: any absolute URI is a resource, and its
//!   access tokens are RS256 JWTs (RFC 9068, `typ: at+jwt`) with `aud` = the
//!   resource, `sub`, `client_id`, `scope`, `email` and `groups`;
//! - open dynamic client registration (RFC 7591), client credentials, PKCE
//!   S256 required of public clients;
//! - token exchange (RFC 8693, registered through oidc-provider's own
//!   `registerGrantType`) for the confidential client [`GATEWAY_CLIENT_ID`]
//!   / [`GATEWAY_CLIENT_SECRET`]: an access token it signed becomes one for
//!   the `resource` asked (`aud` = `audience` if given, else the resource)
//!   with `act: {sub: "extpool-gateway"}`; [`OidcProvider::token_exchanges`]
//!   counts them, [`OidcProvider::set_exchange_ttl`] and
//!   [`OidcProvider::refuse_exchanges_for`] steer them;
//! - the public client [`PUBLIC_CLIENT_ID`] (any loopback port on
//!   [`PUBLIC_CLIENT_REDIRECT_URI`], RFC 8252) and the confidential client
//!   [`SERVICE_CLIENT_ID`] / [`SERVICE_CLIENT_SECRET`] (client credentials).
//!
//! Tokens come from real flows: [`OidcProvider::token_for`] runs an
//! authorization-code + PKCE flow over HTTP as a user;
//! [`OidcProvider::complete_authorization`] signs a user in for an
//! authorization URL some other OAuth client built (an MCP SDK's) and hands
//! back the redirect without following it — as do the Python and JavaScript
//! helpers [`python_login_helper`] and [`js_login_helper`] for SDK-driven
//! tests in those languages. Edge-case tokens (expired, wrong audience or
//! issuer, signed by a foreign key under the provider's kid) come from
//! [`OidcProvider::sign`] and [`OidcProvider::sign_with_foreign_key`].
//!
//! [`OidcProvider::rotate`] restarts the provider on the same port with a
//! new key (new kid): the old one is no longer published. Every request the
//! provider serves is logged, so [`OidcProvider::requests`] counts, say, JWKS
//! fetches. The provider is killed when the harness drops (and exits by
//! itself when its stdin closes, so it never outlives the test process).
//!
//! State (sessions, grants, dynamically registered clients) lives in the
//! provider's memory: a [`rotate`](OidcProvider::rotate) forgets it.

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    hash::{BuildHasher, Hasher},
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::{ChildStdin, Command, Stdio},
    sync::{Arc, Mutex, PoisonError},
    thread::{self, JoinHandle},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{
    Engine as _,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use process_wrap::std::{ChildWrapper, CommandWrap, ProcessGroup};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::peers;

pub mod id_jag;

/// The accounts the provider knows: `(name, email, groups)`.
const ACCOUNTS: [(&str, &str, &[&str]); 3] = [
    ("alice", "alice@example.test", &["eng"]),
    ("bob", "bob@example.test", &["sales"]),
    ("ops", "ops@example.test", &["operators"]),
];

/// The users that can sign in.
pub const USERS: [&str; 3] = ["alice", "bob", "ops"];

/// The pre-registered public client (PKCE S256, no client authentication).
pub const PUBLIC_CLIENT_ID: &str = "extpool-test";

/// The public client's registered redirect URI; as a native client it may
/// use any port on it (`http://127.0.0.1:<port>/callback`, RFC 8252).
pub const PUBLIC_CLIENT_REDIRECT_URI: &str = "http://127.0.0.1/callback";

/// The pre-registered confidential client, for the client-credentials grant
/// (HTTP Basic authentication).
pub const SERVICE_CLIENT_ID: &str = "extpool-service";

/// [`SERVICE_CLIENT_ID`]'s secret.
pub const SERVICE_CLIENT_SECRET: &str = "extpool-service-secret";

/// The pre-registered confidential client that may exchange tokens (RFC
/// 8693; HTTP Basic authentication): a gateway's own client.
pub const GATEWAY_CLIENT_ID: &str = "extpool-gateway";

/// [`GATEWAY_CLIENT_ID`]'s secret.
pub const GATEWAY_CLIENT_SECRET: &str = "extpool-gateway-secret";

/// RFC 8693's grant type, as the provider's request log writes it.
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// Where the provider publishes its JWKS.
pub const JWKS_PATH: &str = "/jwks";

/// The OIDC discovery document's path.
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";

/// The scope [`OidcProvider::token_for`] asks for (`mcp` lands in the access
/// token; any other non-OpenID scope a client asks for would too).
pub const TOKEN_FOR_SCOPE: &str = "openid email groups mcp";

/// How long the provider may take to print its `listening` line.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// Bound on every HTTP request the harness makes.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// How many redirects and form posts a sign-in may take.
const MAX_STEPS: usize = 20;

/// `oidc/provider.mjs`: the Node script that runs the provider.
pub fn provider_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("oidc/provider.mjs")
}

/// `oidc/login.py`: `complete_authorization(authorization_url, user) -> str`
/// for Python tests (standard library only; also `python login.py URL USER`,
/// printing the redirect URL). Import it by adding its directory to
/// `sys.path` (or `PYTHONPATH`).
pub fn python_login_helper() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("oidc/login.py")
}

/// `oidc/login.mjs`: `completeAuthorization(authorizationUrl, user)` for
/// JavaScript tests (global `fetch` only; also `node login.mjs URL USER`,
/// printing the redirect URL). Import it by its file URL.
pub fn js_login_helper() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("oidc/login.mjs")
}

/// The email the provider gives `user`, if it is one of [`USERS`].
pub fn email_of(user: &str) -> Option<&'static str> {
    ACCOUNTS
        .iter()
        .find(|(name, ..)| *name == user)
        .map(|(_, email, _)| *email)
}

/// The groups the provider gives `user`, if it is one of [`USERS`].
pub fn groups_of(user: &str) -> Option<&'static [&'static str]> {
    ACCOUNTS
        .iter()
        .find(|(name, ..)| *name == user)
        .map(|(.., groups)| *groups)
}

/// An RSA signing key as `provider.mjs genkeys` writes it.
struct SigningKey {
    kid: String,
    /// PKCS#1 DER of the private key.
    der: Vec<u8>,
    /// The private JWK (what the provider signs with).
    private_jwk: Value,
    /// The public JWK (what the JWKS publishes).
    public_jwk: Value,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    fn from_generated(generated: &Value) -> Self {
        let field = |name: &str| {
            generated[name]
                .as_str()
                .unwrap_or_else(|| panic!("genkeys output without {name}: {generated}"))
                .to_owned()
        };
        let private_jwk = generated["jwk"].clone();
        let public_jwk = json!({
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": field("kid"),
            "n": private_jwk["n"],
            "e": private_jwk["e"],
        });
        Self {
            kid: field("kid"),
            der: STANDARD
                .decode(field("pkcs1_der"))
                .expect("genkeys: pkcs1_der is not base64"),
            private_jwk,
            public_jwk,
        }
    }

    fn encoding_key(&self) -> EncodingKey {
        EncodingKey::from_rsa_der(&self.der)
    }

    fn decoding_key(&self) -> DecodingKey {
        let part = |name: &str| {
            self.public_jwk[name]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        DecodingKey::from_rsa_components(&part("n"), &part("e"))
            .expect("the generated public key decodes")
    }
}

/// Runs `provider.mjs genkeys` for `count` fresh keys.
async fn generate_keys(dir: &Path, count: usize) -> Vec<SigningKey> {
    let out = dir.join(format!("genkeys-{}.json", random_token()));
    let output = tokio::process::Command::new(peers::node22())
        .arg(provider_script())
        .arg("genkeys")
        .arg(&out)
        .arg(count.to_string())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run node to generate keys: {e}"));
    assert!(
        output.status.success(),
        "provider.mjs genkeys failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&out).expect("genkeys wrote its keys");
    let _ = std::fs::remove_file(&out);
    let keys: Vec<Value> = serde_json::from_str(&text).expect("genkeys wrote JSON");
    keys.iter().map(SigningKey::from_generated).collect()
}

/// 32 bytes of per-call randomness, base64url (PKCE verifiers, states, kids).
/// Unpredictable enough for tests; not for secrets.
fn random_token() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut bytes = Vec::with_capacity(32);
    for round in 0..4u8 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(nanos);
        hasher.write_u8(round);
        bytes.extend_from_slice(&hasher.finish().to_le_bytes());
    }
    URL_SAFE_NO_PAD.encode(Sha256::digest(&bytes))
}

/// `application/x-www-form-urlencoded` of `pairs`.
fn form_encode(pairs: &[(&str, &str)]) -> String {
    fn encode(out: &mut String, text: &str) {
        for byte in text.bytes() {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                out.push(char::from(byte));
            } else {
                out.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    let mut out = String::new();
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode(&mut out, key);
        out.push('=');
        encode(&mut out, value);
    }
    out
}

/// The value of the first `name="<name>" value="…"` input in `html`.
fn form_field<'a>(html: &'a str, name: &str) -> Option<&'a str> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let len = html[start..].find('"')?;
    Some(&html[start..start + len])
}

/// The `action` of the first form in `html`.
fn form_action(html: &str) -> Option<String> {
    let form = html.find("<form")?;
    let tag_end = form + html[form..].find('>')?;
    let tag = &html[form..tag_end];
    let start = tag.find("action=\"")? + "action=\"".len();
    let len = tag[start..].find('"')?;
    Some(tag[start..start + len].replace("&amp;", "&"))
}

/// An authorization request a test drives by hand: see
/// [`OidcProvider::authorization_request`] and [`OidcProvider::exchange`].
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    /// The authorization URL to sign in at.
    pub url: String,
    /// The client the request is for.
    pub client_id: String,
    /// The redirect URI it names (the code comes back there).
    pub redirect_uri: String,
    /// The resource (RFC 8707) the token is for.
    pub resource: String,
    /// The `state` it carries.
    pub state: String,
    /// The PKCE code verifier (the URL carries its S256 challenge).
    pub verifier: String,
}

/// The provider's process: its own process group, killed (and reaped) on
/// drop; its stdin held open, since it exits when stdin closes.
#[derive(Debug)]
struct ProviderProcess {
    child: Box<dyn ChildWrapper>,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl ProviderProcess {
    /// Starts `provider.mjs serve` on `127.0.0.1:port` (0: any) and waits for
    /// its `listening` line; returns the process and the issuer.
    async fn spawn(port: u16, keys: &Path, log: &Path) -> (Self, String) {
        let settings = log.with_file_name("settings.json");
        let node = peers::node22();
        let package = peers::oidc_provider_package();
        let node_modules = package
            .parent()
            .expect("the package lies in node_modules")
            .to_path_buf();
        let mut command = Command::new(node);
        command
            .arg(provider_script())
            .arg("serve")
            .arg(node_modules)
            .arg(port.to_string())
            .arg(keys)
            .arg(log)
            .arg(settings)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut wrap = CommandWrap::from(command);
        wrap.wrap(ProcessGroup::leader());
        let mut child = wrap
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the OpenID provider (node): {e}"));
        let stdin = child.stdin().take();
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_reader = child.stderr().take().map(|mut err| {
            let text = stderr.clone();
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    text.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            })
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Some(out) = child.stdout().take() {
            thread::spawn(move || {
                let mut tx = Some(tx);
                // Keep draining after the line so the child never blocks.
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if let Some(issuer) = line.strip_prefix("listening ")
                        && let Some(tx) = tx.take()
                    {
                        let _ = tx.send(issuer.trim().to_owned());
                    }
                }
            });
        }
        let mut process = Self {
            child,
            stdin,
            stderr,
            stderr_reader,
        };
        match tokio::time::timeout(STARTUP_TIMEOUT, rx).await {
            Ok(Ok(issuer)) => (process, issuer),
            Ok(Err(_)) => {
                // Stdout closed: the process is gone; wait for it and for
                // the rest of its stderr.
                let status = process
                    .child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                if let Some(reader) = process.stderr_reader.take() {
                    let _ = reader.join();
                }
                panic!(
                    "the OpenID provider exited ({status}) before listening; stderr:\n{}",
                    process.stderr()
                );
            }
            Err(_) => panic!(
                "the OpenID provider did not listen within {STARTUP_TIMEOUT:?}; stderr:\n{}",
                process.stderr()
            ),
        }
    }

    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Kills the process group and reaps the leader.
    fn stop(&mut self) {
        self.stdin.take();
        if let Err(e) = self.child.kill() {
            tracing::debug!("killing the OpenID provider: {e}");
        }
        let _ = self.child.wait();
    }
}

impl Drop for ProviderProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A running OpenID provider (see the [module documentation](self)); killed
/// on drop.
#[derive(Debug)]
pub struct OidcProvider {
    issuer: String,
    port: u16,
    /// Keys, JWKS files and the request log.
    dir: tempfile::TempDir,
    log: PathBuf,
    key: SigningKey,
    foreign: SigningKey,
    generation: u32,
    process: ProviderProcess,
    http: reqwest::Client,
}

impl OidcProvider {
    /// Starts the provider on `127.0.0.1:0` with a fresh signing key and
    /// waits until it listens.
    ///
    /// # Panics
    ///
    /// When node 22 or `oidc-provider` is missing ("peer missing: … run
    /// scripts/peers.sh"), or the provider does not come up (the message
    /// carries its stderr).
    pub async fn start() -> Self {
        // Fail on a missing peer before anything else.
        peers::node22();
        peers::oidc_provider_package();
        let dir = tempfile::Builder::new()
            .prefix("extpool-oidc-")
            .tempdir()
            .expect("a temporary directory");
        let log = dir.path().join("requests.jsonl");
        let mut keys = generate_keys(dir.path(), 2).await.into_iter();
        let (Some(key), Some(foreign)) = (keys.next(), keys.next()) else {
            panic!("provider.mjs genkeys wrote fewer than 2 keys");
        };
        let jwks = write_jwks(dir.path(), 0, &key);
        let (process, issuer) = ProviderProcess::spawn(0, &jwks, &log).await;
        let port = issuer
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the provider announced an issuer without a port: {issuer}"));
        Self {
            issuer,
            port,
            dir,
            log,
            key,
            foreign,
            generation: 0,
            process,
            http: http_client(),
        }
    }

    /// The issuer identifier, `http://127.0.0.1:<port>` (no trailing slash).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The OIDC discovery document's URL.
    pub fn discovery_url(&self) -> String {
        format!("{}{DISCOVERY_PATH}", self.issuer)
    }

    /// The JWKS URL (what discovery names as `jwks_uri`).
    pub fn jwks_uri(&self) -> String {
        format!("{}{JWKS_PATH}", self.issuer)
    }

    /// The token endpoint's URL.
    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.issuer)
    }

    /// The authorization endpoint's URL.
    pub fn authorization_endpoint(&self) -> String {
        format!("{}/auth", self.issuer)
    }

    /// The kid of the key the provider signs with now.
    pub fn kid(&self) -> &str {
        &self.key.kid
    }

    /// The public JWK the provider publishes now (`kty`, `use`, `alg`,
    /// `kid`, `n`, `e`).
    pub fn public_jwk(&self) -> &Value {
        &self.key.public_jwk
    }

    /// The provider's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.process.child.id()
    }

    /// What the provider wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.process.stderr()
    }

    /// How many requests the provider has served on `path` (exactly, without
    /// the query), since [`start`](Self::start) and across
    /// [`rotate`](Self::rotate)s; e.g. `requests(JWKS_PATH)`. A request is
    /// counted before its response is sent.
    pub fn requests(&self, path: &str) -> usize {
        let Ok(text) = std::fs::read_to_string(&self.log) else {
            return 0;
        };
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|entry| entry["path"] == path)
            .count()
    }

    /// How many token exchanges (RFC 8693) the provider granted so far.
    pub fn token_exchanges(&self) -> usize {
        let Ok(text) = std::fs::read_to_string(&self.log) else {
            return 0;
        };
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|e| {
                e["path"] == "/token"
                    && e["grant_type"] == TOKEN_EXCHANGE_GRANT
                    && e["status"] == 200
            })
            .count()
    }

    /// Makes the tokens the next exchanges issue live `ttl` (whole seconds).
    pub fn set_exchange_ttl(&self, ttl: Duration) {
        self.change_settings(|s| s["exchange_ttl"] = json!(ttl.as_secs().max(1)));
    }

    /// Makes the provider refuse (`access_denied`) every exchange of
    /// `user`'s tokens from now on.
    pub fn refuse_exchanges_for(&self, user: &str) {
        self.change_settings(|s| {
            let mut refused = s["refuse_exchange"].as_array().cloned().unwrap_or_default();
            refused.push(json!(user));
            s["refuse_exchange"] = Value::Array(refused);
        });
    }

    fn change_settings(&self, change: impl FnOnce(&mut Value)) {
        let path = self.log.with_file_name("settings.json");
        let mut settings = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| json!({}));
        change(&mut settings);
        let temporary = path.with_extension("tmp");
        std::fs::write(&temporary, settings.to_string()).expect("writing the provider's settings");
        std::fs::rename(&temporary, &path).expect("replacing the provider's settings");
    }

    /// Every request served so far as `(method, path, status)`, in order.
    pub fn request_log(&self) -> Vec<(String, String, u16)> {
        let Ok(text) = std::fs::read_to_string(&self.log) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|entry| {
                (
                    entry["method"].as_str().unwrap_or_default().to_owned(),
                    entry["path"].as_str().unwrap_or_default().to_owned(),
                    entry["status"]
                        .as_u64()
                        .and_then(|s| u16::try_from(s).ok())
                        .unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Runs an authorization-code + PKCE (S256) flow over HTTP as the
    /// public client [`PUBLIC_CLIENT_ID`]: `user` signs in through the
    /// provider's interactions ([`complete_authorization`]), the code is
    /// exchanged with `resource` (RFC 8707), and the access token comes back
    /// — an RS256 JWT with `aud` = `resource` and `sub` = `user`, checked
    /// here against the current key.
    ///
    /// [`complete_authorization`]: Self::complete_authorization
    ///
    /// # Panics
    ///
    /// When any step fails (an unknown `user`, a `resource` that is not an
    /// absolute URI, …), with what the provider answered.
    pub async fn token_for(&self, user: &str, resource: &str) -> String {
        let request = self.authorization_request(resource);
        let redirect = self.complete_authorization(&request.url, user).await;
        let token = self.exchange(&request, &redirect).await;
        let claims = self.check_jwt(&token, resource);
        assert_eq!(claims["sub"], user, "sub of {claims}");
        token
    }

    /// A fresh authorization request of the public client
    /// [`PUBLIC_CLIENT_ID`] for `resource` (scope [`TOKEN_FOR_SCOPE`],
    /// redirect URI [`PUBLIC_CLIENT_REDIRECT_URI`]), for a test that signs
    /// in some other way (the Python or JavaScript helper) and then calls
    /// [`exchange`](Self::exchange).
    pub fn authorization_request(&self, resource: &str) -> AuthorizationRequest {
        self.authorization_request_for(PUBLIC_CLIENT_ID, PUBLIC_CLIENT_REDIRECT_URI, resource)
    }

    /// A fresh authorization request (PKCE S256, a random `state`, scope
    /// [`TOKEN_FOR_SCOPE`]) of any public client — one registered
    /// dynamically, say — with its `redirect_uri`, for `resource`.
    pub fn authorization_request_for(
        &self,
        client_id: &str,
        redirect_uri: &str,
        resource: &str,
    ) -> AuthorizationRequest {
        let verifier = random_token();
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state = random_token();
        let url = reqwest::Url::parse_with_params(
            &self.authorization_endpoint(),
            [
                ("client_id", client_id),
                ("response_type", "code"),
                ("redirect_uri", redirect_uri),
                ("scope", TOKEN_FOR_SCOPE),
                ("state", &state),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("resource", resource),
            ],
        )
        .unwrap_or_else(|e| panic!("an authorization URL for {resource}: {e}"))
        .to_string();
        AuthorizationRequest {
            url,
            client_id: client_id.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            resource: resource.to_owned(),
            state,
            verifier,
        }
    }

    /// Exchanges the code in `redirect` (the URL the provider redirected to
    /// after `request`) for an access token, as `request`'s public client:
    /// checks `state` and the RFC 9207 `iss`, sends the PKCE verifier and
    /// the `resource`, and returns the access token (a JWT the current key
    /// signed, `aud` = the resource).
    ///
    /// # Panics
    ///
    /// When `redirect` carries an error or a wrong state, or the provider
    /// refuses the code.
    pub async fn exchange(&self, request: &AuthorizationRequest, redirect: &str) -> String {
        let params = query_params(redirect);
        if let Some(error) = params.get("error") {
            panic!(
                "authorization failed: {error} ({}); redirect {redirect}",
                params
                    .get("error_description")
                    .map(String::as_str)
                    .unwrap_or_default()
            );
        }
        assert_eq!(
            params.get("state"),
            Some(&request.state),
            "state mismatch in {redirect}"
        );
        assert_eq!(
            params.get("iss").map(String::as_str),
            Some(self.issuer()),
            "RFC 9207 iss in {redirect}"
        );
        let code = params
            .get("code")
            .unwrap_or_else(|| panic!("no code in {redirect}"));
        let body = self
            .token_request(
                &[
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", &request.redirect_uri),
                    ("client_id", &request.client_id),
                    ("code_verifier", &request.verifier),
                    ("resource", &request.resource),
                ],
                None,
            )
            .await;
        let token = access_token(&body);
        self.check_jwt(&token, &request.resource);
        token
    }

    /// A client-credentials access token of [`SERVICE_CLIENT_ID`] for
    /// `resource`: an RS256 JWT with `aud` = `resource`, `sub` = the client
    /// id and scope `mcp`.
    ///
    /// # Panics
    ///
    /// When the provider refuses.
    pub async fn service_token(&self, resource: &str) -> String {
        let body = self
            .token_request(
                &[
                    ("grant_type", "client_credentials"),
                    ("resource", resource),
                    ("scope", "mcp"),
                ],
                Some((SERVICE_CLIENT_ID, SERVICE_CLIENT_SECRET)),
            )
            .await;
        let token = access_token(&body);
        self.check_jwt(&token, resource);
        token
    }

    /// Signs `user` in for `authorization_url` — built by any OAuth client,
    /// e.g. an MCP SDK's auth flow — the way a browser would: redirects on
    /// the provider are followed with its cookies kept, the login form is
    /// posted with `user`, consent is given. Returns the first redirect that
    /// leaves the provider (the client's redirect URI with `code`, `state`
    /// and `iss`, or with `error`) WITHOUT following it, so the test can
    /// hand the code to its client.
    ///
    /// # Panics
    ///
    /// When the provider answers with an error page (an invalid client or
    /// redirect URI, say) or the sign-in does not finish (an unknown user).
    pub async fn complete_authorization(&self, authorization_url: &str, user: &str) -> String {
        let origin = origin_of(authorization_url);
        let mut cookies: BTreeMap<String, String> = BTreeMap::new();
        let mut url = authorization_url.to_owned();
        let mut form: Option<String> = None;
        for _ in 0..MAX_STEPS {
            let mut request = match &form {
                Some(body) => self
                    .http
                    .post(&url)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(body.clone()),
                None => self.http.get(&url),
            };
            if !cookies.is_empty() {
                let header: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
                request = request.header("cookie", header.join("; "));
            }
            let response = request
                .send()
                .await
                .unwrap_or_else(|e| panic!("sign-in request {url}: {e}"));
            for value in response.headers().get_all("set-cookie") {
                let Ok(value) = value.to_str() else { continue };
                let pair = value.split(';').next().unwrap_or_default();
                let Some((name, value)) = pair.split_once('=') else {
                    continue;
                };
                let (name, value) = (name.trim(), value.trim());
                if value.is_empty() {
                    cookies.remove(name);
                } else {
                    cookies.insert(name.to_owned(), value.to_owned());
                }
            }
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get("location")
                    .and_then(|l| l.to_str().ok())
                    .unwrap_or_else(|| panic!("redirect without a location from {url}"))
                    .to_owned();
                let next = reqwest::Url::parse(&url)
                    .and_then(|base| base.join(&location))
                    .unwrap_or_else(|e| panic!("bad location {location} from {url}: {e}"));
                if origin_of(next.as_str()) != origin {
                    return next.to_string();
                }
                url = next.to_string();
                form = None;
                continue;
            }
            let html = response.text().await.unwrap_or_default();
            let prompt = if status.is_success() {
                form_field(&html, "prompt")
            } else {
                None
            };
            let (Some(prompt), Some(action)) = (prompt, form_action(&html)) else {
                panic!(
                    "signing {user} in: unexpected answer {status} from {url}:\n{}",
                    html.chars().take(2000).collect::<String>()
                );
            };
            let body = if prompt == "login" {
                form_encode(&[("prompt", prompt), ("login", user), ("password", "any")])
            } else {
                form_encode(&[("prompt", prompt)])
            };
            url = reqwest::Url::parse(&url)
                .and_then(|base| base.join(&action))
                .unwrap_or_else(|e| panic!("bad form action {action} at {url}: {e}"))
                .to_string();
            form = Some(body);
        }
        panic!(
            "signing {user} in: no redirect out of the provider after {MAX_STEPS} steps (is {user} one of {USERS:?}?)"
        )
    }

    /// Claims like those of the access tokens the provider issues to `user`
    /// for `resource` — `iss`, `sub`, `aud`, `iat`, `exp` (an hour on),
    /// `jti`, `client_id`, `scope`, `email`, `groups` — for
    /// [`sign`](Self::sign) after changing what the test is about.
    pub fn claims_for(&self, user: &str, resource: &str) -> Value {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        json!({
            "iss": self.issuer,
            "sub": user,
            "aud": resource,
            "iat": now,
            "exp": now + 3600,
            "jti": random_token(),
            "client_id": PUBLIC_CLIENT_ID,
            "scope": "mcp",
            "email": email_of(user),
            "groups": groups_of(user).unwrap_or_default(),
        })
    }

    /// Signs `claims` as the provider would: RS256 with its current key,
    /// header `kid` = [`kid`](Self::kid) and `typ: at+jwt`.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_with_header(&self.access_token_header(), claims)
    }

    /// Signs `claims` with the provider's current key under `header` as
    /// given (its `alg` must be RS256; set `kid` yourself, or not).
    ///
    /// # Panics
    ///
    /// When `header.alg` is not an RSA algorithm.
    pub fn sign_with_header(&self, header: &Header, claims: &Value) -> String {
        jsonwebtoken::encode(header, claims, &self.key.encoding_key())
            .unwrap_or_else(|e| panic!("signing a JWT: {e}"))
    }

    /// Signs `claims` with a key the provider never published, under the
    /// provider's current kid (a forged, "re-signed" token: right kid,
    /// wrong signature).
    pub fn sign_with_foreign_key(&self, claims: &Value) -> String {
        jsonwebtoken::encode(
            &self.access_token_header(),
            claims,
            &self.foreign.encoding_key(),
        )
        .unwrap_or_else(|e| panic!("signing a JWT: {e}"))
    }

    /// Verifies `token` with the provider's current key as a resource server
    /// for `audience` would (signature, `iss`, `aud`, `exp`) and returns its
    /// claims.
    ///
    /// # Errors
    ///
    /// What `jsonwebtoken` finds wrong: a bad signature (another key), an
    /// expired token, a wrong issuer or audience, a missing claim.
    pub fn verify(
        &self,
        token: &str,
        audience: &str,
    ) -> Result<Value, jsonwebtoken::errors::Error> {
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        jsonwebtoken::decode::<Value>(token, &self.key.decoding_key(), &validation)
            .map(|data| data.claims)
    }

    /// Restarts the provider on the same port with a new signing key (a new
    /// kid): from now on it signs with, and its JWKS publishes, only the new
    /// key. Sessions, grants and registered clients are forgotten; the
    /// request log carries on.
    ///
    /// # Panics
    ///
    /// When the new process does not come up (the port taken meanwhile, say).
    pub async fn rotate(&mut self) {
        let key = generate_keys(self.dir.path(), 1)
            .await
            .into_iter()
            .next()
            .expect("genkeys wrote a key");
        self.generation += 1;
        let jwks = write_jwks(self.dir.path(), self.generation, &key);
        self.process.stop();
        let (process, issuer) = ProviderProcess::spawn(self.port, &jwks, &self.log).await;
        assert_eq!(issuer, self.issuer, "the provider came back elsewhere");
        self.process = process;
        self.key = key;
        // Nothing pooled may point at the old process.
        self.http = http_client();
    }

    /// Stops the provider (an outage: nothing answers on its port until
    /// the next [`rotate`](Self::rotate) starts it again). The harness
    /// still signs tokens ([`sign`](Self::sign)).
    pub fn stop(&mut self) {
        self.process.stop();
    }

    fn access_token_header(&self) -> Header {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.key.kid.clone());
        header.typ = Some("at+jwt".to_owned());
        header
    }

    /// POSTs a token request; returns the JSON answer (panics on an error).
    async fn token_request(&self, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> Value {
        let mut request = self
            .http
            .post(self.token_endpoint())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_encode(form));
        if let Some((user, password)) = basic {
            request = request.basic_auth(user, Some(password));
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("token request: {e}"));
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        assert!(
            status.is_success(),
            "token request failed ({status}): {text}"
        );
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("token response {text}: {e}"))
    }

    /// Checks that `token` is a JWT the current key signed for `resource`.
    fn check_jwt(&self, token: &str, resource: &str) -> Value {
        assert_eq!(token.split('.').count(), 3, "not a JWT: {token}");
        let header = jsonwebtoken::decode_header(token).expect("a JWT header");
        assert_eq!(header.kid.as_deref(), Some(self.kid()), "kid of {header:?}");
        let claims = self
            .verify(token, resource)
            .unwrap_or_else(|e| panic!("the issued access token does not verify: {e}"));
        assert_eq!(claims["aud"], resource, "aud of {claims}");
        claims
    }
}

/// A client that follows no redirect, uses no proxy and keeps no idle
/// connection (the provider may restart under it).
fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .pool_max_idle_per_host(0)
        .timeout(HTTP_TIMEOUT)
        .build()
        .expect("an HTTP client")
}

/// Writes the provider's JWKS file (`{"keys": [private JWK]}`) for `key`.
fn write_jwks(dir: &Path, generation: u32, key: &SigningKey) -> PathBuf {
    let path = dir.join(format!("jwks-{generation}.json"));
    std::fs::write(&path, json!({ "keys": [key.private_jwk] }).to_string())
        .expect("writing the JWKS file");
    path
}

/// `scheme://host:port` of `url`.
fn origin_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_else(|e| panic!("not a URL: {url}: {e}"))
}

/// The query parameters of `url`.
fn query_params(url: &str) -> HashMap<String, String> {
    reqwest::Url::parse(url)
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

/// `access_token` of a token response.
fn access_token(body: &Value) -> String {
    body["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no access_token in {body}"))
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_encoded() {
        assert_eq!(
            form_encode(&[("a b", "x/y:z"), ("c", "~-._")]),
            "a%20b=x%2Fy%3Az&c=~-._"
        );
    }

    #[test]
    fn form_fields_are_found() {
        let html = r#"<p><form autocomplete="off" action="http://h/interaction/u?a=1&amp;b=2" method="post"><input type="hidden" name="prompt" value="login"/>"#;
        assert_eq!(form_field(html, "prompt"), Some("login"));
        assert_eq!(
            form_action(html).as_deref(),
            Some("http://h/interaction/u?a=1&b=2")
        );
    }
}
