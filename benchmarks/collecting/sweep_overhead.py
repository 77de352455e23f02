"""What a sweep costs over running the same plan by hand, per (build, round).

By hand, each build's run of the plan is one `python -m collector run …` in that build's environment; a sweep
runs exactly those processes and adds: its own start (imports, the plan's expansion), one probe per build (a
Python start that imports torch), and per slot a journal line or two and a 0.2 s poll of the run's journal.
Both sides run the same tiny stand-in plan (tests.fake_workloads: two cases of a 10 ms sleep), so the figures are
process start + imports, which is the whole of the overhead; two "environments" are this interpreter behind two
wrapper scripts (making real ones is install time, paid once and reused). The by-hand runs and the sweep's
rounds alternate (by hand, sweep, by hand, …) so neither meets the machine's load alone.
Usage: python benchmarks/collecting/sweep_overhead.py [--json] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = ["--workload", "fake_sleep", "--compile", "eager", "--idle-wait", "0"]  # the overhead, not a wait for idle cores
ENV = {
    "MPSBENCH_CATALOG": "tests.fake_workloads",
    "MPSBENCH_FAKE_CASES": "2",
    "MPSBENCH_FAKE_SLEEP_S": "0.01",
    "PYTHONPATH": str(ROOT),
}


def _wrapper(folder: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "python"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    path.chmod(0o755)
    return path


def _timed(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def measure(rounds: int) -> dict:
    env = {**os.environ, **ENV}
    env.pop("MPSBENCH_TOKEN", None)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        pythons = [_wrapper(base / f"env-{i}" / "bin") for i in range(2)]
        imports = [
            _timed([sys.executable, "-c", "import collector.cli.commands, collector.run.session"], env)
            for _ in range(rounds)
        ]
        by_hand, sweeps, slots = [], [], []
        for r in range(rounds):  # alternate: a by-hand round, then a one-round sweep over the same two builds
            by_hand += [
                _timed([str(p), "-m", "collector", "run", *PLAN, "--out", str(base / f"hand-{r}")], env)
                for p in pythons
            ]
            out = base / f"sweep-{r}"
            sweeps.append(
                _timed(
                    [
                        sys.executable,
                        "-m",
                        "collector",
                        "sweep",
                        *PLAN,
                        "--rounds",
                        "1",
                        "--out",
                        str(out),
                        *[x for p in pythons for x in ("--build", f"python={p}")],
                    ],
                    env,
                )
            )
            journal = next(out.glob("sweep-*.sweep.jsonl"))
            slots += [
                e["seconds"] for e in map(json.loads, journal.read_text().splitlines()) if e["type"] == "slot_end"
            ]
    n_builds = len(pythons)
    hand_med, slot_med = statistics.median(by_hand), statistics.median(slots)
    fixed = statistics.median(s - sum(slots[i * n_builds : (i + 1) * n_builds]) for i, s in enumerate(sweeps))
    return {
        "rounds": rounds,
        "builds": n_builds,
        "n_slots": len(slots),
        "import_collector_s": statistics.median(imports),
        "by_hand_run_s": hand_med,
        "sweep_slot_s": slot_med,
        "overhead_per_build_round_s": slot_med - hand_med,
        "sweep_fixed_s": fixed,
        "sweep_fixed_per_build_s": fixed / n_builds,
        "ratio_slot_to_by_hand": slot_med / hand_med,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    found = measure(args.rounds)
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    print(f"{found['builds']} builds × {found['rounds']} rounds, tiny plan (2 cases × 10 ms); medians:")
    print(f"  import the collector (torch included):     {found['import_collector_s']:.3f} s")
    print(f"  one run by hand (process + imports + plan): {found['by_hand_run_s']:.3f} s")
    print(
        f"  the same run as a sweep slot:               {found['sweep_slot_s']:.3f} s "
        f"({found['ratio_slot_to_by_hand']:.3f}× by hand)"
    )
    print(f"  overhead per (build, round):                {found['overhead_per_build_round_s']:+.3f} s")
    print(
        f"  sweep's fixed cost (start, plan, probes):   {found['sweep_fixed_s']:.3f} s "
        f"({found['sweep_fixed_per_build_s']:.3f} s per build)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
