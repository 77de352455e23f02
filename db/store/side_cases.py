"""Side summaries (db.store.tables.SIDE_CASES): each case of each run group — a build (version, git hash, debug)
on one machine and device — summarised once, as a machine-scope Compare reads one side of it.

A group's rows are recomputed whenever one of its runs is stored (db.ingest) or retracted (db.store.retract), in
the same transaction, so they never disagree with `results`. They come from the Compare's own pivot
(db.store.case_pivot, with the group in place of the machine as its scope) and the Compare's own statistics
(db.stats.significance: the pooled quartiles, each side's replicate figures), so a Compare that reads them gives
the answer the pivot gives, to the last bit; db.query.side_reads pairs them. The cost is the group's own runs:
a store's size does not enter it.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import text

from db.store.aa_pairs import RATIO_METRICS
from db.stats.contention import COLUMNS as CONTENTION, clean_side
from db.stats.significance import SampleLists, side_figures, summarize_lists
from db.store.case_pivot import NO_RUNS, pivot_sql, read_pairs_on

# every run with the run_seq of its group's first run: its group's number (retracted runs stay in `runs`, so a
# group keeps its number for good)
_GROUPS = """SELECT run_id, run_seq, retracted_at, min(run_seq) OVER (PARTITION BY torch_version, git_hash,
    coalesce(debug, false), machine_name, device_type) AS group_seq FROM runs"""
# the scope the pivot groups by while refreshing: the group (its device is a key column of its own)
_LABEL = "ru.torch_version || chr(31) || coalesce(ru.git_hash, '-') || chr(31) || coalesce(ru.debug, false)::VARCHAR || chr(31) || ru.machine_name"
_IDENTITY = f"""SELECT DISTINCT g.group_seq, {_LABEL} AS label, ru.device_type AS device, ru.torch_version,
    ru.git_hash, coalesce(ru.debug, false) AS debug, ru.machine_name FROM ({_GROUPS}) g JOIN runs ru USING (run_id)
    WHERE g.group_seq IN ({{groups}})"""
BATCH = 200  # groups refreshed per pivot: a whole store's backfill in bounded memory

_COLUMNS = ["group_seq", "torch_version", "git_hash", "debug", "scope", "device", "workload", "case_key", "dtype",
            "compile", "metric", "pooled", "machines", "results", "n", "runs", "passed", "other", "message",
            "warnings", "fallback_median", "median", "p25", "p75", "inv_processes", "processes", "ss_within",
            "df_within", "ss_between", "mean", "tolerance", "rounding", "valid", *CONTENTION]


def groups_of_runs(conn, run_ids: list[str]) -> list[int]:
    """The group numbers of these runs."""
    found = conn.execute(text(f"SELECT DISTINCT group_seq FROM ({_GROUPS}) WHERE run_id IN "
                              f"({', '.join(':r' + str(i) for i in range(len(run_ids)))})"),
                         {f"r{i}": r for i, r in enumerate(run_ids)}).scalars().all()
    return [int(g) for g in found]


def refresh_runs(conn, run_ids: list[str]) -> None:
    """Recompute the groups of these runs (after a run is stored or retracted, in its transaction)."""
    refresh(conn, groups_of_runs(conn, run_ids))


def backfill(conn) -> None:
    """Every group, recomputed (the migration to store v8; benchmarks/dashboard.py's store)."""
    conn.execute(text("DELETE FROM side_cases"))
    groups = conn.execute(text(f"SELECT DISTINCT group_seq FROM ({_GROUPS}) ORDER BY group_seq")).scalars().all()
    for start in range(0, len(groups), BATCH):
        refresh(conn, [int(g) for g in groups[start:start + BATCH]], fresh=True)


def refresh(conn, groups: list[int], fresh: bool = False) -> None:
    """Delete these groups' rows and write them again from their runs that are not retracted."""
    if not groups:
        return
    listed = ", ".join(str(int(g)) for g in groups)
    if not fresh:
        conn.execute(text(f"DELETE FROM side_cases WHERE group_seq IN ({listed})"))
    # the groups' runs found once, then named: the pivot's three reads need not each number every run again
    ids = conn.execute(text(f"SELECT run_id FROM ({_GROUPS}) WHERE group_seq IN ({listed}) "
                            f"AND retracted_at IS NULL")).scalars().all()
    if not ids:
        return
    runs = (f"SELECT run_id FROM runs WHERE run_id IN ({', '.join('?' * len(ids))})", list(ids))
    duck = conn.connection.driver_connection
    table = read_pairs_on(duck, pivot_sql([runs, NO_RUNS], "machine", _LABEL))
    if not table.num_rows:
        return
    identity = conn.execute(text(_IDENTITY.format(groups=listed))).all()
    rows = summary_rows(table, {(r.label, r.device): r for r in identity})
    # in the pivot's key order, group by group: a reader pairs two alike sides row for row while a group's rows keep
    # that order (db.query.side_reads checks it and matches by key otherwise)
    duck.register("_side_cases_new", rows)
    try:
        cols = ", ".join(_COLUMNS)
        duck.execute(f"INSERT INTO side_cases ({cols}) SELECT {cols} FROM _side_cases_new")
    finally:
        duck.unregister("_side_cases_new")


def summary_rows(table: pa.Table, identity: dict) -> pa.Table:
    """The side_cases rows of a refresh's pivot (its baseline side; its scope is the group's label)."""
    clean = clean_side(SampleLists.from_arrow(table["b_samples"]), table["b_processes"], table["b_contention"])
    lists = clean.lists
    quartiles = summarize_lists(lists)
    ratio = pc.is_in(table["metric"], pa.array(RATIO_METRICS)).to_numpy(zero_copy_only=False)
    figures = side_figures(clean, ratio)
    # each row's group, looked up per distinct (label, device) in Arrow: a Python lookup per row cost ~1.3 s of a
    # million-result ingest
    keys = pc.binary_join_element_wise(table["scope"], table["device"], "\x00")
    known = list(identity)
    where = pc.index_in(keys, value_set=pa.array([f"{label}\x00{device}" for label, device in known], pa.string()))
    if where.null_count:  # every pivot row belongs to a group it was read for
        raise RuntimeError("side_cases: a pivot row of no refreshed group")
    who = [identity[k] for k in known]
    out = {"group_seq": pa.array([w.group_seq for w in who], pa.int64()).take(where),
           "torch_version": pa.array([w.torch_version for w in who], pa.string()).take(where),
           "git_hash": pa.array([w.git_hash for w in who], pa.string()).take(where),
           "debug": pa.array([bool(w.debug) for w in who], pa.bool_()).take(where),
           "scope": pa.array([w.machine_name for w in who], pa.string()).take(where)}
    for name in ("device", "workload", "case_key", "dtype", "compile", "metric"):
        out[name] = table[name]
    for name in ("pooled", "machines", "results", "passed", "other", "message", "warnings", "fallback_median",
                 "tolerance", "rounding"):
        out[name] = table["b_" + name]
    out["n"] = pa.array(lists.counts, pa.int64())
    out["median"], out["p25"], out["p75"] = (pa.array(q, pa.float64()) for q in (quartiles.median, quartiles.p25,
                                                                                  quartiles.p75))
    out["runs"] = pa.array(figures.runs, pa.int64())
    for name in ("inv_processes", "processes", "ss_within", "df_within", "ss_between", "mean"):
        out[name] = pa.array(np.asarray(getattr(figures, name), dtype=float), pa.float64())
    out["valid"] = pa.array(np.asarray(figures.valid, dtype=bool))
    out.update({name: pa.array(values, from_pandas=True) for name, values in clean.columns().items()})
    return pa.table({name: out[name] for name in _COLUMNS})
