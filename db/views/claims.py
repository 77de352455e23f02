"""Published claims beside the measured comparison that matches them: reproduced / not reproduced / no data.

db/views/claims.json lists the claims; each has its own baseline and candidate selectors (overridable for every
claim at once) and one or more figures. A figure is measured on chip scope, each (chip, dtype, compile) on its
own row: a number never mixes chips, dtypes or compile modes. How a figure matches cases, and what each kind
compares, is written in the file's "about". A claimed change is reproduced only when the measured one is within
tolerance AND told apart from noise (significant cases; a geomean whose CI over cases excludes 1.00×).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.metrics import Better, metric
from db.review.comparison import CompareQuery, compare
from db.errors import StoreError
from db.stats.significance import NOT_SIGNIFICANT, geomean_ci

CLAIMS_FILE = Path(__file__).resolve().with_name("claims.json")
COLUMNS = ["claim", "id", "title", "source", "baseline", "baseline_is", "candidate", "candidate_is", "chip", "dtype",
           "compile", "status", "claimed", "measured", "unit", "tolerance", "n_cases", "claimed_cases", "detail"]
GROUP = ["scope", "dtype", "compile"]


def load_claims(path: Path = CLAIMS_FILE) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["claims"]


def claimed_value(figure: dict) -> float:
    """The claimed comparison: an oriented ratio (> 1 = after is better), a geomean, or a difference in `unit`."""
    if figure["kind"] == "geomean":
        return float(figure["claimed_ratio"])
    b, c = float(figure["claimed_baseline"]), float(figure["claimed_candidate"])
    if figure["kind"] == "difference":
        return c - b
    return b / c if metric(figure["metric"]).better is Better.lower else c / b


def _hinted(params: dict, hint: str | None) -> bool:
    return not hint or any(isinstance(v, str) and hint.lower() in v.lower() for v in params.values())


def matching(cases: pd.DataFrame, claim: dict, figure: dict) -> pd.DataFrame:
    """The compared cases a figure is about (see claims.json "about")."""
    wanted = {**claim.get("params", {}), **figure.get("params", {})}
    keep = (cases.metric == figure["metric"]) & (cases["compile"] == figure["compile"])
    if figure.get("dtype"):
        keep &= cases.dtype == figure["dtype"]
    found = cases[keep]
    params = [json.loads(p) for p in found.case_key]
    keep = [all(p.get(k) == v for k, v in wanted.items()) and _hinted(p, claim.get("model_hint")) for p in params]
    return found[np.array(keep, dtype=bool)]


def _status(figure: dict, claimed: float, measured: float, noise: str) -> str:
    if not math.isfinite(measured):
        return "no data"
    off = abs(measured - claimed) if figure["kind"] == "difference" else abs(measured / claimed - 1.0)
    return "reproduced" if off <= float(figure["tolerance"]) + 1e-9 and not noise else "not reproduced"


def _noise(group: pd.DataFrame, figure: dict, claimed: float) -> str:
    """Why a measured change cannot count as reproducing a claimed change: it is not told apart from noise.

    A claim of no change needs no significance. Cases with one deterministic sample (memory peaks, PSNR,
    counts) have "insufficient samples" and are taken as measured; a case that is "not significant" is noise."""
    if abs(claimed - (0.0 if figure["kind"] == "difference" else 1.0)) <= float(figure["tolerance"]):
        return ""
    if figure["kind"] == "geomean":
        _, low, high = geomean_ci(np.log(group.oriented_ratio.astype(float).to_numpy()))
        if math.isfinite(low) and low <= 1.0 <= high:
            return (f"the geomean's 95 % CI over cases ({low:.2f}–{high:.2f}×) includes 1.00×: "
                    "not told apart from noise")
        return ""
    noisy = int((group.significance == NOT_SIGNIFICANT).sum())
    return f"{noisy} of {len(group)} case(s) not significant: not told apart from noise" if noisy else ""


def _measure(group: pd.DataFrame, figure: dict) -> float:
    if figure["kind"] == "difference":
        return float(group.difference.astype(float).median())
    logs = np.log(group.oriented_ratio.astype(float))
    return float(np.exp(logs.mean())) if figure["kind"] == "geomean" else float(np.exp(np.median(logs)))


def _row(claim: dict, figure: dict, where: tuple, status: str, measured: float, n: int, detail: str) -> dict:
    chip, dtype, compile_mode = where
    return {"claim": claim["id"], "id": figure["id"], "title": claim["title"], "source": claim["source"],
            "baseline": claim["baseline"], "baseline_is": claim.get("baseline_is", ""),
            "candidate": claim["candidate"], "candidate_is": claim.get("candidate_is", ""), "chip": chip,
            "dtype": dtype, "compile": compile_mode, "status": status, "claimed": claimed_value(figure),
            "measured": measured, "unit": "×" if figure["kind"] != "difference" else figure["unit"],
            "tolerance": float(figure["tolerance"]), "n_cases": n, "claimed_cases": figure.get("claimed_cases"),
            "detail": detail}


def _figure_rows(claim: dict, figure: dict, cases: pd.DataFrame) -> list[dict]:
    found = matching(cases, claim, figure)
    expected = (claim.get("chip") or "", figure.get("dtype") or "", figure["compile"])
    on_chip = found[found.scope.str.contains(claim["chip"], regex=False)] if claim.get("chip") else found
    if on_chip.empty:
        elsewhere = sorted(set(found.scope))
        why = (f"measured only on {', '.join(elsewhere)}; the claim is for {claim['chip']}" if elsewhere
               else "no compared case matches this figure")
        return [_row(claim, figure, expected, "no data", math.nan, 0, why)]
    rows = []
    for where, group in on_chip.groupby(GROUP, sort=True):
        measured, claimed = _measure(group, figure), claimed_value(figure)
        noise = _noise(group, figure, claimed)
        detail = "; ".join(x for x in (noise, figure.get("note", ""), "; ".join(sorted(set(group.change)))[:300]) if x)
        rows.append(_row(claim, figure, where, _status(figure, claimed, measured, noise), measured, len(group),
                         detail))
    return rows


def evaluate_claim(engine: Engine, claim: dict) -> list[dict]:
    figures = claim["figures"]
    params = {"baseline": claim["baseline"], "candidate": claim["candidate"], "scope": "chip",
              "workload": claim["workload"], "metric": ",".join(sorted({f["metric"] for f in figures}))}
    try:
        cases = compare(engine, CompareQuery.from_params(params)).cases
    except StoreError as exc:
        return [_row(claim, f, (claim.get("chip") or "", f.get("dtype") or "", f["compile"]), "no data", math.nan,
                     0, str(exc)) for f in figures]
    return [row for f in figures for row in _figure_rows(claim, f, cases)]


def evaluate_claims(engine: Engine, baseline: str | None = None, candidate: str | None = None) -> pd.DataFrame:
    """Every figure of every claim; baseline/candidate, when given, replace every claim's own selectors."""
    rows = []
    for claim in load_claims():
        rows += evaluate_claim(engine, _replaced(_replaced(claim, "baseline", baseline), "candidate", candidate))
    return pd.DataFrame(rows, columns=COLUMNS)


def _replaced(claim: dict, side: str, selector: str | None) -> dict:
    """The claim with one side's selector replaced; its description then says what the claim itself compared."""
    if not selector or selector == claim[side]:
        return claim
    own = f"{claim[side]}: {claim.get(side + '_is', '')}"
    return {**claim, side: selector, f"{side}_is": f"replaced here; the claim's own {side} is {own}"}
