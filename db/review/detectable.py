"""What a review can detect, in plain words, per group of its summary: "can see a 12 % slowdown with 6 baseline runs,
3 candidate runs" — the words a card shows; the statistics behind them are said under "How this is decided".

A case's smallest detectable slowdown is what its test (db.stats.replicates) finds with 80 % power at the level
Holm's first step uses (REVIEW_ALPHA / the number of cases tested), and never less than the review's bound (a
smaller change is not a regression whatever the test says). A group states its median case's figure ("typical
case") and each side's runs (the median case's); cases with nothing to test on are counted instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from db.stats.replicates import detectable
from db.stats.significance import REVIEW_ALPHA

POWER = 0.8


def _size(fraction: float) -> str:
    """0.12 → "a 12 % slowdown"; 1.5 → "a 2.5× slowdown"; past 100× → "only a 100× slowdown (too few runs)"."""
    if fraction >= 99.0:
        return "only a 100× slowdown (too few runs)"
    if fraction < 0.1:  # near a bound of a few percent, a rounded 5 % would hide that 5.3 % misses a 5 % bound
        return f"a {100 * fraction:.1f} % slowdown".replace(".0 %", " %")
    return f"a {100 * fraction:.0f} % slowdown" if fraction < 1.0 else f"a {1 + fraction:.1f}× slowdown"


def runs_a_side(cases: pd.DataFrame) -> np.ndarray:
    """Per case, the runs its thinner side pooled: what the projection of more runs scales (each side gets them)."""
    return np.minimum(*side_runs(cases))


def side_runs(cases: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per case, the runs each side pooled (baseline, candidate): what the words say, side by side."""
    return cases.baseline_pooled.to_numpy(dtype=float), cases.candidate_pooled.to_numpy(dtype=float)


def side_words(baseline: int, candidate: int | None = None) -> str:
    """ "3 runs of each build", or each side's where they differ: "2 baseline runs, 1 candidate run" (an A/A baseline
    runs twice as often; "1 run a side" said the thinner side only)."""
    candidate = baseline if candidate is None else candidate
    if baseline == candidate:
        return f"{baseline} run{'s' * (baseline != 1)} of each build"
    return f"{baseline} baseline run{'s' * (baseline != 1)}, {candidate} candidate run{'s' * (candidate != 1)}"


MORE_RUNS = 2  # what a group's sentence projects: this many more runs of each build
TESTABLE = "a second run of each build, or --processes 2 or more, makes them testable"


MOST_MORE = 50  # the most runs a side a sentence proposes; past it, "more runs" is not the remedy


def detection(cases: pd.DataFrame, group: list[str], threshold: float) -> dict[tuple, dict]:
    """Per group key (its GROUP values as text): `words`, the sentence, with what more evidence would give —
    MORE_RUNS more runs a side (each case's standard error scaled by √(R / (R + k)) and its degrees of freedom by
    (R + k) / R: the same processes a run, the noise as measured) or, for cases with nothing to test on, what
    makes them testable; `detects`, the median case's smallest detectable slowdown (a fraction; NaN: nothing
    tested); `sees_bound`, whether that is the review's bound (a group that cannot see its bound is never called
    unchanged); `more_runs`, the runs a side to add for the median case to see the bound (None: it does, or
    more than MOST_MORE would be needed). `cases` are the review's timing cases."""
    if cases.empty or "se" not in cases:
        return {}
    se = cases.se.to_numpy(dtype=float, na_value=np.nan)
    df = cases.df.to_numpy(dtype=float, na_value=np.nan)
    runs = runs_a_side(cases)
    b_runs, c_runs = side_runs(cases)
    m = max(int(np.isfinite(se).sum()), 1)
    base = np.maximum(runs, 1)
    smallest = _smallest(se, df, m, threshold)
    frame = cases[group].astype(str).assign(_d=smallest, _b=b_runs, _c=c_runs, _se=se, _df=df, _base=base)
    out = {}
    for key, part in frame.groupby(group, sort=False):
        out[tuple(key)] = _group_detection(part, m, threshold)
    return out


def _group_detection(part: pd.DataFrame, m: int, threshold: float) -> dict:
    figures = part._d.to_numpy()
    known = np.isfinite(figures)
    side = side_words(int(np.median(part._b)), int(np.median(part._c)))
    untested = int((~known).sum())
    if not known.any():
        words = f"can see nothing: no case has two figures a side or reruns of the baseline ({side}); {TESTABLE}"
        return {"words": words, "detects": float("nan"), "sees_bound": False, "more_runs": None}
    se, df, base = (part[c].to_numpy()[known] for c in ("_se", "_df", "_base"))

    def median_with(k: int) -> float:
        scale = (base + k) / base
        return float(np.median(_smallest(se / np.sqrt(scale), df * scale, m, threshold)))

    now, then = float(np.median(figures[known])), median_with(MORE_RUNS)
    sees = bool(now <= threshold * (1 + 1e-9))
    # plain words on a card: "typical case" is the median case; what "can see" means (80 % power at Holm's first
    # level) is said under "How this is decided" (pages.parts.verdict.HOW)
    words = f"can see {_size(now)} (typical case) with {side}"
    more = None if sees else _fewest(lambda k: median_with(k) <= threshold * (1 + 1e-9))
    if more is not None and more != MORE_RUNS:
        words += f"; {more} more run{'s' * (more != 1)} of each build would see {_size(threshold)}"
    elif _size(then) != _size(now):  # more runs matter until the bound is what stops a smaller change
        words += f"; {MORE_RUNS} more runs of each build would see {_size(then)}"
    if untested:
        # (one figure a run that never varies, a first-call time, has no spread to test on either)
        words += f"; {untested} figure{'s' * (untested != 1)} not testable (one figure a run, or all alike)"
    return {"words": words, "detects": now, "sees_bound": sees, "more_runs": more}


def _fewest(enough) -> int | None:
    """The smallest k in 1..MOST_MORE with enough(k) (which holds from some k on), by bisection; None if none."""
    if not enough(MOST_MORE):
        return None
    low, high = 1, MOST_MORE
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid + 1, high)
    return low


def _smallest(se: np.ndarray, df: np.ndarray, m: int, threshold: float) -> np.ndarray:
    """Per case, the smallest slowdown (a fraction) its test finds with POWER at Holm's first level, never below
    the review's bound; NaN where nothing can test it."""
    with np.errstate(invalid="ignore"):
        found = np.expm1(detectable(se, df, REVIEW_ALPHA / m, POWER))
        return np.where(np.isfinite(found), np.maximum(found, threshold), np.nan)
