// A real OpenID provider for extpool's identity tests: panva's
// `oidc-provider` (installed by scripts/peers.sh into .peers/node_modules),
// configured the way the gateway's tests need it. Driven by the Rust
// harness `extpool_testkit::oidc`.
//
//   node provider.mjs serve NODE_MODULES PORT KEYS_FILE REQUEST_LOG [SETTINGS_FILE]
//       Starts the provider on 127.0.0.1:PORT (0: any free port), issuer
//       http://127.0.0.1:<port>, signing with the private JWKs in KEYS_FILE
//       ({"keys": [RS256 JWK with kid, ...]}; /jwks publishes their public
//       parts). Prints `listening <issuer>` on stdout once it accepts
//       connections. Every request is appended to REQUEST_LOG as a JSON line
//       {"method", "path", "status", "grant_type"} before its response is
//       sent. SETTINGS_FILE (read at each token exchange, if it exists) is
//       {"exchange_ttl": seconds, "refuse_exchange": [subject, ...]}. Exits
//       when its stdin closes.
//   node provider.mjs genkeys OUT_FILE COUNT
//       Writes COUNT fresh RSA-2048 signing keys to OUT_FILE as a JSON array
//       of {"kid", "jwk" (private, alg RS256, use sig), "pkcs1_der" (base64),
//       "pem" (PKCS#1)}.
//
// What the provider offers:
// - accounts alice (groups ["eng"]), bob (["sales"]) and ops
//   (["operators"]), each with `email`; logins go through the provider's own
//   development interactions (/interaction/<uid>: a login form taking any
//   login name, then a consent form);
// - open dynamic client registration (RFC 7591);
// - resource indicators (RFC 8707): any absolute URI is a resource; its
//   access tokens are RS256 JWTs (RFC 9068) with `aud` = the resource, the
//   requested non-OpenID scopes, and the account's `email` and `groups`;
// - client credentials; PKCE S256 required of public clients;
// - token exchange (RFC 8693), registered through oidc-provider's own
//   `registerGrantType`: a confidential client sends a subject_token (an
//   access token this provider signed, still valid) and gets an access
//   token for `resource` (a JWT with `aud` = `audience` if given, else the
//   resource) for the same subject, with `act: {sub: <client id>}` (the
//   subject token's own `act` nested inside: the delegation chain);
//   refused with `access_denied` for the subjects SETTINGS_FILE lists;
//   with `requested_token_type` = ID-JAG it issues ID-JAGs instead
//   (enterprise-managed authorization, id_jag.mjs);
// - pre-registered clients: `extpool-test` (public, native: any loopback
//   port on http://127.0.0.1/callback, per RFC 8252) and `extpool-service`
//   (confidential, secret `extpool-service-secret`, client_credentials),
//   `extpool-gateway` (confidential, secret `extpool-gateway-secret`,
//   token exchange).
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { pathToFileURL } from "node:url";

import { ID_JAG_TOKEN_TYPE, idJagHandler } from "./id_jag.mjs";

const ACCOUNTS = {
  alice: { email: "alice@example.test", groups: ["eng"] },
  bob: { email: "bob@example.test", groups: ["sales"] },
  ops: { email: "ops@example.test", groups: ["operators"] },
};

// The scopes every resource accepts besides what a client asks for.
const BASE_RESOURCE_SCOPES = ["mcp", "mcp:read", "mcp:write", "mcp:tools"];
const OIDC_SCOPES = ["openid", "offline_access", "email", "groups"];

function die(message) {
  process.stderr.write(`provider.mjs: ${message}\n`);
  process.exit(2);
}

function genkeys(outFile, count) {
  const keys = [];
  for (let i = 0; i < count; i += 1) {
    const { privateKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
    const kid = crypto.randomBytes(9).toString("base64url");
    const jwk = { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" };
    keys.push({
      kid,
      jwk,
      pkcs1_der: privateKey.export({ type: "pkcs1", format: "der" }).toString("base64"),
      pem: privateKey.export({ type: "pkcs1", format: "pem" }),
    });
  }
  fs.writeFileSync(outFile, JSON.stringify(keys));
}

// Non-OpenID scopes named by the request or the grant being exchanged:
// every one of them is granted for any resource.
function requestedResourceScopes(ctx) {
  const scopes = new Set(BASE_RESOURCE_SCOPES);
  const sources = [
    ctx.oidc?.params?.scope,
    ctx.oidc?.entities?.AuthorizationCode?.scope,
    ctx.oidc?.entities?.RefreshToken?.scope,
  ];
  for (const source of sources) {
    if (typeof source !== "string") continue;
    for (const scope of source.split(" ")) {
      if (scope && !OIDC_SCOPES.includes(scope)) scopes.add(scope);
    }
  }
  return [...scopes].join(" ");
}

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

function readSettings(file) {
  if (!file || !fs.existsSync(file)) return {};
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

// The claims of `jwt` when one of `keys` (private JWKs; their public
// parts) signed it (RS256) for `issuer` and it has not expired.
function verifiedClaims(jwt, keys, issuer) {
  const parts = typeof jwt === "string" ? jwt.split(".") : [];
  if (parts.length !== 3) return undefined;
  const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
  const signature = Buffer.from(parts[2], "base64url");
  const good = keys.some((jwk) => {
    const { d, p, q, dp, dq, qi, ...pub } = jwk;
    const key = crypto.createPublicKey({ key: pub, format: "jwk" });
    return crypto.verify("RSA-SHA256", signed, key, signature);
  });
  if (!good) return undefined;
  const claims = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8"));
  if (claims.iss !== issuer || !(claims.exp > Date.now() / 1000)) return undefined;
  return claims;
}

// RFC 8693 at the token endpoint, through oidc-provider's extension API.
// `idJag` answers the requests for an ID-JAG.
function registerTokenExchange(provider, errors, keys, issuer, settingsFile, idJag) {
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx) => {
      const { params, client } = ctx.oidc;
      if (params.requested_token_type === ID_JAG_TOKEN_TYPE) return idJag(ctx);
      if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
        throw new errors.InvalidRequest("subject_token_type must be an access token");
      }
      const subject = verifiedClaims(params.subject_token, keys, issuer);
      if (!subject) throw new errors.InvalidGrant("subject_token is not a valid access token");
      const settings = readSettings(settingsFile);
      if ((settings.refuse_exchange || []).includes(subject.sub)) {
        throw new errors.AccessDenied(`${subject.sub} may not be delegated`);
      }
      if (!params.resource) throw new errors.InvalidTarget("resource is required");
      const ttl = settings.exchange_ttl || 3600;
      const token = new provider.AccessToken({
        accountId: subject.sub,
        client,
        scope: params.scope || "mcp",
        gty: "token_exchange",
      });
      token.resourceServer = {
        scope: params.scope || "mcp",
        audience: params.audience || params.resource,
        accessTokenTTL: ttl,
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      };
      ctx.exchangeAct = subject.act
        ? { sub: client.clientId, act: subject.act }
        : { sub: client.clientId };
      const value = await token.save();
      ctx.body = {
        access_token: value,
        issued_token_type: ACCESS_TOKEN_TYPE,
        token_type: "Bearer",
        expires_in: token.expiration,
        scope: token.scope,
      };
    },
    ["subject_token", "subject_token_type", "actor_token", "actor_token_type",
      "requested_token_type", "resource", "audience", "scope"],
  );
}

async function serve(nodeModules, port, keysFile, requestLog, settingsFile) {
  const pkg = path.join(nodeModules, "oidc-provider");
  if (!fs.existsSync(path.join(pkg, "package.json"))) {
    die(`oidc-provider not found in ${nodeModules}; run scripts/peers.sh`);
  }
  const main = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).main;
  const { default: Provider, errors } = await import(pathToFileURL(path.join(pkg, main)).href);
  const jwks = JSON.parse(fs.readFileSync(keysFile, "utf8"));

  // Listen first: with port 0 the issuer is only known once bound.
  const server = http.createServer();
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const issuer = `http://127.0.0.1:${server.address().port}`;

  const provider = new Provider(issuer, {
    jwks,
    // Signed cookies (any fixed secret does for a test provider).
    cookies: { keys: ["extpool-testkit-oidc-cookie-secret"] },
    clients: [
      {
        client_id: "extpool-test",
        application_type: "native",
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: ["http://127.0.0.1/callback"],
      },
      {
        client_id: "extpool-service",
        client_secret: "extpool-service-secret",
        token_endpoint_auth_method: "client_secret_basic",
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
      },
      {
        client_id: "extpool-gateway",
        client_secret: "extpool-gateway-secret",
        token_endpoint_auth_method: "client_secret_basic",
        grant_types: [TOKEN_EXCHANGE],
        response_types: [],
        redirect_uris: [],
      },
    ],
    scopes: OIDC_SCOPES,
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      groups: ["groups"],
    },
    async findAccount(_ctx, sub) {
      const account = ACCOUNTS[sub];
      if (!account) return undefined;
      return {
        accountId: sub,
        async claims() {
          return { sub, email: account.email, email_verified: true, groups: account.groups };
        },
      };
    },
    async extraTokenClaims(ctx, token) {
      const account = token.accountId && ACCOUNTS[token.accountId];
      if (!account) return undefined;
      const act = ctx?.exchangeAct ? { act: ctx.exchangeAct } : {};
      return { email: account.email, groups: account.groups, ...act };
    },
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A token request without `resource` still gets the resource the
        // authorization was for (a JWT), as MCP clients expect.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, resource) => ({
          scope: requestedResourceScopes(ctx),
          audience: resource,
          accessTokenTTL: 3600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        }),
      },
    },
    pkce: { required: (_ctx, client) => client.clientAuthMethod === "none" },
    routes: { jwks: "/jwks" },
    ttl: {
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL || 3600,
      ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL || 600,
      Grant: 3600,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: 86400,
      Session: 3600,
    },
  });

  // ID-JAG requests share the grant (see id_jag.mjs).
  const idJag = idJagHandler({ issuer, jwks, stateDir: path.dirname(requestLog) });
  registerTokenExchange(provider, errors, jwks.keys, issuer, settingsFile, idJag);

  provider.use(async (ctx, next) => {
    try {
      await next();
    } finally {
      // Before the response goes out: a client that saw the answer finds
      // its request in the log.
      fs.appendFileSync(
        requestLog,
        `${JSON.stringify({
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          grant_type: ctx.oidc?.params?.grant_type,
        })}\n`,
      );
    }
  });

  server.on("request", provider.callback());
  process.stdout.write(`listening ${issuer}\n`);
}

// Never outlive the test process: exit when stdin closes.
function exitWithStdin() {
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}

const [command, ...args] = process.argv.slice(2);
switch (command) {
  case "serve": {
    if (args.length < 4) die("usage: serve NODE_MODULES PORT KEYS_FILE REQUEST_LOG [SETTINGS_FILE]");
    const [nodeModules, port, keysFile, requestLog, settingsFile] = args;
    exitWithStdin();
    serve(nodeModules, Number(port), keysFile, requestLog, settingsFile).catch((e) => die(e.stack || String(e)));
    break;
  }
  case "genkeys": {
    if (args.length !== 2) die("usage: genkeys OUT_FILE COUNT");
    genkeys(args[0], Number(args[1]));
    break;
  }
  default:
    die("usage: provider.mjs serve|genkeys ...");
}
