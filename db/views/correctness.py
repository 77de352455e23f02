"""Correctness per case across builds, and the "faster but wrong" flag.

A case is faster but wrong when its op_time median improved against the previous build on the same machine by
more than the review's default bound (5 %) while the correctness record of the same run failed its tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.case_names import case_names
from bundle.metrics import METRICS, RULES, Better
from db.query.browse import CORRECTNESS_METRICS, results, split_builds
from db.query.params import Params, build_choice, one_of, only
from db.review.review import DEFAULT_THRESHOLD
from db.review.rules import beyond_rule, rounding_jitter
from db.review.wording import format_value
from db.views.defaults import default_pair
from db.views.empty_reason import NEXT_BUILD
from db.views.memory import memory_builds

_CASE = ["machine_name", "workload", "case_key", "dtype", "compile"]


PARAMS = ("split_tag", "metric", "baseline", "candidate")  # URL parameters (page and twin; api/openapi.py)


def correctness(engine: Engine, split_tag: str | None = None) -> pd.DataFrame:
    """PSNR (dB) and max error (1) records with their tolerance and verdict, per case and build."""
    frame = split_builds(results(engine, metrics=CORRECTNESS_METRICS), split_tag)
    frame["verdict"] = [_verdict(p, s) for p, s in frame[["passed", "status"]].itertuples(index=False)]
    frame["case"] = case_names(frame)
    frame["build_order"] = _order(frame)
    # the case's name and its figures with units first; the identifying keys pinned at the end
    return frame[
        [
            "case",
            "machine_name",
            "build",
            "metric",
            "median",
            "unit",
            "tolerance",
            "verdict",
            "status",
            "passed",
            "rounding",
            "message",
            "chip",
            "started_at",
            "run_id",
            "workload",
            "dtype",
            "compile",
            "case_key",
            "channel",
            "build_order",
        ]
    ]


def _order(frame: pd.DataFrame) -> list[int]:
    """Each record's build's place in version order (db.views.memory.memory_builds: nightlies by date)."""
    if frame.empty:
        return []
    builds, _ = memory_builds(frame)
    return [builds.index(b) for b in frame["build"]]


IMPROVED, WORSENED = "improved", "worsened"
WITHIN = "within its rule"  # a move the review's rule calls neither a regression nor a gain
SLOPE_DIRECTIONS = (IMPROVED, WORSENED, WITHIN)  # a slope's direction; the chart's colours follow this order
RULE_WORDS = (
    f"a PSNR moved by more than {RULES['psnr_vs_cpu'].drop:g} dB, an error by "
    f"{RULES['max_abs_error'].factor:g}×, passed → failed; a move within the dtype's rounding is neither"
)


def correctness_slopes(records: pd.DataFrame, baseline: str, candidate: str) -> pd.DataFrame:
    """Per machine and case: the baseline build's median beside the candidate's, each as its margin over the
    tolerance (in the metric's unit; > 0 passes, so one tolerance line at 0 serves every case), and whether the
    case improved, worsened or stayed within its rule — the rule Regressions judges it by (bundle.metrics RULES,
    RULE_WORDS; db.review.rules.rounding_jitter). Medians over a build's runs."""
    keys = ["machine_name", "case", "metric", "unit", "workload", "dtype", "compile", "case_key"]
    ok = records[records["median"].notna()]
    sides = []
    for build, side in ((baseline, "baseline"), (candidate, "candidate")):
        got = (
            ok[ok["build"] == build]
            .groupby(keys, dropna=False)
            .agg(
                median=("median", "median"),
                tolerance=("tolerance", "max"),
                verdict=("verdict", "min"),
                rounding=("rounding", "median"),
                passed=("passed", "min"),
            )
            .reset_index()
        )
        sides.append(
            got.rename(columns={c: f"{side}_{c}" for c in ("median", "tolerance", "verdict", "rounding", "passed")})
        )
    both = sides[0].merge(sides[1], on=keys, how="inner")
    if both.empty:
        return pd.DataFrame(columns=SLOPE_COLUMNS)
    higher = both["metric"].map(lambda m: METRICS[m].better is Better.higher).to_numpy(dtype=bool)
    sign = np.where(higher, 1.0, -1.0)
    tolerance = both["candidate_tolerance"].fillna(both["baseline_tolerance"]).astype(float)
    both["tolerance"] = tolerance
    for side in ("baseline", "candidate"):
        both[f"{side}_margin"] = sign * (both[f"{side}_median"].astype(float) - tolerance)
    both["change"] = both["candidate_median"] - both["baseline_median"]
    both["direction"] = _by_rule(both)
    return both[SLOPE_COLUMNS]


def _by_rule(both: pd.DataFrame) -> np.ndarray:
    """improved / worsened / WITHIN per slope row, by the review's rules (db.review.rules.judge's, on one figure)."""
    rules = [RULES[m] for m in both["metric"]]
    kind = np.array([r.kind.value for r in rules], dtype=object)
    b = both["baseline_median"].to_numpy(dtype=float)
    c = both["candidate_median"].to_numpy(dtype=float)
    drop = np.array([r.drop if r.drop is not None else np.nan for r in rules], dtype=float)
    factor = np.array([r.factor if r.factor is not None else np.nan for r in rules], dtype=float)
    frame = pd.DataFrame(
        {
            "rounding": both["candidate_rounding"].fillna(both["baseline_rounding"]),
            "tolerance": both["tolerance"],
            "candidate_passed": ~both["candidate_passed"].eq(False).to_numpy(dtype=bool, na_value=False),
        }
    )
    worse, better = beyond_rule(kind, b, c, drop, factor, rounding_jitter(frame, kind, b, c))
    broke = both["baseline_passed"].eq(True).to_numpy(dtype=bool, na_value=False) & both["candidate_passed"].eq(
        False
    ).to_numpy(dtype=bool, na_value=False)
    return np.where(broke | worse, WORSENED, np.where(better, IMPROVED, WITHIN))


SLOPE_COLUMNS = [
    "case",
    "machine_name",
    "metric",
    "baseline_median",
    "candidate_median",
    "change",
    "unit",
    "tolerance",
    "baseline_margin",
    "candidate_margin",
    "direction",
    "baseline_verdict",
    "candidate_verdict",
    "workload",
    "dtype",
    "compile",
    "case_key",
]


# the op_time records of cases (machine, workload, case, dtype, compile) with a failed correctness record: all
# a faster-but-wrong answer can use (reading every op_time record took a 2.5 M-result store to 6.4 GB)
_FAILED_CASES = (
    "EXISTS (SELECT 1 FROM results f JOIN runs fr ON fr.run_id = f.run_id WHERE f.passed = false"
    " AND f.metric IN ({metrics}) AND f.workload = r.workload AND f.case_key = r.case_key"
    " AND f.dtype = r.dtype AND f.compile = r.compile AND fr.machine_name = ru.machine_name)"
).format(metrics=", ".join(f"'{m}'" for m in CORRECTNESS_METRICS))


def faster_but_wrong(engine: Engine, split_tag: str | None = None, records: pd.DataFrame | None = None) -> pd.DataFrame:
    """Cases whose op_time improved vs the previous build (same machine) while that build's correctness failed:
    one row per (case, build), however many runs repeated it and however many correctness metrics failed (they
    are listed together in `failed_metrics` / `failed_figures`). `records`: correctness(engine, split_tag), when
    the caller has read it. Reads only the op_time records of cases that failed somewhere."""
    times = split_builds(results(engine, metrics=["op_time"], where=_FAILED_CASES), split_tag)
    times = times[times["status"].isin(["ok", "fallback"])]
    per_build = (
        times.groupby(_CASE + ["build"], as_index=False, dropna=False)
        .agg(median=("median", "median"), started_at=("started_at", "min"), runs=("run_id", "nunique"))
        .sort_values("started_at")
    )  # a build's repeats are one point: its previous build is another build
    per_build["previous_µs"] = per_build.groupby(_CASE, dropna=False)["median"].shift(1)
    per_build["previous_build"] = per_build.groupby(_CASE, dropna=False)["build"].shift(1)
    # faster as a review would call it: beyond its default bound (a 0.2 % move is noise, not "faster")
    improved = per_build[per_build["median"] * (1.0 + DEFAULT_THRESHOLD) < per_build["previous_µs"]]
    failed = correctness(engine, split_tag) if records is None else records
    failed = failed[failed["verdict"] == "failed"].sort_values("metric")
    failed["figure"] = [
        f"{m} {format_value(v, u)} (tolerance {format_value(t, u)})"
        for m, v, u, t in failed[["metric", "median", "unit", "tolerance"]].itertuples(index=False)
    ]
    failed = failed.groupby(_CASE + ["build"], as_index=False, dropna=False).agg(
        failed_metrics=("metric", lambda m: ", ".join(dict.fromkeys(m))),
        failed_figures=("figure", lambda f: "; ".join(dict.fromkeys(f))),
    )
    if failed.empty:  # no failed record (e.g. a store of op_time only): its empty frame's dtypes cannot merge
        failed = failed.astype({c: improved[c].dtype for c in _CASE + ["build"]})
    joined = improved.merge(failed, on=_CASE + ["build"])
    joined["speedup_vs_previous"] = joined["previous_µs"] / joined["median"]
    joined["case"] = case_names(joined)  # people read the name; the raw keys stay, pinned last
    return joined[
        [
            "case",
            "machine_name",
            "build",
            "previous_build",
            "median",
            "previous_µs",
            "speedup_vs_previous",
            "runs",
            "failed_metrics",
            "failed_figures",
            "workload",
            "case_key",
            "dtype",
            "compile",
        ]
    ].rename(columns={"median": "op_time_µs"})


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
    builds: list[str]  # builds with records of `metric`, oldest version first
    baseline: str  # the slope's sides (default: the latest stable build vs the newest rc or nightly after it)
    candidate: str
    slopes: pd.DataFrame  # per machine and case, baseline → candidate with margins over the tolerance
    counts: dict  # improved / worsened / within-its-rule cases of the slope (the rule Regressions uses)
    empty: str = ""  # why the slope compares nothing, when it does not


def correctness_view(engine: Engine, params: Params) -> Correctness:
    """The Correctness page and GET /api/v1/correctness."""
    p = only(params, PARAMS)
    metric = one_of("metric", p["metric"] or "psnr_vs_cpu", CORRECTNESS_METRICS)
    split = p["split_tag"] or None
    records = correctness(engine, split)
    shown = records[records["metric"] == metric].drop(columns=["started_at"])
    ordered = shown.sort_values("build_order").drop_duplicates("build")
    builds, channels = ordered["build"].tolist(), ordered["channel"].tolist()
    first, last = default_pair(builds, channels)
    baseline = build_choice("baseline", p["baseline"], builds) if p["baseline"] else first
    candidate = build_choice("candidate", p["candidate"], builds) if p["candidate"] else last
    same = bool(baseline) and baseline == candidate  # a build against itself: every case "within its rule"
    slopes = correctness_slopes(shown, baseline, candidate) if not same else pd.DataFrame(columns=SLOPE_COLUMNS)
    counts = {d: int((slopes["direction"] == d).sum()) for d in SLOPE_DIRECTIONS}
    empty = (
        f"Baseline and candidate are the same build ({baseline}): nothing to compare. {NEXT_BUILD}"
        if same
        else f"No case has a {metric} record on both {baseline} and {candidate} (same machine): nothing to compare."
        if slopes.empty
        else ""
    )
    return Correctness(
        p["split_tag"],
        metric,
        sorted(set(records["metric"])),
        shown.drop(columns=["channel", "build_order"]),
        faster_but_wrong(engine, split, records),
        builds,
        baseline,
        candidate,
        slopes,
        counts,
        empty,
    )
