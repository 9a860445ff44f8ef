"""An MCP server on the Python `mcp` SDK that is also its own authorization
server and accepts only enterprise-managed authorization: the ID-JAG grant
(the RFC 7523 jwt-bearer grant carrying an identity assertion
authorization grant, SEP-990), as the SDK offers it with
`AuthSettings.identity_assertion_enabled`. For extpool's ID-JAG tests.

    python id_jag_server.py IDP_ISSUER CLIENT_ID CLIENT_SECRET LOG_FILE [TOKEN_TTL]

- The authorization server's issuer is the server's origin
  (`http://127.0.0.1:<port>`); the MCP endpoint is `<origin>/mcp`, its
  protected-resource metadata names the issuer.
- One pre-registered confidential client, CLIENT_ID / CLIENT_SECRET
  (`client_secret_basic`), may present ID-JAGs.
- An ID-JAG is accepted when the IdP (IDP_ISSUER; keys from its discovery's
  `jwks_uri`) signed it (RS256), typed `oauth-id-jag+jwt`, `aud` = this
  issuer, `client_id` = the authenticated client, `resource` = the MCP
  endpoint, unexpired, its `jti` unseen. The access token issued (opaque,
  TOKEN_TTL seconds, default 3600) is for the MCP endpoint, subject = the
  ID-JAG's `sub`; no refresh token.
- Tool `whoami` answers the calling token's subject and client.
- Every token request's outcome and every MCP request's subject are
  appended to LOG_FILE as JSON lines: {"event": "token", "sub"|"error"} and
  {"event": "mcp", "sub": subject or null}.

It binds 127.0.0.1 on a port the OS picks and prints one line
`LISTENING http://127.0.0.1:<port>/mcp`.
"""

from __future__ import annotations

import json
import secrets
import socket
import sys
import time
import urllib.request

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenError
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

ID_JAG_TYP = "oauth-id-jag+jwt"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def log(path: str, entry: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


class IdJagProvider:
    """The authorization server's side: the ID-JAG grant, nothing else."""

    def __init__(self, idp: str, issuer: str, resource: str, client: OAuthClientInformationFull, log_file: str, ttl: int):
        self.idp = idp
        self.issuer = issuer
        self.resource = resource
        self.client = client
        self.log_file = log_file
        self.ttl = ttl
        with urllib.request.urlopen(f"{idp}/.well-known/openid-configuration", timeout=30) as r:
            jwks_uri = json.load(r)["jwks_uri"]
        self.keys = jwt.PyJWKClient(jwks_uri, cache_keys=True)
        self.seen_jti: dict[str, int] = {}
        self.tokens: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.client if client_id == self.client.client_id else None

    def _refuse(self, error: str, description: str) -> TokenError:
        log(self.log_file, {"event": "token", "error": error})
        return TokenError(error=error, error_description=description)

    def _verify(self, assertion: str, client: OAuthClientInformationFull) -> dict:
        try:
            header = jwt.get_unverified_header(assertion)
            key = self.keys.get_signing_key_from_jwt(assertion)
            claims = jwt.decode(
                assertion,
                key.key,
                algorithms=["RS256"],
                audience=self.issuer,
                issuer=self.idp,
                options={"require": ["exp", "iat", "sub", "jti"]},
            )
        except jwt.PyJWTError as e:
            raise self._refuse("invalid_grant", f"the ID-JAG does not verify: {e}") from None
        if header.get("typ") != ID_JAG_TYP:
            raise self._refuse("invalid_grant", "not an ID-JAG (typ)")
        if claims.get("client_id") != client.client_id:
            raise self._refuse("invalid_grant", "the ID-JAG is for another client")
        if claims.get("resource") not in (None, self.resource):
            raise self._refuse("invalid_target", "the ID-JAG is for another resource")
        now = int(time.time())
        self.seen_jti = {j: exp for j, exp in self.seen_jti.items() if exp > now}
        if claims["jti"] in self.seen_jti:
            raise self._refuse("invalid_grant", "the ID-JAG was used already")
        self.seen_jti[claims["jti"]] = claims["exp"]
        return claims

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull, params) -> OAuthToken:
        claims = self._verify(params.assertion, client)
        scopes = claims["scope"].split(" ") if claims.get("scope") else []
        token = secrets.token_urlsafe(32)
        self.tokens[token] = AccessToken(
            token=token,
            client_id=client.client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.ttl,
            resource=self.resource,
            subject=claims["sub"],
        )
        log(self.log_file, {"event": "token", "sub": claims["sub"]})
        return OAuthToken(
            access_token=token,
            token_type="Bearer",
            expires_in=self.ttl,
            scope=" ".join(scopes) or None,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.tokens.get(token)
        if found is None or (found.expires_at is not None and found.expires_at <= time.time()):
            return None
        return found

    # Nothing else of an authorization server is offered.
    async def register_client(self, client_info):  # pragma: no cover
        raise NotImplementedError

    async def authorize(self, client, params):  # pragma: no cover
        raise NotImplementedError

    async def load_authorization_code(self, client, code):
        return None

    async def exchange_authorization_code(self, client, code):  # pragma: no cover
        raise TokenError(error="invalid_grant")

    async def load_refresh_token(self, client, refresh_token):
        return None

    async def exchange_refresh_token(self, client, refresh_token, scopes):  # pragma: no cover
        raise TokenError(error="invalid_grant")

    async def revoke_token(self, token):  # pragma: no cover
        return None


def main() -> None:
    if len(sys.argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    idp, client_id, client_secret, log_file = sys.argv[1:5]
    ttl = int(sys.argv[5]) if len(sys.argv) == 6 else 3600

    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    resource = f"{origin}/mcp"
    client = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=client_secret,
        token_endpoint_auth_method="client_secret_basic",
        grant_types=[JWT_BEARER],
        response_types=[],
        redirect_uris=None,
    )
    provider = IdJagProvider(idp, origin, resource, client, log_file, ttl)
    mcp = MCPServer(
        "extpool-testkit-id-jag",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=origin,
            resource_server_url=resource,
            validate_token_resource=True,
            identity_assertion_enabled=True,
        ),
    )

    @mcp.tool()
    def whoami() -> str:
        """The calling token's subject and client, as `sub client_id`."""
        token = get_access_token()
        return f"{token.subject} {token.client_id}" if token else "anonymous"

    app = mcp.streamable_http_app()

    from starlette.middleware.base import BaseHTTPMiddleware

    class LogMcp(BaseHTTPMiddleware):
        async def dispatch(self, request, call_next):
            response = await call_next(request)
            if request.url.path.startswith("/mcp"):
                user = request.scope.get("user")
                token = getattr(user, "access_token", None)
                log(log_file, {"event": "mcp", "sub": token.subject if token else None, "status": response.status_code})
            return response

    app.add_middleware(LogMcp)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"LISTENING {resource}", flush=True)
    anyio.run(lambda: server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
