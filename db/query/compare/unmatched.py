"""Cases the Compare query could not pair: on one side only, or a side without an ok figure. Listed, not dropped.

A fallback figure is shown here (its median, flagged) and never used as a device figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bundle.metrics import METRICS
from db.query.compare.pivot import KEY

COLUMNS = KEY + [
    "unit",
    "baseline_status",
    "candidate_status",
    "baseline_median",
    "candidate_median",
    "baseline_figure",
    "candidate_figure",
    "reason",
    "message",
    "baseline_message",
    "candidate_message",
    "candidate_passed",
]
_WHY = {
    "fallback": "CPU fallback: not a device figure",
    "unsupported": "unsupported on this device/build",
    "unavailable": "figure unavailable on this device/build",
    "error": "the case errored",
}


def _status(results: int, n: int, other) -> str:
    """All statuses a side's results had for the case: "absent", "ok", "error", "ok,error", …"""
    if results == 0:
        return "absent"
    found = (["ok"] if n > 0 else []) + (other.split(",") if isinstance(other, str) else [])
    return ",".join(sorted(found))


def _side_reason(side: str, results: int, n: int, other) -> str | None:
    if results == 0:
        return f"no {side} result"
    if n > 0:
        return None
    return f"{side} " + ", ".join(f"{s} ({_WHY.get(s, s)})" for s in str(other).split(","))


def _figure(median: float, fallback: float) -> tuple[float, str]:
    if pd.notna(median):
        return median, "ok"
    if pd.notna(fallback):
        return fallback, "fallback (flagged)"
    return np.nan, ""


def _side(rest: pd.DataFrame, side: str, p: str) -> dict[str, list]:
    cols = zip(
        rest[p + "results"].tolist(),
        rest[p + "n"].tolist(),
        rest[p + "other"].tolist(),
        rest[p + "median"].tolist(),
        rest[p + "fallback_median"].tolist(),
    )
    out: dict[str, list] = {"status": [], "reason": [], "median": [], "figure": []}
    for results, n, other, median, fallback in cols:
        value, kind = _figure(median, fallback)
        out["status"].append(_status(results, n, other))
        out["reason"].append(_side_reason(side, results, n, other))
        out["median"].append(value)
        out["figure"].append(kind)
    return out


def unmatched_frame(rest: pd.DataFrame) -> pd.DataFrame:
    if rest.empty:
        return pd.DataFrame(columns=COLUMNS)
    out = {name: rest[name] for name in KEY}
    out["unit"] = rest.metric.map({name: m.unit for name, m in METRICS.items()})
    b, c = _side(rest, "baseline", "b_"), _side(rest, "candidate", "c_")
    for side, got in (("baseline", b), ("candidate", c)):
        out[f"{side}_status"], out[f"{side}_median"], out[f"{side}_figure"] = (
            got["status"],
            got["median"],
            got["figure"],
        )
    out["reason"] = ["; ".join(r for r in pair if r) for pair in zip(b["reason"], c["reason"])]
    out["message"] = rest.b_message.where(rest.b_message.notna(), rest.c_message)
    out["baseline_message"] = rest.b_message  # status changes show both
    out["candidate_message"] = rest.c_message
    # a case newly supported on the candidate may fail its tolerance there (status changes flag it)
    out["candidate_passed"] = rest.c_passed if "c_passed" in rest else None
    return pd.DataFrame({name: out[name] for name in COLUMNS}, index=rest.index)  # one frame: column inserts cost more
