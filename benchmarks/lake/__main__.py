"""The DuckLake store (db.store.lake) beside the DuckDB file store, measured in one run.

`python -m benchmarks.lake [--only PARTS] [--rows N] [--repeats K] [--uploaders U] [--uploads M] [--seconds S]
[--load-uploaders T] [--load-bundles B] [--readers C] [--races R] [--compare-rows N] [--json] [--tiny]`

Needs duckdb 1.5.5 with the extension wheels (README "A store for many teams") and the PostgreSQL binaries: a
throwaway Postgres is started on a unix socket in a temp folder (benchmarks/stores/pg_lake.py) and stopped by its pid.
Parts (--only, default all four; each on its own new catalog):
  ingest    db.ingest.core.ingest_bundle of one N-result bundle (default 100,000; benchmarks/ingest.py's
            collector-like bundle) into a file store and into a lake, alternating, K times each (each a new
            run); medians and ratio.
  compare   db.views.release.compare on benchmarks/stores/seed.py's store (12 runs, two builds), in a file store and in a lake,
            its cache cleared before each; median of K, ratio.
  replicas  2 replica processes on one lake, each with U threads calling ingest_bundle directly for M small
            bundles (40 results) each, beside 1 process on a file store with 2·U threads uploading as many:
            uploads per second, ratio. Writes take turns across replicas (the catalog's advisory lock), so
            this measures what sharing costs, not a speed-up.
  load      2 real `mpsbench serve` replicas under HTTP uploads and Compare readers for S seconds (default
            120), then same-moment uploads of one run_id to both (benchmarks/lake/load.py).
With --compare-rows N (default 0: off): cold Compare on an N-result store, lake vs file (benchmarks/lake/sizes.py;
alone: --only '' --compare-rows N).
--tiny: every part small, and --compare-rows 8000 (tens of seconds; what tests/test_benchmarks.py runs).
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
from benchmarks.lake.load import load_report, run_load
from benchmarks.lake.sizes import compare_big
from benchmarks.stores.pg_lake import Postgres, why_not  # the throwaway Postgres of the tests
from benchmarks.stores.seed import seed_store
from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery, clear_cache, compare
from db.store.engine import open_store

ROOT = Path(__file__).resolve().parents[2]

QUERY = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}
PARTS = ("ingest", "compare", "replicas", "load")

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
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _UPLOADER, store, str(threads), str(uploads), str(10_000 + p * threads * uploads)],
            cwd=ROOT,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for p in range(processes)
    ]
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


def ingest_part(rows: int, repeats: int, folder: Path, pg: Postgres) -> dict:
    os.environ["MPSBENCH_LAKE_DATA"] = str(folder / "lake-ingest")
    lake, file = open_store("ducklake:postgres:" + pg.createdb("ingest")), open_store(folder / "ingest.duckdb")
    times: dict[str, list[float]] = {"file": [], "lake": []}
    for k in range(repeats):
        for name, engine in (("file", file), ("lake", lake)):
            body = build_bundle_bytes(rows, seed=2 * k + (name == "lake"))
            start = time.perf_counter()
            assert ingest_bundle(engine, body).created
            times[name].append(time.perf_counter() - start)
            del body
    lake.dispose()
    file.dispose()
    ingest = {n: statistics.median(t) for n, t in times.items()}
    return {
        "rows": rows,
        "repeats": repeats,
        "file_s": ingest["file"],
        "lake_s": ingest["lake"],
        "lake_over_file": ingest["lake"] / ingest["file"],
        "file_all_s": times["file"],
        "lake_all_s": times["lake"],
    }


def compare_part(repeats: int, folder: Path, pg: Postgres) -> dict:
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
    return {
        "cases_query": QUERY,
        "file_s": compare_s["file"],
        "lake_s": compare_s["lake"],
        "lake_over_file": compare_s["lake"] / compare_s["file"],
    }


def replicas_part(threads: int, uploads: int, folder: Path, pg: Postgres) -> dict:
    os.environ["MPSBENCH_LAKE_DATA"] = str(folder / "lake-replicas")
    replicas = "ducklake:postgres:" + pg.createdb("replicas")
    open_store(replicas).dispose()
    lake_s, lake_runs = _uploaders(replicas, 2, threads, uploads)
    shared = str(folder / "replicas.duckdb")
    open_store(shared).dispose()
    file_s, file_runs = _uploaders(shared, 1, 2 * threads, uploads)
    return {
        "uploads": 2 * threads * uploads,
        "lake_2_replicas_per_s": lake_runs / lake_s,
        "file_1_process_per_s": file_runs / file_s,
        "lake_runs": lake_runs,
        "file_runs": file_runs,
        "lake_over_file": (lake_runs / lake_s) / (file_runs / file_s),
    }


def load_part(opts, folder: Path, pg: Postgres) -> dict:
    data = folder / "lake-load"
    os.environ["MPSBENCH_LAKE_DATA"] = str(data)
    return run_load(
        "ducklake:postgres:" + pg.createdb("load"),
        data,
        folder,
        seconds=opts.seconds,
        threads=opts.load_uploaders,
        bundles=opts.load_bundles,
        readers=opts.readers,
        trials=opts.races,
    )


def big_compare_part(opts, folder: Path, pg: Postgres) -> dict:
    os.environ["MPSBENCH_LAKE_DATA"] = str(folder / "lake-big")
    return compare_big(
        folder / "big.duckdb",
        "ducklake:postgres:" + pg.createdb("big"),
        opts.compare_rows,
        opts.repeats,
        machines=2 if opts.tiny else 50,
    )


def run(opts, folder: Path, pg: Postgres) -> dict:
    parts = {
        "ingest": lambda: ingest_part(opts.rows, opts.repeats, folder, pg),
        "compare": lambda: compare_part(opts.repeats, folder, pg),
        "replicas": lambda: replicas_part(opts.uploaders, opts.uploads, folder, pg),
        "load": lambda: load_part(opts, folder, pg),
        "compare_big": lambda: big_compare_part(opts, folder, pg),
    }
    wanted = [p for p in PARTS if p in opts.only] + (["compare_big"] if opts.compare_rows else [])
    return {name: parts[name]() for name in wanted}


def report(out: dict) -> list[str]:
    lines = []
    if i := out.get("ingest"):
        lines.append(
            f"ingest {i['rows']:,} results (median of {i['repeats']}): file {i['file_s']:.2f} s, "
            f"lake {i['lake_s']:.2f} s (lake/file {i['lake_over_file']:.2f}×; goal ≤ 2×)"
        )
    if c := out.get("compare"):
        lines.append(
            f"compare (seeded store): file {c['file_s'] * 1000:.0f} ms, lake {c['lake_s'] * 1000:.0f} ms "
            f"(lake/file {c['lake_over_file']:.2f}×)"
        )
    if r := out.get("replicas"):
        lines.append(
            f"{r['uploads']} direct ingests: lake, 2 replicas {r['lake_2_replicas_per_s']:.1f} runs/s; file, "
            f"1 process {r['file_1_process_per_s']:.1f} runs/s (lake/file {r['lake_over_file']:.2f}×)"
        )
    if ld := out.get("load"):
        lines += load_report(ld)
    if b := out.get("compare_big"):
        lines.append(
            f"cold compare on {b['rows']:,} results ({b['cases']:,} cases, median of {b['repeats']}): "
            f"file {b['file_s']:.2f} s, lake {b['lake_s']:.2f} s (lake/file {b['lake_over_file']:.2f}×; "
            f"goal ≤ 1.5×); generated in {b['generate_s']:.0f} s, migrated in {b['migrate_s']:.0f} s"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--only", default=",".join(PARTS), help=f"parts to run, of {','.join(PARTS)} (default: all; '' for none)"
    )
    p.add_argument("--rows", type=int, default=100_000, help="ingest: results in the bundle")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--uploaders", type=int, default=2, help="replicas: threads per replica")
    p.add_argument("--uploads", type=int, default=4, help="replicas: uploads per thread")
    p.add_argument("--seconds", type=float, default=120, help="load: start upload rounds for this long")
    p.add_argument("--load-uploaders", type=int, default=8, help="load: uploader threads per replica")
    p.add_argument("--load-bundles", type=int, default=5, help="load: bundles per thread and round")
    p.add_argument("--readers", type=int, default=2, help="load: Compare readers")
    p.add_argument("--races", type=int, default=3, help="load: same-moment upload pairs of each kind")
    p.add_argument("--compare-rows", type=int, default=0, help="cold Compare on a store of N results (0: off)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--tiny", action="store_true", help="a short run of every part (the tests)")
    opts = p.parse_args(argv)
    opts.only = {s.strip() for s in opts.only.split(",") if s.strip()}
    if opts.only - set(PARTS):
        p.error(f"--only: unknown part(s) {', '.join(sorted(opts.only - set(PARTS)))}")
    if opts.tiny:
        opts.rows, opts.repeats, opts.uploaders, opts.uploads = 400, 1, 1, 2
        opts.seconds, opts.load_uploaders, opts.load_bundles, opts.readers, opts.races = 0, 2, 2, 1, 1
        opts.compare_rows = 8_000
    reason = why_not()
    if reason:
        print(f"ERROR: {reason}")
        return 1
    folder = Path(tempfile.mkdtemp(prefix="mpsbench-lake-"))
    pg = Postgres(folder)
    try:
        pg.init()
        pg.start()
        out = run(opts, folder, pg)
    finally:
        pg.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(out, indent=2) if opts.json else "\n".join(report(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
