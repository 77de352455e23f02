"""Dashboard benchmark: a DuckDB store with N result rows (default 10,000,000; generated inside DuckDB), the
Compare query's median time, and the time the Compare page takes to show its chart in headless Chromium.

The store: 50 machines (4 chips), builds 2.10.0, 2.11.0, … with 100 runs each (2 repeats per machine), 1,000
results per run with the metric mix real runs have (MIX_SLOTS: 100 cases of 6 workloads × 3 dtypes × 6 shapes,
each with its timing (op_time µs, or a model decode's time in s) and the figure derived from it (GB/s, tokens/s)
with 5 samples, its first call, three correctness figures against the CPU reference and four memory peaks, one
sample each: 30 % timing and throughput, 30 % correctness, 40 % memory records; 1 case in 23 fails its tolerance
on every third build; every 100th record unavailable). --timing-only makes the store the Compare and page figures
quoted up to 2026-12-06 were measured on: 6 workloads × 3 dtypes × 56 shapes, op_time µs with 5 samples, every 10th
achieved_bandwidth GB/s, every 100th unavailable. Run ids are random hex, as real ones are. run_seq is filled as ingest fills it
(1, 2, … per run in insertion order, each run's 1,000 rows contiguous), so DuckDB's zone maps can skip the rows
of unselected runs. By default a build's 100 runs are consecutive (all machines run build k, then build k+1):
the best case for that pruning. A real store need not be laid out so; --interleave gives every run the next
build in turn (run i is build i mod builds), so each row group holds runs of ~every build and nothing prunes.

The store also holds what ingest keeps beside the results: the A/A pairs and each (build, machine) group's side
summaries (db.store.derived.side_cases), filled by the same functions the migrations use.

"Compare query" = db.review.comparison.compare for baseline torch=2.10.0 → candidate torch=2.11.0 on machine scope:
selector checks, each side's per-case figures (two single builds on machine scope: read from the side summaries
and paired; otherwise the DuckDB pivot of the selected samples and their statistics), the A/A lookup, each case's
test on its replicates with Holm's step, per-family geomeans with 1000-draw bootstrap CIs, wording, the unmatched
list. `compare_chip` is the same review on chip scope (machines of one chip pooled): the pivot's path.
`cold` clears the per-data-version cache before every call (the full work); `warm` is a cache hit (what a
page reload or the API's second identical request costs until the next ingest). `cold_profile_ms`: one more
cold call under cProfile, the cumulative ms of each step (benchmarks/scaling.py STAGES): where the time goes.

Browser: `mpsbench serve` (the server users run) on the generated store, Chromium (/usr/bin/chromium, headless) opens
/compare?baseline=…&candidate=…; time from navigation to the ratio chart drawn (a Vega canvas/svg) and to the
whole page drawn (its 2 charts and 3 tables), on the first load (cold
compare inside the server) and on reloads in new tabs (cached comparison); the page's case table holds the
2,000 largest changes unless all_cases=1 (also timed: every case in the table).
Same-run ratios (absolute times swing ±30 % on a shared machine): the cold Compare against a bare DuckDB query
that reads the same selected rows and takes each case's median per side (BARE_SQL, timed in alternation; goal
≤ 2×), and the page's time to chart against the same page on a ~100-case store timed right after (goal ≤ 1.3×).
--tiny: 8,000 rows on 2 machines, 1 repeat, 1 reload (seconds; what the tests run so the script cannot rot).
--scaling: the cold Compare, the bare read, the ingest of one more run and the page's time to chart at each of
--sizes (default 1 M, 3 M and 10 M rows), with each cost's growth exponent fitted over the sizes
(benchmarks/scaling.py; --tiny: 8,000, 16,000 and 32,000 rows).
Usage: python benchmarks/dashboard.py [--rows N] [--machines M] [--db PATH] [--repeats K] [--interleave] [--timing-only]
                                      [--no-browser] [--tiny] [--json] [--scaling [--sizes N,N,…]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from db.review.comparison import CompareQuery, clear_cache, compare
from db.store.derived import side_cases
from db.store.derived.aa_pairs import backfill
from db.store.engine import open_store
from db.views.browse.noise import noise_view

ROOT = Path(__file__).resolve().parent.parent

MACHINES, CHIPS, REPEATS, PER_RUN, SAMPLES = 50, 4, 2, 1000, 5
SMALL_CASES = 100  # the store the chart time is compared against
WORKLOADS = ["softmax", "linear", "constant_pad", "grouped_mm", "fp8", "sdpa"]
DTYPES = ["float32", "float16", "bfloat16"]
CHROMIUM = "/usr/bin/chromium"
BASE = {"baseline": "torch=2.10.0", "candidate": "torch=2.11.0"}
FILTERED = {**BASE, "workload": "softmax", "dtype": "float16"}


def _build(i: str, n_runs: int, interleave: bool, machines: int) -> str:
    """SQL: the build index of run `i`."""
    builds = n_runs // (machines * REPEATS)
    return f"({i} % {builds})" if interleave else f"({i} // {machines * REPEATS})"


def _machine(i: str, n_runs: int, interleave: bool, machines: int) -> str:
    """SQL: the machine index of run `i` (either way each build has every machine REPEATS times)."""
    builds = n_runs // (machines * REPEATS)
    return f"({i} // {builds} % {machines})" if interleave else f"({i} % {machines})"


def _runs_sql(n_runs: int, interleave: bool, machines: int, per_run: int) -> str:
    m = _machine("i", n_runs, interleave, machines)
    return f"""INSERT INTO runs (run_seq, run_id, schema_version, bundle_sha256, ingested_at, started_at, complete,
        machine_name, chip, gpu_cores, memory_bytes, os, torch_version, channel, python_version, collector_version,
        command_line, device_type, device_name, env_json, libraries_json, tags_json, warnings_json, n_results)
      SELECT i + 1, md5('run' || i), 1, md5('sha' || i), now(), TIMESTAMP '2026-01-01' + INTERVAL (i) MINUTE, true,
        'mac-' || {m}, 'Apple M' || ({m} % {CHIPS} + 1) || ' Max', 40, 68719476736, 'macOS',
        '2.' || (10 + {_build("i", n_runs, interleave, machines)}) || '.0', 'stable', '3.11', '0.1', 'mpsbench run',
        'mps',
        'Apple M' || ({m} % {CHIPS} + 1) || ' Max', '{{}}', '{{}}', '{{}}', '[]', {per_run}
      FROM range({n_runs}) t(i)"""


def _results_sql(n_runs: int, interleave: bool, machines: int, per_run: int) -> str:
    """The timing-only store (--timing-only; the figures quoted up to 2026-12-06): one row per (run r, case j);
    a run's rows are contiguous, as ingest writes them (one range, in order: a cross join of two ranges would
    spread each run's rows over 17 row groups). A build is 1 % faster than the one before it (every third build
    resets), with ±0.5 % uniform noise per sample; the median is stored as ingest stores it (the A/A pairs are
    ratios of medians)."""
    case = f"'{{\"n\":' || (j // {6 * 3}) || '}}'"
    metric = "CASE WHEN j % 10 = 9 THEN 'achieved_bandwidth' ELSE 'op_time' END"
    unavailable = "j % 100 = 42"
    value = f"(10 + j % 97) * (1 - 0.01 * ({_build('r', n_runs, interleave, machines)} % 3))"
    return f"""INSERT INTO results (run_seq, result_id, run_id, workload, suite, case_key, params_json, dtype, compile,
        metric, unit, status, message, warnings_json, samples, n, median)
      SELECT *, list_median(samples) FROM (SELECT r + 1, md5('run' || r) || ':' || j, md5('run' || r), {WORKLOADS!r}[1 + j % 6], 'kernels', {case}, {case},
        {DTYPES!r}[1 + (j // 6) % 3], 'eager', {metric}, CASE WHEN j % 10 = 9 THEN 'GB/s' ELSE 'µs' END,
        CASE WHEN {unavailable} THEN 'unavailable' ELSE 'ok' END,
        CASE WHEN {unavailable} THEN 'figure not available on this build' END, '[]',
        CASE WHEN {unavailable} THEN []::DOUBLE[] ELSE list_transform(range({SAMPLES}),
          lambda k: CASE WHEN j % 10 = 9 THEN 1000.0 / ({value}) ELSE {value} END * (1 + 0.01 * (random() - 0.5))) END AS samples,
        CASE WHEN {unavailable} THEN 0 ELSE {SAMPLES} END
      FROM (SELECT k // {per_run} AS r, k % {per_run} AS j FROM range({n_runs * per_run}) t(k)))"""


# The metric mix (the default store): each case (workload, shape, dtype) has ten records a run, as the collector
# writes them — its timing, the figure derived from it, the first call, three correctness figures against the CPU
# reference and four memory peaks: 30 % timing and throughput, 30 % correctness, 40 % memory. The last workload
# is a model decode (decode time in s and tokens/s) in place of an op time and its bandwidth.
MIX_WORKLOADS = ["softmax", "linear", "constant_pad", "grouped_mm", "fp8", "llm_decode"]
MIX_SLOTS = (  # (metric, unit, or for the model workload (metric, unit)) by j % 10
    ("op_time", "µs", "decode_time", "s"),
    ("achieved_bandwidth", "GB/s", "decode_throughput", "tokens/s"),
    ("first_call_time", "s", "first_call_time", "s"),
    ("psnr_vs_cpu", "dB", "psnr_vs_cpu", "dB"),
    ("max_abs_error", "1", "max_abs_error", "1"),
    ("max_rel_error", "1", "max_rel_error", "1"),
    ("memory_driver_peak", "B", "memory_driver_peak", "B"),
    ("memory_reserved_peak", "B", "memory_reserved_peak", "B"),
    ("memory_allocated_peak", "B", "memory_allocated_peak", "B"),
    ("memory_outside_allocator", "B", "memory_outside_allocator", "B"),
)


def _mix_sql(n_runs: int, interleave: bool, machines: int, per_run: int) -> str:
    """The mixed store's results: case c = j // 10 (workload c % 6, dtype (c // 6) % 3, shape c // 18), metric
    j % 10 (MIX_SLOTS). Timings as the timing-only store's (5 samples, 1 % faster a build, every third resets,
    ±0.5 % noise), the first call and each correctness and memory figure one sample (±0.1 % noise for the
    memory, ±0.05 dB for a PSNR); 1 case in 23 fails its PSNR and max-abs tolerance on every third build (what
    "faster but wrong" reads); every 100th record (a first call) and every memory_outside_allocator of shape 0 on
    fp16 are unavailable."""
    c, slot, build = "(j // 10)", "(j % 10)", f"({_build('r', n_runs, interleave, machines)} % 3)"
    model = f"({c} % 6 = 5)"
    case = f"'{{\"n\":' || ({c} // 18) || '}}'"
    pick = lambda i: f"list_extract([{', '.join(repr(s[i]) for s in MIX_SLOTS)}], 1 + {slot})"  # noqa: E731
    metric = f"CASE WHEN {model} THEN {pick(2)} ELSE {pick(0)} END"
    unit = f"CASE WHEN {model} THEN {pick(3)} ELSE {pick(1)} END"
    unavailable = f"(j % 100 = 42 OR ({slot} = 9 AND {c} // 18 = 0 AND ({c} // 6) % 3 = 1))"
    failing = f"({c} % 23 = 5 AND {build} = 2)"
    base = f"((10 + {c} % 97) * (1 - 0.01 * {build}))"
    mib = f"(1048576.0 * (300 + 7 * {c}) * (1 + 0.01 * {build}))"
    noise = "(1 + 0.01 * (random() - 0.5))"
    one = "(1 + 0.002 * (random() - 0.5))"
    value = f"""CASE {slot}
          WHEN 0 THEN CASE WHEN {model} THEN {base} / 100 ELSE {base} END * {noise}
          WHEN 1 THEN CASE WHEN {model} THEN 128 / ({base} / 100) ELSE 1000.0 / {base} END * {noise}
          WHEN 2 THEN {base} / 1000 * {noise}
          WHEN 3 THEN CASE WHEN {failing} THEN 40 ELSE 90 + {c} % 40 END + 0.1 * (random() - 0.5)
          WHEN 4 THEN CASE WHEN {failing} THEN 0.05 ELSE 1e-4 * (1 + {c} % 7) END * {one}
          WHEN 5 THEN 1e-3 * (1 + {c} % 5) * {one}
          WHEN 6 THEN {mib} * {one}
          WHEN 7 THEN 0.9 * {mib} * {one}
          WHEN 8 THEN 0.7 * {mib} * {one}
          ELSE 0.1 * {mib} * {one} END"""
    samples = f"CASE WHEN {slot} < 2 THEN {SAMPLES} ELSE 1 END"
    tolerance = f"CASE {slot} WHEN 3 THEN 60.0 WHEN 4 THEN 0.01 END"
    rounding = f"CASE {slot} WHEN 3 THEN 120.0 WHEN 4 THEN 1e-5 WHEN 5 THEN 1e-4 END"
    message = (
        f"CASE WHEN {unavailable} THEN 'figure not available on this build' WHEN {slot} BETWEEN 3 AND 5 THEN"
        f" {DTYPES!r}[1 + ({c} // 6) % 3] || ' tolerance: |out - ref| ≤ atol + rtol·|ref| with atol=0.0001,"
        " rtol=0.0001' END"
    )
    return f"""INSERT INTO results (run_seq, result_id, run_id, workload, suite, case_key, params_json, dtype, compile,
        metric, unit, status, message, warnings_json, samples, n, tolerance, rounding, passed, median)
      SELECT *, CASE WHEN tolerance IS NULL OR status <> 'ok' THEN NULL
                     WHEN metric = 'psnr_vs_cpu' THEN list_median(samples) >= tolerance
                     ELSE list_median(samples) <= tolerance END,
             list_median(samples)
      FROM (SELECT r + 1, md5('run' || r) || ':' || j, md5('run' || r), {MIX_WORKLOADS!r}[1 + {c} % 6],
        CASE WHEN {model} THEN 'models' ELSE 'kernels' END, {case}, {case}, {DTYPES!r}[1 + ({c} // 6) % 3], 'eager',
        {metric} AS metric, {unit}, CASE WHEN {unavailable} THEN 'unavailable' ELSE 'ok' END AS status, {message},
        '[]', CASE WHEN {unavailable} THEN []::DOUBLE[] ELSE list_transform(range({samples}), lambda k: {value})
        END AS samples, CASE WHEN {unavailable} THEN 0 ELSE {samples} END,
        CASE WHEN NOT {unavailable} THEN {tolerance} END AS tolerance, CASE WHEN NOT {unavailable} THEN {rounding} END
      FROM (SELECT k // {per_run} AS r, k % {per_run} AS j FROM range({n_runs * per_run}) t(k)))"""


def generate(
    path: Path,
    rows: int,
    interleave: bool = False,
    machines: int = MACHINES,
    per_run: int = PER_RUN,
    mix: bool = True,
) -> dict:
    """A store of `rows` results (benchmarks/dashboard.py's docstring); `mix`: the metric mix (MIX_SLOTS), else
    the timing-only store (op_time and achieved_bandwidth) the figures quoted up to 2026-12-06 were measured on."""
    n_runs = max(2 * machines * REPEATS, rows // per_run)
    engine = open_store(str(path))  # the real store: tables, widened numbers, meta (data_version)
    with engine.begin() as conn:
        duck = conn.connection.driver_connection
        duck.execute(_runs_sql(n_runs, interleave, machines, per_run))
        duck.execute((_mix_sql if mix else _results_sql)(n_runs, interleave, machines, per_run))
        # the A/A pairs ingest would have stored (each machine ran each build twice), with ingest's bound and its
        # join by run first: the store's 5 M pairs took most of 697 s for 10 M rows when results joined by case
        backfill(conn)
        side_cases.backfill(conn)  # each group's side summaries, as the upkeep keeps them
        n = duck.execute("SELECT count(*) FROM results").fetchone()[0]
    engine.dispose()
    return {
        "rows": n,
        "runs": n_runs,
        "builds": n_runs // (machines * REPEATS),
        "machines": machines,
        "builds_interleaved": interleave,
        "metric_mix": mix,
    }


def ready(path: Path) -> dict:
    """A reused store as a server leaves it once its uploads pause: opened (migrated if older) and its derived
    summaries caught up (db.store.writers.upkeep), so no timed read goes to the pivot for a lagging side."""
    from db.store.writers.upkeep import catch_up

    engine = open_store(str(path))
    try:
        done = catch_up(engine)
    finally:
        engine.dispose()
    return {"side_groups": done.side_groups, "aa_groups": done.aa_groups, "s": round(done.seconds, 1)}


def _ms(times: list[float]) -> dict:
    return {
        "median_ms": round(1000 * statistics.median(times), 1),
        "min_ms": round(1000 * min(times), 1),
        "max_ms": round(1000 * max(times), 1),
        "repeats": len(times),
    }


# The floor for Compare: read the same selected rows and take each case's median per side, nothing else.
BARE_SQL = """SELECT machine_name, workload, case_key, dtype, compile, metric, torch_version, median(s) AS median
FROM (SELECT r.machine_name, x.workload, x.case_key, x.dtype, x.compile, x.metric, r.torch_version,
             unnest(x.samples) AS s
      FROM results x JOIN runs r ON x.run_seq = r.run_seq
      WHERE r.torch_version IN (?, ?) AND x.status = 'ok')
GROUP BY ALL"""


def _helpers():
    """benchmarks/scaling.py, whether this file runs as a script or a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("scaling", Path(__file__).resolve().with_name("scaling.py"))
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    return helpers


def time_compare(path: Path, params: dict, repeats: int, bare: bool = False) -> dict:
    """Cold and warm Compare; with `bare`, the bare DuckDB query timed in alternation with the cold Compare
    (same run, same machine state) and the ratio of their medians."""
    engine = open_store(str(path))
    query = CompareQuery.from_params(params)
    versions = [params[side].split("=", 1)[1] for side in ("baseline", "candidate")]
    cold, warm, floor, result, bare_cases = [], [], [], None, 0
    for _ in range(repeats):
        clear_cache()
        start = time.perf_counter()
        result = compare(engine, query)
        cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        compare(engine, query)
        warm.append(time.perf_counter() - start)
        if bare:
            with engine.connect() as conn:
                start = time.perf_counter()
                table = conn.connection.driver_connection.sql(BARE_SQL, params=versions).to_arrow_table()
                floor.append(time.perf_counter() - start)
            bare_cases = table.num_rows // 2  # one row per case and side
    engine.dispose()
    figures = {
        "cold": _ms(cold),
        "warm": _ms(warm),
        "cases": len(result.cases),
        "families": len(result.families),
        "unmatched": len(result.unmatched),
    }
    if bare:
        figures["bare_duckdb"] = {**_ms(floor), "cases": bare_cases}
        figures["cold_vs_bare_ratio"] = round(statistics.median(cold) / statistics.median(floor), 2)
        engine = open_store(str(path))
        figures["cold_profile_ms"] = _helpers().stage_profile(engine, query)  # where the cold time goes
        engine.dispose()
    return figures


def time_noise(path: Path, repeats: int) -> dict:
    """The Noise page's view (GET /api/v1/noise): the model's per-group quantiles in DuckDB, uncached."""
    engine = open_store(str(path))
    times, answer = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        answer = noise_view(engine, {})
        times.append(time.perf_counter() - start)
    engine.dispose()
    return {**_ms(times), "groups": len(answer.groups), "aa_pairs": answer.pairs_total}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(path: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "MPSBENCH_DB": str(path)}
    cmd = [sys.executable, "-m", "mpsbench", "serve", "--address", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    return proc, f"http://127.0.0.1:{port}"


def _wait_healthy(base: str, proc: subprocess.Popen, limit_s: float = 120.0) -> float:
    import httpx

    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/api/v1/health", timeout=2.0).status_code == 200:
                return time.perf_counter() - start
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the dashboard did not answer within {limit_s:.0f} s")


_DRAWN = "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg"
_COMPLETE = (
    f'() => document.querySelectorAll("{_DRAWN}").length >= 2'  # the ratio and the samples chart
    ' && document.querySelectorAll("[data-testid=stDataFrame]").length >= 3'
)


def _page_times(page, url: str, limit_s: float) -> tuple[float, float]:
    """Seconds from navigation until the ratio chart is drawn, and until the whole page is (2 charts, 3 tables)."""
    start = time.perf_counter()
    page.goto(url, timeout=limit_s * 1000)
    page.wait_for_selector(_DRAWN, timeout=limit_s * 1000)
    chart = time.perf_counter() - start
    page.wait_for_function(_COMPLETE, timeout=limit_s * 1000)
    return chart, time.perf_counter() - start


def time_browser(path: Path, reloads: int = 3, limit_s: float = 300.0) -> dict:
    if not Path(CHROMIUM).exists():
        return {"skipped": f"{CHROMIUM} is missing (apt-get install chromium)"}
    from playwright.sync_api import sync_playwright

    proc, base = _serve(path)
    try:
        startup = _wait_healthy(base, proc)
        url = f"{base}/compare?baseline=torch%3D2.10.0&candidate=torch%3D2.11.0"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            try:
                first = _page_times(browser.new_page(), url, limit_s)
                again = [_page_times(browser.new_page(), url, limit_s) for _ in range(reloads)]
                every = _page_times(browser.new_page(), url + "&all_cases=1", limit_s)
            finally:
                browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the process group started above
        proc.wait(timeout=30)
    return {
        "server_start_s": round(startup, 2),
        "first_load": {"chart_s": round(first[0], 2), "whole_page_s": round(first[1], 2)},
        "reload": {
            "chart_s_median": round(statistics.median(t[0] for t in again), 2),
            "whole_page_s_median": round(statistics.median(t[1] for t in again), 2),
            "chart_s_all": [round(t[0], 2) for t in again],
        },
        "reload_all_cases_table": {"chart_s": round(every[0], 2), "whole_page_s": round(every[1], 2)},
    }


def _chart_ratios(big: dict, small: dict) -> dict:
    if "skipped" in big or "skipped" in small:
        return {"skipped": big.get("skipped") or small.get("skipped")}
    return {
        "first_load": round(big["first_load"]["chart_s"] / small["first_load"]["chart_s"], 2),
        "reload": round(big["reload"]["chart_s_median"] / small["reload"]["chart_s_median"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--db", type=Path, default=None, help="use this store file (generated if absent)")
    parser.add_argument("--interleave", action="store_true", help="runs of different builds alternate in the file")
    parser.add_argument("--timing-only", action="store_true", help="the older store: op_time and bandwidth only")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--machines", type=int, default=MACHINES)
    parser.add_argument("--reloads", type=int, default=3, help="page reloads timed in the browser")
    parser.add_argument("--tiny", action="store_true", help="8,000 rows, 2 machines, 1 repeat, 1 reload (seconds)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="Compare, bare read, ingest of one run and the "
        "page at each --sizes, with each cost's fitted growth exponent (benchmarks/scaling.py)",
    )
    parser.add_argument("--sizes", default="1000000,3000000,10000000", help="store sizes (rows) for --scaling")
    args = parser.parse_args()
    if args.scaling:
        return scaling(args)
    if args.tiny:
        args.rows, args.machines, args.repeats, args.reloads = 8_000, 2, 1, 1
    workdir = Path(tempfile.mkdtemp(prefix="mpsbench-bench-"))
    path = args.db or workdir / "bench.duckdb"
    try:
        start = time.perf_counter()
        shape = (
            generate(path, args.rows, args.interleave, args.machines, mix=not args.timing_only)
            if not path.exists()
            else {"rows": "reused existing file", "upkeep": ready(path)}
        )
        figures = {
            "store": {
                **shape,
                "generate_s": round(time.perf_counter() - start, 1),
                "size_MiB": round(path.stat().st_size / 2**20),
            },
            "compare_all": time_compare(path, BASE, args.repeats, bare=True),
            "compare_filtered": time_compare(path, FILTERED, args.repeats),
            "compare_chip": time_compare(path, {**BASE, "scope": "chip"}, args.repeats, bare=True),
            "noise_view": time_noise(path, args.repeats),
        }
        if args.no_browser:
            figures["browser"] = {"skipped": "--no-browser"}
        else:
            figures["browser"] = time_browser(path, args.reloads)
            # the same page on a store of ~100 cases (1 machine, 100 results per run), timed right after
            small = workdir / "small.duckdb"
            generate(small, SMALL_CASES * 2 * REPEATS, machines=1, per_run=SMALL_CASES)
            figures["browser_100_cases"] = time_browser(small, args.reloads)
            figures["chart_vs_100_cases_ratio"] = _chart_ratios(figures["browser"], figures["browser_100_cases"])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(figures, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in figures.items()))


def scaling(args) -> None:
    helpers = _helpers()
    exponent, run_bundle, table, time_ingest = helpers.exponent, helpers.run_bundle, helpers.table, helpers.time_ingest

    sizes = [8_000, 16_000, 32_000] if args.tiny else [int(x) for x in args.sizes.split(",")]
    machines, repeats = (2, 1) if args.tiny else (args.machines, args.repeats)
    workdir = Path(tempfile.mkdtemp(prefix="mpsbench-scaling-"))
    points = []
    try:
        for rows in sizes:
            path = workdir / f"{rows}.duckdb"
            start = time.perf_counter()
            shape = generate(path, rows, args.interleave, machines, mix=not args.timing_only)
            generated = time.perf_counter() - start
            cmp = time_compare(path, BASE, repeats, bare=True)
            page = None if args.no_browser else time_browser(path, max(1, args.reloads // 3))
            bundle_of = lambda: run_bundle(0, "2.11.0", PER_RUN, WORKLOADS, DTYPES, CHIPS, SAMPLES)  # noqa: E731
            ingest = time_ingest(path, bundle_of, repeats)
            points.append(
                {
                    "rows": shape["rows"],
                    "generate_s": round(generated, 1),
                    "compare_cold_ms": cmp["cold"]["median_ms"],
                    "bare_ms": cmp["bare_duckdb"]["median_ms"],
                    "ingest_one_run_ms": ingest["median_ms"],
                    "page_chart_s": page["first_load"]["chart_s"] if page and "skipped" not in page else None,
                    "page_reload_chart_s": page["reload"]["chart_s_median"] if page and "skipped" not in page else None,
                }
            )
            path.unlink()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = [p["rows"] for p in points]
    fits = {
        name: exponent(rows, [p[name] for p in points]) if all(p[name] for p in points) else None
        for name in ("compare_cold_ms", "bare_ms", "ingest_one_run_ms", "page_chart_s", "page_reload_chart_s")
    }
    out = {"sizes": points, "growth_exponent": fits}
    print(json.dumps(out, indent=2) if args.json else table(points, fits))


if __name__ == "__main__":
    main()
