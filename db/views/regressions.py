"""Regressions of a baseline → candidate review: every case worse by its metric's rule (db.views.rules), worst
first, across machines (or chips), dtypes and workloads, joined with its latest triage note.

A replicated ratio metric regresses when its change is significant and beyond the case's bound; single-figure
metrics by a rule on the figure (memory growth, PSNR drop, error growth); any metric on passed → failed. A case's
correctness figures (PSNR, max abs/rel error) are one row ("correctness") carrying all of them; a timing's row
carries its derived figures (bandwidth, tokens/s: db.views.derived), never a row of their own. The review's
parameters (`Review`) are read one way for the page, GET /api/v1/regressions and `mpsbench compare`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.case_names import case_names
from bundle.metrics import CORRECTNESS, MetricError, Rule, parse_rules
from db.errors import Problem, StoreError
from db.views.compare import CompareQuery, compare
from db.views.derived import derived_text
from db.views.params import threshold_percent
from db.views.rules import PASSED_FAILED, REGRESSION, SUSPECTED, UNCONFIRMED_STATE, is_correctness, judge
from db.views.wording import format_value
from db.store.triage import NOTE_KEY, latest_notes

DEFAULT_THRESHOLD = 0.05
CASE = ["scope", "device", "workload", "case_key", "dtype", "compile"]
# the case's name (bundle.case_names) and the figures first, the raw canonical case_key pinned last
COLUMNS = ["case", "scope", "metric", "change", "baseline_value", "candidate_value", "why", "verdict", "state",
           "comment", "author", "link", "baseline_median", "candidate_median", "unit", "oriented_ratio", "difference",
           "ci_low", "ci_high", "p_value", "significance", "worse_by", "bound", "noise", "rule", "figures",
           "replicates", "se", "se_unit", "df", "baseline", "candidate", "device", "workload", "dtype", "compile",
           "case_key"]


@dataclass(frozen=True)
class Review:
    """A regression review: the comparison, the threshold (percent worse) and the rule overrides as written."""
    compare: CompareQuery
    threshold: float = DEFAULT_THRESHOLD * 100.0  # percent
    rules_text: str = ""

    @classmethod
    def from_params(cls, params: Mapping[str, str | None]) -> "Review":
        """From query parameters (threshold in percent, rules=metric.field=value,…); bad input is a 400 naming
        the parameter."""
        threshold = threshold_percent(params.get("threshold"), DEFAULT_THRESHOLD * 100.0)
        text = (params.get("rules") or "").strip()
        check_rules(text)
        return cls(CompareQuery.from_params(params), threshold, text)

    @property
    def rules(self) -> dict[str, Rule]:
        return parse_rules(self.rules_text)

    def params(self) -> dict[str, str]:
        """The review as URL parameters (what `--url` sends and a page link carries)."""
        q = self.compare
        out = {"baseline": q.baseline, "candidate": q.candidate, "scope": q.scope, "threshold": f"{self.threshold:g}",
               **{k: ",".join(v) for k, v in q.filters}}
        if q.pool:
            out["pool"] = "1"
        if self.rules_text:
            out["rules"] = self.rules_text
        return out


def check_rules(text: str) -> None:
    try:
        parse_rules(text)
    except MetricError as exc:
        raise StoreError(400, "rules: not a valid override", [Problem("rules", str(exc))]) from None


def judged_cases(engine: Engine, review: Review) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The comparison's cases and each one's verdict under the review's rules (same index)."""
    cases = compare(engine, review.compare).cases
    return cases, judge(cases, review.threshold / 100.0, review.rules)


def regressions(engine: Engine, query: CompareQuery | Review, threshold: float | None = None,
                judged: tuple[pd.DataFrame, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The review's regressions, worst first. `threshold` (a fraction) is kept for callers with a bare query;
    `judged` is judged_cases' answer when the caller has it already (the release summary)."""
    return _listed(engine, _review(query, threshold), judged, (REGRESSION,))


def doubtful(engine: Engine, query: CompareQuery | Review,
             judged: tuple[pd.DataFrame, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The cases worse beyond their bound that are not regressions, worst first, counted apart: `unconfirmed`
    (nothing to test on: no replicates, no A/A data) and `suspected` (their own test passed, the review's
    family-wise step did not). `mpsbench confirm` reruns them."""
    return _listed(engine, _review(query, None), judged, (UNCONFIRMED_STATE, SUSPECTED))


def _review(query: CompareQuery | Review, threshold: float | None) -> Review:
    return query if isinstance(query, Review) else Review(query, 100.0 * (DEFAULT_THRESHOLD if threshold is None
                                                                          else threshold))


def _listed(engine: Engine, review: Review, judged: tuple[pd.DataFrame, pd.DataFrame] | None,
            verdicts: tuple[str, ...]) -> pd.DataFrame:
    cases, verdict = judged or judged_cases(engine, review)
    if cases.empty:
        return pd.DataFrame(columns=COLUMNS)
    found = pd.concat([cases, verdict], axis=1)
    found["figures"] = derived_text(cases)  # "decode_throughput 32 → 24.62 tokens/s" in decode_time's row
    correctness = is_correctness(cases.metric)
    chosen = verdict.verdict.isin(verdicts).to_numpy()
    rows = found[chosen & ~correctness]
    if REGRESSION in verdicts:
        rows = pd.concat([rows, _correctness_rows(found, correctness)])
    rows["baseline"], rows["candidate"] = review.compare.baseline, review.compare.candidate
    notes = latest_notes(engine, review.compare.baseline, review.compare.candidate)
    merged = rows.merge(notes, how="left", on=NOTE_KEY)
    merged["state"] = merged["state"].fillna("new")
    for col in ("comment", "author", "link"):
        merged[col] = merged[col].fillna("")
    merged = merged.sort_values(["worse_by"] + NOTE_KEY, ascending=[False] + [True] * len(NOTE_KEY), kind="stable")
    merged["case"] = case_names(merged) if len(merged) else []
    # each median with its unit, readable (8.000 GiB, not 8589934592); the raw medians stay, further right
    for side in ("baseline", "candidate"):
        merged[f"{side}_value"] = [format_value(v, u) for v, u in zip(merged[f"{side}_median"], merged["unit"])]
    return merged.reindex(columns=COLUMNS).reset_index(drop=True)


def _correctness_rows(found: pd.DataFrame, correctness: np.ndarray) -> pd.DataFrame:
    """One row per case with a correctness regression, carrying every correctness figure of the case; its
    medians are those of its worst figure, `metric` is "correctness"."""
    figures = found[correctness]
    hit = figures[figures.regressed]
    if hit.empty:
        return hit
    keys = hit[CASE].drop_duplicates()
    mine = figures.merge(keys, on=CASE)
    mine = mine.assign(_order=mine.metric.map({m: i for i, m in enumerate(CORRECTNESS)}))
    rows = []
    for _, group in mine.sort_values(CASE + ["_order"]).groupby(CASE, sort=False):
        bad = group[group.regressed]
        worst = bad.loc[bad.worse_by.idxmax()].copy()
        worst["figures"] = "; ".join(_figure(r) for r in group.itertuples())
        worst["why"] = "correctness: " + "; ".join(f"{r.metric} {r.why}" for r in bad.itertuples())
        worst["metric"] = "correctness"
        rows.append(worst)
    return pd.DataFrame(rows).drop(columns="_order")


def _value(value: float, unit: str) -> str:
    return f"{value:.3g}" if unit == "1" else format_value(value, unit)  # a plain number has no unit to print


def _figure(r) -> str:
    state = {True: "passed", False: "failed"}
    verdicts = f" ({state.get(r.baseline_passed, 'no tolerance')} → {state.get(r.candidate_passed, 'no tolerance')})"
    return (f"{r.metric} {_value(r.baseline_median, r.unit)} → {_value(r.candidate_median, r.unit)}"
            f"{verdicts if r.why == PASSED_FAILED else ''}")


def review_notes(engine: Engine, query: CompareQuery | Review) -> list[str]:
    """The comparison's notes (baseline named, pooling, differing library versions) that go with its review."""
    return list(compare(engine, query.compare if isinstance(query, Review) else query).notes)
