"""Open the DuckDB store: create tables, record and migrate store_version, one shared engine per process."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlmodel import SQLModel

import db.store.tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from db.memory import on_settle
from db.store.pool import pooled_engine
from db.store.tables import STORE_VERSION

DEFAULT_PATH = "data/mpsbench.duckdb"


class _WriteLock:
    """Writers take turns: threads of this process (the dashboard process is the one writer of a file), and on a
    lake also every replica (db.store.lake: each lake transaction begun inside takes the catalog's lock)."""

    def __init__(self) -> None:
        self._threads = threading.Lock()

    def __enter__(self):
        from db.store import lake

        self._threads.acquire()
        lake.begin_write()
        return self

    def __exit__(self, *exc) -> None:
        from db.store import lake

        try:
            lake.end_write()
        finally:
            self._threads.release()


WRITE_LOCK = _WriteLock()
_shared: dict[str, Engine] = {}
_shared_lock = threading.Lock()


def store_path(path: str | None = None) -> str:
    """A DuckDB file path, or ducklake:postgres:<libpq string> (db.store.lake); MPSBENCH_STORE, then the older
    MPSBENCH_DB, then the default file."""
    return path or os.environ.get("MPSBENCH_STORE") or os.environ.get("MPSBENCH_DB") or DEFAULT_PATH


def open_store(path: str | None = None) -> Engine:
    from db.store import lake

    target = str(store_path(path))
    spec = lake.parse(target) if lake.is_lake(target) else None  # a wrong lake is refused before anything opens
    if spec is None and target != ":memory:":
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    engine = pooled_engine(f"duckdb:///{':memory:' if spec else target}")
    if spec:
        lake.configure(engine, spec)
    try:
        _prepare(engine, lake_tables=spec is not None)
    except BaseException:
        engine.dispose()  # a refused store (e.g. newer version) must not stay open, locked, in this process
        raise
    return engine


def open_existing(path: str | None = None) -> Engine:
    """open_store for a command that changes what is there (retract, backup): a store file that does not exist is a
    StoreError naming it, not a new empty store made where a typo pointed (`MPSBENCH_DB=nothere.duckdb mpsbench
    info` made an 800 KB one). A lake is its catalog's to answer for; :memory: is always new."""
    return open_store(_existing(path))


def _existing(path: str | None) -> str:
    from db.errors import Problem, StoreError
    from db.store import lake

    target = str(store_path(path))
    if not lake.is_lake(target) and target != ":memory:" and not Path(target).exists():
        raise StoreError(
            404,
            f"no store at {Path(target).resolve()} (MPSBENCH_STORE or MPSBENCH_DB names it; "
            "`mpsbench ingest` or the server makes one)",
            [Problem("MPSBENCH_STORE", "must name an existing store file")],
        )
    return target


def open_reader(path: str | None = None) -> Engine:
    """A store for a command that only reads (info, export, compare): it must exist, and a file is opened read-only,
    so the command makes nothing, not a folder, a file or a WAL (`mpsbench export` on a mistyped path made the
    folder and an empty store with its WAL, then said "no stored run"). A store from an older mpsbench is migrated
    once by a writer (as any open did before), then read. A process that already holds the file writable (a
    server, a test) reads through that: DuckDB opens a file one way per process."""
    from db.store import lake

    target = _existing(path)
    if lake.is_lake(target) or target == ":memory:":
        return open_store(target)
    try:
        engine = pooled_engine(f"duckdb:///{target}", read_only=True)
        current = _is_current(engine)
    except DBAPIError as exc:
        if not isinstance(exc.orig, duckdb.ConnectionException) or "different configuration" not in str(exc.orig):
            raise
        return open_store(target)
    if current:
        return engine
    engine.dispose()
    close_store(open_store(target))  # migrated, checkpointed: then read like any current store
    return pooled_engine(f"duckdb:///{target}", read_only=True)


def _is_current(engine: Engine) -> bool:
    """Whether the store needs nothing from _prepare: this version, every table there (read without writing)."""
    from db.store.migrate import current_version

    try:
        with engine.connect() as conn:
            tables = {r[0] for r in conn.execute(text("SELECT table_name FROM information_schema.tables"))}
            return current_version(conn) == STORE_VERSION and set(SQLModel.metadata.tables) <= tables
    except BaseException:
        engine.dispose()
        raise


def close_store(engine: Engine) -> None:
    """Close a command's writer with a CHECKPOINT first, so the `.duckdb` alone holds what it wrote: a CLI process
    that exits without closing its engine left every run of `mpsbench ingest` in the `.wal` (a 12 KB `.duckdb`
    beside a 309 KB `.wal`), and a copy of the file alone lost them. A failed CHECKPOINT is raised (the command
    says it); the WAL still holds the writes and the next open replays it."""
    try:
        _checkpoint(str(engine.url.database or ":memory:"), engine)
    finally:
        engine.dispose()


def _checkpoint(target: str, engine: Engine) -> bool:
    from db.store import lake

    if lake.is_lake(target) or target == ":memory:" or engine.url.database in (None, "", ":memory:"):
        return False  # a lake has no WAL of its own (its catalog commits); memory has no file
    with WRITE_LOCK, engine.connect() as conn:  # after every writer in flight
        conn.exec_driver_sql("CHECKPOINT")
    return True


@contextmanager
def writing(path: str | None = None, must_exist: bool = False) -> Iterator[Engine]:
    """The store a CLI command writes (ingest, retract, confirm's and bisect's runs, backup and restore's
    migrations), checkpointed and closed when the command is done with it, also after a failure: what committed
    is then in the file itself. must_exist: a missing store is an error (open_existing), not made."""
    engine = open_existing(path) if must_exist else open_store(path)
    try:
        yield engine
    except BaseException:
        try:
            close_store(engine)
        except Exception:  # noqa: BLE001 - the command's own error is the one to tell; the WAL keeps the writes
            pass
        raise
    close_store(engine)


@contextmanager
def reading(path: str | None = None) -> Iterator[Engine]:
    """The store a CLI command only reads (open_reader), closed when it is done."""
    engine = open_reader(path)
    try:
        yield engine
    finally:
        engine.dispose()


def _prepare(engine: Engine, lake_tables: bool = False) -> None:
    """Migrate, create new tables and stamp the version in one transaction: a crash anywhere in between leaves
    the store at its old version, whole, and the next open migrates again (with the stamp in a later transaction
    a crash after the migration's commit left a store that never opened again). Writes only what changed, so
    opening a current store writes nothing (it opens on a full disk)."""
    from db.store.migrate import migrate

    with WRITE_LOCK, engine.begin() as conn:
        migrate(conn)
        if lake_tables:  # DuckLake takes no keys or indexes (db.store.lake)
            from db.store.lake import create_tables

            create_tables(conn, SQLModel.metadata)
        else:
            SQLModel.metadata.create_all(conn)
        _stamp(conn)


def _stamp(conn) -> None:
    found = dict(conn.execute(text("SELECT key, value FROM meta WHERE key IN ('store_version', 'data_version')")).all())
    if found.get("store_version") != str(STORE_VERSION):  # delete + insert: DuckLake has no INSERT OR REPLACE
        conn.execute(text("DELETE FROM meta WHERE key = 'store_version'"))
        conn.execute(text("INSERT INTO meta VALUES ('store_version', :v)"), {"v": str(STORE_VERSION)})
    if "data_version" not in found:
        conn.execute(text("INSERT INTO meta VALUES ('data_version', :v)"), {"v": uuid.uuid4().hex})


def shared_store() -> Engine:
    key = store_path()
    with _shared_lock:
        if key not in _shared:
            _shared[key] = open_store(key)
        return _shared[key]


def checkpoint_shared() -> list[str]:
    """At a clean shutdown: CHECKPOINT each shared file store, so the `.duckdb` alone holds every acknowledged write
    (after a SIGTERM the last runs sat only in the `.wal`, and a copy of the `.duckdb` missed them), then close it.
    Returns the stores checkpointed; a failure is left to the WAL, which DuckDB replays at the next open."""
    with _shared_lock:
        engines = list(_shared.items())
    done = []
    for target, engine in engines:
        if _checkpoint(target, engine):
            engine.dispose()
            done.append(target)
    return done


def dispose_shared() -> None:
    """Retire the shared engine's database (db.store.faults, after a fault): its next checkout reopens the file,
    requests in flight finish on the old one. The Engine object stays, so pages and routes need nothing new."""
    with _shared_lock:
        engine = _shared.get(store_path())
    if engine is not None:
        engine.dispose()


SETTLE_MB = 64  # DuckDB's buffer pool above this once the last read has ended: the database is retired


def settle_shared() -> None:
    """Once the last read in flight has ended (db.memory.busy): a shared file store whose buffer pool holds more
    than SETTLE_MB is retired, so the blocks its queries read go back to the system (DuckDB keeps every block
    it read, up to its memory limit: a long-running server's blocks grew past 500 MB on a 10 M-result store).
    The next read reopens it (~20 ms there) and reads from the OS's file cache; a read or write that started
    meanwhile finishes on the old database, which closes after it (db.store.pool). Not a lake (its catalog
    is reattached on each open) nor :memory: (its data would go)."""
    from db.store import lake
    from db.store.pool import buffer_bytes

    with _shared_lock:
        engines = [(t, e) for t, e in _shared.items() if t != ":memory:" and not lake.is_lake(t)]
    for _target, engine in engines:
        held = buffer_bytes(engine)
        if held is not None and held > SETTLE_MB * 2**20:
            engine.dispose()


on_settle(settle_shared)


def bump_data_version(conn) -> None:
    """Call inside the ingest transaction, so the version changes exactly when data commits (read it with
    db.query.read.read_data_version)."""
    conn.execute(
        text("UPDATE meta SET value = :v WHERE key = 'data_version'"), {"v": uuid.uuid4().hex}
    )  # _stamp made it
