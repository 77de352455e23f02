"""Published claims beside the measured cases that match them: reproduced / not reproduced / no data, per case.

db/views/browse/claims.json lists the claims; each has its own baseline and candidate selectors (overridable for every
claim at once) and one or more figures. A figure is measured on chip scope and case by case: each matching case
(on its chip, dtype and compile mode) gets its own measured figure and verdict, and no figure is ever averaged
across cases (two PSNR cases moving +19.89 and +0 dB are two rows, never one of +9.945). A claimed change is
reproduced on a case when the case's change is within tolerance AND told apart from noise (a significant case).
The figure's verdict, per (chip, dtype, compile), follows its `cases` rule: "every" (the default: the claim
states a general fact, so every matching case must reproduce it) or "some" (the claim quotes one measurement
without naming its case: it is reproduced when at least one matching case reproduces it; the others are still
listed with their own figures). A geomean figure claims an aggregate itself: its cases are listed with their own
ratios ("in geomean"), its verdict is the geomean's, whose 95 % CI over cases must exclude 1.00×.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.case_names import case_name
from bundle.metrics import Better, metric
from db.errors import StoreError
from db.review.cases.columns import BETTER, WORSE
from db.review.cases.wording import format_value, ratio_words
from db.review.comparison import CompareQuery
from db.review.review import Review, cached_review
from db.stats.ratios import orient
from db.stats.significance import geomean_ci

CLAIMS_FILE = Path(__file__).resolve().with_name("claims.json")
COLUMNS = [
    "claim",
    "id",
    "title",
    "source",
    "baseline",
    "baseline_is",
    "candidate",
    "candidate_is",
    "chip",
    "dtype",
    "compile",
    "case",
    "status",
    "figure_status",
    "claimed",
    "measured",
    "unit",
    "claimed_words",
    "measured_words",
    "stand_in",
    "tolerance",
    "rule",
    "figure_measured",
    "n_cases",
    "claimed_cases",
    "detail",
    "figure_detail",
    "workload",
    "metric",
    "case_key",
]
GROUP = ["scope", "dtype", "compile"]
RULES = ("every", "some")  # a figure's `cases` rule (see above); a geomean figure has its own
IN_GEOMEAN = "in geomean"  # a geomean figure's case: its own ratio, no verdict of its own
REPRODUCED_STAND_IN = "reproduced on a stand-in"  # by a random-weight model built from the config, not the real one


def load_claims(path: Path = CLAIMS_FILE) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["claims"]


def claimed_value(figure: dict) -> float:
    """The claimed comparison: an oriented ratio (> 1 = after is better: db.stats.ratios.orient, as every measured
    ratio), a geomean, or a difference in `unit`."""
    if figure["kind"] == "geomean":
        return float(figure["claimed_ratio"])
    b, c = float(figure["claimed_baseline"]), float(figure["claimed_candidate"])
    if figure["kind"] == "difference":
        return c - b
    return float(orient(np.array([c / b]), np.array([metric(figure["metric"]).better is Better.lower]))[0])


def claimed_words(figure: dict) -> str:
    """The claim as published, with its units: "57.37 → 7.14 µs (8.03× faster)", "8764 → 8764 calls (+0 calls)",
    "geomean 1.50× better" — never a bare "0.0"."""
    if figure["kind"] == "geomean":
        return f"geomean {float(figure['claimed_ratio']):.2f}× better"
    b, c, unit = float(figure["claimed_baseline"]), float(figure["claimed_candidate"]), figure["unit"]
    said = f"{b:,.4g} → {c:,.4g} {unit}"
    if figure["kind"] == "difference":
        return f"{said} ({c - b:+,.4g} {unit})"
    return f"{said} ({ratio_words(figure['metric'], [claimed_value(figure)]).to_pylist()[0]})"


def measured_words(case, figure: dict) -> str:
    """The case's figure as the review says it, with its units: "57.1 µs → 7.2 µs (7.93× faster)"."""
    b, c = (format_value(float(v), str(case.unit)) for v in (case.baseline_median, case.candidate_median))
    return f"{b} → {c} ({case.change})"


def stand_in(case) -> str:
    """ "random-weight stand-in: Qwen3-MoE config, 1.3 B parameters" where the case ran a model built from a config
    with random weights (its params' source), not the published model a claim is about; "" otherwise."""
    params = json.loads(case.case_key)
    if params.get("source") != "random":
        return ""
    size = params.get("parameters")
    count = f", {float(size) / 1e9:.3g} B parameters" if isinstance(size, (int, float)) else ""
    return f"random-weight stand-in: the {params.get('model', '?')} config{count}"


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


def _claims_no_change(figure: dict, claimed: float) -> bool:
    return abs(claimed - (0.0 if figure["kind"] == "difference" else 1.0)) <= float(figure["tolerance"])


def _case_noise(case, figure: dict, claimed: float) -> str:
    """Why a case's measured change cannot count as reproducing a claimed change: the review does not call it a
    change (its direction, db.review.rules.directions: significant or its CI beyond the bound; a single figure
    beyond its rule). A claim of no change needs none; a count to watch (pad calls) is taken as measured."""
    if _claims_no_change(figure, claimed) or case.direction in (BETTER, WORSE) or case.rule == "watch":
        return ""
    return f"{case.direction}: the review does not tell it apart from noise"


def _geomean_noise(figure: dict, claimed: float, low: float, high: float) -> str:
    if _claims_no_change(figure, claimed):
        return ""
    if math.isfinite(low) and low <= 1.0 <= high:
        return f"the geomean's 95 % CI over cases ({low:.2f}–{high:.2f}×) includes 1.00×: not told apart from noise"
    return ""


def _case_value(case, figure: dict) -> float:
    """The case's own figure: candidate − baseline median (difference) or its oriented ratio."""
    return float(case.difference if figure["kind"] == "difference" else case.oriented_ratio)


def _row(claim: dict, figure: dict, where: tuple, status: str, measured: float, detail: str, case=None) -> dict:
    chip, dtype, compile_mode = where
    return {
        "claim": claim["id"],
        "id": figure["id"],
        "title": claim["title"],
        "source": claim["source"],
        "baseline": claim["baseline"],
        "baseline_is": claim.get("baseline_is", ""),
        "candidate": claim["candidate"],
        "candidate_is": claim.get("candidate_is", ""),
        "chip": chip,
        "dtype": dtype,
        "compile": compile_mode,
        "case": case_name(claim["workload"], case.case_key, dtype, compile_mode) if case is not None else "",
        "status": status,
        "figure_status": status,
        "claimed": claimed_value(figure),
        "measured": measured,
        "claimed_words": claimed_words(figure),
        "measured_words": measured_words(case, figure) if case is not None else "",
        "stand_in": stand_in(case) if case is not None else "",
        "unit": "×" if figure["kind"] != "difference" else figure["unit"],
        "tolerance": float(figure["tolerance"]),
        "rule": _rule(figure),
        "figure_measured": math.nan,
        "n_cases": 0,
        "claimed_cases": figure.get("claimed_cases"),
        "detail": detail,
        "figure_detail": detail,
        "workload": claim["workload"],
        "metric": figure["metric"],
        "case_key": case.case_key if case is not None else "",
    }


def _rule(figure: dict) -> str:
    if figure["kind"] == "geomean":
        return "geomean"
    rule = figure.get("cases", "every")
    if rule not in RULES:
        raise ValueError(f"claims.json: figure {figure['id']}: cases must be one of {RULES}, not {rule!r}")
    return rule


def _verdict(figure: dict, statuses: list[str], group: pd.DataFrame, claimed: float) -> tuple[str, float, str]:
    """The figure's verdict on one (chip, dtype, compile): (status, figure_measured, figure_detail)."""
    n = len(statuses)
    if figure["kind"] == "geomean":
        geomean, low, high = geomean_ci(np.log(group.oriented_ratio.to_numpy(dtype=float)))
        noise = _geomean_noise(figure, claimed, low, high)
        detail = f"geomean of {n} case(s)' oriented ratios: {geomean:.3f}×" + (f"; {noise}" if noise else "")
        return _status(figure, claimed, geomean, noise), geomean, detail
    good = statuses.count("reproduced") + statuses.count(REPRODUCED_STAND_IN)
    rule = _rule(figure)
    proxy = statuses.count("reproduced") == 0 and good > 0
    status = (
        "not reproduced"
        if not (good == n if rule == "every" else good >= 1)
        else REPRODUCED_STAND_IN
        if proxy
        else "reproduced"
    )
    wanted = "every matching case must" if rule == "every" else "one matching case suffices to"
    return status, math.nan, f"{good} of {n} case(s) reproduce it ({rule}: {wanted} reproduce it)"


def _figure_rows(claim: dict, figure: dict, cases: pd.DataFrame) -> list[dict]:
    found = matching(cases, claim, figure)
    expected = (claim.get("chip") or "", figure.get("dtype") or "", figure["compile"])
    on_chip = found[found.scope.str.contains(claim["chip"], regex=False)] if claim.get("chip") else found
    if on_chip.empty:
        elsewhere = sorted(set(found.scope))
        why = (
            f"measured only on {', '.join(elsewhere)}; the claim is for {claim['chip']}"
            if elsewhere
            else "no compared case matches this figure"
        )
        return [_row(claim, figure, expected, "no data", math.nan, why)]
    rows, claimed = [], claimed_value(figure)
    for where, group in on_chip.groupby(GROUP, sort=True):
        mine = []
        for case in group.sort_values("case_key").itertuples():
            measured = _case_value(case, figure)
            noise = _case_noise(case, figure, claimed) if figure["kind"] != "geomean" else ""
            status = IN_GEOMEAN if figure["kind"] == "geomean" else _status(figure, claimed, measured, noise)
            proxy = stand_in(case)
            if proxy and status == "reproduced":
                status = REPRODUCED_STAND_IN  # never "reproduced" for the published model without saying so
            detail = "; ".join(x for x in (proxy, noise, figure.get("note", ""), str(case.change)[:300]) if x)
            mine.append(_row(claim, figure, where, status, measured, detail, case))
        status, figure_measured, figure_detail = _verdict(figure, [r["status"] for r in mine], group, claimed)
        for row in mine:
            row.update(
                figure_status=status, figure_measured=figure_measured, figure_detail=figure_detail, n_cases=len(mine)
            )
        rows += mine
    return rows


def evaluate_claim(engine: Engine, claim: dict) -> list[dict]:
    figures = claim["figures"]
    params = {
        "baseline": claim["baseline"],
        "candidate": claim["candidate"],
        "scope": "chip",
        "workload": claim["workload"],
        "metric": ",".join(sorted({f["metric"] for f in figures})),
    }
    try:
        judged = cached_review(engine, Review(CompareQuery.from_params(params)))
        cases = pd.concat([judged.cases, judged.verdicts], axis=1)  # the review's figures, direction and rule
    except StoreError as exc:
        return [
            _row(claim, f, (claim.get("chip") or "", f.get("dtype") or "", f["compile"]), "no data", math.nan, str(exc))
            for f in figures
        ]
    return [row for f in figures for row in _figure_rows(claim, f, cases)]


def evaluate_claims(engine: Engine, baseline: str | None = None, candidate: str | None = None) -> pd.DataFrame:
    """One row per matching case of every figure of every claim (one "no data" row for a figure without cases),
    each with its own figure and verdict and its figure's verdict; baseline/candidate, when given, replace every
    claim's own selectors."""
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
