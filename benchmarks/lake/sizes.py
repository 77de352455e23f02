"""Cold Compare on a large store, lake vs file (benchmarks/lake/ --compare-rows N).

The file store is benchmarks/dashboard.generate's (N results, 1,000 a run, 50 machines, builds of 100 runs each,
made inside DuckDB); the lake gets the same rows through `mpsbench migrate-store`'s copy (db.store.writers.copy). Then
db.review.comparison.compare for dashboard.BASE (torch=2.10.0 → 2.11.0, machine scope), its cache cleared before
each call, alternating file and lake, K times each: medians and their ratio. Both sides run on the same duckdb
(1.5.5, the one the lake's extensions exist for).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from benchmarks.dashboard import BASE, generate
from db.review.comparison import CompareQuery, clear_cache, compare
from db.store.engine import open_store
from db.store.writers.copy import copy_store


def compare_big(file_path: Path, lake: str, rows: int, repeats: int, machines: int = 50) -> dict:
    """`lake` must name an empty catalog (MPSBENCH_LAKE_DATA set)."""
    start = time.perf_counter()
    made = generate(file_path, rows, machines=machines)
    generate_s = time.perf_counter() - start
    start = time.perf_counter()
    counts = copy_store(str(file_path), lake)
    copy_s = time.perf_counter() - start
    engines = {"file": open_store(str(file_path)), "lake": open_store(lake)}
    query = CompareQuery.from_params(BASE)
    times: dict[str, list[float]] = {"file": [], "lake": []}
    cases = {}
    try:
        for _ in range(repeats):
            for name, engine in engines.items():
                clear_cache()
                start = time.perf_counter()
                cases[name] = len(compare(engine, query).cases)
                times[name].append(time.perf_counter() - start)
    finally:
        for engine in engines.values():
            engine.dispose()
    if cases["file"] != cases["lake"]:
        raise RuntimeError(f"the lake compared {cases['lake']} cases, the file store {cases['file']}")
    med = {name: statistics.median(t) for name, t in times.items()}
    return {
        "rows": made["rows"],
        "runs": made["runs"],
        "query": BASE,
        "cases": cases["file"],
        "repeats": repeats,
        "generate_s": round(generate_s, 1),
        "migrate_s": round(copy_s, 1),
        "migrated_results": counts["results"],
        "file_s": med["file"],
        "lake_s": med["lake"],
        "lake_over_file": med["lake"] / med["file"],
        "file_all_s": times["file"],
        "lake_all_s": times["lake"],
    }
