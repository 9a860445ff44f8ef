// The TypeScript MCP SDK logging in by itself to a gateway that takes an
// issuer's tokens, for extpool's identity tests — the twin of sdk_login.py.
//
//   node sdk_login.mjs URL USER LOGIN_HELPER
//
// Connects to the MCP endpoint URL with no token, through the SDK's own
// auth support (`StreamableHTTPClientTransport` with an `authProvider`):
// the SDK gets HTTP 401, reads the protected-resource metadata the
// challenge names, discovers the authorization server, registers itself
// dynamically (RFC 7591) and builds the authorization URL (PKCE,
// `resource`), which it hands to `redirectToAuthorization`; there the
// testkit's helper (LOGIN_HELPER: oidc/login.mjs) signs USER in as a person
// in a browser would. The SDK then stops with `UnauthorizedError`, as it
// does for a browser redirect; the code of the redirect goes to
// `transport.finishAuth`, and a new transport connects with the token —
// the SDK's documented flow. Then it lists tools and calls
// `mcp__testkit__echo` through the gateway.
//
// Prints one JSON object per line: every HTTP exchange the SDK made
// ({"op": "http", "method", "url", "status"}), the authorization
// ({"op": "authorize", ...}), then "initialize", "list_tools", "call" and the
// access token's claims ({"op": "token", "claims": ...}; never the token).
// The SDK is imported from EXTPOOL_NODE_MODULES.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const nm = process.env.EXTPOOL_NODE_MODULES;
if (!nm) {
  console.error("set EXTPOOL_NODE_MODULES to the node_modules holding @modelcontextprotocol/sdk");
  process.exit(2);
}
const [url, user, helper] = process.argv.slice(2);
if (!url || !user || !helper) {
  console.error("usage: node sdk_login.mjs URL USER LOGIN_HELPER");
  process.exit(2);
}
const sdk = (rel) => import(pathToFileURL(join(nm, "@modelcontextprotocol/sdk/dist/esm", rel)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { UnauthorizedError } = await sdk("client/auth.js");
const { completeAuthorization } = await import(pathToFileURL(helper).href);

const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

// Never followed: the code is read off the redirect.
const REDIRECT_URI = "http://127.0.0.1:9/callback";

// Every HTTP exchange the SDK makes (its transport and its auth flow).
const fetchFn = async (input, init) => {
  const response = await fetch(input, init);
  const target = input instanceof Request ? input.url : String(input);
  emit({ op: "http", method: init?.method ?? (input instanceof Request ? input.method : "GET"), url: target, status: response.status });
  return response;
};

/** An OAuthClientProvider keeping everything in memory. */
class Provider {
  constructor() {
    this.stored = {};
    this.redirect = undefined;
  }
  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata() {
    return {
      client_name: "extpool identity test (TypeScript SDK)",
      redirect_uris: [REDIRECT_URI],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      // No scope of its own: the SDK asks for what the gateway's challenge
      // and metadata advertise (--auth-scope).
    };
  }
  state() {
    this.stored.state = crypto.randomUUID();
    return this.stored.state;
  }
  clientInformation() {
    return this.stored.client;
  }
  saveClientInformation(info) {
    this.stored.client = info;
  }
  tokens() {
    return this.stored.tokens;
  }
  saveTokens(tokens) {
    this.stored.tokens = tokens;
  }
  saveCodeVerifier(verifier) {
    this.stored.verifier = verifier;
  }
  codeVerifier() {
    return this.stored.verifier;
  }
  async redirectToAuthorization(authorizationUrl) {
    const q = authorizationUrl.searchParams;
    emit({
      op: "authorize",
      redirect_uri: q.get("redirect_uri"),
      client_id: q.get("client_id"),
      resource: q.get("resource"),
      scope: q.get("scope"),
    });
    this.redirect = new URL(await completeAuthorization(authorizationUrl.href, user));
  }
}

const provider = new Provider();
const transport = () => new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: fetchFn });
let client = new Client({ name: "extpool-identity-ts", version: "1.0.0" });
const refused = transport();
try {
  await client.connect(refused);
  throw new Error("connected without logging in: the gateway asked for no token");
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
}
const redirect = provider.redirect;
if (!redirect) throw new Error("the SDK never asked to redirect to the authorization server");
if (redirect.searchParams.get("error")) throw new Error(`the provider refused: ${redirect.href}`);
if (redirect.searchParams.get("state") !== provider.stored.state) throw new Error(`state mismatch in ${redirect.href}`);
// The transport that was refused knows where the metadata is.
await refused.finishAuth(redirect.searchParams.get("code"));
client = new Client({ name: "extpool-identity-ts", version: "1.0.0" });
await client.connect(transport());
emit({ op: "initialize", server: client.getServerVersion()?.name });
const tools = await client.listTools();
emit({ op: "list_tools", tools: tools.tools.map((t) => t.name) });
const r = await client.callTool({ name: "mcp__testkit__echo", arguments: { message: "hello from typescript" } });
emit({ op: "call", is_error: !!r.isError, text: r.content.filter((c) => c.type === "text").map((c) => c.text) });
await client.close();
const payload = provider.stored.tokens.access_token.split(".")[1];
emit({ op: "token", claims: JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) });
