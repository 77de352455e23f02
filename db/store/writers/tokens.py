"""Who may write into the store: named tokens, so every write (upload, triage, retraction) records a name.

Configured as `name=token` pairs (a bare `token` is named token-<first 8 hex of its SHA-256>), comma separated, in env MPSBENCH_UPLOAD_TOKENS (writers), MPSBENCH_ADMIN_TOKENS
(writers who may also retract anyone's run) and MPSBENCH_READ_TOKENS (readers; when set, reads need a token too);
or one pair a line in the file named by MPSBENCH_UPLOAD_TOKENS_FILE (a `#` line is a comment). With no writer
or admin token configured, a local token named "local" is made at first start and kept beside the store
(`<store dir>/mpsbench-token`, mode 0600), so a fresh server can take writes from its operator and no one else.
That file is trusted only while it is owned by the server's user and readable by no one else, and holds a token:
otherwise it is refused (local_token_refusal says why; the start banner and every 401 repeat it), since a file
another user planted or could read would hand out the admin "local" identity.
Tokens are compared in constant time (hmac.compare_digest), each against every configured token.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from db.errors import Problem, StoreError
from db.store.engine import store_path

LOCAL_NAME = "local"
TOKEN_FILE = "mpsbench-token"
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")


@dataclass(frozen=True)
class Identity:
    name: str
    role: str  # "read" | "upload" | "admin"

    @property
    def can_write(self) -> bool:
        return self.role in ("upload", "admin")


def _pairs(text: str, source: str, separator: str = ",") -> list[tuple[str, str]]:
    out = []
    for part in text.split(separator):
        part = part.strip()
        if not part or part.startswith("#"):
            continue
        name, sep, token = (s.strip() for s in part.partition("="))
        if not sep:  # a bare token (configurations from before names): a stable name that does not reveal it
            name, token = "token-" + hashlib.sha256(part.encode()).hexdigest()[:8], part
        if not name or not token or not set(name) <= _NAME_CHARS or len(name) > 100:
            raise StoreError(
                500,
                f"{source}: each entry must be name=token (name: letters, digits, . _ @ -)",
                [Problem(source, "entries are name=token")],
            )
        out.append((name, token))
    return out


def local_token_path() -> Path | None:
    """Where the generated token lives: beside the store file; on a lake in its data folder, which every replica
    shares (None for an in-memory store, or a lake on s3://: set MPSBENCH_UPLOAD_TOKENS on every replica)."""
    from db.store.lake import is_lake

    target = store_path()
    if is_lake(target):
        data = os.environ.get("MPSBENCH_LAKE_DATA", "").strip()
        return Path(data).resolve() / TOKEN_FILE if data and "://" not in data else None
    return None if target == ":memory:" else Path(target).resolve().parent / TOKEN_FILE


def beside_store(name: str) -> Path | None:
    """A file of the server's own beside the store, where the generated token lives (None: nowhere to keep it)."""
    token_file = local_token_path()
    return None if token_file is None else token_file.with_name(name)


_memory_token: list[str] = []  # an in-memory store's generated token, for this process only


def server_uid() -> int:
    """The user the server runs as (a function so a test can stand in for another owner)."""
    return os.geteuid()


def read_private(path: Path) -> tuple[str | None, str | None]:
    """(text, None) of a secret file beside the store, or (None, why it must not be trusted): it must be a
    regular file (a link is not followed) owned by the server's user with no group or other permissions. The
    checks are on the opened file (fstat), so a swap between check and read is seen."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))  # a FIFO never blocks
    except OSError as err:
        return None, f"{path} cannot be read: {err.strerror or err}"
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # on the descriptor: fdopen of a directory raises (a 500), not a refusal
        os.close(fd)
        return None, f"{path} is not a regular file"
    with os.fdopen(fd) as f:
        if info.st_uid != server_uid():
            return None, f"{path} is owned by uid {info.st_uid}, not by the server's user (uid {server_uid()})"
        if info.st_mode & 0o077:
            return None, (
                f"{path} has mode {stat.S_IMODE(info.st_mode):04o}: group or others may read it "
                f"(chmod 600 it, or delete it for a new one)"
            )
        try:
            return f.read(), None
        except (OSError, UnicodeDecodeError) as err:  # binary junk in its place is refused, not a 500
            return None, f"{path} cannot be read as text: {getattr(err, 'strerror', None) or err.__class__.__name__}"


def write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never world-readable, not even briefly
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _read_local() -> tuple[str | None, str | None]:
    """(token, None), (None, why the file is refused) or (None, None) when there is no file."""
    path = local_token_path()
    if path is None or not os.path.lexists(path):
        return None, None
    text, why = read_private(path)
    if why is None and not text.strip():
        why = f"{path} is empty: delete it and restart for a new token"
    return (None, f"the local token is refused: {why}") if why else (text.strip(), None)


def local_token_refusal() -> str | None:
    """Why the local token file is refused, or None (no file yet, or a file to trust)."""
    return _read_local()[1]


def local_token(create: bool = True) -> str | None:
    """The generated token (made on first use with create=True; a file only its owner may read). None when
    there is none, or the file is refused (local_token_refusal)."""
    path = local_token_path()
    if path is None:
        if not _memory_token and create:
            _memory_token.append(secrets.token_urlsafe(32))
        return _memory_token[0] if _memory_token else None
    if os.path.lexists(path):
        return _read_local()[0]
    if not create:
        return None
    token = secrets.token_urlsafe(32)
    write_private(path, token + "\n")
    return token


def configured() -> dict[str, list[tuple[str, str]]]:
    """Role -> (name, token) pairs from the environment (and the tokens file), without the generated one."""
    upload = _pairs(os.environ.get("MPSBENCH_UPLOAD_TOKENS", ""), "MPSBENCH_UPLOAD_TOKENS")
    file = os.environ.get("MPSBENCH_UPLOAD_TOKENS_FILE", "")
    if file:
        try:
            upload += _pairs(Path(file).read_text(), "MPSBENCH_UPLOAD_TOKENS_FILE", "\n")
        except OSError as err:
            raise StoreError(500, f"MPSBENCH_UPLOAD_TOKENS_FILE: cannot read {file}: {err.strerror or err}") from None
    return {
        "admin": _pairs(os.environ.get("MPSBENCH_ADMIN_TOKENS", ""), "MPSBENCH_ADMIN_TOKENS"),
        "upload": upload,
        "read": _pairs(os.environ.get("MPSBENCH_READ_TOKENS", ""), "MPSBENCH_READ_TOKENS"),
    }


def all_tokens() -> list[tuple[str, str, str]]:
    """(role, name, token), strongest role first; the generated local token when no writer is configured."""
    roles = configured()
    found = [(role, name, token) for role in ("admin", "upload", "read") for name, token in roles[role]]
    if not roles["admin"] and not roles["upload"]:
        token = local_token()
        if token:
            found.insert(0, ("admin", LOCAL_NAME, token))  # the operator's own token: may retract too
    return found


def reads_need_token() -> bool:
    return bool(configured()["read"])


def identify(presented: str | None) -> Identity | None:
    """The identity a presented token belongs to, or None. Every configured token is compared (constant time
    each), so timing does not tell which one nearly matched."""
    if not presented:
        return None
    given = presented.encode()
    match = None
    for role, name, token in all_tokens():
        if hmac.compare_digest(given, token.encode()) and match is None:
            match = Identity(name, role)
    return match
