"""Does the kernel pass explain the op time, and does a planted change of path get named? On this machine's CPU.

1. `spread`: a real `collector run --suite kernels --kernels` (or a bundle already made: --bundle FILE); per case the
   breakdown's device time per op call (the sum of its aten ops' self CPU time, µs) over the case's op_time median
   (µs): the median, range and how many cases fall within 25 %.
2. `planted`: two `python=` builds over this one torch, made as benchmarks/bisect_builds.py makes its planted
   nightlies (a wrapper interpreter with its own sitecustomize: a nightly's version and git hash), the second with
   softmax computed as exp(log_softmax(x)) (benchmarks/false_alarms/disturbance.py, MPSBENCH_PLANTED_SOFTMAX): the same values
   through other aten ops. Each runs one softmax case with --kernels; both bundles are stored and the case's
   breakdowns compared (db.query.what_ran, db.review.what_ran.kernels): the path change must be named.
CPU figures: not MPS figures.
Usage: python -m benchmarks.what_ran [--only spread|planted] [--bundle FILE | --keep DIR] [--processes 2]
       [--idle-wait S] [--json] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bisect_builds import planted_python

ROOT = Path(__file__).resolve().parents[1]
CASE = 'softmax|{"rows":8,"vocab":151936}|float32|eager'
WITHIN = 0.25


def collect(python: str, out: Path, args: list[str], env: dict, idle_wait: float) -> Path:
    """One `collector run` with `python`; its bundle."""
    before = set(out.glob("*.json")) if out.exists() else set()
    wait = ["--idle-wait", f"{idle_wait:g}"]
    cmd = [python, "-m", "collector", "run", "--device", "cpu", "--out", str(out), "--kernels", *wait, *args]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    made = sorted(set(out.glob("*.json")) - before)
    if done.returncode != 0 or not made:
        raise SystemExit(
            f"ERROR: {' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    return made[-1]


def clean_median(result) -> tuple[float, bool]:
    """The op_time median over the worker processes that ran clean (bundle.contention), as a review tests on them;
    every process's where none did. And whether any did."""
    from bundle.contention import contended

    shares = list(result.contention) or [None] * max(1, len(result.processes))
    sizes = list(result.processes) or [len(result.samples)]
    kept, start = [], 0
    for size, share in zip(sizes, shares):
        if not contended(share):
            kept += result.samples[start : start + size]
        start += size
    return (statistics.median(kept), True) if kept else (result.summary.median, False)


def ratios(bundle: dict) -> list[dict]:
    """Per broken-down case: op_time median (µs; its clean processes'), breakdown device time (µs per op call), their
    ratio, and whether both are evidence (a clean timing process, a profile not flagged contended)."""
    from bundle.schema import Bundle

    b = Bundle.model_validate(bundle)
    timed = {(r.workload, r.case_key, r.dtype, r.compile): r for r in b.results if r.metric == "op_time" and r.summary}
    out = []
    for k in b.kernels:
        found = timed.get((k.workload, k.case_key, k.dtype, k.compile))
        if k.metric != "op_time" or found is None:
            continue
        op, clean_timing = clean_median(found)
        row = {"case": f"{k.workload} {json.dumps(k.params)} {k.dtype}", "status": k.status.value, "op_time_us": op}
        profiled_hot = any(w.startswith("profiled while other processes") for w in k.warnings)
        row["clean"] = clean_timing and not profiled_hot
        if k.entries:
            row |= {"breakdown_us": k.device_time_us, "ratio": k.device_time_us / op,
                    "largest": [(e.name, round(e.device_time_us, 1), round(e.share, 3)) for e in k.entries[:3]]}  # fmt: skip
        out.append(row)
    return out


def spread(rows: list[dict]) -> dict:
    """The ratios' spread over every broken-down case, and over the clean ones (a clean timing process and a profile
    not flagged contended: both figures evidence)."""
    out: dict = {"cases": len(rows)}
    for name, chosen in (("all", rows), ("clean", [r for r in rows if r.get("clean")])):
        found = sorted(r["ratio"] for r in chosen if "ratio" in r)
        out[name] = {"broken_down": len(found)}
        if found:
            out[name] |= {
                "within_25_percent": sum(abs(x - 1) <= WITHIN for x in found),
                "median_ratio": statistics.median(found),
                "min_ratio": found[0],
                "max_ratio": found[-1],
            }
    return out


def plant(folder: Path, python: str = sys.executable) -> list[Path]:
    """Two wrapper interpreters (nightlies a day apart); the second reroutes softmax through log_softmax + exp."""
    return [
        planted_python(folder, 0, "MPSBENCH_PLANTED_SOFTMAX=", python),
        planted_python(folder, 1, "MPSBENCH_PLANTED_SOFTMAX=log_softmax", python),
    ]


def planted(base: Path, processes: int, idle_wait: float, env: dict) -> dict:
    from db.ingest.core import ingest_bundle
    from db.query.selectors import parse_selector
    from db.query.what_ran import case_breakdowns
    from db.review.what_ran.kernels import what_ran
    from db.store.engine import open_store

    pythons = plant(base / "builds")
    args = ["--case", CASE, "--workload", "softmax", "--processes", str(processes)]
    bundles = [json.loads(collect(str(p), base / "runs", args, env, idle_wait).read_text()) for p in pythons]
    engine = open_store(str(base / "store.duckdb"))
    try:
        for b in bundles:
            ingest_bundle(engine, b)
        versions = [b["build"]["torch_version"] for b in bundles]
        workload, key, dtype, compile_mode = CASE.split("|")
        sides = case_breakdowns(
            engine, parse_selector(f"torch={versions[0]}", "b"), parse_selector(f"torch={versions[1]}", "c"),
            (workload, key, dtype, compile_mode),
        )  # fmt: skip
        shown = _shown(engine, versions, bundles[0]["machine"]["name"])
    finally:
        engine.dispose()
    found = what_ran(*sides, subject="softmax")
    return {
        "case": CASE,
        "builds": versions,
        "op_time_us": [r["op_time_us"] for b in bundles for r in ratios(b)],
        "what_ran": found.to_json(),
        **shown,
    }


def _shown(engine, versions: list[str], machine: str) -> dict:
    """What the review shows of the case: Compare's case detail (its panel's words and bars, db.views.release.what_ran) and
    the case's rows in the review's lists (Regressions' `why` and `what_ran`), wherever it is listed."""
    from db.review.release.summary import review_answer
    from db.review.review import Review
    from db.views.release.what_ran import case_what_ran

    params = {"baseline": f"torch={versions[0]}", "candidate": f"torch={versions[1]}", "scope": "machine"}
    workload, key, dtype, compile_mode = CASE.split("|")
    case = {"scope": machine, "device": "cpu", "workload": workload, "case_key": key, "dtype": dtype,
            "compile": compile_mode}  # fmt: skip
    review = Review.from_params(params)
    page = case_what_ran(engine, review.compare, case)
    answer = review_answer(engine, review)
    listed = [
        {"list": name, "metric": r["metric"], "why": r["why"], "what_ran": r["what_ran"]}
        for name in ("regressions", "unconfirmed", "suspected")
        for r in answer[name]
        if (r["workload"], r["case_key"]) == (workload, key)
    ]
    bars = [{**r, "device_time_us": round(r["device_time_us"], 2)} for r in page.bars.to_dict("records")]
    return {"page": {"words": page.what_ran.words(), "note": page.note, "axis": page.axis, "bars": bars},
            "listed": listed}  # fmt: skip


def _args() -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["spread", "planted"])
    ap.add_argument("--bundle", type=Path, help="the spread of this bundle's breakdowns (no run)")
    ap.add_argument(
        "--keep", type=Path, help="write the spread's run here (its bundle kept), not in a temporary folder"
    )
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--idle-wait", type=float, default=0.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="the planted path change alone, one process a run")
    return ap.parse_args()


def main() -> None:
    a = _args()
    if a.tiny:
        a.only, a.processes = "planted", 1
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MPSBENCH_TOKEN", None)
    out: dict = {"device": "cpu"}
    with tempfile.TemporaryDirectory() as tmp:
        if a.only in (None, "spread"):
            if a.bundle:
                bundle = json.loads(a.bundle.read_text())
            else:
                run = ["--suite", "kernels", "--profile", "quick", "--processes", str(a.processes)]
                where = a.keep or Path(tmp) / "spread"
                made = collect(sys.executable, where, run, env, a.idle_wait)
                bundle = json.loads(made.read_text())
            rows = ratios(bundle)
            out["spread"] = {**spread(rows), "run_id": bundle["run_id"], "per_case": rows}
        if a.only in (None, "planted"):
            out["planted"] = planted(Path(tmp) / "planted", a.processes, a.idle_wait, env)
    if a.json:
        print(json.dumps(out, indent=1, ensure_ascii=False))
        return
    if "spread" in out:
        s = out["spread"]
        print(f"CPU kernel pass, run {s['run_id']}: breakdown device time / op_time median per case")
        for r in s["per_case"]:
            said = (
                f"{r['breakdown_us']:.1f} µs / {r['op_time_us']:.1f} µs = {r['ratio']:.2f}"
                if "ratio" in r
                else r["status"]
            )
            print(f"  {r['case']}: {said}{'' if r['clean'] else '  (contended)'}")
        for name in ("all", "clean"):
            part = s[name]
            if part.get("median_ratio") is not None:
                print(
                    f"  {name}: {part['broken_down']} of {s['cases']} cases; {part['within_25_percent']} within 25 %; "
                    f"ratio median {part['median_ratio']:.2f} (range {part['min_ratio']:.2f}–{part['max_ratio']:.2f})"
                )
    if "planted" in out:
        p = out["planted"]
        print(f"planted path change, {p['case']}, {p['builds'][0]} → {p['builds'][1]} (CPU):")
        print(f"  {p['what_ran']['line']}")
        w = p["what_ran"]
        times = " → ".join(f"{t:.1f} µs" for t in p["op_time_us"])
        print(f"  op_time median {times}; breakdown {w['baseline_us']:.1f} → {w['candidate_us']:.1f} µs per op call")
        for m in p["what_ran"]["moved"]:
            print(f"  {m['name']}: {m['baseline_us']:.1f} → {m['candidate_us']:.1f} µs per op call")
        print(f"  Compare's case detail: {p['page']['words']}")
        for r in p["listed"]:
            print(f"  {r['list']} ({r['metric']}): {r['why']}")


if __name__ == "__main__":
    main()
