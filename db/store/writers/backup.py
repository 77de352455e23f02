"""`mpsbench backup DIR` / `mpsbench restore DIR`: the whole store as DuckDB's EXPORT DATABASE (schema.sql,
load.sql and one Parquet file per table) and back with IMPORT DATABASE.

Both refuse a non-empty target, so neither ever overwrites data: back up into a new (or empty) folder, restore
into a new (or empty) store file. A restore writes a temporary file and renames it only when complete. A backup taken while the server runs needs the server stopped first (DuckDB
allows one process per file), or run it against a copy of the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from db.errors import Problem, StoreError
from db.store.engine import writing
from db.store.lake import is_lake, quoted


def _file_store(store: str) -> None:
    if is_lake(store):
        raise StoreError(
            400,
            "backup and restore work on a store file, not a lake (README: backups of a lake)",
            [Problem("MPSBENCH_STORE", "must name a DuckDB file")],
        )


def backup(store: str, target: str) -> list[str]:
    """Export the store at `store` into the folder `target` (new or empty); returns the files written."""
    _file_store(store)
    folder = Path(target)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise StoreError(
            409,
            f"{target} is not an empty folder: back up into a new one",
            [Problem("DIR", "must not exist or be an empty folder")],
        )
    # opened (and migrated) like every other use, so the backup has the current layout; a store that is not there
    # is an error, not an empty store made and backed up
    with writing(store, must_exist=True) as engine, engine.connect() as conn:
        conn.connection.driver_connection.execute(f"EXPORT DATABASE {quoted(folder)} (FORMAT PARQUET)")
    return sorted(p.name for p in folder.iterdir())


def _tables(path: Path) -> int:
    duck = duckdb.connect(str(path), read_only=True)
    try:
        return duck.execute("SELECT count(*) FROM information_schema.tables").fetchone()[0]
    finally:
        duck.close()


def restore(source: str, store: str) -> dict[str, int]:
    """Import the backup folder `source` into the store file `store` (new or without tables); row counts back.
    The import goes to `<store>.restoring` and is renamed to `store` only once complete (imported, committed,
    opened and migrated): a restore killed midway leaves no store file behind, only its temporary one, which
    the next restore replaces."""
    _file_store(store)
    folder = Path(source)
    if not (folder / "schema.sql").is_file() or not (folder / "load.sql").is_file():
        raise StoreError(
            404,
            f"{source} is not an mpsbench backup (no schema.sql and load.sql)",
            [Problem("DIR", "must be a folder written by mpsbench backup")],
        )
    target = Path(store)
    if target.exists() and (tables := _tables(target)):
        raise StoreError(
            409,
            f"the store {store} already holds {tables} table(s): restore into a new file",
            [Problem("MPSBENCH_STORE", "must not exist or hold no tables (or MPSBENCH_DB)")],
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".restoring")
    for leftover in (partial, partial.with_name(partial.name + ".wal")):  # an earlier restore, killed
        leftover.unlink(missing_ok=True)
    duck = duckdb.connect(str(partial))
    try:
        duck.execute("BEGIN")
        duck.execute(f"IMPORT DATABASE {quoted(folder)}")
        duck.execute("COMMIT")  # all tables or none
    finally:
        duck.close()
    # checks the version and migrates a backup from an older mpsbench; closed with a checkpoint, so everything is in
    # the file itself before it takes the store's name
    with writing(str(partial)) as engine, engine.connect() as conn:
        raw = conn.connection.driver_connection
        names = [r[0] for r in raw.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        counts = {n: raw.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    target.with_name(target.name + ".wal").unlink(missing_ok=True)  # an empty store's log must not replay over it
    os.replace(partial, target)
    return counts
