// Logs a user in at the testkit's OpenID provider (oidc/provider.mjs) the
// way a person in a browser would, for tests whose OAuth client (the
// TypeScript MCP SDK's auth flow, say) built the authorization URL itself.
// Only Node's global fetch; cookies are kept by hand.
//
//   import { completeAuthorization } from ".../login.mjs";
//   const redirect = await completeAuthorization(authorizationUrl, "alice");
//   // redirect: the client's redirect URI with `code`, `state` and `iss`
//   // (or `error`), NOT followed: hand the code to the client.
//
//   node login.mjs AUTHORIZATION_URL USER   prints the redirect URL
//
// The provider's development interactions are driven as a browser would:
// every redirect on the provider's origin is followed, the login form
// (/interaction/<uid>, prompt "login") is posted with USER as the login,
// the consent form (prompt "consent") is accepted; the first redirect that
// leaves the provider's origin is the answer.
import { pathToFileURL } from "node:url";

const MAX_STEPS = 20;

function formField(html, name) {
  const match = html.match(new RegExp(`name="${name}" value="([^"]*)"`));
  return match?.[1];
}

function formAction(html) {
  const match = html.match(/<form[^>]*action="([^"]+)"/);
  return match?.[1]?.replaceAll("&amp;", "&");
}

/**
 * Drives the provider's interactions for `authorizationUrl` as `user` and
 * returns the final redirect URL (with `code` and `state`) without following it.
 * @param {string} authorizationUrl
 * @param {string} user
 * @returns {Promise<string>}
 */
export async function completeAuthorization(authorizationUrl, user) {
  const origin = new URL(authorizationUrl).origin;
  const jar = new Map();
  let url = authorizationUrl;
  let method = "GET";
  let body;
  for (let step = 0; step < MAX_STEPS; step += 1) {
    const headers = {};
    if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    if (body) headers["content-type"] = "application/x-www-form-urlencoded";
    const res = await fetch(url, { method, body, headers, redirect: "manual" });
    for (const cookie of res.headers.getSetCookie()) {
      const pair = cookie.split(";", 1)[0];
      const eq = pair.indexOf("=");
      if (eq <= 0) continue;
      const [name, value] = [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
      if (value) jar.set(name, value);
      else jar.delete(name);
    }
    if (res.status >= 300 && res.status < 400) {
      await res.arrayBuffer();
      const next = new URL(res.headers.get("location"), url);
      if (next.origin !== origin) return next.href;
      [url, method, body] = [next.href, "GET", undefined];
      continue;
    }
    const html = await res.text();
    const prompt = res.status === 200 ? formField(html, "prompt") : undefined;
    const action = formAction(html);
    if (!prompt || !action) {
      throw new Error(`unexpected answer ${res.status} from ${url}: ${html.slice(0, 2000)}`);
    }
    const form = prompt === "login"
      ? { prompt, login: user, password: "any" }
      : { prompt };
    [url, method, body] = [new URL(action, url).href, "POST", new URLSearchParams(form).toString()];
  }
  throw new Error(`no redirect out of ${origin} after ${MAX_STEPS} steps (is "${user}" an account?)`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [authorizationUrl, user] = process.argv.slice(2);
  if (!authorizationUrl || !user) {
    process.stderr.write("usage: node login.mjs AUTHORIZATION_URL USER\n");
    process.exit(2);
  }
  completeAuthorization(authorizationUrl, user).then(
    (redirect) => process.stdout.write(`${redirect}\n`),
    (e) => {
      process.stderr.write(`${e.stack || e}\n`);
      process.exit(1);
    },
  );
}
