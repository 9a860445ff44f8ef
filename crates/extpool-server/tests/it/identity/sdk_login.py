"""The Python MCP SDK logging in by itself to a gateway that takes an
issuer's tokens, for extpool's identity tests.

    python sdk_login.py URL USER LOGIN_HELPER

Connects to the MCP endpoint URL with no token, through the SDK's own
`OAuthClientProvider`: the SDK gets HTTP 401, reads the protected-resource
metadata the challenge names, discovers the authorization server, registers
itself dynamically (RFC 7591) and builds the authorization URL (PKCE,
`resource`). Its redirect handler signs USER in with the testkit's helper
(LOGIN_HELPER: oidc/login.py), as a person in a browser would; its callback
handler hands the code, state and iss of the redirect back to the SDK, which
exchanges the code and retries. Then it lists tools and calls
`mcp__testkit__echo` through the gateway.

Prints one JSON object per line: every HTTP exchange the SDK made
({"op": "http", "method", "url", "status"}), the authorization
({"op": "authorize", "redirect_uri", "client_id", "resource"}), then
{"op": "initialize"}, {"op": "list_tools"}, {"op": "call"} and the access
token's claims ({"op": "token", "claims": ...}; never the token itself).
"""

import base64
import json
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

# Never followed: the callback handler reads the code off the redirect.
REDIRECT_URI = "http://127.0.0.1:9/callback"


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Memory(TokenStorage):
    """Tokens and the registration, kept for this process only."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def claims_of(jwt: str) -> dict:
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def main(url: str, user: str, helper: str):
    sys.path.insert(0, str(Path(helper).parent))
    from login import complete_authorization

    redirect = {}

    async def redirect_handler(authorization_url: str) -> None:
        query = parse_qs(urlsplit(authorization_url).query)
        emit({
            "op": "authorize",
            "redirect_uri": query.get("redirect_uri", [None])[0],
            "client_id": query.get("client_id", [None])[0],
            "resource": query.get("resource", [None])[0],
            "scope": query.get("scope", [None])[0],
        })
        # The helper blocks (urllib): off the event loop.
        redirect["url"] = await anyio.to_thread.run_sync(complete_authorization, authorization_url, user)

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(redirect["url"]).query)
        if "error" in query:
            raise SystemExit(f"the provider refused the authorization: {redirect['url']}")
        return AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="extpool identity test (Python SDK)",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )

    async def on_response(response):
        emit({
            "op": "http",
            "method": response.request.method,
            "url": str(response.request.url),
            "status": response.status_code,
        })

    async with create_mcp_http_client(auth=provider) as http:
        http.event_hooks["response"].append(on_response)
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                init = await session.initialize()
                emit({"op": "initialize", "server": init.server_info.name})
                tools = await session.list_tools()
                emit({"op": "list_tools", "tools": [t.name for t in tools.tools]})
                r = await session.call_tool("mcp__testkit__echo", {"message": "hello from python"})
                texts = [c.text for c in r.content if getattr(c, "type", "") == "text"]
                emit({"op": "call", "is_error": bool(r.is_error), "text": texts})
    emit({"op": "token", "claims": claims_of(storage.tokens.access_token)})


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python sdk_login.py URL USER LOGIN_HELPER")
    anyio.run(main, *sys.argv[1:])
