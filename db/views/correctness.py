"""Correctness per case across builds, and the "faster but wrong" flag.

A case is faster but wrong when its op_time median improved against the previous build on the same machine
while the correctness record of the same run failed its tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine

from bundle.case_names import case_names
from db.query.browse import CORRECTNESS_METRICS, results, split_builds
from db.views.params import Params, one_of, only
from db.views.wording import format_value

_CASE = ["machine_name", "workload", "case_key", "dtype", "compile"]


def correctness(engine: Engine, split_tag: str | None = None) -> pd.DataFrame:
    """PSNR (dB) and max error (1) records with their tolerance and verdict, per case and build."""
    frame = split_builds(results(engine, metrics=CORRECTNESS_METRICS), split_tag)
    frame["verdict"] = [_verdict(p, s) for p, s in frame[["passed", "status"]].itertuples(index=False)]
    frame["case"] = case_names(frame)
    # the case's name and its figures with units first; the identifying keys pinned at the end
    return frame[["case", "machine_name", "build", "metric", "median", "unit", "tolerance", "verdict", "status",
                  "message", "chip", "started_at", "run_id", "workload", "dtype", "compile", "case_key"]]


def faster_but_wrong(engine: Engine, split_tag: str | None = None) -> pd.DataFrame:
    """Cases whose op_time improved vs the previous build (same machine) while that build's correctness failed:
    one row per (case, build), however many runs repeated it and however many correctness metrics failed (they
    are listed together in `failed_metrics` / `failed_figures`)."""
    times = split_builds(results(engine, metrics=["op_time"]), split_tag)
    times = times[times["status"].isin(["ok", "fallback"])]
    per_build = (times.groupby(_CASE + ["build"], as_index=False, dropna=False)
                 .agg(median=("median", "median"), started_at=("started_at", "min"), runs=("run_id", "nunique"))
                 .sort_values("started_at"))  # a build's repeats are one point: its previous build is another build
    per_build["previous_µs"] = per_build.groupby(_CASE, dropna=False)["median"].shift(1)
    per_build["previous_build"] = per_build.groupby(_CASE, dropna=False)["build"].shift(1)
    improved = per_build[per_build["median"] < per_build["previous_µs"]]
    failed = correctness(engine, split_tag)
    failed = failed[failed["verdict"] == "failed"].sort_values("metric")
    failed["figure"] = [f"{m} {format_value(v, u)} (tolerance {format_value(t, u)})" for m, v, u, t in
                        failed[["metric", "median", "unit", "tolerance"]].itertuples(index=False)]
    failed = (failed.groupby(_CASE + ["build"], as_index=False, dropna=False)
              .agg(failed_metrics=("metric", lambda m: ", ".join(dict.fromkeys(m))),
                   failed_figures=("figure", lambda f: "; ".join(dict.fromkeys(f)))))
    joined = improved.merge(failed, on=_CASE + ["build"])
    joined["speedup_vs_previous"] = joined["previous_µs"] / joined["median"]
    return joined[_CASE + ["build", "previous_build", "median", "previous_µs", "speedup_vs_previous", "runs",
                           "failed_metrics", "failed_figures"]].rename(columns={"median": "op_time_µs"})


def _verdict(passed: bool | None, status: str) -> str:
    if status not in ("ok", "fallback"):
        return status
    if passed is None or pd.isna(passed):
        return "no tolerance"
    return "passed" if bool(passed) else "failed"


@dataclass(frozen=True)
class Correctness:
    split_tag: str  # "" when builds are not split by a tag
    metric: str  # the correctness metric shown (psnr_vs_cpu when none is asked for)
    stored: list[str]  # the correctness metrics with records in the store
    records: pd.DataFrame  # that metric's records per case and build: median in `unit`, tolerance, verdict
    faster_but_wrong: pd.DataFrame  # op_time improved vs the previous build while correctness failed (any metric)


def correctness_view(engine: Engine, params: Params) -> Correctness:
    """The Correctness page and GET /api/v1/correctness."""
    p = only(params, ("split_tag", "metric"))
    metric = one_of("metric", p["metric"] or "psnr_vs_cpu", CORRECTNESS_METRICS)
    split = p["split_tag"] or None
    records = correctness(engine, split)
    shown = records[records["metric"] == metric].drop(columns=["started_at"])
    return Correctness(p["split_tag"], metric, sorted(set(records["metric"])), shown, faster_but_wrong(engine, split))
