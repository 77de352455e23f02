"""The A/A noise model read from the store: one row per (chip, device, workload, metric, dtype, compile) with the
pair count and the 95th percentile of |log ratio| that DuckDB computed when the group's figures were last
recomputed (db.store.aa_pairs: pairs stored since are `pending`; quantile_cont, numpy's linear rule, the one db.stats.noise.noise_figure defines). Reading it
is a read of a few hundred rows, whatever the number of pairs. The chip is labelled as Compare's chip scope
labels it (chip and GPU cores; a machine without a chip stands for itself).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from sqlalchemy import Engine

from db.query.case_pairs import scope_sql
from db.store.read import read_frame, reader

KEY = ["chip", "device", "workload", "metric", "dtype", "compile"]
FILTERS = ("chip", "workload", "metric", "dtype", "compile")
_CHIP = scope_sql("chip")  # the one chip label: Compare's chip scope

_MODEL = f"""SELECT ru.group_id, {_CHIP} AS chip, ru.device_type AS device, ru.workload, ru.metric, ru.dtype, ru.compile,
    ru.pairs, ru.pending, ru.quantile_log, ru.sigma_log, ru.max_log
  FROM aa_noise ru WHERE ru.pairs > 0{{filters}}"""

# a machine's chip label, to find a machine-scope case's group (case_lookup)
_CHIPS = f"SELECT DISTINCT ru.machine_name AS scope, ru.device_type AS device, {_CHIP} AS chip FROM runs ru"


def noise_groups(engine: Engine, filters: dict[str, str] | None = None) -> pd.DataFrame:
    """The model's groups (group_id, KEY columns, pairs, pending, quantile_log, sigma_log, max_log), noisiest first.
    filters: exact values for FILTERS ('' or absent: any)."""
    sql, params = "", []
    for name, value in (filters or {}).items():
        if name not in FILTERS:
            raise ValueError(f"unknown noise filter {name}")
        if value:
            sql += f" AND {_CHIP} = ?" if name == "chip" else f" AND ru.{name} = ?"
            params.append(value)
    found = read_frame(engine, _MODEL.format(filters=sql), params)
    return found.sort_values(["quantile_log", *KEY], ascending=[False, *[True] * len(KEY)],
                             na_position="last").reset_index(drop=True)


# each case's A/A figures in one join: its chip's group (a machine-scope case's machine looked up by its chip label)
# and the case's own figures in that group; one row per key row, in its order. DuckDB joins the 10⁴–10⁵ keys of a
# review on a worker in a few ms: the same lookup in pandas, once per distinct key, took ~30 ms of the GIL.
_CASE_FIGURES = f"""SELECT g.pairs AS group_pairs, g.sigma_log, coalesce(c.pairs, 0) AS case_pairs,
    coalesce(c.sum_sq, 0.0) AS case_sum_sq
  FROM _noise_keys k
    LEFT JOIN (SELECT DISTINCT ON (scope) scope, chip FROM ({_CHIPS})) m ON {{machine}} AND m.scope = k.scope
    LEFT JOIN ({_MODEL.format(filters="")}) g ON g.chip = {{chip}} AND g.device = k.device AND
      g.workload = k.workload AND g.metric = k.metric AND g.dtype = k.dtype AND g.compile = k.compile
    LEFT JOIN aa_cases c ON c.group_id = g.group_id AND c.case_key = k.case_key
  ORDER BY k.row"""


def case_lookup(engine: Engine, keys: pa.Table, scope: str) -> pa.Table:
    """Per row of `keys` (scope, device, workload, case_key, dtype, compile, metric), in order: its group's pairs
    and sigma_log (null where its chip has no such group), its own case_pairs and case_sum_sq (0 where none).
    scope "machine": a key's scope is a machine, found in its chip's group; "chip": the scope is the chip label."""
    machine = scope == "machine"
    sql = _CASE_FIGURES.format(machine="true" if machine else "false", chip="m.chip" if machine else "k.scope")
    with reader(engine) as duck:
        duck.register("_noise_keys", keys.append_column("row", pa.array(np.arange(keys.num_rows))))
        try:
            found = duck.sql(sql).to_arrow_table()
        finally:
            duck.unregister("_noise_keys")
    if found.num_rows != keys.num_rows:  # one model group per chip label and key, one figure per group and case
        raise RuntimeError("the A/A lookup matched a case twice: aa_noise or aa_cases hold a key twice")
    return found


def aa_pair_count(engine: Engine) -> int:
    """Every stored A/A pair (those the figures rest on and those stored since)."""
    return int(read_frame(engine, "SELECT coalesce(sum(pairs + pending), 0) AS n FROM aa_noise").n.iloc[0])
