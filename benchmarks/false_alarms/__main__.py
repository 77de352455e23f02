"""Do the review's verdicts hold on real runs? False alarms on A/A reviews and detection of planted slowdowns, on a
quiet machine and on a busy one.

The real collector runs on this machine (quick kernels, CPU): K runs of one build (A/A), and runs of "planted"
builds: the same torch with a `sitecustomize` on PYTHONPATH (so every worker process loads it) that makes
torch.nn.functional.softmax a known factor slower — each call timed and followed by a spin of (factor − 1) × its
own time — so every softmax case is exactly that factor slower, call by call, with its real noise
(benchmarks/false_alarms/disturbance.py). A planted run's bundle is relabelled as its own build (torch version
`<version>+planted<factor>`) before it is stored: two runs of one planted build pair with each other, never with
the plain build's A/A pairs.

With --disturb, more runs are collected while a competing CPU load runs: busy-loop processes on half or on all
the cores (alternating), from a random point in the first 70 % of the run for 20–50 % of it — plain runs (their
A/A reviews are counted apart) and planted runs (their slowed cases must be found or listed as contended, never
missed). Those runs are collected with `--idle-wait` from --disturbed-idle-wait (default 0: no wait, no retakes,
so every contended process stays in the data for the review to handle; 30 measures the collector's default), the
others with --idle-wait (default the collector's, 30 s; --tiny: 0, so a loaded box never holds it up). And
--reordered N runs of a build that sums bf16/fp16 linears in 4 rounded chunks (a reordered accumulation): its
reviews against plain runs must show no correctness regression.

All runs go into one store (the plain runs' pairs are the A/A model every review uses, as on a team's server;
each A/A review's own pair is among them). Every review runs through `mpsbench compare --baseline runs:A
--candidate runs:B --format json` (benchmarks/false_alarms/review_outcomes.py). Printed: the share of A/A reviews with any
regression (false alarms per review), quiet and disturbed; per planted factor the slowed softmax cases found,
contended, otherwise doubtful or missed; the reordered reviews' correctness regressions and how far PSNR moved;
the collection time of one review (two runs: one a side), with the number of processes.

With --processes-list the same runs are reviewed again with only their first k processes kept (samples,
`processes` and `contention` cut, the bundles re-stored under new run ids), so one collection measures several
plans; the collection time for k processes is then the measured one scaled by k / N. With --runs-a-side 1,3 each
plan is also reviewed with groups of runs a side. --keep DIR keeps the collected bundles; --from DIR reviews them
again without collecting.
Usage: python -m benchmarks.false_alarms [--runs 7] [--planted 3] [--processes 10] [--processes-list 5,10]
       [--runs-a-side 1,3] [--factors 2,1.25] [--idle-wait 30] [--disturb] [--disturbed 6] [--disturbed-idle-wait 0]
       [--reordered 2] [--keep DIR | --from DIR] [--json] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.false_alarms.disturbance import CHUNKS, Burners, Disturbance, planted_site
from benchmarks.false_alarms.review_outcomes import evaluate
from collector.run.plan import DEFAULT_IDLE_WAIT_S

ROOT = Path(__file__).resolve().parents[2]


def _collect(
    out: Path,
    processes: int,
    plan: list[str],
    env: dict,
    label: str,
    planted: dict,
    disturb: Disturbance | None,
    idle_wait: float,
) -> tuple[Path, float]:
    """One `collector run` with its explicit --idle-wait; a planted build's bundle relabelled `<version>+<label>`."""
    run_env = planted_site(out.parent / f"site-{label}", env, **planted) if planted else dict(env)
    start = time.perf_counter()
    with Burners(disturb):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "collector",
                "run",
                "--device",
                "cpu",
                *plan,
                "--processes",
                str(processes),
                "--idle-wait",
                f"{idle_wait:g}",
                "--out",
                str(out),
            ],
            cwd=ROOT,
            env=run_env,
            capture_output=True,
            text=True,
        )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ERROR: collector run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    bundle = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
    if planted:
        doc = json.loads(bundle.read_text())
        doc["build"]["torch_version"] += f"+{label}"
        bundle.write_text(json.dumps(doc))
    return bundle, seconds


def collect(a: argparse.Namespace, factors: list[float], plan: list[str], base: Path, env: dict, progress) -> dict:
    """Plain runs first (a store's history comes first), then the planted ones; with --disturb the disturbed plain
    and planted runs, each with its drawn disturbance; then the reordered runs."""
    out = {
        "plan": " ".join(plan),
        "processes": a.processes,
        "seconds": [],
        "plain": [],
        "planted": {f"{f:g}": [] for f in factors},
        "disturbed": {"plain": [], "planted": {}, "seconds": [], "disturbances": []},
        "reordered": [],
    }
    slots = [("plain", None)] * a.runs + [("planted", f) for f in factors for _ in range(a.planted)]
    if a.disturb:
        slots += [("disturbed", None)] * a.disturbed + [("disturbed", f) for f in factors for _ in range(a.planted)]
    slots += [("reordered", None)] * a.reordered
    rng, cores = random.Random(a.seed), os.cpu_count() or 1
    for i, (kind, factor) in enumerate(slots):
        label = "reordered" if kind == "reordered" else f"planted{factor:g}" if factor else ""
        planted = {"chunks": CHUNKS} if kind == "reordered" else {"factor": factor} if factor else {}
        run_s = sorted(out["seconds"])[len(out["seconds"]) // 2] if out["seconds"] else 30.0
        disturb = (
            Disturbance.draw(rng, run_s, cores, len(out["disturbed"]["disturbances"])) if kind == "disturbed" else None
        )
        said = f"{kind}{f' {factor:g}x' if factor else ''}{f' ({disturb.words()})' if disturb else ''}"
        progress(f"collecting run {i + 1}/{len(slots)}: {said}")
        path, took = _collect(
            base / f"run-{i}",
            a.processes,
            plan,
            env,
            label,
            planted,
            disturb,
            a.disturbed_idle_wait if disturb else a.idle_wait,
        )
        doc = json.loads(path.read_text())
        if kind == "disturbed":
            side = out["disturbed"]
            (side["plain"] if factor is None else side["planted"].setdefault(f"{factor:g}", [])).append(doc)
            side["seconds"].append(took)
            side["disturbances"].append(disturb.words())
        elif kind == "reordered":
            out["reordered"].append(doc)
        else:
            (out["plain"] if factor is None else out["planted"][f"{factor:g}"]).append(doc)
            out["seconds"].append(took)
    return out


def _spread(seconds: list[float]) -> dict:
    return {"median": sorted(seconds)[len(seconds) // 2], "min": min(seconds), "max": max(seconds)} if seconds else {}


def measure(collected: dict, keep: list[int], sides: list[int], base: Path, env: dict, progress) -> dict:
    plain, seconds, processes = collected["plain"], collected["seconds"], collected["processes"]
    disturbed = collected.get("disturbed") or {"plain": [], "planted": {}, "seconds": []}
    runs = {
        "plain": plain,
        "planted": {float(f): docs for f, docs in collected["planted"].items()},
        "disturbed": {
            "plain": disturbed["plain"],
            "planted": {float(f): docs for f, docs in disturbed["planted"].items()},
        },
        "reordered": collected.get("reordered") or [],
    }
    out = {
        "plan": collected["plan"],
        "runs": len(plain),
        "planted_runs": min(len(d) for d in runs["planted"].values()),
        "collected_processes": processes,
        "run_seconds": _spread(seconds),
        "disturbed_runs": len(disturbed["plain"]),
        "disturbed_run_seconds": _spread(disturbed["seconds"]),
        "reordered_runs": len(runs["reordered"]),
        "cases": len({(r["workload"], r["case_key"], r["dtype"]) for r in plain[0]["results"]}),
        "plans": [],
    }
    for r in sides:
        for k in keep:
            progress(f"reviewing with {k} processes, {r} run(s) a side")
            env["MPSBENCH_DB"] = str(base / f"store-{k}-{r}.duckdb")
            figures = evaluate(runs, k, r, env)
            figures["review_collection_seconds"] = 2 * r * out["run_seconds"]["median"] * k / processes
            out["plans"].append(figures)
    return out


def _planted_line(name: str, d: dict) -> str:
    rate = d["detection_rate"] or 0.0
    busy = (
        f"; {d['contended']} listed contended, {d['doubtful']} otherwise doubtful, {d['missed']} missed"
        if d.get("contended") is not None
        else ""
    )
    return (
        f"  {name}: {d['found']} of {d['slowed_cases']} slowed cases found ({100 * rate:.1f} %) over "
        f"{d['reviews']} reviews ({d['reviews_all_found']} found every one){busy}; {d['other_regressions']} "
        "other regressions in those reviews"
    )


def _print(out: dict) -> None:
    print(
        f"plan: {out['plan']} (CPU, this machine); {out['runs']} plain runs, {out['planted_runs']} per planted "
        f"factor; {out['cases']} cases a run; one run took {out['run_seconds']['median']:.0f} s (median; "
        f"{out['collected_processes']} processes)"
    )
    if out["disturbed_runs"]:
        print(
            f"disturbed: {out['disturbed_runs']} plain runs and as many per planted factor beside busy-loop "
            f"processes; one took {out['disturbed_run_seconds']['median']:.0f} s (median)"
        )
    for p in out["plans"]:
        scaled = "" if p["processes"] == out["collected_processes"] else " (scaled from the collected runs)"
        side = f"{p['runs_a_side']} run{'s' * (p['runs_a_side'] != 1)} a side"
        print(
            f"\n{p['processes']} processes a run, {side} — one review collects in "
            f"{p['review_collection_seconds']:.0f} s{scaled}"
        )
        print(
            f"  A/A reviews, quiet: {p['aa_reviews_with_regression']} of {p['aa_reviews']} show a regression "
            f"({100 * (p['false_alarm_rate'] or 0):.1f} %; goal ≤ 5 %); {p['aa_regressions']} regressions in all, "
            f"{p['aa_unconfirmed']} unconfirmed"
        )
        if "aa_disturbed" in p:
            d = p["aa_disturbed"]
            print(
                f"  A/A reviews with a disturbed run: {d['with_regression']} of {d['reviews']} show a regression "
                f"({100 * (d['false_alarm_rate'] or 0):.1f} %; goal ≤ 5 %); {d['regressions']} regressions, "
                f"{d['unconfirmed']} unconfirmed ({d['contended']} contended)"
            )
        for factor, d in p["planted"].items():
            print(_planted_line(f"planted {factor} softmax, planted side quiet", d))
        for factor, d in p.get("planted_disturbed", {}).items():
            print(_planted_line(f"planted {factor} softmax, planted side disturbed", d))
        if "reordered" in p:
            d = p["reordered"]
            moved = d["psnr_move_db"] or [0, 0]
            ratio = d["max_abs_ratio"] or [1, 1]
            figures = d.get("by_figure", {})
            print(
                f"  reordered half-precision linears: {d['correctness_regressions']} correctness regressions in "
                f"{d['reviews']} reviews, by PSNR {figures.get('psnr_vs_cpu', 0)} and max abs error "
                f"{figures.get('max_abs_error', 0)} (goal 0), by max rel error {figures.get('max_rel_error', 0)}; "
                f"PSNR moved {moved[0]:+.2f} to {moved[1]:+.2f} dB, max abs error {ratio[0]:.2f}× to "
                f"{ratio[1]:.2f}×"
            )


def _args() -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="plain runs (A/A reviews: every pair)")
    ap.add_argument("--planted", type=int, default=3, help="runs per planted factor (and per factor disturbed)")
    ap.add_argument("--processes", type=int, default=10, help="worker processes of each collected run")
    ap.add_argument("--processes-list", help="review with the first k processes too: comma list (default: all)")
    ap.add_argument("--factors", default="2,1.25", help="planted softmax slowdowns")
    ap.add_argument("--runs-a-side", default="1", help="comma list: review with this many runs a side (default 1)")
    ap.add_argument("--disturb", action="store_true", help="also collect runs beside a competing CPU load")
    ap.add_argument(
        "--idle-wait", type=float, default=DEFAULT_IDLE_WAIT_S, help="the quiet runs' --idle-wait (the collector's)"
    )
    ap.add_argument("--disturbed", type=int, default=6, help="with --disturb: disturbed plain runs")
    ap.add_argument(
        "--disturbed-idle-wait",
        type=float,
        default=0.0,
        help="the disturbed runs' --idle-wait (default 0: contention stays in their data)",
    )
    ap.add_argument(
        "--reordered",
        type=int,
        default=0,
        help=f"runs of a build summing half-precision linears in {CHUNKS} rounded chunks (correctness jitter)",
    )
    ap.add_argument("--seed", type=int, default=20261205, help="the disturbances' draws")
    ap.add_argument("--keep", type=Path, help="keep the collected bundles in this folder (to review them again)")
    ap.add_argument("--from", dest="source", type=Path, help="review the bundles a --keep run left (no collection)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="about a minute: three softmax cases, 2 processes, 2 + 1 runs")
    return ap.parse_args()


def main() -> None:
    a = _args()
    plan = ["--suite", "kernels"]
    if a.tiny:
        a.runs, a.planted, a.processes, a.factors, a.disturbed, a.idle_wait = 2, 1, 2, "2", 1, 0.0
        plan = ["--workload", "softmax", "--dtype", "float32", "--case-time-limit", "20"]
    keep = [int(k) for k in a.processes_list.split(",")] if a.processes_list else [a.processes]
    factors = [float(f) for f in a.factors.split(",")]
    if (
        any(k < 1 or k > a.processes for k in keep)
        or a.runs < 2
        or a.planted < 1
        or any(f <= 1 for f in factors)
        or a.disturbed < 0
        or a.reordered < 0
    ):
        raise SystemExit(
            "ERROR: --processes-list values must be 1..--processes, --runs ≥ 2, --planted ≥ 1, "
            "--factors > 1, --disturbed and --reordered ≥ 0"
        )
    sides = [int(r) for r in a.runs_a_side.split(",")]
    if any(r < 1 or 2 * r > a.runs for r in sides):
        raise SystemExit("ERROR: --runs-a-side values must be 1..--runs / 2")

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("MPSBENCH_TOKEN", None)
        if a.source:
            collected = json.loads((a.source / "collected.json").read_text())
        else:
            collected = collect(a, factors, plan, base, env, progress)
        if a.keep:
            a.keep.mkdir(parents=True, exist_ok=True)
            (a.keep / "collected.json").write_text(json.dumps(collected))
        out = measure(collected, keep, sides, base, env, progress)
    print(json.dumps(out, indent=1)) if a.json else _print(out)


if __name__ == "__main__":
    main()
