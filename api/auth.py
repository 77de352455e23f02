"""Who is asking, for the HTTP API: Host/Origin checks (against DNS rebinding), forwarded headers only from a
trusted proxy, the bearer token's identity (db.store.tokens) for writes, and for reads when read tokens exist.

- MPSBENCH_ALLOWED_HOSTS: host names the server answers to, comma separated, besides localhost, 127.0.0.1 and
  ::1 ("*" allows any). A request whose Host, or whose Origin (when a browser sends one), names another host
  is refused with 403: a page on evil.example that rebinds its name to 127.0.0.1 gets nothing.
- MPSBENCH_TRUSTED_PROXIES: addresses (or networks) of reverse proxies whose X-Forwarded-Host is believed;
  from anyone else it is ignored. No client address, forwarded or not, grants anything: every write needs a
  token, loopback included.
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
from db.store.tokens import Identity, identify, reads_need_token

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


def _host_name(value: str) -> str:
    """host of 'host', 'host:port', '[::1]:port' (lower case; '' when unreadable)."""
    try:
        return (urlsplit("//" + value.strip()).hostname or "").lower()
    except ValueError:
        return ""


def check_host(request: HTTPConnection) -> None:
    hosts = allowed_hosts()
    if "*" in hosts:
        return
    host = request.headers.get("host", "")
    if _from_trusted_proxy(request) and request.headers.get("x-forwarded-host"):
        host = request.headers["x-forwarded-host"].split(",")[0]
    if _host_name(host) not in hosts:
        raise StoreError(403, f"host {host[:100]!r} is not served here: add it to MPSBENCH_ALLOWED_HOSTS",
                         [Problem("Host", f"must be one of {', '.join(sorted(hosts))}")])
    origin = request.headers.get("origin")
    if origin is not None:
        try:
            origin_host = (urlsplit(origin).hostname or "").lower()
        except ValueError:
            origin_host = ""
        if origin_host not in hosts:
            raise StoreError(403, f"origin {origin[:100]!r} may not call this API",
                             [Problem("Origin", f"must be a page on {', '.join(sorted(hosts))}")])


def _bearer(request: Request) -> str | None:
    given = request.headers.get("authorization", "")
    return given[7:].strip() if given[:7].lower() == "bearer " else None


def writer(request: Request) -> Identity:
    """The named identity behind a write; 401 without a known token, 403 for a read-only one."""
    who = identify(_bearer(request))
    if who is None:
        raise StoreError(401, "missing or wrong token (Authorization: Bearer <token>): writes need a token from "
                              "MPSBENCH_UPLOAD_TOKENS (or the generated one printed at start)",
                         [Problem("Authorization", "must be Bearer <a configured upload or admin token>")])
    if not who.can_write:
        raise StoreError(403, f"{who.name} holds a read-only token", [Problem("Authorization", "not a write token")])
    return who


def check_reader(request: Request) -> None:
    if reads_need_token() and identify(_bearer(request)) is None:
        raise StoreError(401, "reads need a token on this server (MPSBENCH_READ_TOKENS is set)",
                         [Problem("Authorization", "must be Bearer <a configured token>")])


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
    return [Route(r.path, protect(r.endpoint), methods=sorted(r.methods - {"HEAD"}) if r.methods else None,
                  name=r.name) if isinstance(r, Route) else r for r in routes]


class HostCheck:
    """ASGI middleware for the whole server (pages, their websocket, the API): the same Host/Origin rule as
    check_host, so a rebinding page cannot drive the dashboard either. Refusals are the API's JSON 403."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            request = HTTPConnection(scope)  # a Request is http only; the page's websocket needs the check too
            try:
                check_host(request)
            except StoreError as err:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await error_response(err)(scope, receive, send)
                return
        await self.app(scope, receive, send)
