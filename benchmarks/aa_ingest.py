"""What storing A/A pairs costs an ingest: a repeat run of a build already stored on its machine (so it has
partners) ingested into a benchmarks/dashboard.py store, with the pairs step (db.store.derived.aa_pairs) and without it,
alternating, in one process. The store holds every pair of its runs (2 runs per build and machine), so each
timed run recomputes the model's figures of its groups over all of that chip's pairs: the worst case.

Usage: python benchmarks/aa_ingest.py [--rows N] [--machines M] [--db PATH] [--repeats K] [--tiny] [--json]
(default 1,000,000 rows on 50 machines)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from dashboard import DTYPES, MACHINES, PER_RUN, WORKLOADS, generate

import db.ingest.core
from db.store.engine import open_store


def repeat_bundle() -> dict:
    """Run 0's twin: machine mac-0 (Apple M1 Max), torch 2.10.0, the generator's 1,000 cases."""
    results = []
    for j in range(PER_RUN):
        value = 10.0 + j % 97
        bandwidth = j % 10 == 9
        results.append(
            {
                "workload": WORKLOADS[j % 6],
                "suite": "kernels",
                "params": {"n": j // 18},
                "dtype": DTYPES[(j // 6) % 3],
                "compile": "eager",
                "metric": "achieved_bandwidth" if bandwidth else "op_time",
                "unit": "GB/s" if bandwidth else "µs",
                "status": "ok",
                "samples": [(1000.0 / value if bandwidth else value) * (1 + 0.001 * k) for k in range(5)],
            }
        )
    return {
        "schema_version": 1,
        "run_id": uuid.uuid4().hex,
        "started_at": "2026-12-02T10:00:00+00:00",
        "ended_at": "2026-12-02T10:05:00+00:00",
        "complete": True,
        "machine": {"name": "mac-0", "os": "macOS", "chip": "Apple M1 Max", "gpu_cores": 40},
        "build": {"torch_version": "2.10.0", "channel": "stable", "python_version": "3.11", "collector_version": "0.1"},
        "device": {"type": "mps", "name": "Apple M1 Max"},
        "results": results,
    }


def measure(path: Path, repeats: int) -> dict:
    engine = open_store(str(path))
    real = db.ingest.core.store_pairs_of_run
    times: dict[str, list[float]] = {"with_pairs": [], "without_pairs": []}
    try:
        for _ in range(repeats):
            for mode in times:
                db.ingest.core.store_pairs_of_run = real if mode == "with_pairs" else (lambda conn, run_id: None)
                body = json.dumps(repeat_bundle()).encode()
                start = time.perf_counter()
                db.ingest.core.ingest_bundle(engine, body)
                times[mode].append(time.perf_counter() - start)
        with engine.connect() as conn:
            duck = conn.connection.driver_connection
            pairs, groups = duck.execute("SELECT count(*), count(DISTINCT group_id) FROM aa_pairs").fetchone()
    finally:
        db.ingest.core.store_pairs_of_run = real
        engine.dispose()
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "median_ms": {k: round(1000 * v, 1) for k, v in med.items()},
        "all_ms": {k: [round(1000 * x, 1) for x in v] for k, v in times.items()},
        "ratio_with_over_without": round(med["with_pairs"] / med["without_pairs"], 2),
        "aa_pairs_after": pairs,
        "groups": groups,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--db", type=Path, default=None, help="a store made by benchmarks/dashboard.py (copied first)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--machines", type=int, default=MACHINES)
    ap.add_argument("--tiny", action="store_true", help="8,000 rows on 2 machines, 1 repeat (what the tests run)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.tiny:
        args.rows, args.machines, args.repeats = 8_000, 2, 1
    workdir = Path(tempfile.mkdtemp(prefix="mpsbench-aa-"))
    path = workdir / "store.duckdb"
    try:
        start = time.perf_counter()
        if args.db:
            shutil.copy(args.db, path)  # the timed ingests write: never into the given file
            shape = {"copied_from": str(args.db)}
        else:
            # the timing-only store: the repeated run is its layout (op_time and bandwidth), so it pairs with it
            shape = generate(path, args.rows, machines=args.machines, mix=False)
        figures = {
            "store": {**shape, "prepare_s": round(time.perf_counter() - start, 1)},
            "repeat_run_ingest": measure(path, args.repeats),
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(figures, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
