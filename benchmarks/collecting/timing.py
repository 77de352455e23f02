"""Cross-check the collector's timing loop against torch.utils.benchmark on the same small CPU ops.

For each op, in one process and with one intra-op thread for both (Timer's default num_threads=1), in
`--rounds` rounds whose order alternates (A B, B A, …) so neither harness always meets the same load:
- mpsbench: collector.timing.loop.time_op (warm-up, k calls per sync with blocks of ≥ 1 ms, adaptive until the
  median's 95 % CI half-width ≤ 2 % or the budget);
- torch: Timer.blocked_autorange(min_run_time=0.2) repeated, pooling every block's per-call time, until the
  same order-statistic CI of the pooled median is ≤ 2 % (adaptive_autorange stops on IQR/median instead, a
  different rule, so it is not used for the wall-time comparison);
- diagnosis: torch's Timer.timeit(number=k) with mpsbench's k, as many blocks as mpsbench took — Timer's own
  loop at mpsbench's block length. When it sides with mpsbench, a gap is the block length, not the loop.
Every run also counts involuntary context switches (getrusage ru_nivcsw) per block: on a shared machine a
block of 20 ms is preempted far more often than one of 1 ms, and that stolen time is in its figure.
A harness's figure is the median over rounds of its per-round medians; the wall time is the median over
rounds of the time it needed to reach the CI target ("not reached" if any round ran out of budget).
--tiny: 1 round, 0.3 s budget (seconds; what the tests run so the script cannot rot; figures are then rough).
Usage: python benchmarks/collecting/timing.py [--json] [--rounds N] [--budget SECONDS] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from typing import Any, Callable

import torch
import torch.utils.benchmark as tb

from bundle.stats import summarize
from collector.adapters.cpu import CpuAdapter
from collector.timing.loop import TimingPolicy, time_op
from collector.timing.median_ci import median_ci

TARGET = 0.02
AGREE = 0.05


def ops() -> dict[str, tuple[str, dict]]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 4096, generator=g)
    a, b = torch.randn(256, 256, generator=g), torch.randn(256, 256, generator=g)
    u, v = torch.randn(1 << 20, generator=g), torch.randn(1 << 20, generator=g)
    return {
        "softmax 1x4096 fp32": ("torch.softmax(x, -1)", {"torch": torch, "x": x}),
        "matmul 256x256 fp32": ("a @ b", {"a": a, "b": b}),
        "add 1M fp32": ("u + v", {"u": u, "v": v}),
    }


def _ci_rel(times: list[float]) -> float:
    ci = median_ci(times)
    return ci.relative_half_width if ci else float("inf")


def measured(run: Callable[[], tuple[list[float], dict[str, Any]]]) -> dict[str, Any]:
    """Run one harness; add wall time, median (µs), CI and involuntary context switches per block."""
    switches, start = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw, time.perf_counter()
    times, extra = run()
    wall = time.perf_counter() - start
    preempted = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw - switches
    ci = _ci_rel(times)
    return {
        "median_us": summarize(times).median * 1e6,
        "ci_rel": ci,
        "ci_reached": ci <= TARGET,
        "n": len(times),
        "wall_s": wall,
        "preemptions_per_block": preempted / len(times),
        **extra,
    }


def ours(fn: Callable[[], Any], budget_s: float) -> dict[str, Any]:
    policy = TimingPolicy(target_rel_ci=TARGET, budget_s=budget_s, min_samples=10)

    def run() -> tuple[list[float], dict[str, Any]]:
        t = time_op(CpuAdapter(), fn, policy)
        return t.samples, {"k": t.k, "block_ms": summarize(t.samples).median * t.k * 1e3}

    return measured(run)


def torch_autorange(timer: tb.Timer, budget_s: float) -> dict[str, Any]:
    def run() -> tuple[list[float], dict[str, Any]]:
        start, times, calls = time.perf_counter(), [], 0
        while True:
            m = timer.blocked_autorange(min_run_time=0.2)
            times, calls = times + list(m.times), calls + 1
            if _ci_rel(times) <= TARGET or time.perf_counter() - start > budget_s:
                return times, {
                    "k": m.number_per_run,
                    "autorange_calls": calls,
                    "block_ms": statistics.median(times) * m.number_per_run * 1e3,
                }

    return measured(run)


def torch_at_k(timer: tb.Timer, k: int, blocks: int) -> dict[str, Any]:
    """Timer's own timeit loop, at mpsbench's k and sample count (a diagnosis, not a harness)."""

    def run() -> tuple[list[float], dict[str, Any]]:
        return [timer.timeit(number=k).median for _ in range(blocks)], {"k": k}

    return measured(run)


def one_round(fn: Callable[[], Any], timer: tb.Timer, budget_s: float, torch_first: bool) -> dict[str, Any]:
    if torch_first:
        theirs = torch_autorange(timer, budget_s)
        mine = ours(fn, budget_s)
    else:
        mine = ours(fn, budget_s)
        theirs = torch_autorange(timer, budget_s)
    return {
        "mpsbench": mine,
        "torch_benchmark": theirs,
        "torch_timer_at_mpsbench_k": torch_at_k(timer, mine["k"], mine["n"]),
    }


def pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over rounds of median (µs) and wall time; CI reached only if every round reached it."""
    return {
        "median_us": statistics.median(r["median_us"] for r in runs),
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "ci_reached": all(r["ci_reached"] for r in runs),
        "preemptions_per_block": statistics.median(r["preemptions_per_block"] for r in runs),
        "k": "/".join(str(r["k"]) for r in runs),
        "runs": runs,
    }


def compare_op(name: str, stmt: str, env: dict, rounds: int, budget_s: float) -> dict[str, Any]:
    fn = eval(f"lambda: {stmt}", dict(env))  # our own fixed statements
    timer = tb.Timer(stmt=stmt, globals=env, num_threads=1)
    per_round = [one_round(fn, timer, budget_s, torch_first=bool(i % 2)) for i in range(rounds)]
    row: dict[str, Any] = {"op": name}
    for harness in ("mpsbench", "torch_benchmark", "torch_timer_at_mpsbench_k"):
        row[harness] = pooled([r[harness] for r in per_round])
    ratio = row["mpsbench"]["median_us"] / row["torch_benchmark"]["median_us"]
    row["ratio_mpsbench_over_torch"] = ratio
    row["ratio_mpsbench_over_torch_at_same_k"] = (
        row["mpsbench"]["median_us"] / row["torch_timer_at_mpsbench_k"]["median_us"]
    )
    row["agree_within_5pct"] = abs(ratio - 1) <= AGREE
    return row


def _wall(h: dict[str, Any]) -> str:
    return f"{h['wall_s']:.2f}" + ("" if h["ci_reached"] else "*")


def print_table(result: dict[str, Any]) -> None:
    print(
        f"torch {result['torch']}, CPU, 1 thread, {result['rounds']} rounds; load average "
        f"{result['load_avg_start']:.2f} -> {result['load_avg_end']:.2f} on {result['cpus']} CPUs; "
        f"target: median 95 % CI half-width ≤ {TARGET:.0%}"
    )
    print(
        f"{'op':20} {'mpsbench µs':>11} {'Timer µs':>9} {'ratio':>6} {'agree':>5} {'mpsbench s':>10} "
        f"{'Timer s':>8} {'Timer@k µs':>10} {'ratio@k':>7}  preempt/block (mpsbench | Timer), k"
    )
    for r in result["rows"]:
        m, t, d = r["mpsbench"], r["torch_benchmark"], r["torch_timer_at_mpsbench_k"]
        print(
            f"{r['op']:20} {m['median_us']:11.3f} {t['median_us']:9.3f} {r['ratio_mpsbench_over_torch']:6.3f} "
            f"{'yes' if r['agree_within_5pct'] else 'NO':>5} {_wall(m):>10} {_wall(t):>8} {d['median_us']:10.3f} "
            f"{r['ratio_mpsbench_over_torch_at_same_k']:7.3f}  {m['preemptions_per_block']:.3f} | "
            f"{t['preemptions_per_block']:.3f}, k {m['k']} | {t['k']}"
        )
    print("* = the 2 % CI target was not reached within the budget in at least one round")
    if result["load_avg_start"] > result["cpus"] / 2:
        print(
            f"WARNING: the machine was busy (load average {result['load_avg_start']:.2f} on {result['cpus']} CPUs): "
            "blocks that get preempted carry other processes' time, and longer blocks are preempted more"
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--rounds", type=int, default=4, help="rounds per op (order alternates)")
    p.add_argument("--budget", type=float, default=10.0, help="max seconds per op per harness per round")
    p.add_argument("--tiny", action="store_true", help="1 round, 0.3 s budget")
    args = p.parse_args()
    if args.tiny:
        args.rounds, args.budget = 1, 0.3
    torch.set_num_threads(1)
    load_start = os.getloadavg()[0]
    rows = [compare_op(name, stmt, env, args.rounds, args.budget) for name, (stmt, env) in ops().items()]
    result = {
        "torch": torch.__version__,
        "target_rel_ci": TARGET,
        "agree_rel": AGREE,
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "load_avg_start": load_start,
        "load_avg_end": os.getloadavg()[0],
        "rows": rows,
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
