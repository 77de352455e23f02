"""Run → process → call (db.stats.replicates): each test's answer computed here independently (scipy's t-tests,
hand formulas), and the review's error control checked on simulated A/A reviews with a known spread."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from db.stats.lists import list_quantiles
from db.stats.replicates import change_test, detectable, holm, process_offsets, side_replicates


def _side(runs: list[list[list[float]]], log: bool = True):
    """One case's side from its runs, each a list of processes' samples."""
    values = np.array([x for run in runs for proc in run for x in proc], float)
    run_offsets = np.concatenate([[0], np.cumsum([sum(len(p) for p in run) for run in runs])]).astype(np.int64)
    counts = np.array([len(run) if len(run) > 1 else 0 for run in runs], dtype=np.int64)  # one process: no sizes
    sizes = np.array([len(p) for run in runs if len(run) > 1 for p in run], dtype=np.int64)
    return side_replicates(values, np.array([0, len(runs)]), run_offsets, counts, sizes, np.array([log]))


def _processes(rng, n_processes: int, centre: float, spread: float, calls: int = 5) -> list[list[float]]:
    """A run of n processes: each process's level drawn around `centre`, its calls ±0.1 % around that level."""
    levels = centre * np.exp(rng.normal(0, spread, n_processes))
    return [list(level * (1 + rng.uniform(-0.001, 0.001, calls))) for level in levels]


def test_processes_of_one_run_a_side_are_yuens_trimmed_t_test_on_process_medians():
    """One run a side: the test is Yuen's (one process trimmed from each end, winsorized variances pooled),
    scipy's own (its trim is a fraction: 1/8 cuts one of 8 and one of 10)."""
    rng = np.random.default_rng(1)
    base, cand = _processes(rng, 8, 100.0, 0.05), _processes(rng, 10, 110.0, 0.05)
    yb = np.log([np.median(p) for p in base])
    yc = np.log([np.median(p) for p in cand])
    d = stats.trim_mean(yc, 0.125) - stats.trim_mean(yb, 0.125)
    test = change_test(_side([base]), _side([cand]), np.zeros(1), np.zeros(1))
    assert test.d[0] == pytest.approx(d)
    expected = stats.ttest_ind(yc, yb, equal_var=True, trim=0.125)
    # 8 processes keep 6, 10 keep 8 (one trimmed from each end): 5 + 7 degrees of freedom
    assert test.testable[0] and test.df[0] == pytest.approx(12) == expected.df
    assert test.p_value[0] == pytest.approx(expected.pvalue, rel=1e-9)
    half = stats.t.ppf(0.975, 12) * abs(d / expected.statistic)
    assert (test.ci_low[0], test.ci_high[0]) == pytest.approx((d - half, d + half))


def test_fewer_than_five_processes_are_not_trimmed_a_students_t_test():
    rng = np.random.default_rng(5)
    base, cand = _processes(rng, 4, 100.0, 0.05), _processes(rng, 3, 110.0, 0.05)
    yb, yc = (np.log([np.median(p) for p in side]) for side in (base, cand))
    test = change_test(_side([base]), _side([cand]), np.zeros(1), np.zeros(1))
    assert test.d[0] == pytest.approx(yc.mean() - yb.mean()) and test.df[0] == pytest.approx(5)
    assert test.p_value[0] == pytest.approx(stats.ttest_ind(yc, yb, equal_var=True).pvalue, rel=1e-9)


def test_one_wild_process_of_ten_moves_neither_the_figure_nor_the_verdict():
    """Run B of the issue: nine processes at 50–70 µs and one at 12,658 µs, against ten quiet ones. The mean of the
    process figures would move by ln(12658 / 57) / 10 (1.7×); the trimmed mean does not see it."""
    rng = np.random.default_rng(7)
    quiet = _processes(rng, 10, 57.0, 0.08)
    wild = _processes(rng, 9, 57.0, 0.08) + [[12658.0] * 5]
    test = change_test(_side([quiet]), _side([wild]), np.zeros(1), np.zeros(1))
    y = np.log([np.median(p) for p in wild])
    assert abs(test.d[0]) < 0.1 < np.log(12658 / 57) / 10  # 1.7× by the mean, within ±10 % trimmed
    assert test.p_value[0] > 0.05
    assert test.d[0] == pytest.approx(
        stats.trim_mean(y, 0.1) - stats.trim_mean(np.log([np.median(p) for p in quiet]), 0.1)
    )


def test_runs_without_processes_are_a_t_test_on_run_medians():
    rng = np.random.default_rng(2)
    base = [[list(rng.normal(100, 1, 9))] for _ in range(3)]  # three schema-1 runs: one process each
    cand = [[list(rng.normal(104, 1, 9))] for _ in range(2)]
    yb = np.log([np.median(r[0]) for r in base])
    yc = np.log([np.median(r[0]) for r in cand])
    d = yc.mean() - yb.mean()
    test = change_test(_side(base), _side(cand), np.zeros(1), np.zeros(1))
    assert test.d[0] == pytest.approx(d) and test.df[0] == pytest.approx(3)
    assert not test.processes[0] and test.run_level[0]
    assert test.p_value[0] == pytest.approx(stats.ttest_ind(yc, yb, equal_var=True).pvalue, rel=1e-9)


def test_a_aa_pairs_alone_give_the_run_variance():
    base, cand = _side([[[100.0, 101.0, 99.0]]]), _side([[[120.0, 121.0, 119.0]]])
    pairs = np.array([[0.03], [-0.05], [0.02], [0.04]])  # four A/A log ratios of this case
    d = np.log(120 / 100)
    test = change_test(base, cand, np.array([4.0]), np.array([float((pairs**2).sum())]))
    assert test.d[0] == pytest.approx(d)
    run_variance = float((pairs**2).sum()) / 2 / 4  # E[x²] = 2·(run variance)
    se = np.sqrt(run_variance * 2)  # one run a side
    assert test.se[0] == pytest.approx(se) and test.df[0] == pytest.approx(4)
    assert test.p_value[0] == pytest.approx(2 * stats.t.sf(d / se, 4))


def test_nothing_to_test_on_is_untestable_never_significant():
    test = change_test(_side([[[100.0, 101.0]]]), _side([[[200.0, 201.0]]]), np.zeros(1), np.zeros(1))
    assert not test.testable[0] and np.isnan(test.p_value[0])


def test_a_variance_of_exactly_zero_is_no_evidence_never_p_zero():
    """Issue 44: a one-figure metric (first_call_time: one sample a run) whose A/A pairs agree exactly, and two runs
    a side that agree exactly, gave p = 0 and a zero-width CI (1.63–1.63×): certainty from nothing."""
    base, cand = _side([[[1.0]], [[1.0]]]), _side([[[1.63]], [[1.63]]])
    test = change_test(base, cand, np.array([3.0]), np.array([0.0]))  # 3 A/A pairs, Σ log ratio² = 0
    assert test.d[0] == pytest.approx(np.log(1.63))
    assert test.zero_spread[0] and not test.testable[0]
    assert np.isnan(test.p_value[0]) and np.isnan(test.ci_low[0]) and np.isnan(test.ci_high[0])
    # one non-zero A/A pair is a spread: testable, with a CI of non-zero width
    spread = change_test(base, cand, np.array([3.0]), np.array([0.01]))
    assert spread.testable[0] and not spread.zero_spread[0] and spread.ci_low[0] < spread.ci_high[0]


def test_run_level_spread_beyond_the_processes_widens_the_test():
    """Two runs a side whose processes agree within a run but whose runs differ: the between-run part counts."""
    rng = np.random.default_rng(3)
    base = [_processes(rng, 5, level, 0.002) for level in (100.0, 108.0)]
    cand = [_processes(rng, 5, level, 0.002) for level in (103.0, 111.0)]
    both = change_test(_side(base), _side(cand), np.zeros(1), np.zeros(1))
    one_run = change_test(_side(base[:1]), _side(cand[:1]), np.zeros(1), np.zeros(1))
    assert both.se[0] > 5 * one_run.se[0]  # the processes alone would call a 3 % run wobble certain
    assert both.p_value[0] > 0.05


def test_process_sizes_split_runs_and_a_bad_split_falls_back_to_one_process():
    runs, procs = process_offsets(np.array([0, 6, 10, 13]), np.array([3, 0, 2]), np.array([2, 2, 2, 1, 1]))
    # run 0: three processes of 2; run 1: no sizes (one process of 4); run 2: sizes 1+1 ≠ 3 samples: one process
    assert runs.tolist() == [0, 3, 4, 5] and procs.tolist() == [0, 2, 4, 6, 10, 13]
    medians = list_quantiles(np.array([3.0, 1.0, 2.0, 5.0, 4.0, 9.0]), np.array([0, 3, 5, 6, 6]), (0.5,))[0]
    assert medians.tolist()[:3] == [2.0, 4.5, 9.0]


def test_holm_step_down_known_answer():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.005])
    # sorted 0.005 ≤ 0.05/4, 0.01 ≤ 0.05/3, 0.03 > 0.05/2: stop
    assert holm(p, 0.05).tolist() == [True, False, False, False, True]
    assert holm(np.array([0.001, 0.2]), 0.05).tolist() == [True, False]


RUN_SHIFT, PROCESS_SPREAD, PROCESSES, AA_PAIRS = 0.03, 0.10, 10, 12


def _run(rng, level: float) -> list[list[float]]:
    """A run: its level moves RUN_SHIFT (log sd) from run to run; its processes spread PROCESS_SPREAD around it."""
    return _processes(rng, PROCESSES, level * np.exp(rng.normal(0, RUN_SHIFT)), PROCESS_SPREAD)


def _aa_sum_sq(rng) -> float:
    """Σ x² over AA_PAIRS A/A pairs of this model (x: the log ratio of two runs' mean process figures: their run
    shifts and process spreads, drawn directly; the ±0.1 % call noise is negligible)."""
    runs = rng.normal(0, RUN_SHIFT, (AA_PAIRS, 2)) + rng.normal(0, PROCESS_SPREAD, (AA_PAIRS, 2, PROCESSES)).mean(2)
    return float(np.sum((runs[:, 0] - runs[:, 1]) ** 2))


def _review(rng, cases: int, slowdown: float, slowed: int = 1):
    """One simulated review, one run a side, with the store's A/A pairs of each case; the first `slowed` cases of
    the candidate are `slowdown`× slower."""
    ds, ses, dfs, ps = [], [], [], []
    for i in range(cases):
        factor = slowdown if i < slowed else 1.0
        base, cand = [_run(rng, 100.0)], [_run(rng, 100.0 * factor)]
        test = change_test(_side(base), _side(cand), np.array([AA_PAIRS]), np.array([_aa_sum_sq(rng)]))
        ds.append(test.d[0]), ses.append(test.se[0]), dfs.append(test.df[0]), ps.append(test.p_value[0])
    return np.array(ds), np.array(ses), np.array(dfs), np.array(ps)


def test_simulated_aa_reviews_keep_the_family_wise_rate_and_a_2x_slowdown_is_always_found():
    """The run-to-run shift (3 %) is beyond what the processes show: the A/A pairs carry it into the test."""
    rng = np.random.default_rng(20261204)
    false_alarms = 0
    reviews = 150
    for _ in range(reviews):
        d, _, _, p = _review(rng, 30, 1.0)
        false_alarms += bool((holm(p, 0.05) & (d > np.log(1.05))).any())
    assert false_alarms / reviews <= 0.07  # nominal ≤ 5 % (binomial sd over 150 reviews: 1.8 %)
    found = 0
    for _ in range(30):
        d, se, df, p = _review(rng, 30, 2.0)
        found += bool(holm(p, 0.05)[0] and d[0] > np.log(1.05))
    assert found == 30
    # the detectable size the cards state is what the tests then find: 80 % power at Holm's first level by the
    # normal-approximation bound (db.stats.replicates.detectable); found 65–75 % of the time on 300 simulated
    # reviews per seed (three seeds, with or without the trimming): the bound is a little optimistic, not wrong
    small = float(np.median(detectable(se, df, 0.05 / 30)))
    hits = sum(bool(holm(_review(rng, 30, float(np.exp(small)))[3], 0.05)[0]) for _ in range(100))
    assert hits >= 55  # ~70 % expected (binomial sd 4.6 %)


def test_each_group_says_what_it_can_detect():
    import pandas as pd

    from db.review.detectable import detection

    cases = pd.DataFrame(
        {
            "scope": ["m1", "m1", "m1", "m2"],
            "se": [0.02, 0.03, np.nan, 3.0],
            "df": [18.0] * 4,
            "baseline_pooled": [1, 1, 1, 2],
            "candidate_pooled": [1, 1, 1, 2],
        }
    )
    words = {key: found["words"] for key, found in detection(cases, ["scope"], 0.05).items()}
    m = 3  # cases with a standard error: Holm's first level is 5 % / 3
    step = stats.t.ppf(1 - 0.05 / m / 2, 18) + stats.t.ppf(0.8, 18)
    smallest = np.median(np.expm1(step * np.array([0.02, 0.03])))
    # two more runs a side: each standard error × √(1/3), its degrees of freedom × 3, never below the 5 % bound
    step3 = stats.t.ppf(1 - 0.05 / m / 2, 54) + stats.t.ppf(0.8, 54)
    more = np.median(np.maximum(np.expm1(step3 * np.array([0.02, 0.03]) / np.sqrt(3)), 0.05))

    def size(fraction: float) -> str:  # one decimal below 10 %: 5.3 % must not read as a 5 % bound
        return (
            f"a {100 * fraction:.1f} % slowdown".replace(".0 %", " %")
            if fraction < 0.1
            else f"a {100 * fraction:.0f} % slowdown"
        )

    def median_with(k: int) -> float:  # k more runs a side (1 now): the bound is the least it can say
        scale = 1 + k
        step_k = stats.t.ppf(1 - 0.05 / m / 2, 18 * scale) + stats.t.ppf(0.8, 18 * scale)
        return float(np.median(np.maximum(np.expm1(step_k * np.array([0.02, 0.03]) / np.sqrt(scale)), 0.05)))

    needed = next(k for k in range(1, 51) if median_with(k) <= 0.05 * (1 + 1e-9))
    assert median_with(2) == pytest.approx(more)
    then = (
        f"{needed} more runs of each build would see a 5 % slowdown"
        if needed != 2
        else f"2 more runs of each build would see {size(more)}"
    )
    assert words[("m1",)] == (
        f"can see {size(smallest)} (typical case) with 1 run of each build; {then}; "
        "1 figure not testable (one figure a run, or all alike)"
    )
    assert words[("m2",)].startswith("can see only a 100× slowdown") and "2 runs of each build" in words[("m2",)]
