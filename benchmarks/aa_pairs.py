"""The A/A pairs step (db.store.derived.aa_pairs) as runs of one build on one machine pile up: N runs (default 200) of
C cases each (default 1,000, op_time µs, 5 samples with ±0.5 % noise) ingested one by one through the real
ingest into a fresh store. Each run pairs with its PARTNERS most recent predecessors, so the pairs grow
linearly with the runs and the step's time stays flat; pairing every earlier run (the rule before) grew with the
square of the runs.

Printed: the ingest and the pairs step per run near N/4, N/2 and N runs (median of the last 5 runs up to
there: ms), the pairs stored against the bound C × Σ min(r, PARTNERS) and against every pair (C × N(N−1)/2),
the process's peak RSS (MiB), and a same-run ratio: the pairs step of the last run with PARTNERS partners
against the same step pairing all its N−1 predecessors (timed in alternation, each rolled back).

Usage: python benchmarks/aa_pairs.py [--runs N] [--cases C] [--repeats K] [--tiny] [--json]
(--tiny: 12 runs of 20 cases, what the tests run)
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

import db.ingest.core
from db.store.derived import aa_pairs
from db.store.engine import open_store

RSS_PER_MIB = 2**20 if sys.platform == "darwin" else 2**10  # ru_maxrss: bytes on macOS, KiB on Linux


def run_bundle(rng, cases: int) -> bytes:
    results = [
        {
            "workload": "softmax",
            "suite": "kernels",
            "params": {"n": j},
            "dtype": "float32",
            "compile": "eager",
            "metric": "op_time",
            "unit": "µs",
            "status": "ok",
            "samples": [float(v) for v in (10.0 + j % 97) * (1 + 0.01 * (rng.random(5) - 0.5))],
        }
        for j in range(cases)
    ]
    return json.dumps(
        {
            "schema_version": 1,
            "run_id": uuid.uuid4().hex,
            "started_at": "2026-12-02T10:00:00+00:00",
            "complete": True,
            "machine": {"name": "mac-0", "os": "macOS", "chip": "Apple M1 Max"},
            "build": {
                "torch_version": "2.10.0",
                "channel": "stable",
                "python_version": "3.11",
                "collector_version": "0.1",
            },
            "device": {"type": "mps", "name": "Apple M1 Max"},
            "results": results,
        }
    ).encode()


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / RSS_PER_MIB


def measure(runs: int, cases: int, repeats: int) -> dict:
    rng = np.random.default_rng(7)
    path = Path(tempfile.mkdtemp(prefix="mpsbench-aa-pairs-")) / "store.duckdb"
    engine = open_store(str(path))
    real = db.ingest.core.store_pairs_of_run
    step: list[float] = []

    def timed(conn, run_id):
        start = time.perf_counter()
        real(conn, run_id)
        step.append(time.perf_counter() - start)

    ingest: list[float] = []
    run_id = ""
    try:
        db.ingest.core.store_pairs_of_run = timed
        for _ in range(runs):
            body = run_bundle(rng, cases)
            start = time.perf_counter()
            run_id = db.ingest.core.ingest_bundle(engine, body).run_id
            ingest.append(time.perf_counter() - start)
        db.ingest.core.store_pairs_of_run = real
        with engine.connect() as conn:
            pairs = conn.exec_driver_sql("SELECT count(*) FROM aa_pairs").scalar()
        rss_bounded = _peak_rss_mib()
        ratio = _bounded_vs_all(engine, run_id, runs, repeats)
    finally:
        db.ingest.core.store_pairs_of_run = real
        engine.dispose()
    marks = sorted({max(1, runs // 4), max(1, runs // 2), runs})
    k = aa_pairs.PARTNERS
    return {
        "runs": runs,
        "cases": cases,
        "partners": k,
        "per_run_ms": {
            str(m): {
                "ingest": round(1000 * statistics.median(ingest[max(0, m - 5) : m]), 1),
                "pairs_step": round(1000 * statistics.median(step[max(0, m - 5) : m]), 1),
            }
            for m in marks
        },
        "aa_pairs": pairs,
        "aa_pairs_bound": cases * sum(min(r, k) for r in range(runs)),
        "aa_pairs_if_every_pair": cases * runs * (runs - 1) // 2,
        "peak_rss_mib": {
            "after_bounded_ingests": round(rss_bounded, 1),
            "after_all_pairs_step": round(_peak_rss_mib(), 1),
        },
        "last_run_pairs_step": ratio,
    }


def _bounded_vs_all(engine, run_id: str, runs: int, repeats: int) -> dict:
    """The last run's pairs step with PARTNERS partners and with every earlier run, alternating, rolled back."""
    times: dict[str, list[float]] = {"bounded": [], "all_earlier": []}
    for _ in range(repeats):
        for mode, partners in (("bounded", aa_pairs.PARTNERS), ("all_earlier", runs)):
            with engine.connect() as conn:
                with conn.begin() as tx:
                    start = time.perf_counter()
                    aa_pairs.store_pairs_of_run(conn, run_id, partners)
                    times[mode].append(time.perf_counter() - start)
                    tx.rollback()
    med = {m: statistics.median(t) for m, t in times.items()}
    return {
        "median_ms": {m: round(1000 * v, 1) for m, v in med.items()},
        "all_earlier_over_bounded": round(med["all_earlier"] / med["bounded"], 2),
        "repeats": repeats,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tiny", action="store_true", help="12 runs of 20 cases, 1 repeat (what the tests run)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.tiny:
        args.runs, args.cases, args.repeats = 12, 20, 1
    out = measure(args.runs, args.cases, args.repeats)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"{out['runs']} runs of one build on one machine, {out['cases']} cases each; each run pairs with its "
        f"{out['partners']} most recent predecessors"
    )
    for mark, ms in out["per_run_ms"].items():
        print(
            f"  near run {mark:>4}: ingest {ms['ingest']:8.1f} ms/run, of which the pairs step "
            f"{ms['pairs_step']:7.1f} ms"
        )
    print(
        f"  A/A pairs stored: {out['aa_pairs']:,} (bound {out['aa_pairs_bound']:,}; pairing every two runs: "
        f"{out['aa_pairs_if_every_pair']:,})"
    )
    last = out["last_run_pairs_step"]
    print(
        f"  last run's pairs step: {last['median_ms']['bounded']} ms bounded vs {last['median_ms']['all_earlier']} "
        f"ms pairing all {out['runs'] - 1} earlier runs ({last['all_earlier_over_bounded']}×, same run)"
    )
    rss = out["peak_rss_mib"]
    print(
        f"  peak RSS: {rss['after_bounded_ingests']} MiB after the ingests, {rss['after_all_pairs_step']} MiB "
        "after the all-pairs step"
    )


if __name__ == "__main__":
    main()
