"""Cross-check the collector's timing loop against torch.utils.benchmark on the same small CPU ops.

For each op, in one process and with one intra-op thread for both (Timer's default num_threads=1):
- mpsbench: collector.timing.time_op (warm-up, k calls per sync, adaptive until the median's 95 % CI
  half-width ≤ 2 % or the budget);
- torch: Timer.blocked_autorange(min_run_time=0.2) repeated, pooling every block's per-call time, until the
  same order-statistic CI of the pooled median is ≤ 2 % (adaptive_autorange stops on IQR/median instead, a
  different rule, so it is not used for the wall-time comparison).
Each harness runs twice per op in A B B A order; figures are the mean of its two runs. Prints both medians
(µs), their ratio and the wall time each needed (s). `--json` prints the same, with both runs, as JSON.
Usage: python benchmarks/timing.py [--json] [--budget SECONDS]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.utils.benchmark as tb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bundle.stats import summarize  # noqa: E402
from collector.adapters.cpu import CpuAdapter  # noqa: E402
from collector.median_ci import median_ci  # noqa: E402
from collector.timing import TimingPolicy, time_op  # noqa: E402

TARGET = 0.02


def ops() -> dict[str, tuple[str, dict]]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 4096, generator=g)
    a, b = torch.randn(256, 256, generator=g), torch.randn(256, 256, generator=g)
    u, v = torch.randn(1 << 20, generator=g), torch.randn(1 << 20, generator=g)
    return {"softmax 1x4096 fp32": ("torch.softmax(x, -1)", {"torch": torch, "x": x}),
            "matmul 256x256 fp32": ("a @ b", {"a": a, "b": b}),
            "add 1M fp32": ("u + v", {"u": u, "v": v})}


def ours(stmt: str, env: dict, budget_s: float) -> dict:
    fn = eval(f"lambda: {stmt}", dict(env))  # noqa: S307 - our own fixed statements
    start = time.perf_counter()
    t = time_op(CpuAdapter(), fn, TimingPolicy(target_rel_ci=TARGET, budget_s=budget_s, min_samples=10))
    wall = time.perf_counter() - start
    return {"median_us": summarize(t.samples).median * 1e6, "ci_rel": t.ci_rel, "n": len(t.samples),
            "k": t.k, "wall_s": wall}


def torch_timer(stmt: str, env: dict, budget_s: float) -> dict:
    timer = tb.Timer(stmt=stmt, globals=env, num_threads=1)
    start, times, blocks = time.perf_counter(), [], 0
    while True:
        m = timer.blocked_autorange(min_run_time=0.2)
        times += m.times
        blocks += 1
        ci = median_ci(times)
        rel = ci.relative_half_width if ci else float("inf")
        if rel <= TARGET or time.perf_counter() - start > budget_s:
            break
    return {"median_us": summarize(times).median * 1e6, "ci_rel": rel, "n": len(times),
            "k": m.number_per_run, "autorange_calls": blocks, "wall_s": time.perf_counter() - start}


def _mean(a: dict, b: dict) -> dict:
    """Mean of two runs' figures (median_us, wall_s, ci_rel); n and k of both runs kept as "a/b"."""
    out = {key: (a[key] + b[key]) / 2 for key in ("median_us", "wall_s", "ci_rel")}
    out.update({key: f"{a[key]}/{b[key]}" for key in ("n", "k")})
    out["runs"] = [a, b]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--budget", type=float, default=20.0, help="max seconds per op per harness")
    args = p.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name, (stmt, env) in ops().items():
        # A B B A: neither harness always runs first (clock ramp-up, cache state); each figure is the mean of two
        first, theirs_1 = ours(stmt, env, args.budget), torch_timer(stmt, env, args.budget)
        theirs_2, second = torch_timer(stmt, env, args.budget), ours(stmt, env, args.budget)
        mine, theirs = _mean(first, second), _mean(theirs_1, theirs_2)
        rows.append({"op": name, "mpsbench": mine, "torch_benchmark": theirs,
                     "ratio_mpsbench_over_torch": mine["median_us"] / theirs["median_us"]})
    if args.json:
        print(json.dumps({"torch": torch.__version__, "target_rel_ci": TARGET, "rows": rows}, indent=1))
        return 0
    print(f"torch {torch.__version__}, CPU, 1 thread, target: median 95 % CI half-width ≤ {TARGET:.0%}")
    print(f"{'op':22} {'mpsbench µs':>12} {'Timer µs':>10} {'ratio':>7} {'mpsbench s':>11} {'Timer s':>8}  (k, n)")
    for r in rows:
        m, t = r["mpsbench"], r["torch_benchmark"]
        print(f"{r['op']:22} {m['median_us']:12.3f} {t['median_us']:10.3f} {r['ratio_mpsbench_over_torch']:7.3f} "
              f"{m['wall_s']:11.2f} {t['wall_s']:8.2f}  (k={m['k']} | {t['k']}, n={m['n']} | {t['n']}, "
              f"CI ±{m['ci_rel']:.2%}/±{t['ci_rel']:.2%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
