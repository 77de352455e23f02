"""Compare two sides (baseline → candidate) case by case: medians in their units, spread, the comparison the
metric calls for, significance from the raw samples, per-family geometric means, and every case that could not
be compared listed with why. The Compare page and GET /api/v1/compare both call `compare`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from bundle.metrics import METRICS, Better, Comparison
from db.compare_sql import FILTERS, KEY, compare_sql
from db.errors import Problem, StoreError
from db.frames import read_arrow
from db.selectors import Selector, parse_selector, require_runs
from db.significance import SampleLists, significance
from db.unmatched import unmatched_frame
from db.families import family_frame
from db.wording import difference_words, ratio_words

SCOPES = ("machine", "chip")


@dataclass(frozen=True)
class CompareQuery:
    baseline: str
    candidate: str
    scope: str = "machine"
    filters: tuple[tuple[str, tuple[str, ...]], ...] = ()  # ((name, values), …) hashable for caches

    @classmethod
    def from_params(cls, params: Mapping[str, str | None]) -> "CompareQuery":
        """From query parameters; bad input is a 400 naming the parameter."""
        base, cand = parse_selector(params.get("baseline"), "baseline"), parse_selector(params.get("candidate"), "candidate")
        scope = (params.get("scope") or "machine").strip()
        if scope not in SCOPES:
            raise StoreError(400, f"scope: must be machine or chip (got {scope[:40]!r})",
                             [Problem("scope", "must be one of machine, chip")])
        chosen = tuple((n, _values(params.get(n))) for n in FILTERS if _values(params.get(n)))
        unknown = [m for m in dict(chosen).get("metric", ()) if m not in METRICS]
        if unknown:
            raise StoreError(400, f"metric: unknown metric {unknown[0][:60]!r}",
                             [Problem("metric", f"must be one of {', '.join(METRICS)}")])
        return cls(base.text, cand.text, scope, chosen)

    def selectors(self) -> tuple[Selector, Selector]:
        return parse_selector(self.baseline, "baseline"), parse_selector(self.candidate, "candidate")


def _values(text: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (text or "").split(",") if v.strip())


@dataclass
class ComparisonResult:
    query: CompareQuery
    cases: pd.DataFrame  # one row per compared case
    families: pd.DataFrame  # geomean per (scope, device, workload, metric, dtype, compile)
    unmatched: pd.DataFrame  # cases on one side only or without ok figures on a side, with the reason
    notes: list[str] = field(default_factory=list)


def compare(engine: Engine, query: CompareQuery) -> ComparisonResult:
    base, cand = query.selectors()
    require_runs(engine, base, "baseline")
    require_runs(engine, cand, "candidate")
    sql, params = compare_sql(base, cand, query.scope, {k: list(v) for k, v in query.filters})
    table = read_arrow(engine, sql, params)
    paired = pc.and_(pc.fill_null(pc.greater(table["b_n"], 0), False), pc.fill_null(pc.greater(table["c_n"], 0), False))
    cases = case_frame(table.filter(paired), query)
    rest = table.filter(pc.invert(paired)).drop_columns(["b_samples", "c_samples"]).to_pandas()
    notes = _notes(query, cases)
    return ComparisonResult(query, cases, family_frame(cases, query), unmatched_frame(rest), notes)


def _notes(query: CompareQuery, cases: pd.DataFrame) -> list[str]:
    notes = [f"Ratios are candidate {query.candidate} against baseline {query.baseline}; only status-ok results count."]
    if query.scope == "chip":
        notes.append("Chip scope: results of different machines with the same chip are pooled, explicitly.")
    if not cases.empty and ((cases.baseline_runs > 1) | (cases.candidate_runs > 1)).any():
        notes.append("Repeats: where a side has several runs of a case on one scope, their samples are pooled.")
    return notes


def _lists(column: pa.ChunkedArray) -> SampleLists:
    arr = column.combine_chunks()
    return SampleLists(arr.values.to_numpy(zero_copy_only=False), arr.offsets.to_numpy())


def case_frame(table: pa.Table, query: CompareQuery) -> pd.DataFrame:
    frame = table.drop_columns(["b_samples", "c_samples"]).to_pandas()
    if frame.empty:
        return _empty_cases()
    registry = frame.metric.map(METRICS)
    use_ratio = np.array([m.comparison is Comparison.ratio for m in registry])
    sig = significance(_lists(table["b_samples"]), _lists(table["c_samples"]), use_ratio)
    out = frame[KEY].copy()
    out["suite"], out["params_json"], out["unit"] = frame.b_suite, frame.b_params_json, frame.b_unit
    for side, p in (("baseline", "b_"), ("candidate", "c_")):
        out[f"{side}_median"] = frame[p + "median"]
        out[f"{side}_iqr"] = frame[p + "p75"] - frame[p + "p25"]
        out[f"{side}_n"] = frame[p + "n"].astype(int)
        out[f"{side}_runs"] = frame[p + "runs"].astype(int)
        out[f"{side}_machines"] = frame[p + "machines"].astype(int)
        out[f"{side}_passed"] = frame[p + "passed"]
    _add_change(out, registry, use_ratio, sig)
    out["caveats"] = _caveats(frame, query)
    return out


def _add_change(out: pd.DataFrame, registry: pd.Series, use_ratio: np.ndarray, sig) -> None:
    lower = np.array([m.better is Better.lower for m in registry])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (out.candidate_median / out.baseline_median).to_numpy(dtype=float)
        oriented = np.where(lower, 1.0 / ratio, ratio)
        low = np.where(lower, 1.0 / sig.ci_high, sig.ci_low)
        high = np.where(lower, 1.0 / sig.ci_low, sig.ci_high)
    diff = (out.candidate_median - out.baseline_median).to_numpy(dtype=float)
    out["comparison"] = np.where(use_ratio, "ratio", "difference")
    out["ratio"] = np.where(use_ratio, ratio, np.nan)  # candidate / baseline of medians
    out["oriented_ratio"] = np.where(use_ratio, oriented, np.nan)  # > 1: candidate better
    out["difference"] = np.where(use_ratio, np.nan, diff)  # candidate - baseline, in `unit`
    out["change_unit"] = np.where(use_ratio, "×", out.unit)
    out["ci_low"], out["ci_high"] = np.where(use_ratio, low, sig.ci_low), np.where(use_ratio, high, sig.ci_high)
    out["p_value"], out["significance"] = sig.p_value, sig.verdict
    out["change"] = [ratio_words(m, o) if r else difference_words(m, d)
                     for m, o, d, r in zip(out.metric, oriented, diff, use_ratio)]


def _caveats(frame: pd.DataFrame, query: CompareQuery) -> list[str]:
    flags = []
    for row in frame[["b_runs", "c_runs", "b_machines", "c_machines", "b_statuses", "c_statuses"]].itertuples(index=False):
        parts = [f"{side}: {runs} runs pooled" for side, runs in (("baseline", row.b_runs), ("candidate", row.c_runs))
                 if runs > 1]
        if query.scope == "chip":
            parts += [f"{side}: {m} machines pooled" for side, m in
                      (("baseline", row.b_machines), ("candidate", row.c_machines)) if m > 1]
        parts += [f"{side}: {s.replace('ok,', '').replace(',ok', '')} results excluded" for side, s in
                  (("baseline", row.b_statuses), ("candidate", row.c_statuses)) if s != "ok"]
        flags.append("; ".join(parts))
    return flags


CASE_COLUMNS = KEY + ["suite", "params_json", "unit", "baseline_median", "baseline_iqr", "baseline_n", "baseline_runs",
                      "baseline_machines", "baseline_passed", "candidate_median", "candidate_iqr", "candidate_n",
                      "candidate_runs", "candidate_machines", "candidate_passed", "comparison", "ratio",
                      "oriented_ratio", "difference", "change_unit", "ci_low", "ci_high", "p_value", "significance",
                      "change", "caveats"]


def _empty_cases() -> pd.DataFrame:
    return pd.DataFrame(columns=CASE_COLUMNS)
