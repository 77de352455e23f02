"""Published claims beside the measured comparison that matches them: reproduced / not reproduced / no data.

Each claim names its own baseline and candidate selectors (overridable), workload, metric, dtype, compile,
optional chip, and a loose `match` on case params. Measured per chip (chip scope: machines of a chip pooled,
explicitly). Ratio claims compare oriented ratios (relative tolerance); geomean claims the family geomean over
matching cases; difference claims the candidate − baseline difference (tolerance in the unit).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.metrics import Better, metric
from db.compare import CompareQuery, compare
from db.errors import StoreError

CLAIMS_FILE = Path(__file__).resolve().parent.parent / "claims" / "claims.json"
COLUMNS = ["id", "title", "source", "baseline", "candidate", "chip", "status", "claimed", "measured", "unit",
           "tolerance", "n_cases", "detail"]


def load_claims(path: Path = CLAIMS_FILE) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["claims"]


def _claimed(claim: dict) -> float:
    if claim["kind"] == "geomean":
        return float(claim["claimed_ratio"])
    b, c = float(claim["claimed_baseline"]), float(claim["claimed_candidate"])
    if claim["kind"] == "difference":
        return c - b
    return b / c if metric(claim["metric"]).better is Better.lower else c / b


def _matching(cases: pd.DataFrame, claim: dict) -> pd.DataFrame:
    match = claim.get("match", {})
    keep = [all(json.loads(p).get(k) == v for k, v in match.items()) for p in cases.case_key]
    found = cases[keep]
    return found[found.scope.str.contains(claim["chip"], regex=False)] if claim.get("chip") else found


def _status(claim: dict, claimed: float, measured: float) -> str:
    if not math.isfinite(measured):
        return "no data"
    off = abs(measured - claimed) if claim["kind"] == "difference" else abs(measured / claimed - 1.0)
    return "reproduced" if off <= float(claim["tolerance"]) + 1e-9 else "not reproduced"


def _measure(group: pd.DataFrame, claim: dict) -> float:
    if claim["kind"] == "difference":
        return float(group.difference.astype(float).median())
    logs = np.log(group.oriented_ratio.astype(float))
    return float(np.exp(logs.mean())) if claim["kind"] == "geomean" else float(np.exp(np.median(logs)))


def _row(claim: dict, chip: str, status: str, measured: float, n: int, detail: str) -> dict:
    return {"id": claim["id"], "title": claim["title"], "source": claim["source"], "baseline": claim["baseline"],
            "candidate": claim["candidate"], "chip": chip, "status": status, "claimed": _claimed(claim),
            "measured": measured, "unit": "×" if claim["kind"] != "difference" else claim["unit"],
            "tolerance": float(claim["tolerance"]), "n_cases": n, "detail": detail}


def evaluate_claim(engine: Engine, claim: dict) -> list[dict]:
    params = {"baseline": claim["baseline"], "candidate": claim["candidate"], "scope": "chip",
              "workload": claim["workload"], "metric": claim["metric"], "dtype": claim["dtype"],
              "compile": claim["compile"]}
    try:
        cases = _matching(compare(engine, CompareQuery.from_params(params)).cases, claim)
    except StoreError as exc:
        return [_row(claim, "", "no data", math.nan, 0, str(exc))]
    if cases.empty:
        return [_row(claim, claim.get("chip", ""), "no data", math.nan, 0, "no compared case matches this claim")]
    rows = []
    for chip, group in cases.groupby("scope"):
        measured = _measure(group, claim)
        rows.append(_row(claim, chip, _status(claim, _claimed(claim), measured), measured, len(group),
                         "; ".join(sorted(set(group.change)))[:300]))
    return rows


def evaluate_claims(engine: Engine, baseline: str | None = None, candidate: str | None = None) -> pd.DataFrame:
    """Every claim's status; baseline/candidate, when given, replace every claim's own selectors."""
    rows = []
    for claim in load_claims():
        claim = {**claim, **({"baseline": baseline} if baseline else {}), **({"candidate": candidate} if candidate else {})}
        rows += evaluate_claim(engine, claim)
    return pd.DataFrame(rows, columns=COLUMNS)
