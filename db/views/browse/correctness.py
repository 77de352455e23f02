"""Correctness per case across builds, and the "faster but wrong" flag.

A case is faster but wrong when the review of the previous build on the same machine against this one calls its
op time better (db.views.browse.judged_rows: its test and bound, as Compare calls it) while this build's correctness
record failed its tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.case_names import case_names
from bundle.metrics import METRICS, RULES, Better
from db.query.browse import CORRECTNESS_METRICS, results, runs_with, split_builds, stored_values
from db.query.params import Params, build_choice, one_of, only
from db.review.cases.columns import BETTER, WORSE
from db.review.cases.wording import format_value
from db.views.browse.judged_rows import judged_rows, runs_selector
from db.views.browse.memory import memory_builds
from db.views.defaults import default_pair
from db.views.empty_reason import same_build

_CASE = ["machine_name", "workload", "case_key", "dtype", "compile"]


PARAMS = ("split_tag", "metric", "baseline", "candidate")  # URL parameters (page and twin; api/openapi.py)
CASE_PARAMS = ("workload", "case_key", "dtype", "compile")  # one case (a card's link): every machine's slope of it
PARAMS += CASE_PARAMS


def correctness(
    engine: Engine,
    split_tag: str | None = None,
    metrics: list[str] | None = None,
    run_ids: list[str] | None = None,
    where: str = "",
) -> pd.DataFrame:
    """PSNR (dB) and max error (1) records with their tolerance and verdict, per case and build: of `metrics`
    (default every correctness metric) and `run_ids` (default every run) where `where` (SQL on results r) holds."""
    frame = split_builds(results(engine, run_ids, metrics or CORRECTNESS_METRICS, where), split_tag)
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
    """Each record's build's place in version order (db.views.browse.memory.memory_builds: nightlies by date)."""
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


def correctness_slopes(
    engine: Engine, records: pd.DataFrame, baseline: str, candidate: str, metric: str
) -> pd.DataFrame:
    """Per machine and case: the baseline build's figure beside the candidate's, each as its margin over the
    tolerance (in the metric's unit; > 0 passes, so one tolerance line at 0 serves every case), and whether the
    case improved, worsened or stayed within its rule — the review's own figures and direction
    (db.views.browse.judged_rows: Compare's medians and the rule Regressions judges by, RULE_WORDS). `records`: the metric's
    records with their build labels and runs."""
    if records.empty or baseline not in set(records["build"]) or candidate not in set(records["build"]):
        return pd.DataFrame(columns=SLOPE_COLUMNS)
    rows, _ = judged_rows(engine, runs_selector(records, baseline), runs_selector(records, candidate), [metric])
    if rows.empty:
        return pd.DataFrame(columns=SLOPE_COLUMNS)
    higher = np.array([METRICS[m].better is Better.higher for m in rows.metric], dtype=bool)
    sign = np.where(higher, 1.0, -1.0)
    tolerance = rows.tolerance.astype(float)
    both = pd.DataFrame({"machine_name": rows.scope, **{k: rows[k] for k in ("metric", "unit")}})
    both["baseline_median"], both["candidate_median"] = rows.baseline_median, rows.candidate_median
    both["tolerance"] = tolerance
    for side in ("baseline", "candidate"):
        both[f"{side}_margin"] = sign * (both[f"{side}_median"].astype(float) - tolerance)
        both[f"{side}_verdict"] = [_verdict(p, "ok") for p in rows[f"{side}_passed"]]
    both["change"] = both.candidate_median - both.baseline_median
    both["direction"] = rows.direction.map({BETTER: IMPROVED, WORSE: WORSENED}).fillna(WITHIN).to_numpy()
    for key in ("workload", "dtype", "compile", "case_key"):
        both[key] = rows[key]
    both["case"] = case_names(both)
    return both[SLOPE_COLUMNS].reset_index(drop=True)


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


# a correctness record that failed its tolerance (verdict "failed": an ok or fallback figure, passed false)
_FAILED = "r.passed = false AND r.status IN ('ok', 'fallback')"


def faster_but_wrong(engine: Engine, split_tag: str | None = None) -> pd.DataFrame:
    """Cases whose op_time improved vs the previous build (same machine) while that build's correctness failed:
    one row per (case, build), however many runs repeated it and however many correctness metrics failed (they
    are listed together in `failed_metrics` / `failed_figures`). Reads only the failed correctness records and the
    op_time records of cases that failed somewhere, and reviews only the builds that failed."""
    times = split_builds(results(engine, metrics=["op_time"], where=_FAILED_CASES), split_tag)
    times = times[times["status"].isin(["ok", "fallback"])]
    per_build = (
        times.groupby(_CASE + ["build"], as_index=False, dropna=False)
        .agg(median=("median", "median"), started_at=("started_at", "min"), runs=("run_id", "nunique"))
        .sort_values("started_at")
    )  # a build's repeats are one point: its previous build is another build
    per_build["previous_build"] = per_build.groupby(_CASE, dropna=False)["build"].shift(1)
    failed = correctness(engine, split_tag, where=_FAILED)
    failed = failed[failed["verdict"] == "failed"].sort_values("metric")
    improved = _faster(engine, times, per_build, set(failed["build"]))
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


def _faster(engine: Engine, times: pd.DataFrame, per_build: pd.DataFrame, failed: set[str]) -> pd.DataFrame:
    """The rows of `per_build` whose op time the review calls better than the previous build's on that machine
    (db.views.browse.judged_rows: Compare's test and bound, its figures: previous_µs, median, speedup_vs_previous), one
    review per (previous, build) pair whose build is one of `failed` (the others cannot be faster but wrong)."""
    found = []
    pairs = per_build[["previous_build", "build"]].dropna().drop_duplicates()
    for previous, build in pairs[pairs["build"].isin(failed)].itertuples(index=False):
        rows, _ = judged_rows(engine, runs_selector(times, previous), runs_selector(times, build), ["op_time"])
        better = rows[rows.direction == BETTER].rename(columns={"scope": "machine_name"})
        # a dict, not keywords: Python reads the keyword previous_µs as previous_μs (NFKC: µ is the Greek mu)
        better = better.assign(
            **{"build": build, "previous_build": previous, "previous_µs": better.baseline_median},
            speedup_vs_previous=better.oriented_ratio,
        )
        found.append(better[_CASE + ["build", "previous_build", "previous_µs", "speedup_vs_previous"]])
    if not found:
        return per_build.iloc[:0].assign(**{"previous_µs": [], "speedup_vs_previous": []})
    faster = pd.concat(found, ignore_index=True)
    return per_build.merge(faster, on=_CASE + ["build", "previous_build"])


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
    records: pd.DataFrame  # that metric's records of the two builds compared: median in `unit`, tolerance, verdict
    faster_but_wrong: pd.DataFrame  # op_time improved vs the previous build while correctness failed (any metric)
    builds: list[str]  # builds with records of `metric`, oldest version first
    baseline: str  # the slope's sides (default: the latest stable build vs the newest rc or nightly after it)
    candidate: str
    slopes: pd.DataFrame  # per machine and case, baseline → candidate with margins over the tolerance
    counts: dict  # improved / worsened / within-its-rule cases of the slope (the rule Regressions uses)
    empty: str = ""  # why the slope compares nothing, when it does not
    case: str = ""  # the one case asked for (its name), whose rows alone `slopes` and `records` hold; "": every case
    cases: int = 0  # the slope's cases before that filter (what "all cases" shows)


def correctness_view(engine: Engine, params: Params) -> Correctness:
    """The Correctness page and GET /api/v1/correctness."""
    p = only(params, PARAMS)
    metric = one_of("metric", p["metric"] or "psnr_vs_cpu", CORRECTNESS_METRICS)
    split = p["split_tag"] or None
    # the builds in the version order of every correctness record's builds (memory_builds), those with `metric`
    order, _ = memory_builds(runs_with(engine, CORRECTNESS_METRICS, split))
    mine = runs_with(engine, [metric], split)
    firsts = mine.drop_duplicates("build").set_index("build")["channel"]
    builds = [b for b in order if b in firsts.index]
    channels = [firsts[b] for b in builds]
    first, last = default_pair(builds, channels)
    baseline = build_choice("baseline", p["baseline"], builds) if p["baseline"] else first
    candidate = build_choice("candidate", p["candidate"], builds) if p["candidate"] else last
    # only the compared builds' records: every build's made the answer grow with the store (past 6 GB on 10 M)
    compared = mine.run_id[mine.build.isin([baseline, candidate])].tolist()
    shown = correctness(engine, split, [metric], compared).drop(columns=["started_at"])
    same = bool(baseline) and baseline == candidate  # a build against itself: every case "within its rule"
    slopes = (
        correctness_slopes(engine, shown, baseline, candidate, metric)
        if not same
        else pd.DataFrame(columns=SLOPE_COLUMNS)
    )
    every = len(slopes)
    asked = {k: p[k] for k in CASE_PARAMS if p[k]}
    name = ""
    if asked:  # a card's link: the case's rows, on every machine (a chip's card names the case, not the machine)
        slopes, shown = _one_case(slopes, asked), _one_case(shown, asked)
        named = {"workload", "case_key"} <= set(asked)
        name = case_names(pd.DataFrame([asked])).iloc[0] if named else ", ".join(f"{k}={v}" for k, v in asked.items())
    counts = {d: int((slopes["direction"] == d).sum()) for d in SLOPE_DIRECTIONS}
    where = name or "No case"
    empty = (
        same_build(baseline)
        if same
        else f"{where} has no {metric} record on both {baseline} and {candidate} (same machine): nothing to compare."
        if slopes.empty
        else ""
    )
    return Correctness(
        p["split_tag"],
        metric,
        stored_values(engine, "metric", CORRECTNESS_METRICS),
        shown.drop(columns=["channel", "build_order"]),
        faster_but_wrong(engine, split),
        builds,
        baseline,
        candidate,
        slopes,
        counts,
        empty,
        name,
        every,
    )


def _one_case(frame: pd.DataFrame, asked: dict[str, str]) -> pd.DataFrame:
    """The rows of `frame` of the case asked for (its given fields, as the link carries them: text)."""
    hit = np.ones(len(frame), dtype=bool)
    for key, value in asked.items():
        hit &= (frame[key].astype(str) == value).to_numpy()
    return frame[hit].reset_index(drop=True)
