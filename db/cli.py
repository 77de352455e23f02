"""`mpsbench ingest PATH...` (a bundle file, or a folder: every *.json under it, as `mpsbench sweep` writes them) and `mpsbench info` (also `python -m db …`). Every failure is "ERROR: …" and exit 1, no traceback."""
from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.store.engine import open_store, store_path

USAGE = "usage: mpsbench ingest PATH... | mpsbench info"


def _ingest_one(engine, name: str) -> int:
    try:
        out = ingest_bundle(engine, Path(name).read_bytes())
    except OSError as err:  # missing file, a directory, no permission: say which and go on with the rest
        print(f"{name}: ERROR: cannot read the file: {err.strerror or err}")
        return 1
    except StoreError as err:
        print(f"{name}: ERROR: {err.message}")
        for p in err.problems:
            print(f"  {p.field}: {p.rule}")
        return 1
    print(f"{name}: {out.run_id} {'new' if out.created else 'already present'}, {out.n_results} results")
    return 0


def _bundles(name: str) -> list[str]:
    """A folder stands for every bundle under it (a sweep writes one folder per build and round; journals are
    *.jsonl), in path order; anything else is read as one bundle file."""
    path = Path(name)
    return sorted(str(p) for p in path.rglob("*.json") if p.is_file()) if path.is_dir() else [name]


def _ingest(paths: list[str]) -> int:
    engine = open_store()
    failed = []
    for name in paths:
        files = _bundles(name)
        if not files:
            print(f"{name}: ERROR: no bundle (*.json) in this folder")
            failed.append(1)
        failed += [_ingest_one(engine, f) for f in files]
    return 1 if any(failed) else 0


def _info() -> int:
    engine = open_store()
    with engine.connect() as conn:
        version = conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).scalar()
        print(f"path: {store_path()}\nstore version: {version}")
        for table in ("runs", "run_tags", "results", "review_notes", "aa_pairs"):
            print(f"{table}: {conn.execute(text(f'SELECT count(*) FROM {table}')).scalar()}")
    return 0


def main(args: list[str]) -> int:
    try:
        if args[:1] == ["ingest"] and len(args) > 1:
            return _ingest(args[1:])
        if args == ["info"]:
            return _info()
    except StoreError as err:  # e.g. a store written by a newer mpsbench
        print(f"ERROR: {err}")
        return 1
    except DBAPIError as err:  # the store file itself: locked by another process, a directory, not DuckDB
        print(f"ERROR: cannot open the store {store_path()}: {err.orig}")
        return 1
    print(USAGE, file=sys.stderr)
    return 2

