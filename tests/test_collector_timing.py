"""The timing loop: a known busy-wait, k-per-sync selection with a known sync cost, the median CI, summaries."""

from __future__ import annotations

import itertools
import math
import threading
import time

import numpy as np
import pytest

from bundle.stats import summarize
from collector.adapters.cpu import CpuAdapter
from collector.timing.loop import TimingPolicy, choose_k, sync_overhead_ns, time_op, time_region
from collector.timing.median_ci import lower_rank, median_ci
from tests.collector_fakes import VirtualClockAdapter
from tests.fake_workloads import spin


def test_busy_wait_of_2ms_is_timed_as_2ms():
    policy = TimingPolicy(region_budget_s=0.5, target_rel_ci=0.02)
    t = time_region(CpuAdapter(), lambda: spin(2e-3), policy)
    median = summarize(t.samples).median
    # a spin can only take longer than asked (preemption on a loaded machine), never shorter
    assert 2e-3 <= median < 2e-3 * 1.5, median


def test_op_of_2ms_via_time_op_has_k_1_and_right_median():
    t = time_op(CpuAdapter(), lambda: spin(2e-3), TimingPolicy(budget_s=0.3, min_samples=6))
    assert t.k == 1  # one call already exceeds the 1 ms block floor
    assert 2e-3 <= summarize(t.samples).median < 3e-3


def test_k_grows_until_sync_overhead_is_negligible():
    # sync + clock read costs 100 µs; the op 2 µs: a block must be ≥ 100 × 100 µs = 10 ms -> k ≥ 4950
    fake = VirtualClockAdapter(sync_ns=100_000, op_ns=2_000)
    overhead = sync_overhead_ns(fake)
    assert overhead == 100_000
    k = choose_k(fake, fake.op, overhead, TimingPolicy())
    assert k * 2_000 + 100_000 >= 10_000_000
    assert k <= 2 * 4950  # grown to the floor, not far past it


def test_per_call_samples_carry_at_most_one_percent_sync_overhead():
    fake = VirtualClockAdapter(sync_ns=100_000, op_ns=2_000)
    t = time_op(fake, fake.op, TimingPolicy(min_samples=10))
    assert len(t.samples) >= 10
    for s in t.samples:
        assert 2e-6 <= s <= 2e-6 * 1.01
    assert t.overhead_s == pytest.approx(100e-6)


def test_small_min_block_without_overhead_gives_k_from_min_block():
    fake = VirtualClockAdapter(sync_ns=10, op_ns=1_000)  # overhead 10 ns × 100 = 1 µs < 1 ms floor
    k = choose_k(fake, fake.op, sync_overhead_ns(fake), TimingPolicy(min_block_s=1e-3))
    assert 1_000 <= k <= 2_000


def test_adaptive_repetition_stops_at_the_ci_target():
    fake = VirtualClockAdapter(sync_ns=1_000, op_ns=50_000)  # identical samples: CI width 0 at n=10
    t = time_op(fake, fake.op, TimingPolicy(min_samples=10, min_time_s=0))
    assert len(t.samples) == 10 and t.ci_rel == 0.0 and t.warnings == []


def test_noisy_samples_warn_with_the_figure():
    fake = VirtualClockAdapter(sync_ns=0, op_ns=0)
    durations = itertools.cycle([1_000_000, 1_500_000])

    def op() -> None:
        fake.clock += next(durations)

    t = time_op(fake, op, TimingPolicy(budget_s=0.05, min_samples=20, min_block_s=1e-4))
    noisy = [w for w in t.warnings if w.startswith("noisy")]
    assert noisy and "% of the median (> 10 %)" in noisy[0]
    figure = float(noisy[0].split("IQR is ")[1].split(" %")[0])
    s = summarize(t.samples)
    assert figure == pytest.approx(s.iqr / s.median * 100, abs=0.05)


def test_no_sampler_thread_runs_while_timing():
    seen = []
    time_op(CpuAdapter(), lambda: seen.append(threading.active_count()), TimingPolicy(budget_s=0.05))
    assert max(seen) == threading.active_count()


def test_summary_matches_numpy():
    t = time_op(CpuAdapter(), lambda: sum(range(200)), TimingPolicy(budget_s=0.1, min_samples=30))
    s, a = summarize(t.samples), np.array(t.samples)
    assert s.median == pytest.approx(np.median(a))
    assert s.p25 == pytest.approx(np.percentile(a, 25)) and s.p75 == pytest.approx(np.percentile(a, 75))
    assert s.mean == pytest.approx(a.mean()) and s.stdev == pytest.approx(a.std(ddof=1))
    assert s.min == a.min() and s.n == a.size


@pytest.mark.parametrize("n,rank", [(6, 1), (10, 2), (20, 6), (50, 18), (100, 40)])
def test_median_ci_ranks_match_the_binomial_table(n, rank):
    assert lower_rank(n) == rank


def test_median_ci_has_no_interval_below_six_samples_and_normal_tail_agrees():
    assert median_ci([1.0] * 5) is None
    assert abs(lower_rank(300) - lower_rank(301)) <= 1


def test_median_ci_coverage_is_at_least_95_percent():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(2000):
        ci = median_ci(list(rng.exponential(1.0, 25)))
        hits += ci.low <= math.log(2) <= ci.high
    assert hits / 2000 >= 0.94  # exact coverage for n=25 is 95.7 %


def test_steady_state_spans_min_time_even_when_the_ci_is_reached_early():
    fake = VirtualClockAdapter(sync_ns=1_000, op_ns=50_000)
    start = time.perf_counter()
    t = time_op(fake, fake.op, TimingPolicy(min_samples=10, min_time_s=0.2, max_samples=10**7))
    assert time.perf_counter() - start >= 0.2 and len(t.samples) > 10


def test_fixed_repeats_stop_at_the_deadline_with_a_warning():
    t = time_region(
        CpuAdapter(), lambda: time.sleep(0.02), TimingPolicy(), repeats=50, deadline=time.perf_counter() + 0.1
    )
    assert len(t.samples) < 50
    assert any("case time limit" in w for w in t.warnings)


def test_the_case_deadline_stops_time_op_repetition_at_once():
    start = time.perf_counter()
    t = time_op(CpuAdapter(), lambda: spin(0.02), TimingPolicy(budget_s=10, min_samples=30), deadline=start + 0.15)
    assert time.perf_counter() - start < 1.0 and 1 <= len(t.samples) < 30
