"""One metric of one case over builds, per chip, ordered by version then nightly date, with change points.

A point is a (chip, build): the figure chip-scope Compare gives that build for the case — the quartiles of the ok
samples of its runs on machines of that chip (pooled across machines of one chip, explicitly: `machines` says
how many), its contended worker processes left out while enough clean ones remain (db.stats.significance
.clean_quartiles, the one function both read); `contended_processes` of `timed_processes` says how many were left
out, `contended` that too few clean ones remained (the point is then every process's, as Compare's side is). The
chip is named as chip-scope Compare names it (its GPU core count included). Builds are placed in one version
order shared by every chip (bundle.builds). Change points: db/stats/changepoints.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable
from urllib.parse import quote_plus

import numpy as np
import pandas as pd
import pyarrow as pa
from sqlalchemy import Engine

from bundle.builds import build_sort_key
from bundle.case_names import case_name
from bundle.metrics import METRICS
from db.errors import Problem, StoreError
from db.query.compare.pivot import CHIP_SCOPE
from db.query.params import Params, one_of, only
from db.query.read import read_arrow, read_frame
from db.stats.changepoints import change_points
from db.stats.lists import SampleLists
from db.stats.significance import clean_quartiles

FIELDS = ("workload", "case_key", "dtype", "compile", "metric")  # the URL parameters of a trend, in menu order

# every ok result of the case, a run a row, grouped by (chip, device, build) in run order
_SQL = f"""
SELECT {CHIP_SCOPE} AS chip, ru.device_type AS device, ru.torch_version, ru.nightly_date, r.unit,
       ru.run_id, ru.machine_name, ru.started_at, r.samples, r.processes, r.contention
FROM results r JOIN runs ru ON ru.run_seq = r.run_seq
WHERE r.status = 'ok' AND ru.retracted_at IS NULL AND r.workload = ? AND r.case_key = ? AND r.dtype = ?
  AND r.compile = ? AND r.metric = ?
ORDER BY chip, device, ru.torch_version, ru.started_at, ru.run_id"""
POINT = ["chip", "device", "torch_version"]
POINT_COLUMNS = POINT + ["nightly_date", "unit", "median", "p25", "p75", "n", "runs", "machines"]
POINT_COLUMNS += ["contended_processes", "timed_processes", "contended", "first_run", "last_run"]


# each build's first run in the store (any case, machine or chip; retracted runs left out)
_FIRST_SEEN = """
SELECT torch_version, min(started_at) AS first_seen, count(*) AS store_runs FROM runs
WHERE retracted_at IS NULL GROUP BY torch_version"""
ANNOTATION_COLUMNS = ["torch_version", "first_seen", "store_runs", "label"]
_CHOICES = "SELECT DISTINCT workload, case_key, dtype, compile, metric FROM results WHERE status = 'ok'"


def trend(engine: Engine, workload: str, case_key: str, dtype: str, compile_mode: str, metric: str) -> pd.DataFrame:
    points = trend_points(read_arrow(engine, _SQL, [workload, case_key, dtype, compile_mode, metric]))
    if points.empty:
        return points.assign(build_rank=[], position=[], change_point=[])
    keys = [build_sort_key(v, d) for v, d in zip(points.torch_version, points.nightly_date)]
    ranks = {key: i for i, key in enumerate(sorted(set(keys)))}
    points["build_rank"] = [ranks[k] for k in keys]  # one version order for every chip
    frames = []
    for _, series in points.sort_values("build_rank").groupby(["chip", "device"], sort=True):
        series = series.reset_index(drop=True)
        cuts = set(change_points(series["median"].tolist()))
        frames.append(series.assign(position=range(len(series)), change_point=[i in cuts for i in range(len(series))]))
    return pd.concat(frames, ignore_index=True)


def trend_points(runs: pa.Table) -> pd.DataFrame:
    """One point per (chip, device, build) of a case's ok results (one row per run, in POINT order)."""
    if not runs.num_rows:
        return pd.DataFrame(columns=POINT_COLUMNS)
    meta = runs.drop_columns(["samples", "processes", "contention"]).to_pandas()
    group = meta.groupby(POINT, sort=False).ngroup().to_numpy()
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])  # rows come grouped (the SQL's order)
    offsets = pa.array(np.append(starts, len(group)).astype(np.int32))
    side = [pa.ListArray.from_arrays(offsets, runs.column(c).combine_chunks()) for c in ("samples", "processes")]
    side.append(pa.ListArray.from_arrays(offsets, runs.column("contention").combine_chunks()))
    clean, quartiles = clean_quartiles(SampleLists.from_arrow(side[0]), side[1], side[2])
    out = meta.iloc[starts][POINT + ["unit"]].reset_index(drop=True)
    by = meta.groupby(group, sort=False)
    out["nightly_date"] = by.nightly_date.min().to_numpy()
    out["median"], out["p25"], out["p75"] = quartiles.median, quartiles.p25, quartiles.p75
    out["n"] = clean.lists.counts
    out["runs"], out["machines"] = by.run_id.nunique().to_numpy(), by.machine_name.nunique().to_numpy()
    out["contended_processes"], out["timed_processes"], out["contended"] = clean.hot, clean.timed, clean.contended
    out["first_run"], out["last_run"] = by.started_at.min().to_numpy(), by.started_at.max().to_numpy()
    return out[POINT_COLUMNS]


def build_annotations(engine: Engine, points: pd.DataFrame) -> pd.DataFrame:
    """Where each build of the plotted series first appeared in the store, for the Trends chart's annotations (a
    rule and a label at the build, as a time-series dashboard marks a deploy): one row per build of `points` whose
    first run — of any case, on any machine — falls within the series' time range (its first to its last run), so
    a build already in the store before this case was measured is not marked as new here."""
    if points.empty:
        return pd.DataFrame(columns=ANNOTATION_COLUMNS)
    seen = read_frame(engine, _FIRST_SEEN)
    start, end = points["first_run"].min(), points["last_run"].max()
    seen = seen[seen.torch_version.isin(set(points.torch_version)) & seen.first_seen.between(start, end)]
    seen = seen.sort_values(["first_seen", "torch_version"]).reset_index(drop=True)
    seen["label"] = [f"{v} first run {t:%Y-%m-%d %H:%M} UTC" for v, t in zip(seen.torch_version, seen.first_seen)]
    return seen[ANNOTATION_COLUMNS]


def trend_choices(engine: Engine) -> pd.DataFrame:
    """Every (workload, case, dtype, compile, metric) with an ok result, for the Trends menus; `case` is the
    case's name without dtype and compile (those have their own menus)."""
    found = read_frame(engine, _CHOICES + " ORDER BY workload, case_key, dtype, compile, metric")
    pairs = found[["workload", "case_key"]].drop_duplicates()
    names = {(w, k): case_name(w, k, "", "eager") for w, k in pairs.itertuples(index=False)}
    found["case"] = [names[(w, k)] for w, k in found[["workload", "case_key"]].itertuples(index=False)]
    return found


def trend_url(workload: str, case_key: str, dtype: str, compile_mode: str, metric: str) -> str:
    """The Trends page's link for one case and metric (relative: a sibling of the page that links to it)."""
    return trend_urls([(workload, case_key, dtype, compile_mode, metric)])[0]


def trend_urls(cases: Iterable[tuple[str, str, str, str, str]]) -> list[str]:
    """trend_url of each (workload, case_key, dtype, compile, metric), as urlencode writes it; each distinct value
    quoted once (a 2,000-row table has a few dozen: quoting 10,000 took ~50 ms)."""
    quoted: dict[str, str] = {}

    def q(value: str) -> str:
        found = quoted.get(value)
        return found if found is not None else quoted.setdefault(value, quote_plus(str(value)))

    keys = [quote_plus(k) + "=" for k in FIELDS]
    return ["trends?" + "&".join(k + q(v) for k, v in zip(keys, case)) for case in cases]


@dataclass(frozen=True)
class Trend:
    case: dict[str, str]  # workload, case_key, dtype, compile, metric ({} when nothing is stored)
    name: str  # the case's name (bundle.case_names)
    menus: dict[str, list[str]]  # per parameter, the stored options the choices before it leave
    points: pd.DataFrame  # one row per (chip, build): median, p25, p75 in `unit`, n, runs, machines, change_point
    annotations: pd.DataFrame  # the series' builds that first appeared in its time range (build_annotations)


def resolve_case(choices: pd.DataFrame, params: Params, lenient: Iterable[str] = ()) -> tuple[dict, dict]:
    """Each parameter in menu order: empty takes the first stored option the earlier choices leave (op_time for
    the metric where it has results); a value with no stored ok results is a 404 naming it, or, for a parameter in
    `lenient` (a page menu whose earlier menu just changed), the default. Returns (case, menus)."""
    case, menus, rows, lenient = {}, {}, choices, set(lenient)
    for key in FIELDS:
        options = list(dict.fromkeys(rows[key]))
        menus[key] = options
        if not options:
            return {}, menus
        default = "op_time" if key == "metric" and "op_time" in options else options[0]
        value = params.get(key) or default
        if key == "metric" and value not in options and key not in lenient:
            one_of("metric", value, METRICS)  # an unknown metric is named with the registry's list
        if value not in options:
            if key not in lenient:
                raise StoreError(
                    404,
                    f"{key}: no stored ok results for {value[:120]!r} with the choices before it; "
                    f"pick one of the {len(options)} in its menu",
                    [Problem(key, "must be a stored value; see the Trends page's menus")],
                )
            value = default
        case[key] = value
        rows = rows[rows[key] == value]
    return case, menus


def trend_view(engine: Engine, params: Params) -> Trend:
    """The Trends page and GET /api/v1/trends: parameters resolved in menu order (resolve_case)."""
    case, menus = resolve_case(trend_choices(engine), only(params, FIELDS))
    if not case:
        return Trend({}, "", menus, trend(engine, "", "", "", "", ""), pd.DataFrame(columns=ANNOTATION_COLUMNS))
    name = case_name(case["workload"], case["case_key"], case["dtype"], case["compile"])
    points = trend(engine, *(case[k] for k in FIELDS))
    return Trend(case, name, menus, points, build_annotations(engine, points))
