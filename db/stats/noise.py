"""The A/A noise model: how far two runs of identical software (same build, same machine) differ.

An A/A pair is one case measured by two runs of the same build on the same machine; its figure is the log ratio
of the two runs' medians, ln(median_b / median_a) (ratio metrics only: a dB or count difference has no ratio).
Per group (chip, device, workload, metric, dtype, compile) the noise bound is the 95th percentile of
|log ratio| over the group's pairs (numpy's linear interpolation, the rule DuckDB's quantile_cont follows, so
db.store.derived.aa_pairs takes it in SQL where the pairs are; tests/test_noise.py checks it against numpy's), reported
as a percentage, exp(q) - 1. Fewer than MIN_PAIRS pairs is "insufficient data": no bound, never a default
dressed as a measurement.

Also the run-level spread sigma = sqrt(mean(log ratio²) / 2): if each run's log median is the true value plus
N(0, sigma²), the log ratio of two runs is N(0, 2 sigma²) (the mean of an A/A difference is 0 by construction,
so the mean square estimates its variance). db.stats.planner turns it into runs per side.
"""

from __future__ import annotations

import numpy as np

from db.stats.ratios import as_percent

QUANTILE = 0.95
MIN_PAIRS = 2
MIN_CASE_PAIRS = 5  # a case with this many A/A pairs of its own uses them; else its group's (db.views.browse.noise)
INSUFFICIENT, MEASURED = "insufficient data", "measured"


# each A/A pair's log ratio x has E[x²] = 2σ² (σ: one run's spread): the relation's one statement, in SQL and numpy
SIGMA_SQL = "sqrt({sum_sq} / {pairs} / 2)"


def run_sigma(sum_sq, pairs):
    """σ from `pairs` A/A pairs whose log ratios square to `sum_sq` (SIGMA_SQL in numpy)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(np.asarray(sum_sq, float) / np.asarray(pairs, float) / 2.0)


def pairs_sum_sq(sigma, pairs):
    """The Σ x² that `pairs` pairs of spread σ stand for (run_sigma inverted): a group's figures given to a case."""
    return 2.0 * np.asarray(pairs, float) * np.asarray(sigma, float) ** 2


def run_sum_sq(sum_sq):
    """The pairs' Σ x² as a sum of squares of run figures (pairs × σ²): what a test's run-level variance adds."""
    return np.asarray(sum_sq, float) / 2.0


def bound_percent(quantile_log):
    """|log ratio| as the percentage two runs may differ by: exp(q) - 1 (the worse of the two directions is
    the larger one, 1/exp(-q), so exp(q) - 1 is the bound either way)."""
    return as_percent(np.expm1(quantile_log))


def status_of(pairs) -> np.ndarray:
    """MEASURED or INSUFFICIENT per group, by its pair count (the figures themselves: db.store.derived.aa_pairs, in SQL)."""
    return np.where(np.asarray(pairs) >= MIN_PAIRS, MEASURED, INSUFFICIENT)
