"""Signed, expiring sign-in sessions: what a browser keeps instead of the token (an HttpOnly cookie).

A session is `<sid>.<expires>.<fingerprint>.<mac>`: a random id, the Unix time it ends (SESSION_HOURS after sign-in),
HMAC(secret, token) — which configured token signed in, without revealing it — and HMAC(secret, all of that).
The secret (32 random bytes) is kept beside the store as `mpsbench-secret`, mode 0600, trusted only under the
same rule as the local token (db.store.writers.tokens.read_private); an in-memory store keeps one for the process.
A secret refused at start stops `mpsbench serve` (secret_refusal); one refused later (another user may read it,
not a regular file, not hex) turns sessions off: SessionsOff, a
StoreError whose message starts "sign-in sessions are off: " and names the file and why; a cookie then
identifies no one (the API's 401 and the sign-in page say why), the bearer token and a typed token still work.
Each use looks the fingerprint up among the tokens configured now, so a token removed from the configuration
ends its sessions at once, and a role change applies at once. Signing out stores the session's id in the store's
`signed_out` table (kept until the session would have expired), so a copy of the cookie stops working too, on
every process and replica of the store: one INSERT under the store's write lock (db.store.engine.WRITE_LOCK, on a
lake the replicas' lock), not a file each process read-modify-wrote. Deleting the secret file ends every session.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from datetime import datetime, timezone

from sqlalchemy import text

from db.errors import Problem, StoreError
from db.store.writers.tokens import Identity, all_tokens, beside_store, identify, read_private, write_private

COOKIE = "mpsbench_session"
SESSION_HOURS = 12
SECRET_FILE = "mpsbench-secret"
OLD_SIGNED_OUT_FILE = "mpsbench-signed-out"  # before store v10: taken into the table on first use, then removed
OFF = "sign-in sessions are off: "
_memory: dict[str, bytes] = {}  # an in-memory store's secret, for this process only
_lock = threading.Lock()
_old_file_taken: set[str] = set()  # stores whose old signed-out file this process has taken in


class SessionsOff(StoreError):
    """The secret is refused: no session cookie identifies anyone until it is fixed (the message says how)."""

    def __init__(self, why: str) -> None:
        super().__init__(401, OFF + why, [Problem("mpsbench_session", OFF + why)])


def _secret() -> bytes:
    path = beside_store(SECRET_FILE)
    if path is None:
        return _memory.setdefault("secret", secrets.token_bytes(32))
    with _lock:
        if not os.path.lexists(path):
            try:
                write_private(path, secrets.token_hex(32) + "\n")
            except FileExistsError:  # another replica made it first: read theirs
                pass
            except OSError as exc:  # e.g. a read-only store folder
                raise SessionsOff(f"cannot write {path} ({exc.strerror})") from None
    text_, why = read_private(path)
    if why or not text_.strip():
        raise SessionsOff(why or f"{path} is empty (delete it for a new one)")
    try:
        return bytes.fromhex(text_.strip())
    except ValueError:
        raise SessionsOff(f"{path} is not a hex secret (delete it for a new one)") from None


def sessions_off() -> str | None:
    """Why sign-in sessions are off ("sign-in sessions are off: …"), or None when they work."""
    try:
        _secret()
    except SessionsOff as off:
        return off.message
    return None


SECRET_RULE = (
    "the sign-in secret must be a regular file owned by the server's user, mode 0600, holding hex (a deleted one "
    "is made anew at the first sign-in, which ends every session)"
)


def secret_refusal() -> str | None:
    """Why the secret file there now is refused, naming the file (without the "sign-in sessions are off: "
    prefix), or None: no file yet (made at the first sign-in) or one to trust. Reads only; `mpsbench serve`
    refuses to start on it."""
    path = beside_store(SECRET_FILE)
    if path is None or not os.path.lexists(path):
        return None
    off = sessions_off()
    return off.removeprefix(OFF) if off else None


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
    secret = _secret()  # read once per request; SessionsOff when it is refused
    parts = _parts(session, now, secret)
    if parts is None or _is_signed_out(parts[0], now):
        return None
    return _owner(parts[2], secret)


def _owner(fingerprint: str, secret: bytes) -> Identity | None:
    """The configured token a session's fingerprint names, as its identity (None: that token is gone)."""
    match = None
    for role, name, token in all_tokens():  # every token compared (constant time each), as tokens.identify does
        if hmac.compare_digest(fingerprint.encode(), _mac(secret, "token:" + token).encode()) and match is None:
            match = Identity(name, role)
    return match


def identity(bearer: str | None, session: str | None) -> Identity | None:
    """The one identity path of the API and the pages: a bearer token, else a session cookie."""
    return identify(bearer) or session_identity(session)


def _store():
    from db.store.engine import shared_store

    return shared_store()


def _on_store(work):
    """`work(engine)` on the server's store; a store fault is its StoreError(503) (db.store.faults), never a 500."""
    from db.store import faults

    engine = _store()
    _take_old_file(engine)
    try:
        return work(engine)
    except StoreError:
        raise
    except Exception as exc:  # only a store fault is translated; anything else is a bug to see
        fault = faults.as_store_error(exc)
        if fault is None:
            raise
        raise fault from None


def _add(conn, sid: str, expires: int, who: str, now: float) -> None:
    """One signed-out id, unless it is there already (a lake has no keys to refuse a second row); the expired ones
    dropped. Run under WRITE_LOCK: on a lake that is every replica's lock, so check and insert are one step."""
    conn.execute(
        text(
            "INSERT INTO signed_out (sid, expires, signed_out_by, signed_out_at) "
            "SELECT :sid, :expires, :who, :at WHERE NOT EXISTS (SELECT 1 FROM signed_out WHERE sid = :sid)"
        ),
        {"sid": sid, "expires": expires, "who": who, "at": datetime.fromtimestamp(now, timezone.utc)},
    )
    conn.execute(text("DELETE FROM signed_out WHERE expires <= :now"), {"now": int(now)})


def _take_old_file(engine) -> None:
    """Before store v10 signed-out ids were a file beside the store: take them in once, then remove the file, so
    a cookie signed out before the upgrade stays signed out."""
    from db.store.engine import WRITE_LOCK

    path = beside_store(OLD_SIGNED_OUT_FILE)
    if path is None or str(path) in _old_file_taken:
        return
    if os.path.lexists(path):
        found, why = read_private(path)
        now = time.time()
        with WRITE_LOCK, engine.begin() as conn:
            for line in (found or "").splitlines() if why is None else ():  # a refused file is not believed
                sid, _, expires = line.partition(" ")
                if sid and expires.isdigit() and int(expires) > now:
                    _add(conn, sid, int(expires), "(signed out before store v10)", now)
        path.unlink(missing_ok=True)
    _old_file_taken.add(str(path))


def _is_signed_out(sid: str, now: float | None = None) -> bool:
    def read(engine) -> bool:
        with engine.connect() as conn:
            return (
                conn.execute(
                    text("SELECT count(*) FROM signed_out WHERE sid = :sid AND expires > :now"),
                    {"sid": sid, "now": int(_now(now))},
                ).scalar()
                > 0
            )

    return _on_store(read)


def sign_out(session: str | None) -> None:
    """End a session for good (any copy of its cookie too, on every process and replica of the store)."""
    from db.store.engine import WRITE_LOCK

    secret = _secret()
    parts = _parts(session, None, secret)
    if parts is None:
        return
    who = _owner(parts[2], secret)
    now = time.time()

    def write(engine) -> None:
        with WRITE_LOCK, engine.begin() as conn:
            _add(conn, parts[0], parts[1], who.name if who else "(a token no longer configured)", now)

    _on_store(write)
