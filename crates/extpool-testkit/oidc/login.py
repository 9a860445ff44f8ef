"""Logs a user in at the testkit's OpenID provider (oidc/provider.mjs) the way
a person in a browser would, for tests whose OAuth client (the Python MCP
SDK's auth flow, say) built the authorization URL itself. Only the standard
library; cookies are kept by hand; proxies from the environment are ignored.

    from login import complete_authorization
    redirect = complete_authorization(authorization_url, "alice")
    # redirect: the client's redirect URI with `code`, `state` and `iss`
    # (or `error`), NOT followed: hand the code to the client.

    python login.py AUTHORIZATION_URL USER   prints the redirect URL

The provider's development interactions are driven as a browser would: every
redirect on the provider's origin is followed, the login form
(/interaction/<uid>, prompt "login") is posted with USER as the login, the
consent form (prompt "consent") is accepted; the first redirect that leaves
the provider's origin is the answer.
"""

from __future__ import annotations

import re
import sys
import urllib.error
import urllib.parse
import urllib.request

MAX_STEPS = 20


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D102
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.netloc


def _open(url: str, data: bytes | None, cookies: dict[str, str]):
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    if cookies:
        request.add_header("Cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()))
    if data:
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        response = _OPENER.open(request, timeout=30)
    except urllib.error.HTTPError as error:  # 3xx (not followed) and 4xx/5xx
        response = error
    with response:
        return response.status, response.headers, response.read().decode("utf-8", "replace")


def complete_authorization(authorization_url: str, user: str) -> str:
    """Drives the provider's interactions for `authorization_url` as `user` and
    returns the final redirect URL (with `code` and `state`) without following it."""
    origin = _origin(authorization_url)
    cookies: dict[str, str] = {}
    url, data = authorization_url, None
    for _ in range(MAX_STEPS):
        status, headers, body = _open(url, data, cookies)
        for cookie in headers.get_all("Set-Cookie") or []:
            name, sep, value = cookie.split(";", 1)[0].partition("=")
            if not sep or not name.strip():
                continue
            if value.strip():
                cookies[name.strip()] = value.strip()
            else:
                cookies.pop(name.strip(), None)
        if 300 <= status < 400:
            url = urllib.parse.urljoin(url, headers["Location"])
            data = None
            if _origin(url) != origin:
                return url
            continue
        prompt = re.search(r'name="prompt" value="([^"]*)"', body) if status == 200 else None
        action = re.search(r'<form[^>]*action="([^"]+)"', body)
        if not prompt or not action:
            raise RuntimeError(f"unexpected answer {status} from {url}: {body[:2000]}")
        form = {"prompt": prompt.group(1)}
        if form["prompt"] == "login":
            form.update(login=user, password="any")
        url = urllib.parse.urljoin(url, action.group(1).replace("&amp;", "&"))
        data = urllib.parse.urlencode(form).encode()
    raise RuntimeError(f"no redirect out of the provider after {MAX_STEPS} steps (is {user!r} an account?)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python login.py AUTHORIZATION_URL USER")
    print(complete_authorization(sys.argv[1], sys.argv[2]))
