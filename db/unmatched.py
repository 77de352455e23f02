"""Cases the Compare query could not pair: on one side only, or a side without an ok figure. Listed, not dropped.

A fallback figure is shown here (its median, flagged) and never used as a device figure.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from db.compare_sql import KEY

COLUMNS = KEY + ["unit", "baseline_status", "candidate_status", "baseline_median", "candidate_median",
                 "baseline_figure", "candidate_figure", "reason", "message"]
_WHY = {"fallback": "CPU fallback: not a device figure", "unsupported": "unsupported on this device/build",
        "unavailable": "figure unavailable on this device/build", "error": "the case errored"}


def _side_reason(side: str, statuses: str | None, n: float) -> str | None:
    if statuses is None or (isinstance(statuses, float) and np.isnan(statuses)):
        return f"no {side} result"
    if n and n > 0:
        return None
    return f"{side} " + ", ".join(f"{s} ({_WHY.get(s, s)})" for s in statuses.split(","))


def _figure(median: float, fallback: float) -> tuple[float, str]:
    if pd.notna(median):
        return median, "ok"
    if pd.notna(fallback):
        return fallback, "fallback (flagged)"
    return np.nan, ""


def unmatched_frame(rest: pd.DataFrame) -> pd.DataFrame:
    if rest.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for r in rest.to_dict("records"):
        reasons = [x for x in (_side_reason("baseline", r["b_statuses"], r["b_n"]),
                               _side_reason("candidate", r["c_statuses"], r["c_n"])) if x]
        b_val, b_kind = _figure(r["b_median"], r["b_fallback_median"])
        c_val, c_kind = _figure(r["c_median"], r["c_fallback_median"])
        rows.append({**{k: r[k] for k in KEY}, "unit": r["b_unit"] if pd.notna(r["b_unit"]) else r["c_unit"],
                     "baseline_status": r["b_statuses"] or "absent", "candidate_status": r["c_statuses"] or "absent",
                     "baseline_median": b_val, "candidate_median": c_val, "baseline_figure": b_kind,
                     "candidate_figure": c_kind, "reason": "; ".join(reasons),
                     "message": r["b_message"] if pd.notna(r["b_message"]) else r["c_message"]})
    return pd.DataFrame(rows, columns=COLUMNS)
