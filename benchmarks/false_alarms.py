"""Do the review's verdicts hold on real runs? False alarms on A/A reviews and detection of planted slowdowns.

The real collector runs on this machine (quick kernels, CPU): K runs of one build (A/A), and runs of "planted"
builds: the same torch with a `sitecustomize` on PYTHONPATH (so every worker process loads it) that makes
torch.nn.functional.softmax a known factor slower — each call timed and followed by a spin of (factor − 1) × its
own time — so every softmax case is exactly that factor slower, call by call, with its real noise. A planted
run's bundle is relabelled as its own build (torch version `<version>+planted<factor>`) before it is stored: two
runs of one planted build pair with each other, never with the plain build's A/A pairs.

All runs go into one store (the plain runs' pairs are the A/A model every review uses, as on a team's server;
each A/A review's own pair is among them). Then every review runs through `mpsbench compare --baseline runs:A
--candidate runs:B --format json` (its function, in this process): each pair of plain runs (A/A), and each plain
run against each planted run.
Printed: the share of A/A reviews with any regression (false alarms per review), the share of planted softmax
cases found as regressions (detection) per factor, other cases flagged in planted reviews, and the collection
time of one review (two runs: one a side), with the number of processes.

With --processes-list the same runs are reviewed again with only their first k processes kept (samples and
`processes` cut, the bundles re-stored under new run ids), so one collection measures several plans; the
collection time for k processes is then the measured one scaled by k / N (the per-process budgets are shared
out, so a run of k processes is not the same as k processes of a run of N: said beside the figures).
With --runs-a-side 1,2 each plan is also reviewed with groups of runs a side (runs:A,B against runs:C,D; disjoint
groups of plain runs for A/A, up to 30 reviews each). --keep DIR keeps the collected bundles; --from DIR reviews
them again without collecting.
Usage: python benchmarks/false_alarms.py [--runs 7] [--planted 3] [--processes 10] [--processes-list 5,10]
       [--runs-a-side 1,2] [--factors 2,1.25] [--keep DIR | --from DIR] [--json] [--tiny]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOWED = "softmax"
MAX_REVIEWS = 30  # A/A reviews per plan (and per planted factor: half of it per planted group)

SITECUSTOMIZE = '''\
# mpsbench benchmarks/false_alarms.py: a planted slowdown of torch.nn.functional.softmax by a known factor
import os, time
_factor = float(os.environ["MPSBENCH_PLANTED_FACTOR"])
try:
    import torch.nn.functional as _F
except Exception:  # not every Python this folder reaches has torch
    _F = None
if _F is not None:
    _real = _F.softmax

    def softmax(*args, **kwargs):
        start = time.perf_counter()
        out = _real(*args, **kwargs)  # CPU: synchronous, so the clock covers the op
        end = start + (time.perf_counter() - start) * _factor
        while time.perf_counter() < end:
            pass
        return out

    _F.softmax = softmax
'''


def _collect(out: Path, processes: int, plan: list[str], env: dict, factor: float | None) -> tuple[Path, float]:
    run_env = dict(env)
    if factor is not None:
        site = out.parent / f"site-{factor:g}"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        run_env["PYTHONPATH"] = f"{site}{os.pathsep}{run_env.get('PYTHONPATH', '')}"
        run_env["MPSBENCH_PLANTED_FACTOR"] = f"{factor:g}"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "collector", "run", "--device", "cpu", *plan, "--processes",
                           str(processes), "--out", str(out)], cwd=ROOT, env=run_env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ERROR: collector run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    bundle = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
    if factor is not None:
        doc = json.loads(bundle.read_text())
        doc["build"]["torch_version"] += f"+planted{factor:g}"
        bundle.write_text(json.dumps(doc))
    return bundle, seconds


def _first_processes(doc: dict, k: int) -> dict:
    """The bundle with each result cut to its first k processes (a new run id)."""
    doc = json.loads(json.dumps(doc))
    doc["run_id"] = uuid.uuid4().hex
    for r in doc["results"]:
        sizes = r.get("processes") or []
        if len(sizes) > k:
            r["samples"], r["processes"] = r["samples"][:sum(sizes[:k])], sizes[:k]
            r.pop("summary", None)
    return doc


def _review(base: str, cand: str, env: dict) -> dict:
    """`mpsbench compare --baseline runs:A --candidate runs:B --format json`, run in this process (db.gate.main,
    what the command runs; a process start per review would double the benchmark's time)."""
    from db.gate import main as compare_main

    os.environ["MPSBENCH_DB"] = env["MPSBENCH_DB"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = compare_main(["--baseline", f"runs:{base}", "--candidate", f"runs:{cand}", "--format", "json"])
    if code != 0:
        raise SystemExit(f"ERROR: mpsbench compare exited {code}")
    return json.loads(out.getvalue())


def _store(bundles: list[dict], env: dict) -> None:
    from db.ingest.core import ingest_bundle
    from db.store.engine import open_store

    engine = open_store(env["MPSBENCH_DB"])
    try:
        for doc in bundles:
            ingest_bundle(engine, json.dumps(doc).encode(), "benchmark")
    finally:
        engine.dispose()


def _sides(runs: list[dict], r: int, limit: int, seed: int) -> list[tuple[dict, ...]]:
    """Up to `limit` groups of r runs (seeded choice among all)."""
    groups = list(itertools.combinations(runs, r))
    if len(groups) > limit:
        groups = [groups[i] for i in sorted(random.Random(seed).sample(range(len(groups)), limit))]
    return groups


def _ids(group: tuple[dict, ...]) -> str:
    return ",".join(d["run_id"] for d in group)


def evaluate(plain: list[dict], planted: dict[float, list[dict]], k: int, r: int, env: dict) -> dict:
    """Every review of runs cut to k processes, r runs a side, in a fresh store."""
    plain = [_first_processes(d, k) for d in plain]
    planted = {f: [_first_processes(d, k) for d in docs] for f, docs in planted.items()}
    _store(plain + [d for docs in planted.values() for d in docs], env)
    groups = _sides(plain, r, 200, 1)
    aa = [(a, b) for i, a in enumerate(groups) for b in groups[i + 1:] if not {*_ids(a).split(",")} & {
        *_ids(b).split(",")}]
    if len(aa) > MAX_REVIEWS:  # a seeded sample of the disjoint pairs of groups
        aa = [aa[i] for i in sorted(random.Random(4).sample(range(len(aa)), MAX_REVIEWS))]
    alarms, aa_regressions, unconfirmed = 0, 0, 0
    for a, b in aa:
        answer = _review(_ids(a), _ids(b), env)
        alarms += bool(answer["regressions"])
        aa_regressions += len(answer["regressions"])
        unconfirmed += len(answer.get("unconfirmed", []))
    detection = {}
    for factor, docs in planted.items():
        slowed = found = others = reviews = all_found = 0
        for b in _sides(docs, r, 10, 2):
            for a in _sides(plain, r, max(1, MAX_REVIEWS // 2), 3):
                answer = _review(_ids(a), _ids(b), env)
                cases = {(x["case_key"], x["dtype"]) for x in b[0]["results"]
                         if x["workload"] == SLOWED and x["metric"] == "op_time" and x["status"] == "ok"}
                hit = {(x["case_key"], x["dtype"]) for x in answer["regressions"]
                       if x["workload"] == SLOWED and x["metric"] == "op_time"}
                slowed, found = slowed + len(cases), found + len(hit & cases)
                others += sum(1 for x in answer["regressions"] if x["workload"] != SLOWED)
                reviews, all_found = reviews + 1, all_found + (cases <= hit)
        detection[f"{factor:g}x"] = {"reviews": reviews, "slowed_cases": slowed, "found": found,
                                     "detection_rate": found / slowed if slowed else None,
                                     "reviews_all_found": all_found, "other_regressions": others}
    return {"processes": k, "runs_a_side": r, "aa_reviews": len(aa), "aa_reviews_with_regression": alarms,
            "false_alarm_rate": alarms / len(aa) if aa else None, "aa_regressions": aa_regressions,
            "aa_unconfirmed": unconfirmed, "planted": detection}


def collect(runs: int, planted_runs: int, processes: int, factors: list[float], plan: list[str], base: Path,
            env: dict, progress) -> dict:
    plain, seconds, planted = [], [], {f"{f:g}": [] for f in factors}
    order = [None] * runs + [f for f in factors for _ in range(planted_runs)]
    for i, factor in enumerate(order):  # plain runs first, as a store's history comes first
        progress(f"collecting run {i + 1}/{len(order)} ({'plain' if factor is None else f'planted {factor:g}x'})")
        path, took = _collect(base / f"run-{i}", processes, plan, env, factor)
        doc = json.loads(path.read_text())
        (plain if factor is None else planted[f"{factor:g}"]).append(doc)
        seconds.append(took)
    return {"plan": " ".join(plan), "processes": processes, "seconds": seconds, "plain": plain, "planted": planted}


def measure(collected: dict, keep: list[int], sides: list[int], base: Path, env: dict, progress) -> dict:
    plain, seconds, processes = collected["plain"], collected["seconds"], collected["processes"]
    planted = {float(f): docs for f, docs in collected["planted"].items()}
    out = {"plan": collected["plan"], "runs": len(plain), "planted_runs": min(len(d) for d in planted.values()),
           "collected_processes": processes,
           "run_seconds": {"median": sorted(seconds)[len(seconds) // 2], "min": min(seconds), "max": max(seconds)},
           "cases": len({(r["workload"], r["case_key"], r["dtype"]) for r in plain[0]["results"]}), "plans": []}
    for r in sides:
        for k in keep:
            progress(f"reviewing with {k} processes, {r} run(s) a side")
            env["MPSBENCH_DB"] = str(base / f"store-{k}-{r}.duckdb")
            figures = evaluate(plain, planted, k, r, env)
            figures["review_collection_seconds"] = 2 * r * out["run_seconds"]["median"] * k / processes
            out["plans"].append(figures)
    return out


def _print(out: dict) -> None:
    print(f"plan: {out['plan']} (CPU, this machine); {out['runs']} plain runs, {out['planted_runs']} per planted "
          f"factor; {out['cases']} cases a run; one run took {out['run_seconds']['median']:.0f} s (median; "
          f"{out['collected_processes']} processes)")
    for p in out["plans"]:
        scaled = "" if p["processes"] == out["collected_processes"] else " (scaled from the collected runs)"
        side = f"{p['runs_a_side']} run{'s' * (p['runs_a_side'] != 1)} a side"
        print(f"\n{p['processes']} processes a run, {side} — one review collects in "
              f"{p['review_collection_seconds']:.0f} s{scaled}")
        rate = p["false_alarm_rate"]
        print(f"  A/A reviews: {p['aa_reviews_with_regression']} of {p['aa_reviews']} show a regression "
              f"({100 * rate:.1f} %; goal ≤ 5 %); {p['aa_regressions']} regressions in all, "
              f"{p['aa_unconfirmed']} unconfirmed")
        for factor, d in p["planted"].items():
            rate = d["detection_rate"] or 0.0
            print(f"  planted {factor} softmax: {d['found']} of {d['slowed_cases']} slowed cases found "
                  f"({100 * rate:.1f} %) over {d['reviews']} reviews ({d['reviews_all_found']} found every one); "
                  f"{d['other_regressions']} other regressions in those reviews")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="plain runs (A/A reviews: every pair)")
    ap.add_argument("--planted", type=int, default=3, help="runs per planted factor")
    ap.add_argument("--processes", type=int, default=10, help="worker processes of each collected run")
    ap.add_argument("--processes-list", help="review with the first k processes too: comma list (default: all)")
    ap.add_argument("--factors", default="2,1.25", help="planted softmax slowdowns")
    ap.add_argument("--runs-a-side", default="1", help="comma list: review with this many runs a side (default 1)")
    ap.add_argument("--keep", type=Path, help="keep the collected bundles in this folder (to review them again)")
    ap.add_argument("--from", dest="source", type=Path, help="review the bundles a --keep run left (no collection)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="about a minute: three softmax cases, 2 processes, 2 + 1 runs")
    a = ap.parse_args()
    plan = ["--suite", "kernels"]
    if a.tiny:
        a.runs, a.planted, a.processes, a.factors = 2, 1, 2, "2"
        plan = ["--workload", "softmax", "--dtype", "float32", "--case-time-limit", "20"]
    keep = [int(k) for k in a.processes_list.split(",")] if a.processes_list else [a.processes]
    factors = [float(f) for f in a.factors.split(",")]
    if any(k < 1 or k > a.processes for k in keep) or a.runs < 2 or a.planted < 1 or any(f <= 1 for f in factors):
        raise SystemExit("ERROR: --processes-list values must be 1..--processes, --runs ≥ 2, --planted ≥ 1, "
                         "--factors > 1")
    sides = [int(r) for r in a.runs_a_side.split(",")]
    if any(r < 1 or 2 * r > a.runs for r in sides):
        raise SystemExit("ERROR: --runs-a-side values must be 1..--runs / 2")
    progress = (lambda msg: print(msg, file=sys.stderr, flush=True))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("MPSBENCH_TOKEN", None)
        if a.source:
            collected = json.loads((a.source / "collected.json").read_text())
        else:
            collected = collect(a.runs, a.planted, a.processes, factors, plan, base, env, progress)
        if a.keep:
            a.keep.mkdir(parents=True, exist_ok=True)
            (a.keep / "collected.json").write_text(json.dumps(collected))
        out = measure(collected, keep, sides, base, env, progress)
    print(json.dumps(out, indent=1)) if a.json else _print(out)


if __name__ == "__main__":
    main()
