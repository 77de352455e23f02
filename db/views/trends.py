"""One metric of one case over builds, per chip, ordered by version then nightly date, with change points.

A point is a (chip, build): the median of every ok sample of that case on machines of that chip (pooled across
machines of one chip, explicitly: `machines` says how many). Change points: db/changepoints.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine

from bundle.builds import build_sort_key
from bundle.metrics import METRICS
from db.stats.changepoints import change_points
from db.store.read import read_frame
from db.views.params import Params, one_of, only

# the case shown when the URL names none: the seeded/quick softmax op time
DEFAULTS = {"workload": "softmax", "case_key": '{"rows":1,"vocab":128256}', "dtype": "float32", "compile": "eager",
            "metric": "op_time"}

_SQL = """
SELECT coalesce(ru.chip, 'unknown chip: ' || ru.machine_name) AS chip, ru.device_type AS device, ru.torch_version,
       min(ru.nightly_date) AS nightly_date, any_value(r.unit) AS unit,
       quantile_cont(s, 0.5) AS median, quantile_cont(s, 0.25) AS p25, quantile_cont(s, 0.75) AS p75,
       count(*) AS n, count(DISTINCT r.run_id) AS runs, count(DISTINCT ru.machine_name) AS machines
FROM results r JOIN runs ru ON ru.run_id = r.run_id, unnest(r.samples) AS u(s)
WHERE r.status = 'ok' AND r.workload = ? AND r.case_key = ? AND r.dtype = ? AND r.compile = ? AND r.metric = ?
GROUP BY ALL"""


def trend(engine: Engine, workload: str, case_key: str, dtype: str, compile_mode: str, metric: str) -> pd.DataFrame:
    points = read_frame(engine, _SQL, [workload, case_key, dtype, compile_mode, metric])
    if points.empty:
        return points.assign(order=[], change_point=[])
    points["order"] = [build_sort_key(v, d) for v, d in zip(points.torch_version, points.nightly_date)]
    frames = []
    for _, series in points.sort_values("order").groupby(["chip", "device"], sort=True):
        series = series.reset_index(drop=True)
        cuts = set(change_points(series["median"].tolist()))
        frames.append(series.assign(position=range(len(series)), change_point=[i in cuts for i in range(len(series))]))
    return pd.concat(frames, ignore_index=True).drop(columns=["order"])


@dataclass(frozen=True)
class Trend:
    case: dict[str, str]  # workload, case_key, dtype, compile, metric
    points: pd.DataFrame  # one row per (chip, build): median, p25, p75 in `unit`, n, runs, machines, change_point


def trend_view(engine: Engine, params: Params) -> Trend:
    """The Trends page and GET /api/v1/trends: a parameter left empty takes its DEFAULTS value."""
    case = {k: v or DEFAULTS[k] for k, v in only(params, DEFAULTS).items()}
    one_of("metric", case["metric"], METRICS)
    return Trend(case, trend(engine, case["workload"], case["case_key"], case["dtype"], case["compile"], case["metric"]))
