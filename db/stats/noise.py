"""The A/A noise model: how far two runs of identical software (same build, same machine) differ.

An A/A pair is one case measured by two runs of the same build on the same machine; its figure is the log ratio
of the two runs' medians, ln(median_b / median_a) (ratio metrics only: a dB or count difference has no ratio).
Per group (chip, device, workload, metric, dtype, compile) the noise bound is the 95th percentile of
|log ratio| over the group's pairs (numpy's linear interpolation, the rule DuckDB's quantile_cont follows, so
db.query.noise can take it in SQL), reported as a percentage, exp(q) - 1. Fewer than MIN_PAIRS pairs is
"insufficient data": no bound, never a default dressed as a measurement.

Also the run-level spread sigma = sqrt(mean(log ratio²) / 2): if each run's log median is the true value plus
N(0, sigma²), the log ratio of two runs is N(0, 2 sigma²) (the mean of an A/A difference is 0 by construction,
so the mean square estimates its variance). db.stats.planner turns it into runs per side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

QUANTILE = 0.95
MIN_PAIRS = 2
MIN_CASE_PAIRS = 5  # a case with this many A/A pairs of its own uses them; else its group's (db.views.noise)
INSUFFICIENT, MEASURED = "insufficient data", "measured"


@dataclass(frozen=True)
class NoiseFigure:
    pairs: int
    status: str  # MEASURED | INSUFFICIENT
    quantile_log: float | None  # the QUANTILE-th percentile of |log ratio| (natural log); None when insufficient
    sigma_log: float | None  # the run-level spread of log medians (see the module's note)

    @property
    def bound_percent(self) -> float | None:
        return None if self.quantile_log is None else bound_percent(self.quantile_log)


def bound_percent(quantile_log):
    """|log ratio| as the percentage two runs may differ by: exp(q) - 1 (the worse of the two directions is
    the larger one, 1/exp(-q), so exp(q) - 1 is the bound either way)."""
    return 100.0 * np.expm1(quantile_log)


def log_ratios(median_a: np.ndarray, median_b: np.ndarray) -> np.ndarray:
    """ln(b / a) for the pairs where both medians are positive (others are no ratio and are left out)."""
    a, b = np.asarray(median_a, float), np.asarray(median_b, float)
    keep = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b)
    return np.log(b[keep] / a[keep])


def noise_figure(log_ratio: np.ndarray, quantile: float = QUANTILE) -> NoiseFigure:
    """One group's figure from its pairs' log ratios."""
    x = np.asarray(log_ratio, float)
    x = x[np.isfinite(x)]
    if len(x) < MIN_PAIRS:
        return NoiseFigure(len(x), INSUFFICIENT, None, None)
    return NoiseFigure(len(x), MEASURED, float(np.quantile(np.abs(x), quantile)), float(np.sqrt(np.mean(x * x) / 2)))


def status_of(pairs) -> np.ndarray:
    """MEASURED or INSUFFICIENT per group, by its pair count (the rule noise_figure applies, for SQL's counts)."""
    return np.where(np.asarray(pairs) >= MIN_PAIRS, MEASURED, INSUFFICIENT)
