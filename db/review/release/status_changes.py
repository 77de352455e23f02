"""Status changes of a baseline → candidate comparison: cases whose status moved (unsupported ↔ ok, error ↔ ok,
OOM ↔ ok, unavailable ↔ ok, fallback ↔ ok) or whose correctness verdict moved (passed ↔ failed), each with both
sides' messages. Read from the comparison itself (its unmatched and case rows), so Compare, its JSON twin and any
summary count the same changes. One row per case and kind of change: the metrics that moved together (a newly
supported case's timing, memory and PSNR) are listed in `metric`, so counts are of cases. A newly supported case
that fails its tolerance on the candidate is its own kind, a new failure."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from bundle.case_names import case_names
from bundle.metrics import DERIVED
from db.query.compare.pivot import KEY
from db.review.cases.columns import BETTER, WORSE

OTHER = "other"  # neither better nor worse (BETTER, WORSE: Compare's chart's words and colours)
COLUMNS = [
    "case",
    "scope",
    "metric",
    "change",
    "kind",
    "direction",
    "baseline_status",
    "candidate_status",
    "baseline_message",
    "candidate_message",
    "device",
    "workload",
    "dtype",
    "compile",
    "case_key",
]
_OOM = re.compile(r"out of memory|\bOOM\b", re.IGNORECASE)
_GAINED = {
    "unsupported": "newly supported",
    "error": "error fixed",
    "OOM": "OOM fixed",
    "unavailable": "figure now available",
    "fallback": "no longer falls back to the CPU",
}
FAILS_NOW = "newly supported, fails its tolerance"
_LOST = {
    "unsupported": "newly unsupported",
    "error": "new error",
    "OOM": "new OOM",
    "unavailable": "figure now unavailable",
    "fallback": "now falls back to the CPU",
}


def _status(status: str, message) -> str:
    """A side's status word: an error whose message says out-of-memory is "OOM"."""
    if status == "error" and isinstance(message, str) and _OOM.search(message):
        return "OOM"
    return status


def _kind(before: str, after: str) -> tuple[str, str]:
    if after == "ok" and before in _GAINED:
        return _GAINED[before], BETTER
    if before == "ok" and after in _LOST:
        return _LOST[after], WORSE
    return f"{before} → {after}", OTHER


def _from_unmatched(unmatched: pd.DataFrame) -> pd.DataFrame:
    both = unmatched[(unmatched.baseline_status != "absent") & (unmatched.candidate_status != "absent")]
    before = [_status(s, m) for s, m in zip(both.baseline_status, both.baseline_message)]
    after = [_status(s, m) for s, m in zip(both.candidate_status, both.candidate_message)]
    moved = np.array([b != a for b, a in zip(before, after)], dtype=bool)
    rows = both[moved].copy()
    rows["baseline_status"] = np.array(before, dtype=object)[moved]
    rows["candidate_status"] = np.array(after, dtype=object)[moved]
    kinds = [_kind(b, a) for b, a in zip(rows.baseline_status, rows.candidate_status)]
    rows["kind"], rows["direction"] = [k for k, _ in kinds], [d for _, d in kinds]
    rows["failing"] = (rows.candidate_passed == False).to_numpy(dtype=bool) if "candidate_passed" in rows else False  # noqa: E712
    return rows


def _from_cases(cases: pd.DataFrame) -> pd.DataFrame:
    b, c = cases.baseline_passed, cases.candidate_passed
    known = b.notna() & c.notna()
    rows = cases[known & (b.astype("boolean") != c.astype("boolean"))].copy()
    passed = rows.baseline_passed.astype(bool)
    rows["baseline_status"] = np.where(passed, "passed", "failed")
    rows["candidate_status"] = np.where(passed, "failed", "passed")
    rows["kind"] = np.where(passed, "new correctness failure", "correctness fixed")
    rows["direction"] = np.where(passed, WORSE, BETTER)
    rows["baseline_message"] = rows["candidate_message"] = ""
    return rows


def status_changes(cases: pd.DataFrame, unmatched: pd.DataFrame) -> pd.DataFrame:
    """One row per changed case, new failures first, then fixes, then other moves; named for people."""
    parts = [p for p in (_from_unmatched(unmatched), _from_cases(cases)) if len(p)]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    fields = KEY + [
        "baseline_status",
        "candidate_status",
        "kind",
        "direction",
        "baseline_message",
        "candidate_message",
        "failing",
    ]
    rows = pd.concat([p.reindex(columns=fields) for p in parts], ignore_index=True)
    rows = _per_case(rows)
    rows["change"] = rows.baseline_status + " → " + rows.candidate_status
    rows["case"] = case_names(rows)
    for side in ("baseline_message", "candidate_message"):
        rows[side] = rows[side].fillna("")
    order = rows.direction.map({WORSE: 0, BETTER: 1, OTHER: 2})
    return rows.assign(_o=order).sort_values(["_o", "case"], kind="stable")[COLUMNS].reset_index(drop=True)


def _per_case(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, kind): its metrics joined in `metric` (timing first, as KEY orders none), its messages
    the first it has. A newly supported case any of whose figures fails its tolerance becomes FAILS_NOW."""
    case = [k for k in KEY if k != "metric"]
    failing = rows.failing.eq(True)  # NaN (no verdict): not failing
    rows = rows.assign(failing=failing.groupby([rows[c] for c in case + ["kind"]]).transform("any"))
    fails_now = (rows.kind == _GAINED["unsupported"]) & rows.failing
    rows.loc[fails_now, "kind"], rows.loc[fails_now, "direction"] = FAILS_NOW, WORSE
    order = rows.metric.map(lambda m: (m in DERIVED, m))  # a timing before the figures derived from it
    rows = rows.assign(_m=order).sort_values("_m", kind="stable")
    grouped = rows.groupby(case + ["kind"], sort=False, dropna=False)
    first = grouped.first().reset_index()
    first["metric"] = grouped.metric.agg(", ".join).to_numpy()
    return first.drop(columns=["_m", "failing"])


def status_words(changes: pd.DataFrame) -> str:
    """ "1 newly supported, fails its tolerance; 2 OOM fixed": each kind counted in the rows' order (worst first),
    the one wording of status changes on the cards and on Compare."""
    if changes.empty:
        return ""
    return "; ".join(f"{n} {kind}" for kind, n in changes.kind.value_counts(sort=False).items())
