"""The honest timing loop. Only the clock and synchronize() run here: no sampler thread, no hook.

- Warm-up is separate: the first call (lazy init, kernel compile) is its own figure, then a few more calls.
- µs-scale ops: k calls are queued per synchronize and the block time divided by k, with k grown until a block
  takes ≥ max(min_block_s, overhead_factor × the measured sync+clock overhead) — as torch.utils.benchmark's
  blocked_autorange does — so synchronisation cost is negligible in each per-call sample.
- Repetition is adaptive: blocks are added until the median's distribution-free 95 % CI half-width is below
  target_rel_ci, or the time budget / case deadline is spent. Every per-call sample is kept.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from bundle.stats import summarize
from bundle.units import conversion_factor
from collector.adapters.base import Adapter
from collector.timing.median_ci import median_ci

S_PER_NS = conversion_factor("ns", "s")  # the device timer counts ns; samples are in seconds
NOISY_IQR_FRACTION = 0.10


@dataclass(frozen=True)
class TimingPolicy:
    target_rel_ci: float = 0.02
    budget_s: float = 1.0  # steady-state time budget of one time_op pass
    min_time_s: float = 0.1  # steady state spans at least this long, so one quiet burst cannot decide it
    region_budget_s: float = 10.0  # of one time_region pass
    min_samples: int = 10
    max_samples: int = 10_000
    min_region_samples: int = 3
    max_region_samples: int = 100
    min_block_s: float = 1e-3
    overhead_factor: float = 100.0
    max_k: int = 1_000_000
    warmup_s: float = 0.1  # also lets CPU/GPU clocks ramp up before steady state
    warmup_calls: int = 3

    @classmethod
    def for_profile(cls, profile: str, processes: int = 1) -> "TimingPolicy":
        """The profile's policy for one of `processes` worker processes: the time budgets are shared out, so a
        run in N processes takes about as long in steady state as one process did, with N replicates instead of
        one; each process still warms up (≥ warmup_calls calls) and takes at least min_samples blocks."""
        if profile == "full":
            base = cls(
                budget_s=5.0, min_time_s=0.5, warmup_s=0.25, region_budget_s=60.0, min_samples=30, min_region_samples=5
            )
        else:
            base = cls()
        if processes <= 1:
            return base
        return replace(
            base,
            budget_s=max(0.05, base.budget_s / processes),
            min_time_s=max(0.01, base.min_time_s / processes),
            warmup_s=max(0.02, base.warmup_s / processes),
            region_budget_s=max(1.0, base.region_budget_s / processes),
            min_samples=max(5, base.min_samples // 3),
            min_region_samples=3,
        )


@dataclass
class Timing:
    samples: list[float]  # per-call seconds
    first_call_s: float | None = None
    k: int = 1
    overhead_s: float = 0.0
    ci_rel: float = math.inf
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        ci = f"±{self.ci_rel * 100:.2f} %" if math.isfinite(self.ci_rel) else "not reached (too few samples)"
        return (
            f"{len(self.samples)} blocks of k={self.k} calls per synchronize; sync+clock overhead "
            f"{self.overhead_s * conversion_factor('s', 'µs'):.2f} µs; median 95 % CI {ci}"
        )


def block_ns(adapter: Adapter, fn: Callable[[], Any], k: int) -> int:
    """Wall time of k queued calls, the clock read after synchronize at both ends."""
    start = adapter.now_ns()
    for _ in range(k):
        fn()
    return adapter.now_ns() - start


def sync_overhead_ns(adapter: Adapter, reps: int = 21) -> int:
    """Median cost of one synchronize + clock read (what a block of zero calls measures)."""
    return sorted(block_ns(adapter, lambda: None, 0) for _ in range(reps))[reps // 2]


def warm_up(adapter: Adapter, fn: Callable[[], Any], policy: TimingPolicy, deadline: float | None = None) -> float:
    """Time the very first call (s), then run calls until warmup_s / warmup_calls are both reached."""
    first_s = block_ns(adapter, fn, 1) * S_PER_NS
    start, calls = time.perf_counter(), 0
    while calls < policy.warmup_calls or time.perf_counter() - start < policy.warmup_s:
        if _past(deadline):
            break
        block_ns(adapter, fn, 1)
        calls += 1
    return first_s


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


def choose_k(adapter: Adapter, fn: Callable[[], Any], overhead_ns: int, policy: TimingPolicy) -> int:
    """Grow k until one block takes at least max(min_block_s, overhead_factor × overhead)."""
    floor_ns = max(policy.min_block_s / S_PER_NS, policy.overhead_factor * overhead_ns)
    k = 1
    while k < policy.max_k:
        took = block_ns(adapter, fn, k)
        if took >= floor_ns:
            return k
        grow = math.ceil(k * floor_ns * 1.2 / max(took, 1))
        k = min(policy.max_k, max(2 * k, grow))
    return k


def _ci_rel(samples: list[float]) -> float:
    ci = median_ci(samples)
    return ci.relative_half_width if ci else math.inf


def _quality_warnings(t: Timing, policy: TimingPolicy, what: str, check_ci: bool = True) -> list[str]:
    out = []
    s = summarize(t.samples)
    if s.median > 0 and s.iqr / s.median > NOISY_IQR_FRACTION:
        out.append(f"noisy {what}: IQR is {s.iqr / s.median * 100:.1f} % of the median (> 10 %)")
    if check_ci and t.ci_rel > policy.target_rel_ci:
        shown = f"{t.ci_rel * 100:.2f} %" if math.isfinite(t.ci_rel) else "undefined (n ≤ 5)"
        out.append(
            f"{what}: median 95 % CI half-width {shown} did not reach the "
            f"{policy.target_rel_ci * 100:g} % target within the time budget (n={len(t.samples)})"
        )
    return out


def time_op(adapter: Adapter, fn: Callable[[], Any], policy: TimingPolicy, deadline: float | None = None) -> Timing:
    """Warm-up, choose k, then blocks until the CI target, the budget, the deadline or max_samples."""
    first_s = warm_up(adapter, fn, policy, deadline)
    overhead = sync_overhead_ns(adapter)
    k = choose_k(adapter, fn, overhead, policy)
    end = _end(policy.budget_s, deadline)
    settled = min(time.perf_counter() + policy.min_time_s, end)
    samples: list[float] = []
    while len(samples) < policy.max_samples:
        samples.append(block_ns(adapter, fn, k) / k * S_PER_NS)
        enough = len(samples) >= policy.min_samples and time.perf_counter() >= settled
        if enough and len(samples) % 5 == 0 and _ci_rel(samples) <= policy.target_rel_ci:
            break
        if _past(deadline) or (time.perf_counter() >= end and len(samples) >= min(policy.min_samples, 6)):
            break  # the case's time limit stops repetition at once; the pass budget only after 6 samples
    t = Timing(samples, first_s, k, overhead * S_PER_NS, _ci_rel(samples))
    t.warnings = _quality_warnings(t, policy, "op_time")
    return t


def time_region(
    adapter: Adapter,
    fn: Callable[[], Any],
    policy: TimingPolicy,
    repeats: int | None = None,
    deadline: float | None = None,
    what: str = "region",
) -> Timing:
    """One call per sample, synchronize around each; a fixed repeat count or adaptive like time_op."""
    first_s = block_ns(adapter, fn, 1) * S_PER_NS  # warm-up call, kept apart from the steady-state samples
    end = _end(policy.region_budget_s, deadline)
    samples = [block_ns(adapter, fn, 1) * S_PER_NS]
    while not _region_done(samples, policy, repeats, deadline, end):
        samples.append(block_ns(adapter, fn, 1) * S_PER_NS)
    t = Timing(samples, first_s, 1, 0.0, _ci_rel(samples))
    t.warnings = _quality_warnings(t, policy, what, check_ci=repeats is None)
    if repeats is not None and len(samples) < repeats:
        t.warnings.append(f"{what}: stopped after {len(samples)} of {repeats} repeats (case time limit reached)")
    return t


def _region_done(
    samples: list[float], policy: TimingPolicy, repeats: int | None, deadline: float | None, end: float
) -> bool:
    """A fixed repeat count (or the deadline) ends a region pass; else the CI target, budget or sample cap."""
    if repeats is not None:
        return len(samples) >= repeats or _past(deadline)
    if len(samples) >= policy.max_region_samples or _past(deadline):
        return True
    return len(samples) >= policy.min_region_samples and (
        _ci_rel(samples) <= policy.target_rel_ci or time.perf_counter() >= end
    )


def _end(budget_s: float, deadline: float | None) -> float:
    end = time.perf_counter() + budget_s
    return min(end, deadline) if deadline is not None else end
