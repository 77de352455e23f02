"""The repetition planner of Kalibera & Jones, "Rigorous benchmarking in reasonable time" (ISMM 2013), for a
two-level experiment: runs (processes, level 2) each taking samples (calls, level 1).

- runs_needed: how many runs per side a comparison needs so that the 95 % CI of the candidate/baseline ratio of
  run medians has at most the given half-width. Each run's log median varies with spread sigma (what the A/A
  model measures, db.stats.noise); the difference of two sides' mean log medians, n runs each, then has standard
  error sigma * sqrt(2 / n), and its CI half-width is t(0.975, 2n - 2) * sigma * sqrt(2 / n) (the t-interval
  over run means the paper uses, pooled over the two sides). The smallest n >= 2 meeting the target is the plan.
- variance_components and optimal_samples: the paper's estimators T1² (within-run), T2² (between run means),
  S2² = T2² - T1²/n1, and its optimal level-1 count r1 = ceil(sqrt((c2/c1) * S1²/S2²)), c1 the cost of one
  sample and c2 the cost of one run's start-up (warm-up, process, imports): more samples per run only pay off
  while the within-run noise dominates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

MIN_RUNS, MAX_RUNS = 2, 1000


def half_width_log(sigma_log: float, runs: int, confidence: float = 0.95) -> float:
    """The CI half-width (natural log of the ratio) of a comparison with `runs` runs per side."""
    return float(student_t.ppf(0.5 + confidence / 2, 2 * runs - 2) * sigma_log * math.sqrt(2.0 / runs))


def runs_needed(sigma_log: float | None, half_width_percent: float, confidence: float = 0.95) -> int | None:
    """Runs per side for a CI of the ratio within ±half_width_percent; None where sigma is unknown (no A/A
    data) or more than MAX_RUNS would be needed."""
    if sigma_log is None or not math.isfinite(sigma_log) or half_width_percent <= 0:
        return None
    target = math.log1p(half_width_percent / 100.0)
    if sigma_log == 0:
        return MIN_RUNS
    # the t quantile only shrinks as n grows, so the normal answer is a lower bound to search up from
    n = max(MIN_RUNS, math.ceil(2 * (1.959963984540054 * sigma_log / target) ** 2))
    while n <= MAX_RUNS:
        if half_width_log(sigma_log, n, confidence) <= target:
            return n
        n += 1
    return None


def runs_needed_many(sigma_log, half_width_percent: float, confidence: float = 0.95) -> list[int | None]:
    return [
        runs_needed(None if s is None or not np.isfinite(s) else float(s), half_width_percent, confidence)
        for s in sigma_log
    ]


@dataclass(frozen=True)
class Components:
    t1_sq: float  # within-run variance (pooled over runs)
    t2_sq: float  # variance of the run means
    s2_sq: float  # the between-run component: t2_sq - t1_sq / samples per run (may be <= 0: none detectable)
    samples_per_run: int


def variance_components(samples: np.ndarray) -> Components:
    """samples: runs × samples-per-run (a balanced experiment, as the paper assumes)."""
    y = np.asarray(samples, float)
    runs, n1 = y.shape
    if runs < 2 or n1 < 2:
        raise ValueError("variance components need at least 2 runs of at least 2 samples each")
    means = y.mean(axis=1)
    t1 = float(((y - means[:, None]) ** 2).sum() / (runs * (n1 - 1)))
    t2 = float(((means - means.mean()) ** 2).sum() / (runs - 1))
    return Components(t1, t2, t2 - t1 / n1, n1)


def optimal_samples(components: Components, cost_sample: float, cost_run: float) -> int | None:
    """The paper's r1: samples per run that minimise the time for a given precision. None where no
    between-run variance is detectable (S2² <= 0): then runs add nothing over samples, and the answer is
    "as many samples as one run affords"."""
    if components.s2_sq <= 0 or cost_sample <= 0:
        return None
    return max(1, math.ceil(math.sqrt(cost_run / cost_sample * components.t1_sq / components.s2_sq)))
