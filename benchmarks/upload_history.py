"""Upload cost against history: one bundle of one machine and build uploaded again and again (a new run_id each
time, the way a baseline build re-run every night arrives) into one fresh store, in one process, each upload as
the API stores it (db.ingest.core.ingest_bundle on the JSON body). Per upload: its wall time and the process's
peak RSS during it (VmHWM reset to the current RSS before each: Linux), then the derived-summary upkeep the server
runs after an upload (db.store.writers.upkeep.catch_up: side summaries and A/A figures), timed and measured apart.

An upload pairs its results with up to PARTNERS (10) earlier runs of its build and machine (db.store.derived.aa_pairs), so
its cost grows, by design, until the 11th upload; flat means the last five uploads cost what the five after that
did (`settled`, uploads 12–16): `last_over_settled`, goal ≤ 1.25, in wall time and in CPU time (all threads; the
steadier figure on a shared machine). The upkeep necessarily reads every run of the group (a side's quartiles
pool every sample), so it grows with the group; it is reported beside the upload, not hidden in it.
Usage: python -m benchmarks.upload_history [--cases N] [--uploads U] [--tiny] [--json]
(default 50,000 cases, 50 uploads; --tiny: 2,000 cases, 8 uploads, what the tests run)
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

from db.ingest.core import ingest_bundle
from db.store.derived.aa_pairs import PARTNERS
from db.store.engine import open_store
from db.store.writers.upkeep import catch_up

WORKLOADS = ("matmul", "softmax", "layer_norm", "conv2d", "sdpa")
EDGE = 5  # uploads averaged at each end


def bundle(cases: int, seed: int) -> bytes:
    """`cases` op-time results of mac-0 (Apple M4 Pro), torch 2.15.0, 3 processes of 5 samples each, schema 2."""
    results = []
    for j in range(cases):
        base = 10.0 + j % 97
        processes = [[base * (1 + 0.002 * ((seed + p + k) % 5)) for k in range(5)] for p in range(3)]
        results.append(
            {
                "workload": WORKLOADS[j % len(WORKLOADS)],
                "suite": "kernels",
                "params": {"n": j},
                "dtype": "float32",
                "compile": "eager",
                "metric": "op_time",
                "unit": "µs",
                "status": "ok",
                "samples": [s for p in processes for s in p],
                "processes": [len(p) for p in processes],
            }
        )
    return json.dumps(
        {
            "schema_version": 2,
            "run_id": uuid.uuid4().hex,
            "started_at": "2026-12-02T10:00:00+00:00",
            "ended_at": "2026-12-02T10:05:00+00:00",
            "complete": True,
            "machine": {"name": "mac-0", "os": "macOS", "chip": "Apple M4 Pro", "gpu_cores": 20},
            "build": {
                "torch_version": "2.15.0",
                "channel": "stable",
                "python_version": "3.11",
                "collector_version": "0.1",
            },
            "device": {"type": "mps", "name": "Apple M4 Pro"},
            "results": results,
        }
    ).encode()


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024.0


def _reset_peak() -> float:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_mb("VmRSS")


def _timed(step) -> tuple[float, float, float]:
    """(seconds, CPU seconds of every thread, MB the peak RSS rose over the RSS before)."""
    before = _reset_peak()
    start, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - start, time.process_time() - cpu, max(0.0, _status_mb("VmHWM") - before)


def measure(path: Path, cases: int, uploads: int, progress: bool) -> dict:
    engine = open_store(str(path))
    rows = []
    try:
        for i in range(uploads):
            body = bundle(cases, i)
            upload_s, upload_cpu, upload_mb = _timed(lambda: ingest_bundle(engine, body, uploaded_by="bench"))  # noqa: B023 - called here
            upkeep_s, upkeep_cpu, upkeep_mb = _timed(lambda: catch_up(engine))
            rows.append(
                {
                    "upload_ms": round(1000 * upload_s, 1),
                    "upload_cpu_ms": round(1000 * upload_cpu, 1),
                    "upload_peak_mb": round(upload_mb, 1),
                    "upkeep_ms": round(1000 * upkeep_s, 1),
                    "upkeep_cpu_ms": round(1000 * upkeep_cpu, 1),
                    "upkeep_peak_mb": round(upkeep_mb, 1),
                }
            )
            if progress:
                print(f"upload {i + 1}/{uploads}: {rows[-1]}", flush=True)
        with engine.connect() as conn:
            pairs = conn.connection.driver_connection.execute("SELECT count(*) FROM aa_pairs").fetchone()[0]
    finally:
        engine.dispose()
    windows = _windows(uploads)
    out: dict = {
        "cases": cases,
        "uploads": uploads,
        "aa_pairs_after": pairs,
        "windows": {k: [a + 1, b] for k, (a, b) in windows.items()},
    }
    for name in FIGURES:
        means = {k: statistics.mean(r[name] for r in rows[a:b]) for k, (a, b) in windows.items()}
        out[name] = {k: round(v, 1) for k, v in means.items()}
        out[name]["last_over_settled"] = round(means["last"] / means["settled"], 2) if means["settled"] > 0 else None
    out["per_upload"] = rows
    return out


FIGURES = ("upload_ms", "upload_cpu_ms", "upload_peak_mb", "upkeep_ms", "upkeep_cpu_ms", "upkeep_peak_mb")


def _windows(uploads: int) -> dict[str, tuple[int, int]]:
    """Upload index ranges [a, b): the first EDGE, EDGE from the one after PARTNERS have been paired (or the
    middle, for a short run), the last EDGE."""
    edge = min(EDGE, max(1, uploads // 3))
    settled = PARTNERS + 1 if uploads >= PARTNERS + 1 + 2 * edge else (uploads - edge) // 2
    return {"first": (0, edge), "settled": (settled, settled + edge), "last": (uploads - edge, uploads)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=50_000)
    ap.add_argument("--uploads", type=int, default=50)
    ap.add_argument("--tiny", action="store_true", help="2,000 cases, 8 uploads (what the tests run)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.tiny:
        args.cases, args.uploads = 2_000, 8
    if args.cases < 1 or args.uploads < 3:
        raise SystemExit("ERROR: --cases must be ≥ 1 and --uploads ≥ 3")
    workdir = Path(tempfile.mkdtemp(prefix="mpsbench-uploads-"))
    try:
        figures = measure(workdir / "store.duckdb", args.cases, args.uploads, progress=not args.json)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    w = figures["windows"]
    print(f"uploads {w['first']}, {w['settled']}, {w['last']} (first, settled, last; inclusive):")
    for name in FIGURES:
        f = figures[name]
        print(f"  {name}: {f['first']} / {f['settled']} / {f['last']}  (last {f['last_over_settled']}× settled)")
    print(f"A/A pairs stored: {figures['aa_pairs_after']}")


if __name__ == "__main__":
    main()
