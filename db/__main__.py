"""`python -m db ingest FILE...` and `python -m db info`."""
from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy import text

from db.errors import StoreError
from db.ingest import ingest_bundle
from db.store import open_store, store_path


def _ingest(files: list[str]) -> int:
    engine, failed = open_store(), 0
    for name in files:
        try:
            out = ingest_bundle(engine, Path(name).read_bytes())
            print(f"{name}: {out.run_id} {'new' if out.created else 'already present'}, {out.n_results} results")
        except StoreError as err:
            failed = 1
            print(f"{name}: ERROR: {err.message}")
            for p in err.problems:
                print(f"  {p.field}: {p.rule}")
    return failed


def _info() -> int:
    engine = open_store()
    with engine.connect() as conn:
        version = conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).scalar()
        print(f"path: {store_path()}\nstore version: {version}")
        for table in ("runs", "run_tags", "results", "review_notes"):
            print(f"{table}: {conn.execute(text(f'SELECT count(*) FROM {table}')).scalar()}")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["ingest"] and len(args) > 1:
        sys.exit(_ingest(args[1:]))
    if args == ["info"]:
        sys.exit(_info())
    sys.exit("usage: python -m db ingest FILE... | python -m db info")
