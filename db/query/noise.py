"""The A/A noise model read from the store: one row per (chip, device, workload, metric, dtype, compile) with the
pair count and the 95th percentile of |log ratio| that DuckDB computed when the group's figures were last
recomputed (db.store.derived.aa_pairs: pairs stored since are `pending`; quantile_cont, numpy's linear rule, the rule
db.stats.noise states). Reading it is a read of a few hundred rows, whatever the number of pairs. The chip is
labelled as Compare's chip scope labels it (chip and GPU cores; a machine without a chip stands for itself).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from db.query.compare.pivot import scope_sql
from db.query.key_codes import find_rows
from db.query.read import read_frame, reader

KEY = ["chip", "device", "workload", "metric", "dtype", "compile"]
FILTERS = ("chip", "workload", "metric", "dtype", "compile")
_CHIP = scope_sql("chip")  # the one chip label: Compare's chip scope

_MODEL = f"""SELECT ru.group_id, {_CHIP} AS chip, ru.device_type AS device, ru.workload, ru.metric, ru.dtype, ru.compile,
    ru.pairs, ru.pending, ru.quantile_log, ru.sigma_log, ru.max_log
  FROM aa_noise ru WHERE ru.pairs > 0{{filters}}"""


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
    return found.sort_values(
        ["quantile_log", *KEY], ascending=[False, *[True] * len(KEY)], na_position="last"
    ).reset_index(drop=True)


# a machine's one chip label (a machine-scope case's group is its chip's)
_MACHINE_CHIPS = f"""SELECT DISTINCT ON (scope) scope, chip FROM (SELECT DISTINCT ru.machine_name AS scope,
    ru.device_type AS device, {_CHIP} AS chip FROM runs ru)"""
_CASES = "SELECT group_id, case_key, pairs, sum_sq FROM aa_cases"


@dataclass(frozen=True)
class AAModel:
    """The A/A tables a review looks its cases up in, read whole (hundreds and thousands of rows): the model's
    groups with pairs, each case's own figures, and for machine scope each machine's chip label."""

    groups: pa.Table  # group_id, chip, device, workload, metric, dtype, compile, pairs, sigma_log, …
    cases: pa.Table  # group_id, case_key, pairs, sum_sq
    chips: pa.Table | None  # scope (machine), chip; None for chip scope (the scope is the chip label)


@dataclass(frozen=True)
class CaseFigures:
    """The A/A figures of a review's cases: per key row the row of its group in `groups` and of its own figures
    in `cases` (-1: none); `groups` (group_id, workload, pairs, sigma_log: the model's rows with pairs) and
    `cases` (pairs, sum_sq) are the small tables those rows index."""

    group: np.ndarray
    case: np.ndarray
    groups: pa.Table
    cases: pa.Table


def read_model(engine: Engine, scope: str) -> AAModel:
    """The A/A tables, in one snapshot; scope "machine" adds each machine's chip label."""
    with reader(engine) as duck:
        duck.begin()
        try:
            return AAModel(
                duck.sql(_MODEL.format(filters="")).to_arrow_table(),
                duck.sql(_CASES).to_arrow_table(),
                duck.sql(_MACHINE_CHIPS).to_arrow_table() if scope == "machine" else None,
            )
        finally:
            duck.rollback()


def case_lookup(model: AAModel, keys: pa.Table) -> CaseFigures:
    """For each row of `keys` (scope, device, workload, case_key, dtype, compile, metric): its chip's group of the
    A/A model (chip, device, workload, metric, dtype, compile) and the case's own figures in that group. A
    machine-scope key's machine is found in its chip's group (model.chips); a chip-scope key's scope is the chip.

    Matched in Arrow and numpy (db.query.key_codes.find_rows): a join in DuckDB spent most of its ~20 ms scanning
    the 10⁴–10⁵ keys of a review handed to it."""
    groups, cases, chips = model.groups, model.cases, model.chips
    chip = keys["scope"] if chips is None else chips["chip"].take(pc.index_in(keys["scope"], value_set=chips["scope"]))
    group = find_rows([chip] + [keys[name] for name in KEY[1:]], [groups[name] for name in KEY])
    group_id = pc.fill_null(groups["group_id"].take(pa.array(group, mask=group < 0)), -1)  # -1: no group
    case = find_rows([group_id, keys["case_key"]], [cases["group_id"], cases["case_key"]])
    return CaseFigures(
        group, case, groups.select(["group_id", "workload", "pairs", "sigma_log"]), cases.select(["pairs", "sum_sq"])
    )


def aa_pair_count(engine: Engine) -> int:
    """Every stored A/A pair (those the figures rest on and those stored since)."""
    return int(read_frame(engine, "SELECT coalesce(sum(pairs + pending), 0) AS n FROM aa_noise").n.iloc[0])
