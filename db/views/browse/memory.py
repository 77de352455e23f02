"""Memory figures per machine, case and build: driver total ⊇ allocator reserved ⊇ live tensors peaks, in GiB.

Every figure belongs to one machine and one case: a machine's panel compares the baseline build's figure with the
candidate's for the same case, and nothing is ever added across machines or cases. Several runs of one build on
one machine give the review's figure: the median of their pooled samples, as Compare shows it (`runs` says how
many), its change and direction by the memory rule (db.views.browse.judged_rows). A figure a device cannot give stays
"unavailable" with its reason; an out-of-memory error is marked OOM; neither is ever shown as 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine

from bundle.builds import build_sort_key
from bundle.case_names import case_names
from bundle.units import convert
from db.query.browse import MEMORY_METRICS, results, runs_with, split_builds, stored_values
from db.query.params import Params, build_choice, only
from db.views.browse.judged_rows import judged_rows, runs_selector
from db.views.defaults import default_pair

FIGURE_NAMES = {  # nested: the driver's total holds the allocator's reserved pool, which holds the live tensors
    "memory_driver_peak": "driver total peak",
    "memory_reserved_peak": "allocator reserved peak",
    "memory_allocated_peak": "live tensors peak",
    "memory_outside_allocator": "driver outside allocator",
}
NESTED = list(FIGURE_NAMES.values())[:3]
NO_CHIP = "no chip recorded"
OOM = re.compile(r"out of memory|\boom\b", re.IGNORECASE)
_KEYS = ["workload", "dtype", "compile", "case_key"]
COMPARE_COLUMNS = [
    "machine",
    "chip",
    "case",
    "figure",
    "baseline_GiB",
    "candidate_GiB",
    "change",
    "direction",
    "verdict",
    "baseline",
    "candidate",
    "baseline_runs",
    "candidate_runs",
] + _KEYS


PARAMS = ("split_tag", "workload", "baseline", "candidate")  # URL parameters (page and twin; api/openapi.py)


def memory_long(engine: Engine, split_tag: str | None = None, run_ids: list[str] | None = None) -> pd.DataFrame:
    """One row per memory record (of `run_ids`, else of every run): machine, chip (never dropped when missing),
    case name, build, figure, median in GiB (None unless ok) and its state ("ok", "OOM: …", "unavailable: …")."""
    frame = split_builds(results(engine, run_ids=run_ids, metrics=MEMORY_METRICS), split_tag)
    frame["machine"] = frame["machine_name"]
    frame["chip"] = frame["chip"].where(frame["chip"].notna() & (frame["chip"] != ""), NO_CHIP)
    frame["case"] = case_names(frame)
    frame["figure"] = frame["metric"].map(FIGURE_NAMES)
    frame["GiB"] = [_gib(v, u, s) for v, u, s in frame[["median", "unit", "status"]].itertuples(index=False)]
    frame["state"] = [_state(s, m) for s, m in frame[["status", "message"]].itertuples(index=False)]
    return frame[
        [
            "machine",
            "chip",
            "case",
            "build",
            "channel",
            "torch_version",
            "nightly_date",
            "figure",
            "GiB",
            "state",
            "run_id",
        ]
        + _KEYS
    ]


def memory_builds(long: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The builds of `long` (records, or the runs holding them: db.query.browse.runs_with), oldest version first
    (bundle.builds order, nightlies by date), and their channels."""
    firsts = long.drop_duplicates("build")
    keys = [
        build_sort_key(v, None if pd.isna(d) else d)
        for v, d in firsts[["torch_version", "nightly_date"]].itertuples(index=False)
    ]
    ordered = [firsts.iloc[i] for i in sorted(range(len(keys)), key=lambda i: (keys[i], firsts["build"].iloc[i]))]
    return [r["build"] for r in ordered], [r["channel"] for r in ordered]


def memory_compare(
    engine: Engine, long: pd.DataFrame, baseline: str, candidate: str, workload: str = ""
) -> pd.DataFrame:
    """Per machine, case and figure: the baseline build's figure beside the candidate's, with the change — as the
    review judges them (db.views.browse.judged_rows: Compare's median of each side's pooled samples, its change words and
    its direction by the memory rule), never a sum; a side with no ok figure shows its state (OOM, unavailable,
    error) instead of a number."""
    if long.empty or baseline not in set(long["build"]) or candidate not in set(long["build"]):
        return pd.DataFrame(columns=COMPARE_COLUMNS)
    sides = (runs_selector(long, baseline), runs_selector(long, candidate))
    rows, unmatched = judged_rows(engine, *sides, MEMORY_METRICS, workload)
    compared = pd.DataFrame(
        {
            "machine": rows.scope,
            "metric": rows.metric,
            **{k: rows[k] for k in _KEYS},
            "baseline_GiB": [_gib(v, u, "ok") for v, u in zip(rows.baseline_median, rows.unit)],
            "candidate_GiB": [_gib(v, u, "ok") for v, u in zip(rows.candidate_median, rows.unit)],
            "change": rows.change.astype(str),
            "direction": rows.direction.astype(str),
            "verdict": rows.verdict.astype(str),
        }
    )
    missing = pd.DataFrame(
        {
            "machine": unmatched.scope,
            "metric": unmatched.metric,
            **{k: unmatched[k] for k in _KEYS},
            "baseline_GiB": [_gib(v, u, "ok") for v, u in zip(unmatched.baseline_median, unmatched.unit)],
            "candidate_GiB": [_gib(v, u, "ok") for v, u in zip(unmatched.candidate_median, unmatched.unit)],
            "change": "",
            "direction": "",
            "verdict": "",
        }
    )
    joined = pd.concat([compared, missing], ignore_index=True) if len(missing) else compared
    if joined.empty:
        return pd.DataFrame(columns=COMPARE_COLUMNS)
    joined[["baseline_GiB", "candidate_GiB"]] = joined[["baseline_GiB", "candidate_GiB"]].astype(float)  # None: NaN
    joined["figure"] = joined.metric.map(FIGURE_NAMES)
    joined["case"] = case_names(joined)
    chips = long.drop_duplicates("machine").set_index("machine")["chip"]
    joined["chip"] = joined.machine.map(chips).fillna(NO_CHIP)
    for side, label in (("baseline", baseline), ("candidate", candidate)):
        mine = long[long["build"] == label]
        states = mine.groupby(["machine", "figure"] + _KEYS, dropna=False).agg(
            runs=("run_id", "nunique"), states=("state", lambda v: "; ".join(sorted(set(v) - {"ok"})))
        )
        keyed = joined.set_index(["machine", "figure"] + _KEYS).index
        found = states.reindex(keyed)
        joined[f"{side}_runs"] = found["runs"].fillna(0).astype(int).to_numpy()
        text = [
            f"{g:.3f} GiB" if pd.notna(g) else (s if isinstance(s, str) and s else "no record")
            for g, s in zip(joined[f"{side}_GiB"], found["states"])
        ]
        joined[side] = text
    order = {name: i for i, name in enumerate(FIGURE_NAMES.values())}
    joined = joined.assign(_f=joined["figure"].map(order)).sort_values(["machine", "case", "_f"], kind="stable")
    return joined[COMPARE_COLUMNS].reset_index(drop=True)


@dataclass(frozen=True)
class Memory:
    split_tag: str  # "" when builds are not split by a tag
    workload: str  # "" for every workload
    workloads: list[str]  # every workload with memory records (what the page's workload picker offers)
    builds: list[str]  # every build with memory records, version order
    baseline: str  # the builds compared: by default the latest stable against the newest rc or nightly after it
    candidate: str
    # memory_long of the two builds compared: one row per record, GiB null unless ok (its state says why). Only
    # theirs: every build's records made the answer grow with the store (4 M rows, past 6 GB, on 10 M results)
    records: pd.DataFrame
    table: pd.DataFrame  # memory_compare: per machine, case and figure, baseline beside candidate


def memory_view(engine: Engine, params: Params) -> Memory:
    """The Memory page and GET /api/v1/memory: baseline and candidate are build labels (empty: the default pair).
    The builds and workloads are listed from the runs and a scan of the store; only the compared builds' records
    are read."""
    p = only(params, PARAMS)
    split = p["split_tag"] or None
    runs = runs_with(engine, MEMORY_METRICS, split)
    workloads = stored_values(engine, "workload", MEMORY_METRICS)
    builds, channels = memory_builds(runs)
    first, last = default_pair(builds, channels)
    baseline = build_choice("baseline", p["baseline"], builds) if p["baseline"] else first
    candidate = build_choice("candidate", p["candidate"], builds) if p["candidate"] else last
    long = memory_long(engine, split, runs.run_id[runs.build.isin([baseline, candidate])].tolist())
    if p["workload"]:
        long = long[long["workload"] == p["workload"]]
    return Memory(
        p["split_tag"],
        p["workload"],
        workloads,
        builds,
        baseline,
        candidate,
        long,
        memory_compare(engine, long, baseline, candidate, p["workload"]),
    )


def memory_panels(compared: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One (title, rows) panel per machine: "machine · chip"; machines without a chip keep their panel."""
    return [
        (f"{machine} · {chip}", rows.reset_index(drop=True))
        for (machine, chip), rows in compared.groupby(["machine", "chip"], sort=True, dropna=False)
    ]


def chart_rows(panel: pd.DataFrame) -> pd.DataFrame:
    """The nested peaks of a panel in long form for its chart: one bar per (case, figure, side), never summed;
    a side without a figure is kept with GiB empty and its state as the label (drawn as a mark, not a bar)."""
    nested = panel[panel["figure"].isin(NESTED)]
    long = pd.concat(
        [nested.assign(side=side, GiB=nested[f"{side}_GiB"], state=nested[side]) for side in ("baseline", "candidate")],
        ignore_index=True,
    )
    long["label"] = [
        f"{g:.2f}" if pd.notna(g) else s.split(":")[0] for g, s in long[["GiB", "state"]].itertuples(index=False)
    ]
    return long[["case", "figure", "side", "GiB", "state", "label", "change"]]


def _gib(value: float | None, unit: str, status: str) -> float | None:
    if status not in ("ok", "fallback") or value is None or pd.isna(value):
        return None
    return convert(float(value), unit, "GiB")


def _state(status: str, message: str | None) -> str:
    message = "" if message is None or pd.isna(message) else str(message)
    if status == "ok":
        return "ok"
    if status == "fallback":
        return "ok (cpu fallback)"
    if status == "error" and OOM.search(message):
        return f"OOM: {message}"
    return f"{status}: {message}" if message else status
