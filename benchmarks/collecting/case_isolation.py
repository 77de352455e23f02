"""What crash isolation (collector/isolation/isolator.py) costs: per case, and per worker start.

Per case: the same trivial case (NoopWorkload below: two synchronised no-op calls on the CPU) run through collector.isolation.runner.run_case in this process and through a warm case worker (send the workload and
case, run_case there, results back and validated). Blocks of cases alternate (in-process, isolated, …) so
neither meets the machine's load alone; the overhead is the difference of the per-case medians.
Worker start: a fresh `spawn`ed worker until it says ready (interpreter start, imports of torch and the
collector, the adapter): paid once per run and again after each crash or timeout.
Usage: python benchmarks/collecting/case_isolation.py [--json] [--tiny] [--cases N] [--rounds N] [--starts N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from collector.isolation.isolator import Isolator, Worker, WorkerSpec
from collector.isolation.runner import run_case
from collector.workload import Bench, Case, Workload

SPEC = WorkerSpec(device_choice="cpu", profile="quick")


class NoopWorkload(Workload):
    """n near-empty cases. Defined here, the worker unpickles it from this script (spawn imports the main script
    as __mp_main__)."""

    name, suite = "noop", "kernels"
    metrics = ("decode_time",)

    def __init__(self, n: int) -> None:
        self.n = n

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"i": i}, "float32") for i in range(self.n)]

    def run(self, case: Case, bench: Bench) -> None:
        bench.time_region(lambda: None, metric="decode_time", repeats=1)


def _per_case_s(run_one, cases: list) -> list[float]:
    out = []
    for case in cases:
        start = time.perf_counter()
        run_one(case)
        out.append(time.perf_counter() - start)
    return out


def measure(cases: int, rounds: int, starts: int) -> dict:
    load_before = os.getloadavg()
    workload = NoopWorkload(cases)
    batch = workload.cases("quick")
    ctx = SPEC.context()
    in_process, isolated = [], []
    with Isolator(SPEC, ctx) as isolator:
        isolator.run(workload, batch[0])  # the worker's start and first case are not per-case cost
        for _ in range(rounds):
            in_process += _per_case_s(lambda c: run_case(workload, c, ctx), batch)
            isolated += _per_case_s(lambda c: isolator.run(workload, c), batch)
    start_s = []
    for _ in range(starts):
        worker = Worker(SPEC)
        assert worker.ready, "the case worker did not start"
        start_s.append(worker.start_s)
        worker.close()
    med_in, med_iso = statistics.median(in_process), statistics.median(isolated)
    return {
        "cases_per_block": cases,
        "rounds": rounds,
        "n_cases_each": len(in_process),
        "in_process_case_ms": med_in * 1e3,
        "isolated_case_ms": med_iso * 1e3,
        "overhead_per_case_ms": (med_iso - med_in) * 1e3,
        "isolated_case_ms_iqr": _iqr(isolated) * 1e3,
        "in_process_case_ms_iqr": _iqr(in_process) * 1e3,
        "worker_starts": starts,
        "worker_start_s": statistics.median(start_s),
        "worker_start_s_all": start_s,
        "load_1min_before": load_before[0],
        "load_1min_after": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }


def _iqr(values: list[float]) -> float:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return q[2] - q[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=50, help="cases per block")
    p.add_argument("--rounds", type=int, default=5, help="alternating blocks of each kind")
    p.add_argument("--starts", type=int, default=5, help="fresh worker starts timed")
    p.add_argument("--tiny", action="store_true", help="a few seconds: 5 cases × 1 round, 1 start")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.tiny:
        args.cases, args.rounds, args.starts = 5, 1, 1
    found = measure(args.cases, args.rounds, args.starts)
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    print(
        f"trivial CPU case, {found['n_cases_each']} cases each way in {found['rounds']} alternating rounds; "
        f"load {found['load_1min_before']:.1f} -> {found['load_1min_after']:.1f} on {found['cpus']} CPUs; medians:"
    )
    print(
        f"  in process:          {found['in_process_case_ms']:.2f} ms per case "
        f"(IQR {found['in_process_case_ms_iqr']:.2f} ms)"
    )
    print(
        f"  in the case worker:  {found['isolated_case_ms']:.2f} ms per case "
        f"(IQR {found['isolated_case_ms_iqr']:.2f} ms)"
    )
    print(f"  isolation overhead:  {found['overhead_per_case_ms']:+.2f} ms per case")
    print(
        f"  worker start:        {found['worker_start_s']:.2f} s (median of {found['worker_starts']}; once per run "
        "and after each crash or timeout)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
