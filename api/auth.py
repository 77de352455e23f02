"""Who is asking, for the HTTP API: Host/Origin checks (against DNS rebinding), forwarded headers only from a
trusted proxy, the bearer token's identity (db.store.writers.tokens) for writes, and for reads when read tokens exist
(a signed-in browser's session cookie, db.store.writers.sessions, counts as the token it was signed in with).

- MPSBENCH_ALLOWED_HOSTS: host names the server answers to, comma separated, besides localhost, 127.0.0.1 and
  ::1 ("*" allows any). A request whose Host names another host is refused with 403, and so is one whose
  Origin (when a browser sends one) is not this server's own scheme, host and port: a page on evil.example that
  rebinds its name to 127.0.0.1, or a page on another port of localhost, gets nothing.
- MPSBENCH_TRUSTED_PROXIES: addresses (or networks) of reverse proxies whose X-Forwarded-Host and
  X-Forwarded-Proto are believed; from anyone else they are ignored. A request from a trusted proxy without
  X-Forwarded-Host is refused: a proxy that rewrites Host would otherwise make any name look allowed. No client
  address, forwarded or not, grants anything: every write needs a token, loopback included.
"""

from __future__ import annotations

import ipaddress
import os
from functools import wraps
from typing import Callable
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection, Request
from starlette.routing import Route

from api.errors import error_response
from db.errors import Problem, StoreError
from db.views.actions.access import (
    COOKIE,
    Identity,
    SessionsOff,
    configured,
    identify,
    identity,
    local_token_refusal,
    reads_need_token,
)

DEFAULT_HOSTS = ("localhost", "127.0.0.1", "::1")


def allowed_hosts() -> set[str]:
    extra = {h.strip().lower() for h in os.environ.get("MPSBENCH_ALLOWED_HOSTS", "").split(",") if h.strip()}
    return set(DEFAULT_HOSTS) | extra


def _networks(text: str) -> list:
    out = []
    for part in (p.strip() for p in text.split(",")):
        if part:
            try:
                out.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                raise StoreError(500, f"MPSBENCH_TRUSTED_PROXIES: {part!r} is not an address or network") from None
    return out


def _from_trusted_proxy(request: HTTPConnection) -> bool:
    peer = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in net for net in _networks(os.environ.get("MPSBENCH_TRUSTED_PROXIES", "")))


_DEFAULT_PORTS = {"http": 80, "https": 443}


def served_as(request: HTTPConnection) -> tuple[str, str]:
    """(scheme, host[:port]) the browser used: a trusted proxy's X-Forwarded-Proto/-Host, else the request's
    own. A trusted proxy must name the host: one that rewrites Host and forwards no X-Forwarded-Host would make
    every name look like the proxy's upstream address, so that is refused rather than guessed."""
    scheme = {"ws": "http", "wss": "https"}.get(request.url.scheme, request.url.scheme)
    host = request.headers.get("host", "")
    if _from_trusted_proxy(request):
        if not request.headers.get("x-forwarded-host"):
            raise StoreError(
                403,
                "a request through a trusted proxy (MPSBENCH_TRUSTED_PROXIES) must carry "
                "X-Forwarded-Host: the name the browser asked for",
                [Problem("X-Forwarded-Host", "the proxy must send it")],
            )
        host = request.headers["x-forwarded-host"].split(",")[0].strip()
        proto = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        scheme = proto if proto in _DEFAULT_PORTS else scheme
    return scheme, host


def _origin_of(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the scheme's default port filled in; None when unreadable."""
    try:
        parts = urlsplit(f"{scheme}://{netloc.strip()}")
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    return (scheme, (parts.hostname or "").lower(), port) if parts.hostname and port else None


def check_host(request: HTTPConnection) -> None:
    """The Host must be one of the allowed names; an Origin (when a browser sends one) must be this server's
    own origin: scheme, host and port (a page on http://localhost:9999 is another site)."""
    hosts = allowed_hosts()
    scheme, host = served_as(request)
    served = _origin_of(scheme, host)
    if "*" not in hosts and (served is None or served[1] not in hosts):
        raise StoreError(
            403,
            f"host {host[:100]!r} is not served here: add it to MPSBENCH_ALLOWED_HOSTS",
            [Problem("Host", f"must be one of {', '.join(sorted(hosts))}")],
        )
    origin = request.headers.get("origin")
    if origin is not None:
        try:
            given = urlsplit(origin)
            sent = _origin_of(given.scheme.lower(), given.netloc) if given.scheme in _DEFAULT_PORTS else None
        except ValueError:
            sent = None
        if sent is None or sent != served:
            mine = f"{scheme}://{host}"[:100]
            raise StoreError(
                403,
                f"origin {origin[:100]!r} may not call this API (this server is {mine!r})",
                [Problem("Origin", f"must be this server's own origin, {mine} (scheme, host and port)")],
            )


def _bearer(request: HTTPConnection) -> str | None:
    given = request.headers.get("authorization", "")
    return given[7:].strip() if given[:7].lower() == "bearer " else None


def session_cookie(request: HTTPConnection) -> str | None:
    return request.cookies.get(COOKIE)


def _refused_local() -> str:
    """The local token file's refusal, for a 401 ("" when there is none)."""
    why = local_token_refusal() if not any(configured()[r] for r in ("upload", "admin")) else None
    return f"; {why}" if why else ""


def writer(request: Request) -> Identity:
    """The named identity behind a write; 401 without a known bearer token, 403 for a read-only one. A session
    cookie does not write through the API: the browser sends it by itself, a bearer token is sent on purpose."""
    who = identify(_bearer(request))
    if who is None:
        raise StoreError(
            401,
            "missing or wrong token (Authorization: Bearer <token>): writes need a token from "
            "MPSBENCH_UPLOAD_TOKENS (or the generated one printed at start)" + _refused_local(),
            [Problem("Authorization", "must be Bearer <a configured upload or admin token>")],
        )
    if not who.can_write:
        raise StoreError(403, f"{who.name} holds a read-only token", [Problem("Authorization", "not a write token")])
    return who


def check_reader(request: HTTPConnection) -> None:
    """Reads need a token (bearer, or the session cookie of a signed-in browser) when read tokens are set."""
    if not reads_need_token():
        return
    try:
        who, off = identity(_bearer(request), session_cookie(request)), ""
    except SessionsOff as err:  # a refused secret: the cookie identifies no one, and the 401 says why
        who, off = None, f"; {err.message}"
    if who is None:
        raise StoreError(
            401,
            "reads need a token on this server (MPSBENCH_READ_TOKENS is set)" + off + _refused_local(),
            [Problem("Authorization", "must be Bearer <a configured token>, or sign in")],
        )


def protect(endpoint: Callable) -> Callable:
    """Every API route: Host/Origin first, then (for GET) the read token when one is configured."""

    @wraps(endpoint)
    async def guarded(request: Request):
        try:
            check_host(request)
            if request.method in ("GET", "HEAD") and request.url.path != "/api/v1/health":  # monitors stay open
                check_reader(request)
        except StoreError as err:
            return error_response(err)
        return await endpoint(request)

    return guarded


def protect_routes(routes: list) -> list:
    return [
        Route(r.path, protect(r.endpoint), methods=sorted(r.methods - {"HEAD"}) if r.methods else None, name=r.name)
        if isinstance(r, Route)
        else r
        for r in routes
    ]


# on every response, Streamlit's pages included: no framing (clickjacking), no Referer to anyone
SECURITY_HEADERS = (
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
_OURS = {name for name, _ in SECURITY_HEADERS}


def with_security_headers(send):
    async def sending(message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _OURS]
            message = {**message, "headers": headers + list(SECURITY_HEADERS)}
        await send(message)

    return sending


class HostCheck:
    """ASGI middleware for the whole server (pages, their websocket, the API): the same Host/Origin rule as
    check_host, so a rebinding page cannot drive the dashboard either; Streamlit's /_stcore/metrics behind the
    read token as every other read; the security headers on every answer. Refusals are the API's JSON 403."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            send = with_security_headers(send)
        request = HTTPConnection(scope)  # a Request is http only; the page's websocket needs the check too
        try:
            check_host(request)
            if scope["type"] == "http" and scope["path"].rstrip("/").endswith("/_stcore/metrics"):
                check_reader(request)
        except StoreError as err:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await error_response(err)(scope, receive, send)
            return
        await self.app(scope, receive, send)
