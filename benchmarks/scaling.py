"""How each cost of the dashboard grows with the store (`benchmarks/dashboard.py --scaling`): the cold Compare, the
bare DuckDB read of the same rows (its floor), the ingest of one more run, and the Compare page's time to its chart,
at several store sizes, with the growth exponent of each fitted over the sizes (time ∝ rows^k, least squares on
log-log; k ≈ 1 grows with the rows, k ≈ 0 not at all). Same-run figures: every size is measured in one process,
one after another, so the exponents compare costs under one machine state."""

from __future__ import annotations

import json
import statistics
import time
import uuid
from pathlib import Path

import numpy as np

GOALS = {"compare_cold_ms": 1.1, "page_chart_s": 1.1, "ingest_one_run_ms": 0.2}  # k at most (README, issue #27)


def run_bundle(
    machine: int, build: str, per_run: int, workloads: list[str], dtypes: list[str], chips: int, samples: int
) -> dict:
    """One run shaped like the generated store's (same cases, so its A/A pairing does the work a real one does)."""
    results = []
    for j in range(per_run):
        if j % 100 == 42:
            continue  # the store's unavailable figures
        bandwidth = j % 10 == 9
        value = (10 + j % 97) * (1000.0 / (10 + j % 97) ** 2 if bandwidth else 1.0)
        results.append(
            {
                "workload": workloads[j % 6],
                "suite": "kernels",
                "params": {"n": j // 18},
                "dtype": dtypes[(j // 6) % 3],
                "compile": "eager",
                "metric": "achieved_bandwidth" if bandwidth else "op_time",
                "unit": "GB/s" if bandwidth else "µs",
                "status": "ok",
                "samples": [value * (1 + 0.001 * k) for k in range(samples)],
            }
        )
    chip = f"Apple M{machine % chips + 1} Max"
    return {
        "schema_version": 1,
        "run_id": uuid.uuid4().hex,
        "started_at": "2026-12-01T10:00:00+00:00",
        "ended_at": "2026-12-01T10:05:00+00:00",
        "complete": True,
        "machine": {
            "name": f"mac-{machine}",
            "os": "macOS",
            "os_version": "15.2",
            "chip": chip,
            "arch": "arm64",
            "memory_bytes": 68719476736,
            "power_source": "ac",
            "gpu_cores": 40,
        },
        "build": {"torch_version": build, "channel": "stable", "python_version": "3.11", "collector_version": "0.1"},
        "device": {"type": "mps", "name": chip},
        "tags": {},
        "warnings": [],
        "results": results,
    }


def time_ingest(path: Path, bundle_of, repeats: int) -> dict:
    from db.ingest.core import ingest_bundle
    from db.store.engine import open_store

    engine = open_store(str(path))
    times = []
    for _ in range(repeats):
        raw = json.dumps(bundle_of()).encode()
        start = time.perf_counter()
        ingest_bundle(engine, raw, "benchmark")
        times.append(time.perf_counter() - start)
    engine.dispose()
    return {"median_ms": round(1000 * statistics.median(times), 1), "repeats": repeats}


def exponent(rows: list[int], seconds: list[float]) -> float | None:
    """k in seconds ∝ rows^k (least squares on log-log); None with fewer than two sizes."""
    if len(rows) < 2 or min(seconds) <= 0:
        return None
    k, _ = np.polyfit(np.log(np.asarray(rows, float)), np.log(np.asarray(seconds, float)), 1)
    return round(float(k), 2)


def table(points: list[dict], fits: dict) -> str:
    head = f"{'rows':>12} {'compare cold':>13} {'bare read':>10} {'ratio':>6} {'ingest 1 run':>13} {'page chart':>11}"
    lines = [head]
    for p in points:
        page = f"{p['page_chart_s']:.2f} s" if p.get("page_chart_s") is not None else "—"
        lines.append(
            f"{p['rows']:>12,} {p['compare_cold_ms']:>10.0f} ms {p['bare_ms']:>7.0f} ms "
            f"{p['compare_cold_ms'] / p['bare_ms']:>5.2f}× {p['ingest_one_run_ms']:>10.0f} ms {page:>11}"
        )
    lines.append(
        "growth exponent k (time ∝ rows^k): "
        + ", ".join(
            f"{name} {k if k is not None else '—'} (goal ≤ {GOALS[name]})"
            if name in GOALS
            else f"{name} {k if k is not None else '—'}"
            for name, k in fits.items()
        )
    )
    return "\n".join(lines)


# where a cold Compare's time goes, by step (db.review.comparison.compute_compare's parts, main thread). The
# candidate side's read, the A/A lookup, each side's quartiles and replicate figures (when they come from samples)
# and the families run on a worker: what the main thread waits for shows as waiting on the worker.
STAGES = {
    "read (side summaries, or pivot with detail and warnings)": ("side_inputs.py", "side_inputs"),
    "case frame": ("case_figures.py", "case_frame"),
    "rule kinds": ("rules.py", "rule_kinds"),
    "tests on replicates": ("significance.py", "significance"),
    "unmatched": ("unmatched.py", "unmatched_frame"),
    "verdict columns": ("case_figures.py", "add_significance"),
    "builds and libraries": ("selectors.py", "side_runs"),
    "waiting on the worker (candidate read, A/A lookup, side figures, families)": ("_base.py", "result"),
}


def stage_profile(engine, query) -> dict:
    """One cold Compare under cProfile: cumulative ms per step of the main thread (the families' bootstrap runs on
    a worker: its wait shows as waiting on the worker). cProfile slows Python-heavy steps more than numpy/DuckDB."""
    import cProfile
    import pstats

    from db.review.comparison import clear_cache, compare

    clear_cache()
    profiler = cProfile.Profile()
    profiler.enable()
    compare(engine, query)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # {(file, line, name): (calls, primitive, tottime, cumtime, callers)}
    out = {}
    for stage, (file, name) in STAGES.items():
        found = [v[3] for (f, _, n), v in stats.items() if f.endswith(file) and n == name]
        out[stage] = round(1000 * sum(found), 1) if found else None
    out["total"] = round(1000 * sum(v[2] for v in stats.values()), 1)
    return out
