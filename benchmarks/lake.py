"""The DuckLake store (db.store.lake) beside the DuckDB file store, measured in one run.

`python -m benchmarks.lake [--rows N] [--repeats K] [--uploaders U] [--uploads M] [--json] [--tiny]`
(default 100,000 result rows, 3 repeats, 2 uploaders of 4 uploads each per replica).

Needs duckdb 1.5.5 with the extension wheels (README "A store for many teams") and the PostgreSQL binaries: a
throwaway Postgres is started on a unix socket in a temp folder (tests/pg_lake.py) and stopped by its pid.
  ingest    db.ingest.core.ingest_bundle of one N-result bundle (benchmarks/ingest.py's collector-like bundle)
            into a file store and into a lake, alternating, K times each (each a new run); medians and ratio.
  compare   db.views.compare on tests/seed.py's store (12 runs, two builds), in a file store and in a lake,
            its cache cleared before each; median of K, ratio.
  replicas  2 replica processes on one lake, each with U threads uploading M small bundles (40 results) each,
            beside 1 process on a file store with 2·U threads uploading as many: uploads per second, ratio.
            Writes take turns across replicas (the catalog's advisory lock), so this measures what sharing
            costs, not a speed-up; reads (compare) scale with replicas.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.ingest import build_bundle_bytes  # run as a module from the repo root: benchmarks/ and tests/
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from db.review.comparison import CompareQuery, clear_cache, compare
from tests.pg_lake import Postgres, why_not  # the throwaway Postgres of the tests
from tests.seed import seed_store

ROOT = Path(__file__).resolve().parent.parent

QUERY = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}

_UPLOADER = """
import sys, time
from concurrent.futures import ThreadPoolExecutor
from benchmarks.ingest import build_bundle_bytes
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
engine = open_store(sys.argv[1])
threads, uploads, first = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
bodies = [build_bundle_bytes(40, seed=first + i) for i in range(threads * uploads)]
with ThreadPoolExecutor(threads) as pool:
    start = time.perf_counter()
    created = sum(o.created for o in pool.map(lambda b: ingest_bundle(engine, b), bodies))
print(created, time.perf_counter() - start)
"""


def _uploaders(store: str, processes: int, threads: int, uploads: int) -> tuple[float, int]:
    """Wall seconds until every process has uploaded, and the runs created."""
    procs = [subprocess.Popen([sys.executable, "-c", _UPLOADER, store, str(threads), str(uploads),
                               str(10_000 + p * threads * uploads)], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for p in range(processes)]
    outs = [p.communicate(timeout=1800) for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit("ERROR: an uploader failed: " + " | ".join(e[-1500:] for _, e in outs))
    figures = [o.split() for o, _ in outs]
    return max(float(f[1]) for f in figures), sum(int(f[0]) for f in figures)


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(rows: int, repeats: int, threads: int, uploads: int, folder: Path, pg: Postgres) -> dict:
    os.environ["MPSBENCH_LAKE_DATA"] = str(folder / "lake-ingest")
    lake, file = open_store("ducklake:postgres:" + pg.createdb("ingest")), open_store(folder / "ingest.duckdb")
    times: dict[str, list[float]] = {"file": [], "lake": []}
    for k in range(repeats):
        for name, engine in (("file", file), ("lake", lake)):
            body = build_bundle_bytes(rows, seed=2 * k + (name == "lake"))
            start = time.perf_counter()
            assert ingest_bundle(engine, body).created
            times[name].append(time.perf_counter() - start)
    lake.dispose()
    file.dispose()

    os.environ["MPSBENCH_LAKE_DATA"] = str(folder / "lake-compare")
    lake, file = open_store("ducklake:postgres:" + pg.createdb("compare")), open_store(folder / "compare.duckdb")
    seed_store(lake)
    seed_store(file)
    query = CompareQuery.from_params(QUERY)
    def uncached(engine):  # the query itself, not Compare's cache of its answer
        clear_cache()
        compare(engine, query)

    compare_s = {name: _median_time(lambda e=e: uncached(e), repeats) for name, e in (("file", file), ("lake", lake))}
    lake.dispose()
    file.dispose()

    os.environ["MPSBENCH_LAKE_DATA"] = str(folder / "lake-replicas")
    replicas = "ducklake:postgres:" + pg.createdb("replicas")
    open_store(replicas).dispose()
    lake_s, lake_runs = _uploaders(replicas, 2, threads, uploads)
    shared = str(folder / "replicas.duckdb")
    open_store(shared).dispose()
    file_s, file_runs = _uploaders(shared, 1, 2 * threads, uploads)

    ingest = {n: statistics.median(t) for n, t in times.items()}
    return {
        "ingest": {"rows": rows, "file_s": ingest["file"], "lake_s": ingest["lake"],
                   "lake_over_file": ingest["lake"] / ingest["file"]},
        "compare": {"cases_query": QUERY, "file_s": compare_s["file"], "lake_s": compare_s["lake"],
                    "lake_over_file": compare_s["lake"] / compare_s["file"]},
        "replicas": {"uploads": 2 * threads * uploads, "lake_2_replicas_per_s": lake_runs / lake_s,
                     "file_1_process_per_s": file_runs / file_s, "lake_runs": lake_runs, "file_runs": file_runs,
                     "lake_over_file": (lake_runs / lake_s) / (file_runs / file_s)},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--uploaders", type=int, default=2, help="threads per replica")
    p.add_argument("--uploads", type=int, default=4, help="uploads per thread")
    p.add_argument("--json", action="store_true")
    p.add_argument("--tiny", action="store_true", help="a seconds-long run (the tests)")
    opts = p.parse_args(argv)
    if opts.tiny:
        opts.rows, opts.repeats, opts.uploaders, opts.uploads = 400, 1, 1, 2
    reason = why_not()
    if reason:
        print(f"ERROR: {reason}")
        return 1
    folder = Path(tempfile.mkdtemp(prefix="mpsbench-lake-"))
    pg = Postgres(folder)
    try:
        pg.init()
        pg.start()
        out = run(opts.rows, opts.repeats, opts.uploaders, opts.uploads, folder, pg)
    finally:
        pg.stop()
        shutil.rmtree(folder, ignore_errors=True)
    if opts.json:
        print(json.dumps(out, indent=2))
        return 0
    i, c, r = out["ingest"], out["compare"], out["replicas"]
    print(f"ingest {i['rows']:,} results: file {i['file_s']:.2f} s, lake {i['lake_s']:.2f} s "
          f"(lake/file {i['lake_over_file']:.2f}×)")
    print(f"compare (seeded store): file {c['file_s'] * 1000:.0f} ms, lake {c['lake_s'] * 1000:.0f} ms "
          f"(lake/file {c['lake_over_file']:.2f}×)")
    print(f"{r['uploads']} uploads: lake, 2 replicas {r['lake_2_replicas_per_s']:.1f} runs/s; file, 1 process "
          f"{r['file_1_process_per_s']:.1f} runs/s (lake/file {r['lake_over_file']:.2f}×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
