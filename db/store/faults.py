"""What a failing store, or a server out of a resource, means to a client, and getting it back.

DuckDB's I/O errors (a full disk), a file locked by another process, a file that is not a DuckDB database, a
database invalidated by an earlier fatal error (a checkpoint that could not be written) and a query past the
store's memory or temp-space limit (db.store.pool.apply_limits) become StoreError(503) with a short reason;
the full message is logged here, never sent (it names server paths). After such a fault the shared engine is
disposed: its next checkout opens the file afresh, so the server recovers by itself once the fault clears (an
invalidated DuckDB refuses every statement until it is reopened); requests in flight finish on the old
connection, which closes after them (db.store.pool.DuplicatePool). The last write fault is kept
for GET /api/v1/health until a write succeeds again.

A request that runs the server out of a resource outside the store — memory (MemoryError: pandas, numpy), threads
(RuntimeError "can't start new thread": a thread or address-space limit), file handles (EMFILE, ENFILE) — is a
StoreError(503) "server busy: …" too, and the store is left open: what failed was this request, not the store, so
the server stays up and the next request is answered as soon as the resource is back.
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
    (("too many open files",), "the server has too many files open (its file-handle limit); nothing was stored"),
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
THREADS = "the server could not start a thread (its thread or memory limit is reached); nothing was changed — retry"
FILES = "the server has too many files open (its file-handle limit is reached); nothing was changed — retry"
_FILE_ERRNOS = {errno.EMFILE, errno.ENFILE}


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception, what it wraps (SQLAlchemy's .orig), what caused it or was being handled when it was raised,
    and an exception group's members: a thread pool or a wrapper re-raising the exhaustion still names it."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo and len(seen) < 32:
        e = todo.pop()
        if e is None or any(e is s for s in seen):
            continue
        seen.append(e)
        todo += [getattr(e, "orig", None), e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return seen


def _exhausted(exc: BaseException) -> tuple[str, str] | None:
    """(the resource, what the client is told) when the request ran the process out of memory, threads or file
    handles; else None."""
    for e in _chain(exc):
        if isinstance(e, MemoryError):
            return "memory", MEMORY
        if isinstance(e, RuntimeError) and "can't start new thread" in str(e):
            return "threads", THREADS
        if isinstance(e, OSError) and e.errno in _FILE_ERRNOS:
            return "files", FILES
    return None


def as_store_error(exc: BaseException) -> StoreError | None:
    """StoreError(503) for a store fault (and the shared engine disposed, to be reopened), or for a request that
    ran the process out of memory, threads or file handles outside DuckDB (the store is left as it was); else
    None."""
    if isinstance(_root(exc), StoreError):
        return None
    exhausted = _exhausted(exc)
    if exhausted is not None:
        resource, why = exhausted
        log.error("out of %s answering a request: %s: %s", resource, type(exc).__name__, exc)
        return StoreError(503, f"server busy: {why}", [Problem(resource, why)])
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
