"""Sign in: pages write (upload, triage) only for a named identity.

Streamlit's own st.login (OIDC) when the server's secrets.toml has an [auth] section; otherwise the same named
tokens the API takes, by the API's one identity path (db.store.writers.sessions.identity): the session cookie the sign-in
link (`/upload?token=…`, printed at start as Jupyter does) was exchanged for before the page loaded
(api/signin_link.py; it outlives a reload), or a token typed here: kept in this tab's st.session_state (server
side) and exchanged for the same cookie by a one-use ticket, so it outlives a reload too. Both are checked again on every run, so a token removed from the configuration stops working at once.
Run as a page it shows who is signed in; imported, it gives the other pages `require_writer`.
"""

from __future__ import annotations

import json

import streamlit as st

from db.errors import StoreError
from db.views.actions.access import COOKIE, Identity, SessionsOff, identify, identity, ticket
from db.views.actions.access import sign_out as end_session
from pages.parts.guard import stop
from pages.parts.plain import plain

KEY = "mpsbench_token"
_TICKET = "_signin_ticket"  # session state: the typed token's one-use ticket, until the page sends it


def oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets.toml (the usual case): tokens only
        return False


def _oidc_identity() -> Identity | None:
    if not oidc_configured() or not st.user.is_logged_in:
        return None
    name = st.user.get("email") or st.user.get("name") or st.user.get("sub")
    return Identity(f"oidc:{name}", "upload") if name else None


def _take_link_token() -> None:
    """A ?token=… that reached the page (the server exchanges it before a page loads; a test's AppTest has no
    server) signs this session in and is removed from the address bar."""
    token = st.query_params.get("token")
    if token is not None:
        del st.query_params["token"]
        if identify(token) is not None:
            st.session_state[KEY] = token


def _cookie() -> str | None:
    try:
        return st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001 - no request behind this run (AppTest): no cookie
        return None


def _keep_signed_in() -> None:
    """After a typed token: send the browser through the link exchange with a one-use ticket, so the session
    cookie is set and a reload stays signed in (the ticket is dead once used or after a minute: nothing to leak)."""
    code = st.session_state.pop(_TICKET, None)
    if code:
        st.html(
            f"<script>const u = new URL(location.href); u.searchParams.set('signin_code', {json.dumps(code)});"
            " location.replace(u.toString());</script>",
            unsafe_allow_javascript=True,
        )


def signed_in() -> Identity | None:
    _take_link_token()
    _keep_signed_in()
    try:
        return _oidc_identity() or identity(st.session_state.get(KEY), _cookie())
    except StoreError as err:  # sessions are off (a refused secret file): named once, the typed token still works
        st.warning(plain(err))
        return identify(st.session_state.get(KEY))


def _form() -> None:
    if st.query_params.get("signin") == "refused":
        del st.query_params["signin"]
        st.error("The sign-in link's token is not known to this server.")
    if oidc_configured():
        if st.button("Sign in", key="signin_oidc"):
            st.login()
        return
    with st.form("signin"):
        token = st.text_input(
            "Token (name=token in MPSBENCH_UPLOAD_TOKENS, or the one printed at start)", type="password"
        )
        if st.form_submit_button("Sign in"):
            if identify(token.strip()) is None:
                st.error("This token is not known to this server.")
            else:
                st.session_state[KEY] = token.strip()  # this tab at once; the cookie after _keep_signed_in
                try:
                    st.session_state[_TICKET] = ticket(token.strip())
                except StoreError:  # sessions are off (the link sign-in names why): this tab only
                    pass
                st.rerun()


def require_writer(what: str) -> Identity:
    """The signed-in writer; otherwise the sign-in form and nothing after it on this page runs."""
    who = signed_in()
    if who is not None and who.can_write:
        return who
    st.warning(
        f"Sign in to {what}."
        if who is None
        else f"{plain(who.name)} may read only: sign in with a write token to {what}."
    )
    _form()
    stop()
    raise AssertionError("st.stop() returned")  # for type checkers: never reached


def sign_out() -> None:
    if _oidc_identity() is not None:
        st.logout()
    st.session_state.pop(KEY, None)
    try:
        end_session(_cookie())  # for good: a copy of the cookie, or this tab's next reload, is signed out too
    except SessionsOff:  # the secret is refused: no cookie identifies anyone, so there is nothing to end
        pass
    st.rerun()


def page() -> None:
    st.title("Sign in")
    who = signed_in()
    if who is None:
        _form()
        return
    st.text(f"Signed in as {who.name} ({'may write' if who.can_write else 'read only'}).")
    if st.button("Sign out"):
        sign_out()


if __name__ == "__main__":  # run as the Sign in page; imported by the pages that write
    page()
