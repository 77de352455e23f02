"""The Noise page and GET /api/v1/noise: the A/A noise model per (chip, device, workload, metric, dtype,
compile) — how far two runs of one build on one machine differ (95th percentile, in %), how many A/A pairs back
each figure, whether that noise exceeds the review threshold (then two runs of one build can differ by more than
a regression must be worse: a review of such cases needs more processes or runs to find one), and how many runs
per side a comparison needs for a CI of ±precision % (db.stats.planner). The same pairs are each case's run-to-run
variance in a review's test (db.review.noise; db.stats.replicates)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.metrics import DERIVED, RATIO_METRICS
from db.query.noise import FILTERS, KEY, aa_pair_count, noise_groups
from db.query.params import bad, decimal, one_of, only, threshold_percent
from db.review.review import DEFAULT_THRESHOLD
from db.stats import noise as model
from db.stats.planner import runs_needed_many
from db.stats.ratios import as_percent

PARAMS = (*FILTERS, "precision", "threshold")
PRECISION = (0.1, 50.0)  # the planner's target CI half-width, in %
DEFAULT_PRECISION = 2.0
EMPTY = (
    "No A/A data yet: the noise model needs two runs of the same build (same torch version and git hash) on "
    "the same machine. `mpsbench sweep --aa --build … --rounds 5` runs the baseline twice per round (A/A "
    "pairs); two `mpsbench run`s of one build on one machine count too. Until then a review tests each case on "
    "its worker processes alone, and a case with one process and one run a side is unconfirmed."
)
COLUMNS = [*KEY, "status", "pairs", "pairs_pending", "noise_bound_percent", "spread_percent", "noisy", "runs_per_side"]


@dataclass
class NoiseAnswer:
    quantile: float  # the percentile of |log ratio| a bound is (0.95)
    precision_percent: float  # the planner's target: ± this % on the candidate/baseline ratio, 95 % CI
    threshold_percent: float  # the review threshold the bounds are compared with
    pairs_total: int  # A/A pairs in the store
    message: str  # "" or why the table is empty and how to fill it
    units: dict  # each figure column's unit
    groups: pd.DataFrame  # COLUMNS, noisiest first: one per measurement (a derived figure's under its timing's)
    derived: int = 0  # groups of derived figures (bandwidth, tokens/s) left out: their timing's group counts them
    pairs_listed: int = 0  # the A/A pairs of the groups listed: each measurement's once (pairs_total: every figure's)


UNITS = {
    "noise_bound_percent": "% (95th percentile of how far two runs of one build differ)",
    "spread_percent": "% (run-to-run spread of a run's median, one sigma)",
    "noisy": "the noise bound exceeds the review threshold: one run a side cannot tell a change of that size",
    "runs_per_side": "runs (per side, for the precision asked; empty: more than 1000 or no A/A data)",
    "pairs": "A/A pairs the figures rest on (a case measured by two runs of one build on one machine)",
    "pairs_pending": "A/A pairs stored since (the figures are recomputed when these reach 5 % of pairs)",
}


def _precision(text: str) -> float:
    low, high = PRECISION
    rule = f"a CI half-width in percent from {low:g} to {high:g} (2 = ±2 %)"
    if not text:
        return DEFAULT_PRECISION
    return decimal("precision", text, rule, low, high)


def noise_view(engine: Engine, params) -> NoiseAnswer:
    p = only(params, PARAMS)
    if p["metric"]:
        one_of("metric", p["metric"], RATIO_METRICS)
    for name in FILTERS:
        if len(p[name]) > 200:
            raise bad(name, "at most 200 characters", p[name])
    precision = _precision(p["precision"])
    threshold = threshold_percent(p["threshold"], as_percent(DEFAULT_THRESHOLD))
    found = noise_groups(engine, {k: p[k] for k in FILTERS})
    total = aa_pair_count(engine)
    counted = measurements(found)
    groups = found[counted].rename(columns={"pending": "pairs_pending"})
    groups["status"] = model.status_of(groups.pairs)
    measured = groups.status == model.MEASURED
    q = groups.quantile_log.where(measured)  # fewer than 2 pairs: no figure ("insufficient data")
    sigma = groups.sigma_log.where(measured)
    groups["noise_bound_percent"] = model.bound_percent(q)
    groups["spread_percent"] = model.bound_percent(sigma)
    groups["noisy"] = (groups.noise_bound_percent > threshold).fillna(False).astype(bool)
    groups["runs_per_side"] = pd.array(runs_needed_many(sigma.to_numpy(), precision), dtype="Int64")
    message = "" if len(groups) else (EMPTY if total == 0 else "No A/A pairs match these filters.")
    return NoiseAnswer(
        model.QUANTILE,
        precision,
        threshold,
        total,
        message,
        UNITS,
        groups[COLUMNS].reset_index(drop=True),
        int((~counted).sum()),
        int(groups.pairs.sum()),
    )


def measurements(groups: pd.DataFrame) -> np.ndarray:
    """Which groups are a measurement of their own: all but a derived figure's (achieved bandwidth and its share of
    peak from op_time, tokens/s from decode_time: bundle.metrics.DERIVED) whose timing's group is listed too. A
    derived figure is its timing read another way — the same runs, the same spread (its log ratio is the timing's,
    negated) — so "3 of 116 groups are noisier" counted one noisy op time three times. A derived group without its
    timing's (a metric filter) stands for the measurement."""
    if groups.empty:
        return np.zeros(0, dtype=bool)
    place = ["chip", "device", "workload", "dtype", "compile"]
    listed = set(groups[[*place, "metric"]].astype(str).itertuples(index=False, name=None))
    timing = groups.metric.map(DERIVED)
    return np.array(
        [
            t is None or t != t or (*key, t) not in listed
            for key, t in zip(groups[place].astype(str).itertuples(index=False, name=None), timing)
        ],
        dtype=bool,
    )
