"""The lists of a judged review (db.review.review): its regressions — every case worse by its metric's rule
(db.review.rules), worst first, across machines (or chips), dtypes and workloads, joined with its latest triage
note — and its doubtful cases (unconfirmed, suspected), listed apart.

A replicated ratio metric regresses when its change is significant and beyond the case's bound; single-figure
metrics by a rule on the figure (memory growth, PSNR drop, error growth); any metric on passed → failed. A case's
correctness figures (PSNR, max abs/rel error) are one row ("correctness") carrying all of them; a timing's row
carries its derived figures (bandwidth, tokens/s: db.review.cases.derived_figures), never a row of their own. The review's
lists are made per call from the memoised judged review: triage notes change without the data version.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.case_names import case_names
from bundle.metrics import CORRECTNESS
from db.review.cases.derived_figures import derived_text
from db.review.cases.wording import format_value, with_side_values
from db.review.comparison import CompareQuery
from db.review.review import JudgedReview, Review, cached_review
from db.review.rules import PASSED_FAILED, REGRESSION, SUSPECTED, UNCONFIRMED_STATE, is_correctness
from db.review.what_ran.cases import rows_what_ran
from db.store.writers.triage import NOTE_KEY, note_states

CASE = ["scope", "device", "workload", "case_key", "dtype", "compile"]
# the case's name (bundle.case_names) and the figures first, the raw canonical case_key pinned last
COLUMNS = [
    "case",
    "scope",
    "metric",
    "change",
    "baseline_value",
    "candidate_value",
    "why",
    "what_ran",
    "verdict",
    "doubt",
    "contention",
    "state",
    "comment",
    "author",
    "link",
    "baseline_median",
    "candidate_median",
    "unit",
    "oriented_ratio",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "significance",
    "worse_by",
    "severity",
    "bound",
    "noise",
    "rule",
    "figures",
    "replicates",
    "se",
    "se_unit",
    "df",
    "caveats",
    "worst_figure",  # a correctness row's worst figure (psnr_vs_cpu…): the metric its Correctness link opens
    "baseline",
    "candidate",
    "device",
    "workload",
    "dtype",
    "compile",
    "case_key",
]


Question = CompareQuery | Review | JudgedReview  # what a listing accepts: judged here when not already


def regressions(engine: Engine, question: Question, threshold: float | None = None) -> pd.DataFrame:
    """The review's regressions, worst first. `threshold` (a fraction) is for a bare CompareQuery."""
    return _listed(engine, cached_review(engine, question, threshold), (REGRESSION,))


def doubtful(engine: Engine, question: Question) -> pd.DataFrame:
    """The cases worse beyond their bound that are not regressions, worst first, counted apart: `unconfirmed`
    (nothing to test on: no replicates, no A/A data; or contended, whichever way it moved: too few clean worker
    processes) and `suspected` (their own test passed, the review's family-wise step did not); `doubt` says
    which. `mpsbench confirm` reruns them."""
    return _listed(engine, cached_review(engine, question), (UNCONFIRMED_STATE, SUSPECTED))


def _listed(engine: Engine, judged: JudgedReview, verdicts: tuple[str, ...]) -> pd.DataFrame:
    cases, verdict, review = judged.cases, judged.verdicts, judged.review
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
    if "worst_figure" not in rows or rows.worst_figure.isna().all():
        rows["worst_figure"] = rows.metric
    rows["worst_figure"] = rows.worst_figure.fillna(rows.metric)
    rows = rows.reset_index(drop=True)
    notes = note_states(engine, review.compare.baseline, review.compare.candidate, rows)
    merged = pd.concat([rows, notes.drop(columns=["created_at"])], axis=1)
    merged["severity"] = severity(merged, found)
    merged = merged.sort_values(
        ["severity", "worse_by"] + NOTE_KEY, ascending=[True, False] + [True] * len(NOTE_KEY), kind="stable"
    )
    merged["case"] = case_names(merged) if len(merged) else []
    _what_ran(engine, review.compare, merged)
    # each median with its unit, readable (8.000 GiB, not 8589934592); the raw medians stay, further right
    return with_side_values(merged).reindex(columns=COLUMNS).reset_index(drop=True)


def _what_ran(engine: Engine, query: CompareQuery, rows: pd.DataFrame) -> None:
    """Each listed row's "what changed in what ran" (`what_ran`, one read for every row); a row whose path changed
    says so first in its reason (`why`): a slower kernel and another path call for different fixes."""
    found = rows_what_ran(engine, query, rows)
    rows["what_ran"] = [w.words() for w in found]
    if any(w.path_changed for w in found):
        rows["why"] = [_first(w.headline(), why) for w, why in zip(found, rows["why"])]


def _first(headline: str | None, why: str) -> str:
    """The reason with the path change first (a doubtful case has no reason of its own: the change alone)."""
    if not headline:
        return why
    return f"{headline}; {why}" if why else headline


# a small PSNR drop (the error at most ~4× the baseline's) leaving the case this far above its tolerance is listed
# after every other kind of regression: bf16 PSNR moves by a few dB between builds for no reason that matters
FAR_ABOVE_DB, SMALL_DROP_DB = 10.0, 6.0
DB_METRICS = ("psnr_vs_cpu", "psnr_vs_input")


def severity(rows: pd.DataFrame, found: pd.DataFrame) -> np.ndarray:
    """Per listed row, its rank tier (docs/regressions.md, "Order"): 0 a case that fails its tolerance now, 1 every
    other regression, 2 a correctness regression whose PSNR fell by less than SMALL_DROP_DB and stays ≥ FAR_ABOVE_DB
    above its tolerance (a few dB that still pass by a wide margin matter less than a 1.2× slowdown); `why` says so."""
    tier = np.where(np.isinf(rows.worse_by.to_numpy(dtype=float)), 0, 1)
    listed = rows[(rows.metric == "correctness").to_numpy() & (tier == 1)]
    if listed.empty:
        return tier
    psnr = found[found.metric.isin(DB_METRICS)].merge(listed[CASE].drop_duplicates(), on=CASE)
    margins = psnr[psnr.tolerance.notna()]  # the larger stated tolerance of either side (the case table's)
    if margins.empty:
        return tier
    margins = margins.assign(
        margin=margins.candidate_median.astype(float) - margins.tolerance.astype(float),
        drop=margins.baseline_median.astype(float) - margins.candidate_median.astype(float),
    )
    least = margins.groupby(CASE, sort=False, as_index=False).agg(
        margin=("margin", "min"), tolerance=("tolerance", "min"), drop=("drop", "max")
    )
    keyed = rows[CASE].reset_index(drop=True).merge(least, how="left", on=CASE)
    margin = keyed.margin.to_numpy(dtype=float, na_value=np.nan)
    small = keyed["drop"].to_numpy(dtype=float, na_value=np.inf) < SMALL_DROP_DB
    far = (rows.metric == "correctness").to_numpy() & (margin >= FAR_ABOVE_DB) & small & (tier == 1)
    why = rows.columns.get_loc("why")
    for i in np.flatnonzero(far):
        rows.iat[i, why] += f" (still {margin[i]:.1f} dB above its {keyed.tolerance.iloc[i]:g} dB tolerance)"
    return np.where(far, 2, tier)


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
        worst["worst_figure"] = worst["metric"]
        worst["metric"] = "correctness"
        rows.append(worst)
    return pd.DataFrame(rows).drop(columns="_order")


def _value(value: float, unit: str) -> str:
    return f"{value:.3g}" if unit == "1" else format_value(value, unit)  # an error ratio to 3 digits in figures


def _figure(r) -> str:
    state = {True: "passed", False: "failed"}
    verdicts = f" ({state.get(r.baseline_passed, 'no tolerance')} → {state.get(r.candidate_passed, 'no tolerance')})"
    return (
        f"{r.metric} {_value(r.baseline_median, r.unit)} → {_value(r.candidate_median, r.unit)}"
        f"{verdicts if r.why == PASSED_FAILED else ''}"
    )
