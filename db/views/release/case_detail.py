"""One compared case, opened from Compare: the runs behind each side with their provenance (machine, chip, build,
OS, time) and how many samples each gave, and the link to the case's trend over builds. The samples themselves
come from the comparison (ComparisonResult.case_samples), the same ones its statistics used."""

from __future__ import annotations

from typing import Mapping

import pandas as pd
from sqlalchemy import Engine

from db.query.compare.pivot import scope_sql
from db.query.read import read_frame
from db.review.comparison import CompareQuery
from db.views.browse.trends import FIELDS, trend_url

COLUMNS = [
    "side",
    "machine_name",
    "chip",
    "gpu_cores",
    "torch_version",
    "channel",
    "git_hash",
    "os",
    "os_version",
    "started_at",
    "status",
    "n_samples",
    "message",
    "run_id",
]

_SQL = """
WITH side_runs AS ({runs})
SELECT s.side, ru.machine_name, ru.chip, ru.gpu_cores, ru.torch_version, ru.channel, ru.git_hash, ru.os,
       ru.os_version, ru.started_at, r.status, len(r.samples) AS n_samples, r.message, ru.run_id
FROM side_runs s JOIN runs ru ON ru.run_id = s.run_id JOIN results r ON r.run_seq = ru.run_seq
WHERE {scope} = ? AND ru.device_type = ? AND r.workload = ? AND r.case_key = ? AND r.dtype = ? AND r.compile = ?
  AND r.metric = ?
ORDER BY s.side, ru.started_at, ru.run_id"""


def case_provenance(engine: Engine, query: CompareQuery, case: Mapping[str, str]) -> pd.DataFrame:
    """Every result of `case` (its KEY fields: scope, device, workload, case_key, dtype, compile, metric) on each
    side's runs, baseline first, oldest first, with the run's provenance."""
    runs, params = [], []
    for side, selector in zip(("baseline", "candidate"), query.selectors()):
        sql, args = selector.run_ids_sql()
        runs.append(f"SELECT '{side}' AS side, run_id FROM ({sql})")
        params += args
    sql = _SQL.format(runs=" UNION ALL ".join(runs), scope=scope_sql(query.scope))
    keys = [str(case[k]) for k in ("scope", "device", "workload", "case_key", "dtype", "compile", "metric")]
    found = read_frame(engine, sql, params + keys)
    return found[COLUMNS]


def case_trend_url(case: Mapping[str, str]) -> str:
    """The Trends page of this case (relative to the dashboard's root)."""
    return trend_url(*(str(case[f]) for f in FIELDS))
