"""Signed, expiring sign-in sessions: what a browser keeps instead of the token (an HttpOnly cookie).

A session is `<sid>.<expires>.<fingerprint>.<mac>`: a random id, the Unix time it ends (SESSION_HOURS after sign-in),
HMAC(secret, token) — which configured token signed in, without revealing it — and HMAC(secret, all of that).
The secret (32 random bytes) is kept beside the store as `mpsbench-secret`, mode 0600, trusted only under the
same rule as the local token (db.store.tokens.read_private); an in-memory store keeps one for the process.
Each use looks the fingerprint up among the tokens configured now, so a token removed from the configuration
ends its sessions at once, and a role change applies at once. Signing out lists the session's id in
`mpsbench-signed-out` (kept until the session would have expired), so a copy of the cookie stops working too.
Deleting the secret file ends every session.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time

from db.errors import StoreError
from db.store.tokens import Identity, all_tokens, beside_store, identify, read_private, write_private

COOKIE = "mpsbench_session"
SESSION_HOURS = 12
SECRET_FILE = "mpsbench-secret"
SIGNED_OUT_FILE = "mpsbench-signed-out"
_memory: dict[str, object] = {}  # an in-memory store's secret and signed-out ids, for this process only
_lock = threading.Lock()


def _secret() -> bytes:
    path = beside_store(SECRET_FILE)
    if path is None:
        return _memory.setdefault("secret", secrets.token_bytes(32))  # type: ignore[return-value]
    with _lock:
        if not os.path.lexists(path):
            try:
                write_private(path, secrets.token_hex(32) + "\n")
            except FileExistsError:  # another replica made it first: read theirs
                pass
            except OSError as exc:  # e.g. a read-only store folder
                raise StoreError(500, f"sign-in sessions are off: cannot write {path} ({exc.strerror})") from None
    text, why = read_private(path)
    if why or not text.strip():
        raise StoreError(500, f"sign-in sessions are off: {why or f'{path} is empty'}")
    try:
        return bytes.fromhex(text.strip())
    except ValueError:
        raise StoreError(500, f"sign-in sessions are off: {path} is not a hex secret") from None


def _mac(secret: bytes, text: str) -> str:
    return hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()


def issue(token: str, now: float | None = None) -> str | None:
    """A session for a known token (None for an unknown one)."""
    if identify(token) is None:
        return None
    secret = _secret()
    body = f"{secrets.token_hex(16)}.{int(_now(now) + SESSION_HOURS * 3600)}.{_mac(secret, 'token:' + token)}"
    return f"{body}.{_mac(secret, body)}"


TICKET_SECONDS = 60
_tickets: dict[str, tuple[str, float]] = {}  # one-use ticket → (session, when it ends), this process only


def ticket(token: str, now: float | None = None) -> str | None:
    """A one-use, minute-long stand-in for a typed token's session (None for an unknown token): the page sends
    the browser to `?signin_code=<ticket>` and the sign-in link's exchange (api/signin_link.py) sets the cookie,
    so a typed token survives a reload as a link does; the URL never holds the token or the session."""
    session = issue(token, now)
    if session is None:
        return None
    code = secrets.token_urlsafe(24)
    with _lock:
        for old in [c for c, (_, ends) in _tickets.items() if ends <= _now(now)]:
            del _tickets[old]
        _tickets[code] = (session, _now(now) + TICKET_SECONDS)
    return code


def redeem(code: str, now: float | None = None) -> str | None:
    """The session a ticket stands for, once (None: unknown, used or expired)."""
    with _lock:
        session, ends = _tickets.pop(code, ("", 0.0))
    return session if session and ends > _now(now) else None


def _now(now: float | None) -> float:
    return time.time() if now is None else now


def _parts(session: str | None, now: float | None, secret: bytes) -> tuple[str, int, str] | None:
    """(sid, expires, fingerprint) of a well-signed, unexpired session; None otherwise."""
    fields = (session or "").split(".")
    if len(fields) != 4 or not (fields[1].isascii() and fields[1].isdigit()):
        return None
    sid, expires, fingerprint, mac = fields
    if not hmac.compare_digest(mac.encode(), _mac(secret, ".".join(fields[:3])).encode()):
        return None
    if int(expires) <= _now(now):
        return None
    return sid, int(expires), fingerprint


def session_identity(session: str | None, now: float | None = None) -> Identity | None:
    """Who a session belongs to now (None: absent, forged, expired, signed out, or its token is gone)."""
    if not session:
        return None
    secret = _secret()  # read once per request
    parts = _parts(session, now, secret)
    if parts is None or parts[0] in _signed_out(now):
        return None
    match = None
    for role, name, token in all_tokens():  # every token compared (constant time each), as tokens.identify does
        if hmac.compare_digest(parts[2].encode(), _mac(secret, "token:" + token).encode()) and match is None:
            match = Identity(name, role)
    return match


def identity(bearer: str | None, session: str | None) -> Identity | None:
    """The one identity path of the API and the pages: a bearer token, else a session cookie."""
    return identify(bearer) or session_identity(session)


def _signed_out(now: float | None = None) -> dict[str, int]:
    """Signed-out session ids → their expiry, the expired ones left out."""
    path, now = beside_store(SIGNED_OUT_FILE), _now(now)
    if path is None:
        found = _memory.setdefault("signed_out", {})
    else:
        text, why = read_private(path) if os.path.lexists(path) else ("", None)
        if why:
            raise StoreError(500, f"sign-in sessions are off: {why}")
        found = {}
        for line in (text or "").splitlines():
            sid, _, expires = line.partition(" ")
            if expires.isdigit():
                found[sid] = int(expires)
    return {sid: exp for sid, exp in found.items() if exp > now}  # type: ignore[union-attr]


def sign_out(session: str | None) -> None:
    """End a session for good (any copy of its cookie too)."""
    parts = _parts(session, None, _secret())
    if parts is None:
        return
    with _lock:
        current = _signed_out() | {parts[0]: parts[1]}
        path = beside_store(SIGNED_OUT_FILE)
        if path is None:
            _memory["signed_out"] = current
            return
        fresh = path.with_name(path.name + ".new")
        fresh.unlink(missing_ok=True)
        write_private(fresh, "".join(f"{sid} {exp}\n" for sid, exp in current.items()))
        os.replace(fresh, path)
