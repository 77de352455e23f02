"""The store as a DuckLake: catalog in Postgres, data in Parquet under MPSBENCH_LAKE_DATA, shared by several
`mpsbench serve` replicas. Chosen by MPSBENCH_STORE=ducklake:postgres:<libpq connection string>; anything else
is a DuckDB file (db.store.engine). Same tables, same SQL: each connection attaches the lake and `USE`s it.

Why a cross-replica write lock (begin_write … end_write): DuckLake has no PRIMARY KEY/UNIQUE; appends of the same
run_id (or of two runs numbered run_seq = max + 1) do not conflict, and the updates an ingest also makes (meta,
aa_noise) fail one of the two with a DuckLake conflict (measured: "another transaction has deleted inlined data
from it"), an error rather than the 200 the client is owed. Every write already takes
the process's WRITE_LOCK; on a lake it also holds a Postgres transaction-scoped advisory lock for the whole
write, and the write's DuckDB transaction starts after it is granted, so it sees every committed run: the
ingest's check-then-insert is then race-free across replicas exactly as it is across threads (same run_id:
one 201, the other 200; other content: 409). Readers take no lock (DuckLake snapshots). A replica that dies
mid-write loses its Postgres session, which releases the lock.

The extensions come from PyPI wheels (duckdb-extension-ducklake, duckdb-extension-postgres-scanner) and are
LOADed from the package's file: nothing is installed into ~/.duckdb and nothing is fetched from the network.
They exist only for the DuckDB release they were built with (1.5.5): see README "A store for many teams".
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import duckdb

from db.errors import Problem, StoreError
from db.store.pool import root_duplicate

log = logging.getLogger("mpsbench.store")
PREFIX = "ducklake:postgres:"
REASON = "the lake's Postgres catalog cannot be reached; the server retries on every request"  # db.store.faults too
LAKE = "lake"  # the attached lake's name in every connection
CATALOG = "lake_catalog"  # the same Postgres database attached plainly (the advisory lock)
_LOCK_KEY = 7_265_001  # pg_advisory_xact_lock key: "mpsbench writes"
_EXTENSIONS = (("duckdb_extension_postgres_scanner", "postgres_scanner"), ("duckdb_extension_ducklake", "ducklake"))


@dataclass(frozen=True)
class Lake:
    conninfo: str  # libpq connection string of the catalog database
    data_path: str  # folder or s3://… holding the Parquet files


def is_lake(target: str) -> bool:
    return str(target).startswith(PREFIX)


def parse(target: str) -> Lake:
    conninfo = target[len(PREFIX) :].strip()
    if not conninfo:
        raise StoreError(
            400,
            "MPSBENCH_STORE names no Postgres catalog",
            [Problem("MPSBENCH_STORE", "must be ducklake:postgres:<libpq connection string>")],
        )
    data = os.environ.get("MPSBENCH_LAKE_DATA", "").strip()
    if not data:
        raise StoreError(
            400,
            "MPSBENCH_LAKE_DATA is not set: a lake needs a folder (or s3://…) for its Parquet files",
            [Problem("MPSBENCH_LAKE_DATA", "must name a folder or s3:// prefix shared by every replica")],
        )
    if "://" not in data:
        Path(data).mkdir(parents=True, exist_ok=True)
        data = str(Path(data).resolve())
    return Lake(conninfo, data.rstrip("/") + "/")


def quoted(value: str | Path) -> str:
    """A SQL string literal (ATTACH, LOAD, EXPORT/IMPORT take literals, not parameters)."""
    return "'" + str(value).replace("'", "''") + "'"


def shown(target: str) -> str:
    """A store's name fit to print: a lake's connection string may hold a password, so only its kind is said."""
    return PREFIX + "<catalog>" if is_lake(target) else target


@functools.cache  # per process: LOAD runs on every new connection, the wheel's file never moves
def _extension_file(module: str, name: str) -> str:
    version = duckdb.__version__
    spec = importlib.util.find_spec(module)
    found = Path(spec.origin).parent / "extensions" / f"v{version}" / f"{name}.duckdb_extension" if spec else None
    if found is None or not found.is_file():
        raise StoreError(
            500,
            f"the DuckDB extension {name} for duckdb {version} is not installed",
            [
                Problem(
                    "MPSBENCH_STORE",
                    f"a lake needs pip install {module.replace('_', '-')}=={version} "
                    "(wheels exist for duckdb 1.5.5: README 'A store for many teams')",
                )
            ],
        )
    return str(found)


def attach(raw, lake: Lake) -> None:
    """Load the extensions, attach the lake and its catalog database (once per database) and USE the lake."""
    for module, name in _EXTENSIONS:
        raw.execute(f"LOAD {quoted(_extension_file(module, name))}")
    try:
        raw.execute(
            f"ATTACH IF NOT EXISTS {quoted('ducklake:postgres:' + lake.conninfo)} AS {LAKE} "
            f"(DATA_PATH {quoted(lake.data_path)})"
        )
        raw.execute(f"ATTACH IF NOT EXISTS {quoted(lake.conninfo)} AS {CATALOG} (TYPE postgres)")
    except duckdb.Error as exc:
        raise (elsewhere(exc, lake) or unreachable(exc)) from exc
    raw.execute(f"USE {LAKE}")


def elsewhere(exc: BaseException, lake: Lake) -> StoreError | None:
    """The catalog names another data folder than MPSBENCH_LAKE_DATA (e.g. a restored copy): say which."""
    found = re.search(r'does not match existing data path in the catalog "([^"]*)"', str(exc))
    if found is None:
        return None
    return StoreError(
        503,
        f"MPSBENCH_LAKE_DATA ({lake.data_path}) is not this lake's data folder: its catalog names {found.group(1)}",
        [
            Problem(
                "MPSBENCH_LAKE_DATA",
                "must be the folder the catalog names; a backup restored "
                "elsewhere updates the catalog's data_path (README)",
            )
        ],
    )


def unreachable(exc: BaseException) -> StoreError:
    """StoreError(503) saying why Postgres refused, without the connection string (it may hold a password; the
    full message goes to the log, as db.store.faults does)."""
    message = str(exc).strip()
    log.error("lake catalog unreachable: %s: %s", type(exc).__name__, message)
    first = message.splitlines()[0] if message else type(exc).__name__
    why = first.rsplit("failed: ", 1)[-1] if "failed: " in first else first.split(":", 1)[0]
    return StoreError(
        503,
        f"store unavailable: {REASON} ({why.strip()[:200]})",
        [Problem("MPSBENCH_STORE", "the Postgres catalog it names must be running and accept connections")],
    )


def configure(engine, lake: Lake) -> None:
    """Every new DBAPI connection of `engine` (a duplicate of its root, db.store.pool.DuplicatePool) attaches
    and uses the lake (USE is per connection, the attachments per database); every transaction it begins inside
    db.store.engine.WRITE_LOCK first takes the catalog's cross-replica lock."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _use_lake(dbapi_conn, _record):
        attach(dbapi_conn, lake)

    @event.listens_for(engine, "begin")
    def _lock_if_writing(conn):
        held = getattr(_writing, "held", None)
        if held is not None and lake.conninfo not in held:  # once per catalog and write (no self-deadlock)
            held[lake.conninfo] = _locked(conn.engine)


def create_tables(conn, metadata) -> None:
    """The tables without PRIMARY KEY, UNIQUE or indexes (DuckLake supports none); keys are kept by the writes
    (db.ingest.core's check under the replica lock), as on the file store."""
    dialect = conn.dialect
    for table in metadata.sorted_tables:
        cols = ", ".join(
            f'"{c.name}" {c.type.compile(dialect)}' + ("" if c.nullable else " NOT NULL") for c in table.columns
        )
        conn.exec_driver_sql(f'CREATE TABLE IF NOT EXISTS "{table.name}" ({cols})')


_writing = threading.local()  # .held: {conninfo: lock connection} while this thread holds WRITE_LOCK
_lock_conns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # engine -> its lock connection
_guard = threading.Lock()


def begin_write() -> None:
    """db.store.engine.WRITE_LOCK was taken: the lake transactions begun from now on take the replica lock."""
    _writing.held = {}


def end_write() -> None:
    """WRITE_LOCK is being released, after the write committed or rolled back: release the replica locks."""
    held, _writing.held = getattr(_writing, "held", None) or {}, None
    for cursor in held.values():
        try:
            cursor.execute("COMMIT")  # ends the Postgres transaction: the lock is released
        except duckdb.Error:  # the session is gone, and with it the lock; the next write makes a new connection
            cursor.close()


def _locked(engine) -> duckdb.DuckDBPyConnection:
    """The engine's lock connection, in a transaction holding the advisory lock (blocks until granted). Taken
    before the write's first statement, so the write's DuckLake snapshot includes every earlier write."""
    for attempt in (1, 2):  # a connection closed with its engine's root (dispose after a fault) is made anew once
        with _guard:
            cursor = _lock_conns.get(engine)
            if cursor is None:  # a child of the root: a child of a checkout would die with the checkout
                cursor = _lock_conns[engine] = root_duplicate(engine)
        try:
            cursor.execute("BEGIN")
            cursor.execute(
                f"SELECT * FROM postgres_query('{CATALOG}', 'SELECT pg_advisory_xact_lock({_LOCK_KEY})::text')"
            ).fetchall()
            return cursor
        except duckdb.Error as exc:
            with _guard:
                _lock_conns.pop(engine, None)
            try:
                cursor.close()
            except duckdb.Error:
                pass
            if attempt == 2 or not isinstance(exc, duckdb.ConnectionException):
                raise unreachable(exc) from exc
    raise AssertionError("unreachable")
