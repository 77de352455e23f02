"""Does `mpsbench bisect` name the right build? Planted "nightlies" on this machine's CPU, bisected for real.

N builds are `python=` wrappers over this one torch environment, each with its own `sitecustomize`
(benchmarks/false_alarms/disturbance.py's planted build, loaded by every process) that gives torch a nightly's version
(2.16.0.devYYYYMMDD, dated a day apart) and git hash, and from build k onward makes softmax a known factor slower
(each call followed by a spin of (factor − 1) × its own time). For each planted position k and factor the real
`mpsbench bisect` runs (one softmax case, its own store) and its answer is scored: right (first bad = k), unclear
(it stopped, naming the interval and its unclear steps) or wrong (it named another build — never allowed).
Printed: per factor the right / unclear / wrong counts, the right-answer rate, steps and collection time (median
and range) per bisect. The planted builds are CPU builds: these figures are not MPS figures.
Usage: python -m benchmarks.bisect_builds [--builds 16] [--positions 10 | --at 2,7,13] [--factors 2,1.25]
       [--processes 3] [--rounds 4] [--idle-wait 30] [--json] [--tiny]
Each run gets --idle-wait explicitly (default the collector's 30 s; --tiny: 0, it never waits for idle cores).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from benchmarks.false_alarms.disturbance import SITECUSTOMIZE
from collector.run.plan import DEFAULT_IDLE_WAIT_S

ROOT = Path(__file__).resolve().parents[1]
CASE = 'softmax|{"rows":8,"vocab":151936}|float32|eager'  # the largest quick softmax: its slowdown stands out
FIRST_DAY = date(2026, 9, 1)
_VERSION = """
if _F is not None:  # the planted nightly's identity: its version and git hash
    torch.__version__ = torch.torch_version.TorchVersion({version!r})
    torch.version.git_version = {git!r}
"""


def planted_version(i: int) -> tuple[str, str]:
    """Build i's (version, git hash): a nightly a day after the one before it."""
    day = FIRST_DAY + timedelta(days=i)
    return f"2.16.0.dev{day:%Y%m%d}", hashlib.sha1(f"planted-nightly-{i}".encode()).hexdigest()


def plant(
    folder: Path, n: int, first_bad: int, factor: float, python: str = sys.executable, route: str = ""
) -> list[Path]:
    """n wrapper interpreters, oldest first; builds first_bad.. are `factor` slower at softmax (and, with `route`
    "log_softmax", compute it as exp(log_softmax): a change of path, benchmarks/false_alarms/disturbance.py)."""
    return [
        planted_python(
            folder,
            i,
            f"MPSBENCH_PLANTED_FACTOR={factor if i >= first_bad else 1:g}"
            + (f" MPSBENCH_PLANTED_SOFTMAX={route}" if route and i >= first_bad else ""),
            python,
        )
        for i in range(n)
    ]


def planted_python(folder: Path, i: int, setting: str, python: str = sys.executable) -> Path:
    """Planted nightly i's wrapper interpreter: this torch reporting planted_version(i), with `setting` (an
    environment assignment read by the planted sitecustomize) in every process it starts."""
    version, git = planted_version(i)
    home = folder / f"n{i:02d}"
    (home / "site").mkdir(parents=True, exist_ok=True)
    (home / "bin").mkdir(exist_ok=True)
    (home / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE + _VERSION.format(version=version, git=git))
    wrapper = home / "bin" / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{home / "site"}:$PYTHONPATH" {setting} exec "{python}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def bisect_once(
    base: Path, n: int, first_bad: int, factor: float, processes: int, rounds: int, idle_wait: float, env: dict
) -> dict:
    """One real `mpsbench bisect` over n planted builds; its outcome scored."""
    pythons = plant(base / "builds", n, first_bad, factor)
    args = [
        "--good",
        f"python={pythons[0]}",
        "--bad",
        f"python={pythons[-1]}",
        *[x for p in pythons[1:-1] for x in ("--between", f"python={p}")],
        "--case",
        CASE,
        "--device",
        "cpu",
        "--processes",
        str(processes),
        "--rounds",
        str(rounds),
        "--machine-name",
        "bench",
        "--db",
        str(base / "store.duckdb"),
        "--out",
        str(base / "runs"),
        "--envs",
        str(base / "envs"),
        "--idle-wait",
        f"{idle_wait:g}",
    ]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mpsbench", "bisect", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    return {"first_bad": first_bad, "factor": factor, "seconds": seconds, **score(done, first_bad)}


def score(done: subprocess.CompletedProcess, first_bad: int) -> dict:
    """right / unclear / wrong from the command's answer (its exit code and its `first bad: build K` line)."""
    steps = len(re.findall(r"^step \d+ ", done.stdout, re.M))
    found = re.search(r"^first bad: build (\d+) of", done.stdout, re.M)
    if done.returncode == 0 and found:
        outcome = "right" if int(found[1]) - 1 == first_bad else "wrong"
    elif done.returncode == 3 and "not found" in done.stdout:
        outcome = "unclear"
    else:
        raise SystemExit(
            f"ERROR: bisect failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return {"outcome": outcome, "steps": steps, "answer": done.stdout.strip().splitlines()[-8:]}


def positions(n: int, count: int) -> list[int]:
    """`count` first-bad builds spread over 1..n-1 (build 0 is the good end)."""
    count = min(count, n - 1)
    return sorted({1 + round(i * (n - 2) / max(count - 1, 1)) for i in range(count)})


def _spread(values: list[float]) -> dict:
    s = sorted(values)
    return {"median": s[len(s) // 2], "min": s[0], "max": s[-1]} if s else {}


def summarize(results: list[dict], n: int) -> dict:
    out = {}
    for factor in sorted({r["factor"] for r in results}, reverse=True):
        rs = [r for r in results if r["factor"] == factor]
        counts = {k: sum(r["outcome"] == k for r in rs) for k in ("right", "unclear", "wrong")}
        out[f"{factor:g}x"] = {
            **counts,
            "bisects": len(rs),
            "right_rate": counts["right"] / len(rs),
            "steps": _spread([r["steps"] for r in rs]),
            "seconds": _spread([r["seconds"] for r in rs]),
            "step_bound": math.ceil(math.log2(n)) + 2,
        }
    return out


def _args() -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builds", type=int, default=16)
    ap.add_argument("--positions", type=int, default=10, help="planted first-bad positions per factor")
    ap.add_argument("--at", help="these first-bad builds instead (1-based, comma-separated: e.g. 4,7,13)")
    ap.add_argument("--factors", default="2,1.25")
    ap.add_argument("--processes", type=int, default=3, help="worker processes per run")
    ap.add_argument("--rounds", type=int, default=4, help="most rounds a step runs")
    ap.add_argument(
        "--idle-wait", type=float, default=DEFAULT_IDLE_WAIT_S, help="each run's --idle-wait (default: the collector's)"
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="a minute or two: 3 builds, one position, 2x")
    return ap.parse_args()


def main() -> None:
    a = _args()
    if a.tiny:
        a.builds, a.positions, a.factors, a.rounds, a.idle_wait = 3, 1, "2", 4, 0.0
    factors = [float(f) for f in a.factors.split(",")]
    if a.builds < 3 or a.positions < 1 or any(f <= 1 for f in factors) or a.processes < 1 or a.rounds < 1:
        raise SystemExit("ERROR: --builds ≥ 3, --positions ≥ 1, --factors > 1, --processes and --rounds ≥ 1")
    at = sorted({int(k) - 1 for k in a.at.split(",")}) if a.at else positions(a.builds, a.positions)
    if not all(1 <= k < a.builds for k in at):
        raise SystemExit(f"ERROR: --at {a.at}: first-bad builds are 2..{a.builds} (build 1 is the good end)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MPSBENCH_TOKEN", None)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for factor in factors:
            for k in at:
                print(f"bisecting {a.builds} builds, first bad {k + 1}, {factor:g}x …", file=sys.stderr, flush=True)
                results.append(
                    bisect_once(
                        Path(tmp) / f"{factor:g}-{k}", a.builds, k, factor, a.processes, a.rounds, a.idle_wait, env
                    )
                )
                print(
                    f"  {results[-1]['outcome']} in {results[-1]['steps']} steps, {results[-1]['seconds']:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    out = {
        "builds": a.builds,
        "processes": a.processes,
        "rounds": a.rounds,
        "idle_wait_s": a.idle_wait,
        "case": CASE,
        "device": "cpu",
        "factors": summarize(results, a.builds),
        "bisects": results,
    }
    if a.json:
        print(json.dumps(out, indent=1))
        return
    wait = f"{a.idle_wait:g} s"
    print(
        f"{a.builds} planted CPU nightlies, {CASE}, {a.processes} processes a run, at most {a.rounds} rounds a "
        f"step, idle wait {wait}"
    )
    for name, f in out["factors"].items():
        print(
            f"  {name}: {f['right']} right, {f['unclear']} unclear, {f['wrong']} wrong of {f['bisects']} bisects "
            f"({100 * f['right_rate']:.0f} % right); steps {f['steps']['median']} (median; {f['steps']['min']}–"
            f"{f['steps']['max']}, bound {f['step_bound']}); {f['seconds']['median']:.0f} s a bisect (median; "
            f"{f['seconds']['min']:.0f}–{f['seconds']['max']:.0f} s)"
        )


if __name__ == "__main__":
    main()
