"""Ingest throughput: the project's ingest of one big bundle beside a raw DuckDB bulk insert of the same rows.

`python benchmarks/ingest.py [--rows N] [--upload-rows M] [--repeats K] [--schema 4] [--json]` (default 1,000,000
result rows, 30,000 for the upload, 3 repeats; `--schema 4`: the bundle as the collector writes it since schema 4,
without summaries, which the project derives and the raw insert has none to copy of).

The bundle is collector-like (as collector/ writes it: every key, a case_key, a summary where there are
samples): a params grid × 3 dtypes × 2 compile modes × 8 metrics — op_time (µs, one row in four with a noise
warning), achieved_bandwidth (GB/s), bandwidth_fraction (%) with 8 samples; memory_driver_peak and
memory_allocated_peak in MiB (converted to B on ingest), psnr_vs_cpu (dB), max_abs_error (1) with 1 sample;
memory_reserved_peak "unavailable" with none and a message.

Both sides start from the same bundle bytes in memory and end with committed rows in a fresh DuckDB file made
by db.store.engine.open_store (same `results` table, primary key and index), timed in one run of this script,
alternating (raw, project) K times; the medians and their ratio are printed, wall time and CPU time (all of the
process's threads: on a shared box the CPU ratio says what the work costs, the wall ratio what the load allowed):
  project  db.ingest.core.ingest_bundle (validation, unit conversion, derived summaries, idempotency hash).
  raw      the results array cut out of the same bytes, written to a temp file where the project writes its
           own, DuckDB read_json with the column types given, INSERT … SELECT into `results` in one
           transaction: values as given, summaries copied, no validation, no conversion.
Then an M-result bundle through POST /api/v1/runs (api.upload's route in a Starlette app, in-process client,
loopback, a fresh store file each time): the time from the request to the 201, median of K.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from starlette.applications import Starlette
from starlette.testclient import TestClient

import api.upload
import db.store.engine
from bundle.schema import case_key
from db.ingest.core import ingest_bundle
from db.ingest.results_text import SCRATCH, split
from db.store.engine import open_store

RSS_PER_MIB = 2**20 if sys.platform == "darwin" else 2**10  # ru_maxrss: bytes on macOS, KiB on Linux

DTYPES, COMPILES = ("float32", "float16", "bfloat16"), ("eager", "inductor")
METRICS = [
    ("op_time", "µs", 8, 7.0),
    ("achieved_bandwidth", "GB/s", 8, 300.0),
    ("bandwidth_fraction", "%", 8, 37.5),
    ("memory_driver_peak", "MiB", 1, 512.0),
    ("memory_allocated_peak", "MiB", 1, 256.0),
    ("psnr_vs_cpu", "dB", 1, 61.0),
    ("max_abs_error", "1", 1, 1e-3),
    ("memory_reserved_peak", "B", 0, 0.0),
]
SUMMARY = ("n", "median", "mean", "min", "max", "p25", "p75", "stdev")


def _summaries(block: np.ndarray) -> list:
    if block.shape[1] == 0:
        return [None] * len(block)
    q = np.percentile(block, [50, 25, 75], axis=1)
    sd = block.std(axis=1, ddof=1).tolist() if block.shape[1] > 1 else [None] * len(block)
    cols = [
        [block.shape[1]] * len(block),
        q[0].tolist(),
        block.mean(axis=1).tolist(),
        block.min(axis=1).tolist(),
        block.max(axis=1).tolist(),
        q[1].tolist(),
        q[2].tolist(),
        sd,
    ]
    return [dict(zip(SUMMARY, row)) for row in zip(*cols)]


def _result(case: dict, dtype: str, comp: str, m: tuple, samples: list, summary, noise: float, schema: int = 1) -> dict:
    name, unit, count, _ = m
    correctness = name in ("psnr_vs_cpu", "max_abs_error")
    message = (
        f"{int(noise * 100)} blocks of k=14 calls per synchronize"
        if name == "op_time"
        else None
        if count
        else "torch.mps has no reserved-peak API in this build"
    )
    warnings = (
        [f"noisy op_time: IQR is {10 + noise:.1f} % of the median (> 10 %)"]
        if name == "op_time" and noise > 2.0
        else []
    )
    return {
        "workload": case["workload"],
        "suite": "kernels",
        "params": case["params"],
        "case_key": case["key"],
        "dtype": dtype,
        "compile": comp,
        "metric": name,
        "unit": unit,
        "status": "ok" if count else "unavailable",
        "message": message,
        "warnings": warnings,
        "samples": samples,
        **({"summary": summary} if schema < 4 else {}),
        "passed": True if correctness else None,
        "tolerance": (40.0 if name == "psnr_vs_cpu" else 1e-2) if correctness else None,
    }


def build_bundle_bytes(rows: int, seed: int = 0, schema: int = 1) -> bytes:
    """A valid bundle of exactly `rows` results, as JSON bytes (results last, as the collector writes it)."""
    rng = np.random.default_rng(seed)
    slots = -(-rows // len(METRICS))
    blocks = {m[0]: m[3] * (1 + rng.uniform(-0.05, 0.05, (slots, m[2]))) for m in METRICS}
    sums = {m[0]: _summaries(blocks[m[0]]) for m in METRICS}
    noise = rng.uniform(0.5, 2.5, slots)
    out, slot, i = [], 0, 0
    while slot < slots:
        params = {"rows": 1 + i % 64, "cols": 256 * (1 + i // 64 % 512), "batch": i // 32768}
        case = {
            "workload": ("softmax", "linear", "sdpa", "grouped_mm")[i % 4],
            "params": params,
            "key": case_key(params),
        }
        for dtype in DTYPES:
            for comp in COMPILES:
                for m in METRICS if slot < slots else ():
                    out.append(
                        json.dumps(
                            _result(
                                case,
                                dtype,
                                comp,
                                m,
                                blocks[m[0]][slot].tolist(),
                                sums[m[0]][slot],
                                float(noise[slot]),
                                schema,
                            ),
                            ensure_ascii=False,
                        )
                    )
                slot += 1
        i += 1
    head = {
        "schema_version": schema,
        "run_id": f"{seed + 1:032x}",
        "started_at": "2026-12-02T10:00:00Z",
        "ended_at": "2026-12-02T11:00:00Z",
        "complete": True,
        "machine": {"name": "bench", "os": "macOS", "chip": "Apple M3 Ultra", "memory_bytes": 192 * 1024**3},
        "build": {
            "torch_version": "2.15.0rc1",
            "channel": "rc",
            "python_version": "3.11.7",
            "collector_version": "0.1.0",
        },
        "device": {"type": "mps", "name": "Apple M3 Ultra"},
        "tags": {"role": "candidate"},
        "warnings": [],
    }
    return (json.dumps(head, ensure_ascii=False)[:-1] + ', "results": [' + ", ".join(out[:rows]) + "]}").encode()


_RAW_COLUMNS = {
    "workload": "VARCHAR",
    "suite": "VARCHAR",
    "params": "JSON",
    "case_key": "VARCHAR",
    "dtype": "VARCHAR",
    "compile": "VARCHAR",
    "metric": "VARCHAR",
    "unit": "VARCHAR",
    "status": "VARCHAR",
    "message": "VARCHAR",
    "warnings": "JSON",
    "samples": "DOUBLE[]",
    "summary": "STRUCT(" + ", ".join(f"{k} DOUBLE" for k in SUMMARY) + ")",
    "passed": "BOOLEAN",
    "tolerance": "DOUBLE",
}


def raw_insert(engine, data: bytes) -> int:
    """The raw baseline: read the same results array with DuckDB and insert it as is."""
    array = split(data)[1]
    cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in _RAW_COLUMNS.items()) + "}"
    stats = ", ".join(f"summary.{k}" for k in SUMMARY[1:])
    with tempfile.NamedTemporaryFile(suffix=".json", dir=SCRATCH) as f:
        f.write(array)
        f.flush()
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO results (result_id, run_id, workload, suite, case_key, params_json, dtype, compile, "
                "metric, unit, status, message, warnings_json, samples, n, median, mean, min, max, p25, p75, "
                f"stdev, passed, tolerance) SELECT 'raw:' || CAST(row_number() OVER () AS VARCHAR), 'raw', "
                "workload, suite, case_key, params, dtype, compile, metric, unit, status, message, warnings, "
                f"samples, len(samples), {stats}, passed, tolerance FROM read_json('{f.name}', format='array', "
                f"columns={cols}, maximum_object_size=1073741824)"
            )
            return conn.exec_driver_sql("SELECT count(*) FROM results").scalar()


def _project(engine, data: bytes) -> int:
    ingest_bundle(engine, data)
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT count(*) FROM results").scalar()


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process, DuckDB's included
    return r.ru_utime + r.ru_stime


def _timed(fn, data: bytes) -> tuple[float, float, int, float]:
    """(wall s, CPU s, rows stored, peak RSS MiB): CPU time says what the work costs whatever the box's load."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = open_store(str(Path(tmp) / "bench.duckdb"))
        start, cpu = time.perf_counter(), _cpu()
        count = fn(engine, data)
        seconds, cpu = time.perf_counter() - start, _cpu() - cpu
        engine.dispose()
    return seconds, cpu, count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / RSS_PER_MIB


def upload_seconds(data: bytes) -> float:
    """One POST /api/v1/runs of `data` into a fresh store: seconds from the request to its 201."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"MPSBENCH_DB": str(Path(tmp) / "upload.duckdb")}
        saved = {k: os.environ.get(k) for k in (*env, "MPSBENCH_UPLOAD_TOKENS", "MPSBENCH_MAX_UPLOAD_MB")}
        os.environ.update(env)
        os.environ["MPSBENCH_UPLOAD_TOKENS"] = "bench=bench-token"  # every write needs a named token
        os.environ["MPSBENCH_MAX_UPLOAD_MB"] = str(len(data) // 2**20 + 1)
        try:
            db.store.engine.shared_store()  # opened (and migrated) before the clock starts, as a running server's is
            client = TestClient(Starlette(routes=api.upload.ROUTES), client=("127.0.0.1", 50000))
            start = time.perf_counter()
            response = client.post(
                "/api/v1/runs",
                content=data,
                headers={"content-type": "application/json", "authorization": "Bearer bench-token"},
            )
            seconds = time.perf_counter() - start
            assert response.status_code == 201, response.text
        finally:
            db.store.engine._shared.pop(env["MPSBENCH_DB"]).dispose()
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    return seconds


def _args() -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--upload-rows", type=int, default=30_000, help="results in the bundle POSTed to /api/v1/runs")
    ap.add_argument("--repeats", type=int, default=3, help="raw and project alternate this many times (medians)")
    ap.add_argument("--schema", type=int, choices=(1, 4), default=1, help="4: no summaries (the collector's bundles)")
    ap.add_argument("--json", action="store_true")
    return ap.parse_args()


def main() -> None:
    args = _args()
    data = build_bundle_bytes(args.rows, schema=args.schema)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / RSS_PER_MIB
    raw, project, cpu = [], [], {"raw": [], "project": []}
    for _ in range(args.repeats):  # alternated, so a change in the box's load hits both sides alike
        for fn, times, side in ((raw_insert, raw, "raw"), (_project, project, "project")):
            seconds, used, count, rss = _timed(fn, data)
            assert count == args.rows, f"{fn.__name__} stored {count} rows, not {args.rows}"
            times.append(seconds)
            cpu[side].append(used)
    upload_data = build_bundle_bytes(args.upload_rows, seed=1, schema=args.schema)
    upload = [upload_seconds(upload_data) for _ in range(args.repeats)]
    p, r, u = statistics.median(project), statistics.median(raw), statistics.median(upload)
    pc, rc = statistics.median(cpu["project"]), statistics.median(cpu["raw"])
    out = {
        "rows": args.rows,
        "bundle_mb": round(len(data) / 1e6, 1),
        "repeats": args.repeats,
        "project_s": round(p, 3),
        "project_rows_per_s": round(args.rows / p),
        "raw_duckdb_s": round(r, 3),
        "raw_duckdb_rows_per_s": round(args.rows / r),
        "ratio_project_over_raw": round(p / r, 3),
        "ratio_per_repeat": [round(a / b, 3) for a, b in zip(project, raw)],
        "project_s_each": [round(t, 3) for t in project],
        "raw_duckdb_s_each": [round(t, 3) for t in raw],
        "project_cpu_s": round(pc, 3),
        "raw_duckdb_cpu_s": round(rc, 3),
        "cpu_ratio_project_over_raw": round(pc / rc, 3),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
        "upload_rows": args.upload_rows,
        "upload_mb": round(len(upload_data) / 1e6, 1),
        "upload_s": round(u, 3),
        "upload_s_each": [round(t, 3) for t in upload],
        "peak_rss_mib_after_build": round(rss0),
        "peak_rss_mib": round(rss),
    }
    if args.json:
        print(json.dumps(out))
        return
    print(f"bundle: {args.rows:,} result rows, {out['bundle_mb']} MB JSON; medians of {args.repeats} alternated runs")
    print(f"project ingest : {p:8.3f} s  {out['project_rows_per_s']:>12,} rows/s  (each: {out['project_s_each']})")
    print(
        f"raw DuckDB     : {r:8.3f} s  {out['raw_duckdb_rows_per_s']:>12,} rows/s  (each: {out['raw_duckdb_s_each']})"
    )
    print(
        f"ratio          : {p / r:8.3f} × (median project time / median raw time; per run: {out['ratio_per_repeat']})"
    )
    print(
        f"CPU time       : project {pc:.3f} s, raw {rc:.3f} s: {pc / rc:.3f} × (all threads; load average "
        f"{out['load_average_1min']} on {out['cpus']} CPUs while it ran)"
    )
    print(
        f"upload         : {u:8.3f} s  POST /api/v1/runs of {args.upload_rows:,} results ({out['upload_mb']} MB) to its "
        f"201 (each: {out['upload_s_each']})"
    )
    print(f"peak RSS       : {rss0:.0f} MiB after building the bundle, {rss:.0f} at the end")


if __name__ == "__main__":
    main()
