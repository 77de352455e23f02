"""Side summaries (db.store.tables.SIDE_CASES): each case of each run group summarised once, as a Compare reads
one side of it. Two kinds of group, one per Compare scope: a build (version, git hash, debug) on one machine and
device (`machine`), and a build on one chip — its GPU core count included, as Compare's chip scope pools — and
device (`chip`).

A group's rows come from the Compare's own pivot (db.query.compare.pivot, with the group in place of the machine or
chip as its scope) and the Compare's own statistics (db.stats.significance: the pooled quartiles, each side's
replicate figures), so a Compare that reads them gives the answer the pivot gives, to the last bit;
db.query.compare.side_reads pairs them. Rewriting a group reads every sample of every run in it (a side's quartiles pool
them all), so it is not done inside an upload: storing or retracting a run marks its groups (`mark_runs`, in that
transaction) and db.store.writers.upkeep rewrites marked groups after the uploads (`summarise` from a snapshot, then
`replace` under the write lock). A marked group's build is read from the pivot meanwhile: the mark costs speed,
never an answer. Inside the upload, 16 uploads of one 50,000-result build and machine grew from 0.18 to ~0.8 s
for this rewrite alone.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import text

from bundle.metrics import RATIO_METRICS
from db.query.compare.pairs import key_order, read_pairs_on
from db.query.compare.pivot import NO_RUNS, SCOPES, pivot_sql, scope_sql
from db.stats.lists import QUARTILES
from db.stats.significance import SampleLists, side_stats
from db.store.tables import SIDE_CASES

KINDS = SCOPES  # a group kind is the Compare scope it answers
_BUILD = "ru.torch_version, ru.git_hash, coalesce(ru.debug, false)"
_BUILD_LABEL = (
    "ru.torch_version || chr(31) || coalesce(ru.git_hash, '-') || chr(31) || coalesce(ru.debug, false)::VARCHAR"
)


def _groups(kind: str) -> str:
    """Every run with the run_seq of its group's first run: its group's number within its kind (retracted runs
    stay in `runs`, so a group keeps its number for good)."""
    return (
        f"SELECT run_id, run_seq, retracted_at, min(run_seq) OVER (PARTITION BY {_BUILD}, {scope_sql(kind)}, "
        f"ru.device_type) AS group_seq FROM runs ru"
    )


def _label(kind: str) -> str:
    """The scope the pivot groups by while summarising: the group (its device is a key column of its own)."""
    return f"{_BUILD_LABEL} || chr(31) || {scope_sql(kind)}"


def _identity(kind: str, listed: str) -> str:
    return (
        f"SELECT DISTINCT g.group_seq, {_label(kind)} AS label, ru.device_type AS device, ru.torch_version, "
        f"ru.git_hash, coalesce(ru.debug, false) AS debug, {scope_sql(kind)} AS scope FROM ({_groups(kind)}) g "
        f"JOIN runs ru USING (run_id) WHERE g.group_seq IN ({listed})"
    )


BATCH = 200  # groups summarised per pivot in a backfill: a whole store's in bounded memory

_COLUMNS = [c.name for c in SIDE_CASES.columns]  # the table's own columns, in its order


def groups_of_runs(conn, kind: str, run_ids: list[str]) -> list[int]:
    """The group numbers of these runs, of this kind."""
    found = (
        conn.execute(
            text(
                f"SELECT DISTINCT group_seq FROM ({_groups(kind)}) WHERE run_id IN "
                f"({', '.join(':r' + str(i) for i in range(len(run_ids)))})"
            ),
            {f"r{i}": r for i, r in enumerate(run_ids)},
        )
        .scalars()
        .all()
    )
    return [int(g) for g in found]


def mark_runs(conn, run_ids: list[str]) -> None:
    """Mark these runs' groups, of each kind, as lagging (after a run is stored or retracted, in its transaction)."""
    for kind in KINDS:
        for group in groups_of_runs(conn, kind, run_ids):
            _mark(conn, kind, group)


def _mark(conn, kind: str, group: int) -> None:
    conn.execute(
        text(
            "INSERT INTO side_stale (mark_id, kind, group_seq, torch_version, git_hash, debug) "
            "SELECT :m, :k, :g, torch_version, git_hash, coalesce(debug, false) FROM runs "
            "WHERE run_seq = :g"
        ),
        {"m": uuid.uuid4().hex, "k": kind, "g": group},
    )


def sizes(conn, kind: str, groups: list[int]) -> dict[int, int]:
    """Each group's results (its runs not retracted; 0 for a group whose runs all were): what summarising it holds
    in memory, roughly."""
    if not groups:
        return {}
    listed = ", ".join(str(int(g)) for g in groups)
    found = conn.execute(
        text(
            f"SELECT g.group_seq, sum(ru.n_results) FROM ({_groups(kind)}) g JOIN runs ru "
            f"USING (run_id) WHERE g.group_seq IN ({listed}) AND g.retracted_at IS NULL "
            f"GROUP BY g.group_seq"
        )
    ).all()
    return {int(g): 0 for g in groups} | {int(g): int(n or 0) for g, n in found}


def mark_all(conn) -> None:
    """Every group of every kind marked (a migration that empties side_cases: the upkeep refills it)."""
    for kind in KINDS:
        for group in conn.execute(text(f"SELECT DISTINCT group_seq FROM ({_groups(kind)})")).scalars().all():
            _mark(conn, kind, int(group))


def marks(conn) -> dict[tuple[str, int], list[str]]:
    """The marked (kind, group)s and their marks' ids, as this connection's transaction sees them."""
    found: dict[tuple[str, int], list[str]] = {}
    for mark_id, kind, group in conn.execute(
        text("SELECT mark_id, kind, group_seq FROM side_stale ORDER BY kind, group_seq")
    ):
        found.setdefault((kind, int(group)), []).append(mark_id)
    return found


def backfill(conn) -> None:
    """Every group of every kind, recomputed (the migration to store v8; benchmarks/dashboard.py's store)."""
    conn.execute(text("DELETE FROM side_cases"))
    for kind in KINDS:
        groups = conn.execute(text(f"SELECT DISTINCT group_seq FROM ({_groups(kind)}) ORDER BY group_seq")).scalars()
        groups = [int(g) for g in groups.all()]
        for start in range(0, len(groups), BATCH):
            _insert(conn, summarise(conn, kind, groups[start : start + BATCH]))


def refresh(conn, kind: str, groups: list[int]) -> None:
    """Rewrite these groups now, in the caller's transaction (tests; the upkeep splits it in two)."""
    replace(conn, kind, groups, summarise(conn, kind, groups), [])


def summarise(conn, kind: str, groups: list[int], parts: int = 1) -> pa.Table | None:
    """These groups' rows from their runs that are not retracted (None: no such run), in the pivot's key order,
    group by group: a reader pairs two alike sides row for row while a group's rows keep that order
    (db.query.compare.side_reads checks it and matches by key otherwise). Reads only: a snapshot will do.

    parts > 1 reads the cases in that many slices (by a hash of the case key), one pivot each, then orders the
    rows as one read would: a row depends on its own case only, so the answer is the same while the samples held
    at once are a slice's (a group that grew by 50 runs of 20,000 cases took 800 MB read whole)."""
    if not groups:
        return None
    listed = ", ".join(str(int(g)) for g in groups)
    # the groups' runs found once, then named: the pivot's three reads need not each number every run again
    ids = (
        conn.execute(
            text(f"SELECT run_id FROM ({_groups(kind)}) WHERE group_seq IN ({listed}) AND retracted_at IS NULL")
        )
        .scalars()
        .all()
    )
    if not ids:
        return None
    runs = (f"SELECT run_id FROM runs WHERE run_id IN ({', '.join('?' * len(ids))})", list(ids))
    identity = {(r.label, r.device): r for r in conn.execute(text(_identity(kind, listed))).all()}
    sliced = []
    for part in range(parts):
        where = f" AND hash(r.case_key) % {int(parts)} = {part}" if parts > 1 else ""
        table = read_pairs_on(conn.connection.driver_connection, pivot_sql([runs, NO_RUNS], kind, _label(kind), where))
        if table.num_rows:
            sliced.append(summary_rows(table, kind, identity))
    if not sliced:
        return None
    rows = pa.concat_tables(sliced) if len(sliced) > 1 else sliced[0]
    return rows.take(key_order(rows)) if len(sliced) > 1 else rows


def replace(conn, kind: str, groups: list[int], rows: pa.Table | None, mark_ids: list[str]) -> None:
    """Write these groups' rows (summarise's) in place of their old ones and drop the marks they answer."""
    if groups:
        conn.execute(
            text(f"DELETE FROM side_cases WHERE kind = :k AND group_seq IN ({', '.join(str(int(g)) for g in groups)})"),
            {"k": kind},
        )
    _insert(conn, rows)
    if mark_ids:
        conn.execute(
            text(f"DELETE FROM side_stale WHERE mark_id IN ({', '.join(f':m{i}' for i in range(len(mark_ids)))})"),
            {f"m{i}": m for i, m in enumerate(mark_ids)},
        )


def _insert(conn, rows: pa.Table | None) -> None:
    if rows is None:
        return
    duck = conn.connection.driver_connection
    duck.register("_side_cases_new", rows)
    try:
        cols = ", ".join(_COLUMNS)
        duck.execute(f"INSERT INTO side_cases ({cols}) SELECT {cols} FROM _side_cases_new")
    finally:
        duck.unregister("_side_cases_new")


def summary_rows(table: pa.Table, kind: str, identity: dict) -> pa.Table:
    """The side_cases rows of a refresh's pivot (its baseline side; its scope is the group's label)."""
    ratio = pc.is_in(table["metric"], pa.array(RATIO_METRICS)).to_numpy(zero_copy_only=False)
    # Compare's own record of a side (every case): what it would compute from these samples, stored
    side = side_stats(SampleLists.from_arrow(table["b_samples"]), table["b_processes"], table["b_contention"], ratio)
    figures = side.figures
    # each row's group, looked up per distinct (label, device) in Arrow: a Python lookup per row cost ~1.3 s of a
    # million-result ingest
    keys = pc.binary_join_element_wise(table["scope"], table["device"], "\x00")
    known = list(identity)
    where = pc.index_in(keys, value_set=pa.array([f"{label}\x00{device}" for label, device in known], pa.string()))
    if where.null_count:  # every pivot row belongs to a group it was read for
        raise RuntimeError("side_cases: a pivot row of no refreshed group")
    who = [identity[k] for k in known]
    out = {
        "kind": pa.array([kind] * table.num_rows, pa.string()),
        "group_seq": pa.array([w.group_seq for w in who], pa.int64()).take(where),
        "torch_version": pa.array([w.torch_version for w in who], pa.string()).take(where),
        "git_hash": pa.array([w.git_hash for w in who], pa.string()).take(where),
        "debug": pa.array([bool(w.debug) for w in who], pa.bool_()).take(where),
        "scope": pa.array([w.scope for w in who], pa.string()).take(where),
    }
    for name in ("device", "workload", "case_key", "dtype", "compile", "metric"):
        out[name] = table[name]
    for name in (
        "pooled",
        "machines",
        "results",
        "passed",
        "other",
        "message",
        "warnings",
        "fallback_median",
        "tolerance",
        "rounding",
    ):
        out[name] = table["b_" + name]
    out["n"] = pa.array(side.n, pa.int64())
    for name in QUARTILES:
        out[name] = pa.array(getattr(side.quartiles, name), pa.float64())
    out["runs"] = pa.array(figures.runs, pa.int64())
    for name in ("inv_processes", "processes", "ss_within", "df_within", "ss_between", "mean"):
        out[name] = pa.array(np.asarray(getattr(figures, name), dtype=float), pa.float64())
    out["valid"] = pa.array(np.asarray(figures.valid, dtype=bool))
    out.update({name: pa.array(values, from_pandas=True) for name, values in side.contention.items()})
    return pa.table({name: out[name] for name in _COLUMNS})
