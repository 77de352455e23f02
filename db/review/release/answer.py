"""A judged review counted by case: what a release manager acts on.

A case is (scope, device, workload, case_key, dtype, compile); its metric rows (op time, first call, memory peaks,
correctness figures) nest under it, so "3 regressions" means three cases, never one slowdown seen in its op time
and its first-call time. Each case has one outcome, the first that holds:

- REGRESSED: a metric row regressed (db.review.rules) and its triage state does not take it away;
- TRIAGED: every regressed row is triaged away (db.store.writers.triage.TRIAGED_AWAY: noise, expected, accepted) — counted
  apart, with who and why, never as a regression;
- DOUBTFUL: a row is worse beyond its bound but unconfirmed or suspected (what `mpsbench confirm` decides);
- SLOWER / FASTER: a row's direction (db.review.rules.directions) is worse / better (worse wins a tie);
- UNCHANGED: every row is unchanged (its CI within the bound, or within its own rule); a figure whose replicates
  agree exactly (one figure a run that never varies: a first call) does not keep a case from it;
- UNDECIDED: the rest (a CI reaching past the bound, contended, or nothing to test any figure on).

A derived figure carried by its timing's row (db.review.cases.derived_figures) and a count to watch (pad calls) decide nothing.
Every count of cases — the release summary's groups, the per-chip answer, the cards, the exports, the gate —
reads `case_outcomes`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bundle.metrics import RuleKind
from db.review.cases.columns import BETTER, UNCHANGED, WORSE
from db.review.cases.derived_figures import folded_rows, new_case
from db.review.rules import REGRESSION, SUSPECTED, UNCONFIRMED_STATE
from db.stats.significance import REPLICATE_WORDS, UNCONFIRMED, ZERO_SPREAD
from db.store.writers.triage import TRIAGED_AWAY

CASE = ["scope", "device", "workload", "case_key", "dtype", "compile"]
REGRESSED, TRIAGED, DOUBTFUL, SLOWER, FASTER, UNCHANGED_CASE, UNDECIDED = (
    "regressed",
    "triaged",
    "doubtful",
    "slower",
    "faster",
    "unchanged",
    "not decided",
)
OUTCOMES = (REGRESSED, TRIAGED, DOUBTFUL, SLOWER, FASTER, UNCHANGED_CASE, UNDECIDED)


def case_outcomes(cases: pd.DataFrame, verdicts: pd.DataFrame, listed: pd.DataFrame) -> pd.DataFrame:
    """One row per compared case (in the cases' key order): CASE, `outcome` (OUTCOMES), `timing` (it has a
    replicated timing row), `best` (the row of its largest gain, an index label of `cases`; -1 where none) and
    `gain` (that gain on one scale: the fraction better, db.review.rules' worse_by read the other way).
    `cases` / `verdicts`: a judged review's (in key order); `listed`: its regressions with their triage `state`
    (db.review.release.listing.regressions' rows, CASE columns)."""
    if cases.empty:
        return pd.DataFrame(columns=CASE + ["outcome", "timing", "best", "gain"])
    counted = ~folded_rows(cases, key_ordered=True) & (verdicts.rule != RuleKind.watch.value).to_numpy(dtype=bool)
    case = np.cumsum(new_case(cases)) - 1
    n = int(case[-1]) + 1
    first = np.flatnonzero(np.r_[True, case[1:] != case[:-1]])
    frame = cases[CASE].iloc[first].reset_index(drop=True)

    def any_of(rows: np.ndarray) -> np.ndarray:
        return np.bincount(case[rows & counted], minlength=n) > 0

    verdict, direction = verdicts.verdict.to_numpy(), verdicts.direction.to_numpy()
    regressed = any_of(verdict == REGRESSION)
    triaged = _triaged_away(frame, np.flatnonzero(regressed), listed)
    regressed &= ~triaged
    doubtful = any_of((verdict == UNCONFIRMED_STATE) | (verdict == SUSPECTED))
    slower, faster = any_of(direction == WORSE), any_of(direction == BETTER)
    # a figure whose replicates agree exactly (one figure a run that never varies: a first call) decides nothing
    # while the case's other figures do: worse beyond its bound it is doubtful (above); else it neither keeps the
    # case from "unchanged" nor makes it. A figure with no replicates at all leaves the case open
    blank = cases.replicates.astype(str).to_numpy() == REPLICATE_WORDS[ZERO_SPREAD] if "replicates" in cases else False
    decides = ~((cases.significance.to_numpy() == UNCONFIRMED) & blank)
    steady = ~any_of(decides & (direction != UNCHANGED)) & any_of(decides)
    frame["outcome"] = np.select(
        [regressed, triaged, doubtful, slower, faster, steady],
        [REGRESSED, TRIAGED, DOUBTFUL, SLOWER, FASTER, UNCHANGED_CASE],
        UNDECIDED,
    )
    timing = (verdicts.rule == RuleKind.significant.value).to_numpy(dtype=bool)
    frame["timing"] = any_of(timing)
    gain = np.where(counted & (direction == BETTER), _gains(cases, verdicts), -np.inf)
    order = np.lexsort((-gain, case))  # each case's rows, largest gain first
    top = order[np.r_[True, case[order][1:] != case[order][:-1]]]
    frame["gain"] = np.where(np.isfinite(gain[top]), gain[top], np.nan)
    frame["best"] = np.where(np.isfinite(gain[top]), cases.index.to_numpy()[top], -1)
    return frame


def _triaged_away(frame: pd.DataFrame, rows: np.ndarray, listed: pd.DataFrame) -> np.ndarray:
    """Per case of `frame`: is every regression of it triaged away? (`rows`: the cases with a regression; `listed`:
    the review's regressions with their state — a few rows, matched by their keys)."""
    out = np.zeros(len(frame), dtype=bool)
    if listed.empty or not len(rows):
        return out
    live: dict[tuple, bool] = {}
    for key, state in zip(listed[CASE].astype(str).itertuples(index=False, name=None), listed.state):
        live[key] = live.get(key, False) or state not in TRIAGED_AWAY
    keys = frame[CASE].iloc[rows].astype(str).itertuples(index=False, name=None)
    out[rows] = [live.get(key) is False for key in keys]
    return out


def _gains(cases: pd.DataFrame, verdicts: pd.DataFrame) -> np.ndarray:
    """Each row's gain as the fraction better (for ranking wins across metrics): oriented ratio − 1, a PSNR rise of
    d dB as the error's fall 10^(d/10) − 1, a single figure's shrink as baseline / candidate − 1."""
    oriented = cases.oriented_ratio.to_numpy(dtype=float, na_value=np.nan)
    b = cases.baseline_median.to_numpy(dtype=float, na_value=np.nan)
    c = cases.candidate_median.to_numpy(dtype=float, na_value=np.nan)
    kind = verdicts.rule.to_numpy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.select(
            [kind == RuleKind.drop.value, np.isfinite(oriented)],
            [10.0 ** ((c - b) / 10.0) - 1.0, oriented - 1.0],
            b / c - 1.0,
        )
