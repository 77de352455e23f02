"""`mpsbench export --format pytorch-oss`: stored runs (a selector's, a review's two sides', named runs) as PyTorch
OSS benchmark records (bundle.pytorch_oss.writing), one file per run — `<out>/<run_id>.json`, a JSON list of records, as
PyTorch's benchmark jobs write them and `mpsbench ingest` reads them back (a run per file)."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import Engine

from bundle.pytorch_oss.writing import to_records
from db.errors import Problem, StoreError
from db.query.run_bundles import run_bundles, selected_run_ids
from db.query.selectors import Selector


def export_runs(engine: Engine, selectors: list[Selector], out: Path) -> list[tuple[Path, int]]:
    """Write each selected run's records; (file, records) per run. A selector picking nothing is refused, naming it."""
    run_ids: list[str] = []
    for selector in selectors:
        found = selected_run_ids(engine, [selector])
        if not found:
            raise StoreError(
                404, f"{selector.text}: no stored run", [Problem("selector", f"{selector.text} picks no run")]
            )
        run_ids += [r for r in found if r not in run_ids]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for bundle in run_bundles(engine, run_ids):
        path = out / f"{bundle['run_id']}.json"
        records = to_records(bundle)
        path.write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written.append((path, len(records)))
    return written
