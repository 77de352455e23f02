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
    """Cases whose op_time improved vs the previous build (same machine) while that run's correctness failed."""
    times = split_builds(results(engine, metrics=["op_time"]), split_tag)
    times = times[times["status"].isin(["ok", "fallback"])].sort_values("started_at")
    times["previous_µs"] = times.groupby(_CASE)["median"].shift(1)
    times["previous_build"] = times.groupby(_CASE)["build"].shift(1)
    improved = times[times["median"] < times["previous_µs"]][_CASE + ["run_id", "build", "previous_build", "median",
                                                                     "previous_µs"]]
    failed = correctness(engine, split_tag)
    failed = failed[failed["verdict"] == "failed"][_CASE + ["run_id", "metric", "median", "tolerance"]]
    failed = failed.rename(columns={"metric": "failed_metric", "median": "failed_value"})
    joined = improved.merge(failed, on=_CASE + ["run_id"])
    joined["speedup_vs_previous"] = joined["previous_µs"] / joined["median"]
    return joined[_CASE + ["build", "previous_build", "median", "previous_µs", "speedup_vs_previous",
                           "failed_metric", "failed_value", "tolerance", "run_id"]].rename(
        columns={"median": "op_time_µs"})


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
