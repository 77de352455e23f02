"""What a failing store means to a client, and getting it back.

DuckDB's I/O errors (a full disk), a file locked by another process, a file that is not a DuckDB database, a
database invalidated by an earlier fatal error (a checkpoint that could not be written) and a query past the
store's memory or temp-space limit (db.store.pool.apply_limits) become StoreError(503) with a short reason;
the full message is logged here, never sent (it names server paths). After such a fault the shared engine is
disposed: its next checkout opens the file afresh, so the server recovers by itself once the fault clears (an
invalidated DuckDB refuses every statement until it is reopened); requests in flight finish on the old
connection, which closes after them (db.store.pool.DuplicatePool). The last write fault is kept
for GET /api/v1/health until a write succeeds again.
"""

from __future__ import annotations

import errno
import logging
import threading
import time

import duckdb

from db.errors import Problem, StoreError
from db.store.lake import REASON as LAKE_UNREACHABLE

log = logging.getLogger("mpsbench.store")

# (what the message says, the reason a client is given); first match wins
_KINDS = (
    (
        ("max_temp_directory_size",),
        "the request needed more temporary disk than the store may use (MPSBENCH_DUCKDB_TEMP); nothing was stored",
    ),
    (
        ("out of memory",),
        "the request needed more memory than the store may use (MPSBENCH_DUCKDB_MEMORY); nothing was stored",
    ),
    (
        ("no space left on device", "disk full", "disk quota exceeded"),
        "the disk holding the store is full; the server retries on every request",
    ),
    (
        ("could not set lock", "conflicting lock"),
        "the store file is locked by another process (another mpsbench or duckdb); the server retries on every request",
    ),
    (
        ("not a valid duckdb database", "corrupt", "checksum", "failed to read database header", "invalid database"),
        "the store file is damaged or not a DuckDB database; restore it from a backup",
    ),
    (("unable to connect to postgres", "failed to query most recent snapshot for ducklake"), LAKE_UNREACHABLE),
    (("has been invalidated", "fatal error"), "the store stopped after an earlier fatal error; reopening it"),
    (
        ("read-only", "readonly", "permission denied"),
        "the store file cannot be written (read-only or permission denied)",
    ),
)
_IO_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EACCES}

_lock = threading.Lock()
_last_fault: dict | None = None  # {"reason", "since"}: the last write fault not yet followed by a good write


def _root(exc: BaseException) -> BaseException:
    """The DBAPI error under SQLAlchemy's wrapper (sqlalchemy.exc.DBAPIError.orig), else the exception."""
    return getattr(exc, "orig", None) or exc


def is_store_fault(exc: BaseException) -> bool:
    root = _root(exc)
    if isinstance(root, StoreError):
        return False
    if isinstance(root, (duckdb.IOException, duckdb.FatalException)):
        return True
    if isinstance(root, OSError) and root.errno in _IO_ERRNOS:
        return True
    if isinstance(root, duckdb.Error):  # e.g. a failed commit is a TransactionException saying "No space left"
        return _reason(str(root)) is not None
    return False


def _reason(message: str) -> str | None:
    low = message.lower()
    for needles, reason in _KINDS:
        if any(n in low for n in needles):
            return reason
    return None


MEMORY = "the answer needed more memory than the server has free; nothing was changed — retry, or narrow the request"


def as_store_error(exc: BaseException) -> StoreError | None:
    """StoreError(503) for a store fault (and the shared engine disposed, to be reopened), or for a read that ran
    out of the process's memory outside DuckDB (pandas, numpy: a MemoryError leaves the store as it was); else
    None."""
    if isinstance(_root(exc), MemoryError):
        log.error("out of memory answering a request: %s", exc)
        return StoreError(503, f"server busy: {MEMORY}", [Problem("memory", MEMORY)])
    if not is_store_fault(exc):
        return None
    root = _root(exc)
    text = str(root)
    if isinstance(root, OSError) and root.errno is not None:
        text = f"{text} {errno.errorcode.get(root.errno, '')} {root.strerror or ''}"
    reason = _reason(text) or "the store could not be read or written (I/O error); the server retries on every request"
    log.error("store fault (%s): %s: %s", reason, type(root).__name__, text)
    _record(reason)
    _dispose_shared()
    return StoreError(503, f"store unavailable: {reason}", [Problem("store", reason)])


def _record(reason: str) -> None:
    global _last_fault
    with _lock:
        _last_fault = {"reason": reason, "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_succeeded() -> None:
    """A write committed: the store takes writes again."""
    global _last_fault
    with _lock:
        _last_fault = None


def last_fault() -> dict | None:
    with _lock:
        return dict(_last_fault) if _last_fault else None


def _dispose_shared() -> None:
    from db.store.engine import dispose_shared

    try:
        dispose_shared()
    except Exception as exc:  # noqa: BLE001 - closing an invalidated database may fail too; the next open retries
        log.warning("closing the store after a fault failed: %s", exc)
