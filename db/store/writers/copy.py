"""`mpsbench migrate-store --to ducklake:postgres:…`: copy a file store into a new, empty lake (db.store.lake).

The file is opened (and migrated) like every other use, then attached read-only to the lake's connection, and
every table is copied by one INSERT … SELECT in one transaction: the lake gets all of it or nothing. The row
counts of every table are compared before the commit. Results go in run_seq order, so each run's rows stay
together in the Parquet files (what the file store's zone maps rely on too: db.store.tables run_seq).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlmodel import SQLModel

from db.errors import Problem, StoreError
from db.store.engine import WRITE_LOCK, open_store, writing
from db.store.lake import is_lake, quoted

SOURCE = "mpsbench_source"
_ORDER = {"results": " ORDER BY run_seq", "retracted_results": " ORDER BY run_seq"}


def copy_store(source: str, target: str) -> dict[str, int]:
    """Copy the store file `source` into the empty lake `target`; the rows copied per table."""
    if not is_lake(target):
        raise StoreError(400, f"{target} is not a lake", [Problem("--to", "must be ducklake:postgres:<libpq string>")])
    with writing(source, must_exist=True):  # migrated to the current layout, checkpointed: attached read-only below
        pass
    lake = open_store(target)
    try:
        with WRITE_LOCK, lake.connect() as conn:
            stored = conn.execute(text("SELECT count(*) FROM runs")).scalar()
            if stored:
                raise StoreError(
                    409,
                    f"the lake already holds {stored} run(s): migrate into a new catalog",
                    [Problem("--to", "must name a lake with no runs")],
                )
            conn.rollback()  # the check's transaction; the copy's own begins below
            conn.exec_driver_sql(f"ATTACH {quoted(Path(source).resolve())} AS {SOURCE} (READ_ONLY)")
            conn.commit()
            try:
                with conn.begin():
                    counts = _copy_tables(conn)
            finally:
                conn.exec_driver_sql(f"DETACH {SOURCE}")
                conn.commit()
        return counts
    finally:
        lake.dispose()


def _copy_tables(conn) -> dict[str, int]:
    names = {
        r[0]
        for r in conn.execute(
            text("SELECT table_name FROM information_schema.tables WHERE table_catalog = :c"), {"c": SOURCE}
        )
    }
    if "retracted_results" in names:  # made by the first retraction (db.store.writers.retract), absent before
        conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS retracted_results AS SELECT * FROM results LIMIT 0")
    tables = [t.name for t in SQLModel.metadata.sorted_tables if t.name in names] + (
        ["retracted_results"] if "retracted_results" in names else []
    )
    conn.exec_driver_sql("DELETE FROM meta")  # the new lake's own stamp gives way to the file's
    counts = {}
    for name in tables:
        cols = ", ".join(
            f'"{r[0]}"'
            for r in conn.execute(
                text(
                    "SELECT column_name FROM information_schema.columns WHERE table_catalog = current_database() "
                    "AND table_name = :t ORDER BY ordinal_position"
                ),
                {"t": name},
            )
        )
        conn.exec_driver_sql(
            f'INSERT INTO "{name}" ({cols}) SELECT {cols} FROM {SOURCE}."{name}"{_ORDER.get(name, "")}'
        )
        copied = conn.execute(text(f'SELECT count(*) FROM "{name}"')).scalar()
        expected = conn.execute(text(f'SELECT count(*) FROM {SOURCE}."{name}"')).scalar()
        if copied != expected:  # raised inside the transaction: nothing is committed
            raise StoreError(
                500,
                f"copying {name} gave {copied} rows of {expected}; nothing was written",
                [Problem(name, "row counts must match")],
            )
        counts[name] = copied
    return counts
