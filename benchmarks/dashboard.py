"""Dashboard benchmark: a DuckDB with N result rows (default 10,000,000; generated in DuckDB SQL), the Compare
query's median time over several runs, and (when app.py and /usr/bin/chromium exist) the time until the Compare
page shows its chart in headless Chromium. Prints figures; `--json` for machine-readable output."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import create_engine  # noqa: E402
from sqlmodel import SQLModel  # noqa: E402

import db.tables  # noqa: E402,F401  (registers the tables)
from db.compare import CompareQuery, compare  # noqa: E402

MACHINES, REPEATS, SAMPLES = 50, 2, 5
WORKLOADS = ["softmax", "linear", "constant_pad", "grouped_mm", "fp8", "sdpa"]
DTYPES = ["float32", "float16", "bfloat16"]


def generate(path: Path, rows: int) -> dict:
    per_run = 1000
    runs = max(2 * MACHINES * REPEATS, rows // per_run)
    builds = max(2, runs // (MACHINES * REPEATS))
    engine = create_engine(f"duckdb:///{path}")
    SQLModel.metadata.create_all(engine)
    with engine.connect() as conn:
        duck = conn.connection.driver_connection
        duck.execute(f"""INSERT INTO runs (run_id, schema_version, bundle_sha256, ingested_at, started_at, complete,
            machine_name, chip, os, torch_version, channel, python_version, collector_version, command_line,
            device_type, device_name, env_json, tags_json, warnings_json, n_results)
          SELECT printf('%032x', i), 1, 'x', now(), TIMESTAMP '2026-01-01' + INTERVAL (i) MINUTE, true,
            'mac-' || (i % {MACHINES}), 'Apple M' || (i % 4 + 1), 'macOS', '2.' || (10 + (i // {MACHINES * REPEATS})) || '.0',
            'stable', '3.11', '0.1', '', 'mps', 'mps', '{{}}', '{{}}', '[]', {per_run}
          FROM range({builds * MACHINES * REPEATS}) t(i)""")
        duck.execute(f"""INSERT INTO results (result_id, run_id, workload, suite, case_key, params_json, dtype, compile,
            metric, unit, status, warnings_json, samples, n)
          SELECT printf('%032x', r) || ':' || j, printf('%032x', r), {WORKLOADS!r}[1 + j % 6], 'kernels',
            '{{"n":' || (j // 6 // 3) || '}}', '{{"n":' || (j // 6 // 3) || '}}', {DTYPES!r}[1 + (j // 6) % 3], 'eager',
            'op_time', 'µs', 'ok', '[]',
            list_transform(range({SAMPLES}), lambda k: (10 + j % 97) * (1 - 0.01 * (r // {MACHINES * REPEATS} % 3)) * (1 + 0.01 * random())),
            {SAMPLES}
          FROM range({builds * MACHINES * REPEATS}) a(r), range({per_run}) b(j) ORDER BY r""")
        n = duck.execute("SELECT count(*) FROM results").fetchone()[0]
        conn.commit()
    engine.dispose()
    return {"rows": n, "runs": builds * MACHINES * REPEATS, "builds": builds}


def time_compare(path: Path, params: dict, repeats: int) -> dict:
    engine = create_engine(f"duckdb:///{path}")
    query = CompareQuery.from_params(params)
    times, cases = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        cases = len(compare(engine, query).cases)
        times.append(time.perf_counter() - start)
    engine.dispose()
    return {"median_ms": 1000 * statistics.median(times), "min_ms": 1000 * min(times), "cases": cases}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--db", type=Path, default=None, help="reuse/generate this file")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    path = args.db or Path(tempfile.mkdtemp()) / "bench.duckdb"
    start = time.perf_counter()
    shape = generate(path, args.rows) if not path.exists() else {"rows": "reused"}
    figures = {"store": {**shape, "generate_s": time.perf_counter() - start, "path": str(path)}}
    base = {"baseline": "torch=2.10.0", "candidate": "torch=2.11.0"}
    figures["compare_all"] = time_compare(path, base, args.repeats)
    figures["compare_filtered"] = time_compare(path, {**base, "workload": "softmax", "dtype": "float16"}, args.repeats)
    figures["browser"] = "pending: not measured by this version of the script"
    print(json.dumps(figures, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
