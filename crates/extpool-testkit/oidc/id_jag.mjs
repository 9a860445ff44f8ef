// The enterprise IdP's side of enterprise-managed authorization (the MCP
// authorization extension's identity assertion authorization grant,
// "ID-JAG"), for the tests' oidc-provider: the handler provider.mjs's
// token-exchange grant (registered through oidc-provider's own extension
// API, `provider.registerGrantType`) hands the requests with
// `requested_token_type=urn:ietf:params:oauth:token-type:id-jag`:
// - the client authenticates as registered (the provider does that before
//   the handler runs) and must be allowed the token-exchange grant;
// - `subject_token` is an access token this provider issued
//   (`subject_token_type=…:access_token`: an RS256 JWT signed by one of its
//   keys, with its issuer, a subject and an unexpired `exp`), or an ID token
//   (`…:id_token`, the same checks);
// - `audience` (the resource's authorization server) and `resource` (the
//   MCP server) are required;
// - the answer is an ID-JAG: an RS256 JWT typed `oauth-id-jag+jwt` with
//   `iss`, `sub`, `aud` = audience, `client_id` = the requesting client's id
//   (the tests register the gateway under one id at both servers), `jti`,
//   `iat`, `exp`, `resource`, `scope` when asked; `issued_token_type` =
//   id-jag, `token_type` = `N_A`.
//
// Policy, read on every request from `id_jag_policy.json` in STATE_DIR
// (the request log's directory), written by the Rust harness:
// `{"deny": [subjects refused with access_denied], "ttl": seconds}`.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

export const ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
const SUBJECT_TYPES = [
  "urn:ietf:params:oauth:token-type:access_token",
  "urn:ietf:params:oauth:token-type:id_token",
];
const DEFAULT_TTL = 300;

function refuse(ctx, error, description) {
  ctx.status = 400;
  ctx.body = { error, error_description: description };
}

function readPolicy(stateDir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(stateDir, "id_jag_policy.json"), "utf8"));
  } catch {
    return {};
  }
}

// The claims of `token` when one of `keys` signed it (RS256) for `issuer`
// and it has not expired; otherwise null.
function verifiedClaims(token, keys, issuer) {
  const parts = typeof token === "string" ? token.split(".") : [];
  if (parts.length !== 3) return null;
  try {
    const header = JSON.parse(Buffer.from(parts[0], "base64url").toString("utf8"));
    const claims = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8"));
    const key = keys.get(header.kid);
    if (header.alg !== "RS256" || !key) return null;
    const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
    const ok = crypto.verify("sha256", signed, key, Buffer.from(parts[2], "base64url"));
    const now = Math.floor(Date.now() / 1000);
    if (!ok || claims.iss !== issuer || !claims.sub || !(claims.exp > now)) return null;
    return claims;
  } catch {
    return null;
  }
}

function signJwt(header, claims, key) {
  const encode = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const input = `${encode(header)}.${encode(claims)}`;
  const signature = crypto.sign("sha256", Buffer.from(input), key).toString("base64url");
  return `${input}.${signature}`;
}

// The handler of ID-JAG requests (the token-exchange grant's params
// parsed, the client authenticated). `jwks` is the provider's private JWKS.
export function idJagHandler({ issuer, jwks, stateDir }) {
  const signing = jwks.keys[0];
  const privateKey = crypto.createPrivateKey({ key: signing, format: "jwk" });
  const publicKeys = new Map(
    jwks.keys.map((jwk) => [
      jwk.kid,
      crypto.createPublicKey(crypto.createPrivateKey({ key: jwk, format: "jwk" })),
    ]),
  );

  return async function handler(ctx) {
    const params = ctx.oidc.params;
    if (!SUBJECT_TYPES.includes(params.subject_token_type)) {
      return refuse(ctx, "invalid_request", "unsupported subject_token_type");
    }
    if (!params.audience || !params.resource) {
      return refuse(ctx, "invalid_request", "audience and resource are required");
    }
    const subject = verifiedClaims(params.subject_token, publicKeys, issuer);
    if (!subject) {
      return refuse(ctx, "invalid_grant", "the subject token is not valid");
    }
    const policy = readPolicy(stateDir);
    if ((policy.deny || []).includes(subject.sub)) {
      return refuse(ctx, "access_denied", "policy refuses this user an ID-JAG");
    }
    const now = Math.floor(Date.now() / 1000);
    const ttl = Number(policy.ttl) > 0 ? Number(policy.ttl) : DEFAULT_TTL;
    const claims = {
      iss: issuer,
      sub: subject.sub,
      aud: params.audience,
      client_id: ctx.oidc.client.clientId,
      jti: crypto.randomUUID(),
      iat: now,
      exp: now + ttl,
      resource: params.resource,
      ...(subject.email ? { email: subject.email } : {}),
      ...(params.scope ? { scope: params.scope } : {}),
    };
    const header = { alg: "RS256", kid: signing.kid, typ: "oauth-id-jag+jwt" };
    ctx.body = {
      access_token: signJwt(header, claims, privateKey),
      issued_token_type: ID_JAG_TOKEN_TYPE,
      token_type: "N_A",
      expires_in: ttl,
      ...(params.scope ? { scope: params.scope } : {}),
    };
  };
}
