"""The store's connections: one DuckDB root connection per engine, every checkout a duplicate of it, with the
memory and temp-space limits set when a database opens. Below db.store.engine (which opens stores with it) and
db.store.lake (whose cross-replica lock connection is a child of the root), so neither imports the other back."""

from __future__ import annotations

import os
import shutil
import threading
import weakref
from pathlib import Path

import duckdb
from duckdb_engine import ConnectionWrapper
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import NullPool

_ROOTS: "weakref.WeakKeyDictionary[Engine, _Roots]" = weakref.WeakKeyDictionary()


def pooled_engine(url: str, read_only: bool = False) -> Engine:
    """An engine whose every checkout is a duplicate of its one root connection (DuplicatePool); read_only opens the
    file as DuckDB's read-only mode does: nothing written, no WAL made (db.store.engine.open_reader)."""
    engine = create_engine(url, poolclass=DuplicatePool, connect_args={"read_only": True} if read_only else {})
    roots = _ROOTS[engine] = _Roots()
    event.listen(engine, "do_connect", roots.connect)
    event.listen(engine, "engine_disposed", roots.retire)
    return engine


class DuplicatePool(NullPool):
    """Every checkout is its own DuckDB connection, a duplicate of one root connection per engine (_Roots).

    Why not one shared connection (StaticPool): a DuckDB connection runs one transaction at a time, so a read
    from another thread during an ingest failed ("cannot start a transaction within a transaction"), and that
    reader's rollback on return undid the writer's open transaction (its later statements then autocommitted).
    Duplicates share the one database (also for :memory:) but each has its own transaction. DuckDB still
    allows one writer per file, and WRITE_LOCK still makes writers take turns. engine.dispose() retires the
    root: the next checkout opens a new one, and the old one closes when its last duplicate is returned (closing
    a root closes its duplicates: requests in flight during a fault's dispose failed "Connection already closed").
    """


def root_duplicate(engine: Engine):
    """A raw DuckDB connection on `engine`'s current database, outside the pool (db.store.lake's lock
    connection: a child of the root, not of a checkout that would close it); the database is opened if none is."""
    roots = _ROOTS[engine]
    with roots.lock:
        current = roots.current
    if current is None:
        engine.connect().close()  # the first checkout opens the root
        with roots.lock:
            current = roots.current
    return current.conn.duplicate()


def buffer_bytes(engine: Engine) -> int | None:
    """The bytes DuckDB's buffer pool holds for `engine`'s open database (the store blocks it keeps after the
    queries that read them, and what queries still hold); None when no database is open (nothing is opened)."""
    roots = _ROOTS.get(engine)
    if roots is None:
        return None
    with roots.lock:
        current = roots.current
    if current is None:
        return None
    try:
        conn = current.conn.duplicate()
    except duckdb.Error:
        return None  # closed or invalidated meanwhile: nothing of it to keep
    try:
        return int(conn.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()").fetchone()[0])
    finally:
        conn.close()


class _Roots:
    """An engine's current root, kept across the pools engine.dispose() recreates, under one lock: a checkout
    racing a dispose must not open a root on the pool being thrown away (it would never close)."""

    def __init__(self) -> None:
        self.current: _Root | None = None
        self.lock = threading.Lock()

    def connect(self, dialect, _record, cargs, cparams) -> ConnectionWrapper:
        with self.lock:
            if self.current is None:  # the first checkout (or the first after dispose) opens the database
                conn = dialect.connect(*cargs, **cparams)
                apply_limits(conn)
                self.current = _Root(conn)
            return self.current.duplicate()

    def retire(self, _engine=None) -> None:
        with self.lock:
            root, self.current = self.current, None
        if root is not None:
            root.retire()


class _Root:
    """A root connection and how many of its duplicates are checked out; retired, it closes with the last."""

    def __init__(self, conn) -> None:
        self.conn, self.users, self.retired, self.lock = conn, 0, False, threading.Lock()

    def duplicate(self) -> "_Duplicate":
        conn = self.conn.duplicate()  # may raise (an invalidated database): then nothing is counted
        with self.lock:
            self.users += 1
        return _Duplicate(conn, self)

    def release(self) -> None:
        with self.lock:
            self.users -= 1
            last = self.retired and self.users == 0
        if last:
            self.conn.close()

    def retire(self) -> None:
        with self.lock:
            self.retired = True
            last = self.users == 0
        if last:
            self.conn.close()


class _Duplicate(ConnectionWrapper):
    def __init__(self, conn, root: _Root) -> None:
        super().__init__(conn)
        self.root = root

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()
        finally:
            self.closed = True
            self.root.release()

    def __del__(self) -> None:  # one never returned (a failed checkout) must not keep a retired root open
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to tell at collection
            pass


MEMORY_SHARE, TEMP_SHARE = 0.5, 0.5  # of the machine's RAM / of the free disk where DuckDB spills
# a server's DuckDB memory once its store is open (serve_limits): DuckDB keeps every block its queries read up to
# its limit, and half the RAM let one server's reads of a 10 M-result store grow past 1 GB; its reads need far
# less (the largest, a pooled Compare's pivot, tens of MB), an upload of the largest bundle (64 MiB, 150,000
# results) went in under it, and what needs more spills to the temp space
SERVER_MEMORY = "256MiB"
_serving = False


def serve_limits(engine: Engine | None) -> None:
    """This process serves reads from now on (called once its store is open, so a migration at the start still
    has MEMORY_SHARE): its databases take SERVER_MEMORY unless MPSBENCH_DUCKDB_MEMORY says otherwise, the one
    open now (`engine`'s) included."""
    global _serving
    _serving = True
    if engine is None or os.environ.get("MPSBENCH_DUCKDB_MEMORY", "").strip():
        return
    roots = _ROOTS.get(engine)
    current = roots.current if roots is not None else None
    if current is not None:
        conn = current.conn.duplicate()
        try:
            conn.execute("SET memory_limit = ?", [SERVER_MEMORY])
        finally:
            conn.close()


def apply_limits(conn) -> None:
    """DuckDB's memory_limit and max_temp_directory_size, set on a database when it opens: env
    MPSBENCH_DUCKDB_MEMORY / MPSBENCH_DUCKDB_TEMP (DuckDB sizes: "4GB", "512MiB"), else MEMORY_SHARE of the
    RAM (a server's reads: SERVER_MEMORY) and TEMP_SHARE of the disk free where it spills at open. Unset, DuckDB
    took 80 % of RAM and spilled until the disk was full; a query past them fails (db.store.faults: a 503 naming
    the limit)."""
    from db.errors import Problem, StoreError

    memory = os.environ.get("MPSBENCH_DUCKDB_MEMORY", "").strip()
    temp = os.environ.get("MPSBENCH_DUCKDB_TEMP", "").strip()
    if not memory and _serving:
        memory = SERVER_MEMORY
    if not memory:
        memory = f"{int(MEMORY_SHARE * os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')) >> 20}MiB"
    if not temp:
        where = Path(conn.execute("SELECT current_setting('temp_directory')").fetchone()[0] or ".").absolute()
        while not where.exists():
            where = where.parent
        temp = f"{max(int(TEMP_SHARE * shutil.disk_usage(where).free) >> 20, 1)}MiB"
    for setting, env, value in (
        ("memory_limit", "MPSBENCH_DUCKDB_MEMORY", memory),
        ("max_temp_directory_size", "MPSBENCH_DUCKDB_TEMP", temp),
    ):
        try:
            conn.execute(f"SET {setting} = ?", [value])
        except duckdb.Error as exc:
            conn.close()
            raise StoreError(
                500,
                f"{env}={value!r} is not a size DuckDB takes ({str(exc).splitlines()[0]})",
                [Problem(env, "a size such as 4GB or 512MiB")],
            ) from None
