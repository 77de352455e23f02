"""Runs as the replicates (db.stats.hierarchical): answers computed here, independently of the module."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ttest_ind

from db.stats.hierarchical import run_t_test
from db.stats.significance import NOT_SIGNIFICANT, SIGNIFICANT, SampleLists, significance


def _flat(cases: list[list[list[float]]]) -> SampleLists:
    """Each case's runs pooled into one list (what the tool did before runs were replicates)."""
    rows = [np.concatenate(runs) for runs in cases]
    return SampleLists(np.concatenate(rows), np.concatenate([[0], np.cumsum([len(r) for r in rows])]))


def _runs(cases: list[list[list[float]]]) -> SampleLists:
    runs = [np.asarray(r, float) for case in cases for r in case]
    run_offsets = np.concatenate([[0], np.cumsum([len(r) for r in runs])]).astype(np.int64)
    per_case = np.concatenate([[0], np.cumsum([len(c) for c in cases])]).astype(np.int64)
    return SampleLists(np.concatenate(runs), run_offsets[per_case], per_case, run_offsets)


def _side(levels, n, rng, spread=0.0005):
    return [list(level * (1 + rng.uniform(-spread, spread, n))) for level in levels]


def test_run_to_run_noise_is_not_significant_though_pooled_samples_would_be():
    rng = np.random.default_rng(11)
    # two runs a side; every run sits at its own level (run-to-run noise ±1 %), within-run spread ±0.05 %
    base, cand = [_side((100.0, 101.0), 10, rng)], [_side((101.5, 102.5), 10, rng)]
    pooled = significance(_flat(base), _flat(cand), np.array([True]))
    assert pooled.verdict[0] == SIGNIFICANT and not pooled.by_runs[0]  # 20 vs 20 "independent" calls: p ~ 1e-8
    runs = significance(_runs(base), _runs(cand), np.array([True]))
    assert runs.verdict[0] == NOT_SIGNIFICANT and runs.by_runs[0]
    logs = [np.log([np.median(r) for r in side[0]]) for side in (cand, base)]
    assert runs.p_value[0] == pytest.approx(ttest_ind(*logs, equal_var=False).pvalue, rel=1e-9)


def test_a_real_change_over_several_runs_is_significant_with_the_true_ratio_in_its_ci():
    rng = np.random.default_rng(5)
    levels = 100 * (1 + rng.uniform(-0.01, 0.01, 8))
    base, cand = [_side(levels[:4], 10, rng)], [_side(0.8 * levels[4:], 10, rng)]
    sig = significance(_runs(base), _runs(cand), np.array([True]))
    true = 0.8 * levels[4:].mean() / levels[:4].mean()
    assert sig.verdict[0] == SIGNIFICANT and sig.ci_low[0] <= true <= sig.ci_high[0] < 1
    again = significance(_runs(base), _runs(cand), np.array([True]))
    assert (again.ci_low[0], again.ci_high[0], again.p_value[0]) == (sig.ci_low[0], sig.ci_high[0], sig.p_value[0])


def test_runs_of_mixed_lengths_and_one_run_against_several():
    rng = np.random.default_rng(9)
    base = [[list(100 * (1 + rng.uniform(-0.001, 0.001, 5))), list(100.5 * (1 + rng.uniform(-0.001, 0.001, 7)))],
            [list(50 * (1 + rng.uniform(-0.001, 0.001, 9)))]]
    cand = [[list(70 * (1 + rng.uniform(-0.001, 0.001, 6))), list(70.3 * (1 + rng.uniform(-0.001, 0.001, 8)))],
            _side((50.0, 50.2, 49.9), 6, rng)]
    sig = significance(_runs(base), _runs(cand), np.array([True, True]))
    assert list(sig.by_runs) == [True, True]
    assert sig.verdict[0] == SIGNIFICANT and sig.ci_low[0] <= 70.15 / 100.25 <= sig.ci_high[0]
    # one baseline run: its variance is unknown, the candidate's runs give the pooled t-test its spread (df = 2)
    b = np.log(np.median(base[1][0]))
    c = np.log([np.median(r) for r in cand[1]])
    t = (c.mean() - b) / (c.std(ddof=1) * np.sqrt(1 + 1 / 3))
    from scipy.stats import t as student

    assert sig.p_value[1] == pytest.approx(2 * student.sf(abs(t), 2), rel=1e-9)
    assert sig.verdict[1] == NOT_SIGNIFICANT


def test_t_test_on_differences_for_difference_metrics():
    b, c = np.array([60.0, 61.0, 59.0]), np.array([50.0, 52.0, 51.0])
    p = run_t_test(b, np.array([3]), c, np.array([3]), np.array([False]))
    assert p[0] == pytest.approx(ttest_ind(c, b, equal_var=False).pvalue, rel=1e-9)


def test_outlying_runs_leave_the_shown_ratio_inside_its_ci():
    # three short contended candidate runs took 10× as long beside one long normal run: the pooled medians (what
    # a case shows) say 1.0×, the mean of run medians (the bootstrap's statistic) says 3.25×, and without a
    # shift every bootstrap draw but ~0.4 % holds an outlying run: the CI would sit above the 1.0× shown with it
    rng = np.random.default_rng(3)
    base = [_side((100.0,) * 4, 10, rng)]
    cand = [_side((100.0,), 40, rng) + _side((1000.0,) * 3, 5, rng)]
    sig = significance(_runs(base), _runs(cand), np.array([True]))
    shown = np.median(np.concatenate(cand[0])) / np.median(np.concatenate(base[0]))
    assert shown == pytest.approx(1.0, abs=0.002)
    assert sig.ci_low[0] <= shown <= sig.ci_high[0] and sig.ci_high[0] / sig.ci_low[0] > 2
    assert sig.verdict[0] == NOT_SIGNIFICANT
