"""The sign-in link (`/upload?token=…`, printed at start): the server takes the token out before any page loads.

A GET of a page (not /api, not Streamlit's /_stcore or /static) with `token` in its query is answered 303 to the
same address without it, with the token exchanged for a signed, expiring session cookie (db.store.writers.sessions:
HttpOnly, SameSite=Strict, Secure when the browser came over https, SESSION_HOURS long). So the token never sits
in the address bar or in the session history (the redirect replaces the entry), never reaches a Referer, and a
reload stays signed in. An unknown token gets no cookie and `signin=refused` in its place, which the page names.
`signin_code` (a one-use ticket the Sign in form makes for a typed token) is exchanged the same way.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from starlette.requests import HTTPConnection
from starlette.responses import RedirectResponse

from api.auth import served_as
from db.errors import StoreError
from db.views.actions.access import COOKIE, SESSION_HOURS, issue, redeem

_NOT_PAGES = ("/api/", "/_stcore/", "/static/", "/component/", "/media/", "/oauth2callback", "/auth/")


def _is_page(path: str) -> bool:
    return not any(part in path for part in _NOT_PAGES)


class SignInLink:
    """ASGI middleware (app.py, inside HostCheck): the token link → session cookie exchange."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD") or not _is_page(scope["path"]):
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        tokens = [v for k, v in query if k == "token"]
        codes = [v for k, v in query if k == "signin_code"]  # a typed token's one-use ticket (pages/signin.py)
        if not tokens and not codes:
            await self.app(scope, receive, send)
            return
        request = HTTPConnection(scope)
        try:
            session = issue(tokens[0].strip()) if tokens else redeem(codes[0])
        except StoreError:  # sessions are off (e.g. a refused secret file): the page says so on sign-in
            session = None
        rest = [(k, v) for k, v in query if k not in ("token", "signin_code", "signin")] + (
            [] if session else [("signin", "refused")]
        )
        # one leading slash: a path "//evil.example" (sent as /%2Fevil.example) must not become another site's URL
        path = "/" + scope["path"].lstrip("/")
        target = scope.get("root_path", "") + path + (f"?{urlencode(rest)}" if rest else "")
        response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
        if session:
            secure = served_as(request)[0] == "https"
            response.set_cookie(
                COOKIE,
                session,
                max_age=SESSION_HOURS * 3600,
                path=scope.get("root_path") or "/",
                httponly=True,
                samesite="strict",
                secure=secure,
            )
        await response(scope, receive, send)
