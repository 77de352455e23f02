"""A/A pairs and the noise model's figures, written where the runs are written.

An A/A pair is a case measured by two runs of one build on one machine. "One build" is what Compare's build
selector means: the same torch version, git hash (both absent counts as the same) and debug flag; "one machine"
the same machine name, chip, device type and device name. Any two such runs pair (a sweep's `--aa` repeats are
the usual source; two runs of one build on one Mac a week apart measure the same kind of noise). A pair holds
ln(median of the later run / median of the earlier) for each case both measured with status ok and positive
medians, for ratio metrics only (a dB or count difference has no ratio), and neither run's result contended
beyond evidence; a median is of the clean processes' samples (db.store.derived.contention: a busy hour is not the
machine's run-to-run noise).

Three tables (db.store.tables): aa_pairs (group_id, seq_a, seq_b, case_key, log_ratio: integers where possible,
no key, so 5 M pairs stay cheap) and aa_noise, one row per group (chip, gpu_cores, device, workload, metric,
dtype, compile) holding its labels and the model's figures (db.stats.noise's rule: pair count, 95th percentile
of |log ratio| by quantile_cont, sigma), and aa_cases, per case of a group its pair count and sum of squared
log ratios (a review's run-to-run variance per case, db.stats.replicates), added to at ingest like the pairs. A read of the model is a read of a few hundred rows: aggregating 5 M
pairs per page view took ~0.35 s quiet and over 1 s on a loaded box, and Regressions reads the model for every
case's bound. The figures are recomputed in SQL for a group, after the upload (db.store.writers.upkeep: it reads every pair of
the group, so an upload's cost would grow with the store), when its pairs stored since its last computation
(`pending`) reach REFRESH of the pairs it was computed from (so a group of fewer than 20 pairs is recomputed at
every new pair): recomputing every touched group at every ingest re-sorted all of a chip's pairs each time
(~80 ms of a ~800 ms ingest on a 1 M-result store, growing with the store), while a 95th percentile hardly moves
with 5 % more pairs. The figure always says how many pairs it rests on; deletions recompute at once.

Bounded by design: a run pairs with at most PARTNERS earlier runs of its build on its machine, the most recent
(not retracted) ones, so a run adds at most PARTNERS × its results pairs and the pairs grow linearly with the
runs (pairing every two runs grew with their square: 42 runs of one build made 1.58 M pairs). PARTNERS = 10
keeps every pair of a 5-round `sweep --aa` (10 runs of the baseline); runs further apart add drift between
them, not more of the run-to-run noise the model measures. A bundle holds each case once (bundle.schema), so
one result pairs with at most one result of each partner.

At ingest only the new run's pairs are computed (store_pairs_of_run), set-based: its partner runs are found in
`runs` first (few), their results read by run_seq (contiguous, so DuckDB's zone maps skip the other row groups)
and joined with the new run's. The join carries run_seq in its key: the new run's rows are matched to their
partners first (_B), then to the partner's result of the same case, so no plan joins every run's copies of a
case (left to itself DuckDB joined results to results by case first: 949 M rows for 1 M results). The
migration to store v4 fills both tables for stored runs (backfill, the same bound). A run leaving the store
(forget_run) takes its pairs with it and its groups are recomputed (the runs it paired with keep the rest).
"""

from __future__ import annotations

from sqlalchemy import text

from bundle.metrics import RATIO_METRICS
from db.stats.lists import exact_sum_sql, quantile_sql
from db.stats.noise import QUANTILE, SIGMA_SQL
from db.store.derived.contention import CLEAN_MEDIAN, EVIDENCE

_METRICS_SQL = ", ".join(f"'{m}'" for m in RATIO_METRICS)
REFRESH = 0.05  # recompute a group's figures once its new pairs reach this fraction of its counted ones
PARTNERS = 10  # earlier runs of its build and machine a run pairs with, the most recent (see above)
LABELS = ("chip", "gpu_cores", "machine_name", "device_type", "workload", "metric", "dtype", "compile")

# what one build on one machine is (columns of runs {t}): two runs pair when all are the same, NULLs alike
_BUILD_AND_MACHINE = (
    "{t}.machine_name",
    "{t}.chip",
    "{t}.device_type",
    "{t}.device_name",
    "{t}.torch_version",
    "{t}.git_hash",
    "coalesce({t}.debug, false)",
)
_SAME = " AND ".join(f"{c.format(t='p')} IS NOT DISTINCT FROM {c.format(t='n')}" for c in _BUILD_AND_MACHINE)
_KEY = ", ".join(c.format(t="runs") for c in _BUILD_AND_MACHINE)

_PARTNERS = f"""SELECT p.run_seq FROM runs n JOIN runs p ON {_SAME}
  WHERE n.run_id = :run AND p.run_seq < n.run_seq AND p.retracted_at IS NULL ORDER BY p.run_seq DESC LIMIT :k"""

# every stored run's partners at once (backfill): the PARTNERS runs before it in its build and machine (the
# migration to v4 runs it before runs had retracted_at: no run was retracted then)
_ALL_PAIRS = f"""WITH r AS (SELECT run_seq, dense_rank() OVER (ORDER BY {_KEY}) AS bm,
    row_number() OVER (PARTITION BY {_KEY} ORDER BY run_seq) AS rn FROM runs WHERE run_seq IS NOT NULL)
  SELECT a.run_seq AS seq_a, b.run_seq AS seq_b FROM r b JOIN r a ON a.bm = b.bm
    AND a.rn BETWEEN b.rn - {PARTNERS} AND b.rn - 1"""

# {pairs}: (seq_a, seq_b) run pairs; {where}: what restricts the scans of results. A machine with a chip groups
# by chip (machine_name NULL); one without is its own group, as Compare's chip scope labels it.
_STAGE = f"""CREATE OR REPLACE TEMP TABLE _aa_new AS
  WITH pr AS MATERIALIZED ({{pairs}}),
  _B AS MATERIALIZED (SELECT * FROM (SELECT pr.seq_a, b.run_seq AS seq_b, b.workload, b.case_key, b.dtype,
      b.compile, b.metric, {CLEAN_MEDIAN.format(t="b")} AS median FROM pr JOIN results b ON b.run_seq = pr.seq_b
    WHERE {{where_b}} b.status = 'ok' AND b.metric IN ({_METRICS_SQL}) AND {EVIDENCE.format(t="b")})
    WHERE median > 0 AND isfinite(median))
  SELECT * EXCLUDE (a_median), ln(median / a_median) AS log_ratio FROM (
  SELECT ru.chip, ru.gpu_cores, CASE WHEN ru.chip IS NULL THEN ru.machine_name END AS machine_name,
    ru.device_type, b.workload, b.metric, b.dtype, b.compile, b.seq_a, b.seq_b, b.case_key, b.median,
    {CLEAN_MEDIAN.format(t="a")} AS a_median
  FROM _B b JOIN runs ru ON ru.run_seq = b.seq_b
    JOIN results a ON a.run_seq = b.seq_a AND a.workload = b.workload AND a.case_key = b.case_key
      AND a.dtype = b.dtype AND a.compile = b.compile AND a.metric = b.metric
  WHERE {{where_a}} a.status = 'ok' AND {EVIDENCE.format(t="a")})
  WHERE a_median > 0 AND isfinite(a_median)"""

_SAME_LABELS = " AND ".join(f"g.{c} IS NOT DISTINCT FROM s.{c}" for c in LABELS)
_NEW_GROUPS = f"""INSERT INTO aa_noise (group_id, {", ".join(LABELS)}, pairs, pending)
  SELECT (SELECT coalesce(max(group_id), 0) FROM aa_noise) + row_number() OVER (ORDER BY {", ".join(LABELS)}), *, 0, 0
  FROM (SELECT DISTINCT {", ".join(LABELS)} FROM _aa_new s
        WHERE NOT EXISTS (SELECT 1 FROM aa_noise g WHERE {_SAME_LABELS}))"""
_INSERT = f"""INSERT INTO aa_pairs (group_id, seq_a, seq_b, case_key, log_ratio)
  SELECT g.group_id, s.seq_a, s.seq_b, s.case_key, s.log_ratio FROM _aa_new s JOIN aa_noise g ON {_SAME_LABELS}"""

# the model's figures of the touched groups (the definitions db.stats.noise states, taken in SQL)
_SIGMA = SIGMA_SQL.format(sum_sq=exact_sum_sql("p.log_ratio * p.log_ratio"), pairs="count(p.log_ratio)")
_PENDING = f"""UPDATE aa_noise SET pending = aa_noise.pending + n.pairs
  FROM (SELECT g.group_id, count(*) AS pairs FROM _aa_new s JOIN aa_noise g ON {_SAME_LABELS} GROUP BY g.group_id) n
  WHERE aa_noise.group_id = n.group_id"""
_DUE = f"SELECT group_id, pending, pairs AS counted FROM aa_noise WHERE pending > 0 AND pending >= {REFRESH} * pairs"
_FIGURES = f"""SELECT t.group_id, t.pending, t.counted, count(p.log_ratio) AS pairs,
    {quantile_sql("abs(p.log_ratio)", QUANTILE)} AS quantile_log, {_SIGMA} AS sigma_log,
    max(abs(p.log_ratio)) AS max_log
  FROM ({{touched}}) t LEFT JOIN aa_pairs p ON p.group_id = t.group_id GROUP BY t.group_id, t.pending, t.counted"""
# `pairs = :counted`: unless a retraction recomputed the group since the figures were read (db.store.writers.upkeep reads
# them without the write lock; a retracted run's pairs must not come back through them)
_WRITE = """UPDATE aa_noise SET pairs = :pairs, pending = greatest(pending - :seen, 0), quantile_log = :q,
    sigma_log = :s, max_log = :m WHERE group_id = :g AND pairs = :counted"""
_REFRESH = f"""UPDATE aa_noise SET pairs = coalesce(f.pairs, 0), pending = 0, quantile_log = f.quantile_log,
    sigma_log = f.sigma_log, max_log = f.max_log
  FROM (SELECT t.group_id, count(p.log_ratio) AS pairs, {quantile_sql("abs(p.log_ratio)", QUANTILE)} AS quantile_log,
          {_SIGMA} AS sigma_log, max(abs(p.log_ratio)) AS max_log
        FROM ({{touched}}) t LEFT JOIN aa_pairs p ON p.group_id = t.group_id GROUP BY t.group_id) f
  WHERE aa_noise.group_id = f.group_id"""


# per case within its group: pair count and sum of squared log ratios (a review's run-to-run variance of a case)
# MERGE, not INSERT … ON CONFLICT: a DuckLake store (db.store.lake) has no keys to conflict on
_CASES_ADD = f"""MERGE INTO aa_cases USING (
    SELECT g.group_id, s.case_key, count(*) AS pairs, {exact_sum_sql("s.log_ratio * s.log_ratio")} AS sum_sq
    FROM _aa_new s
    JOIN aa_noise g ON {_SAME_LABELS} GROUP BY g.group_id, s.case_key) n
  ON aa_cases.group_id = n.group_id AND aa_cases.case_key = n.case_key
  WHEN MATCHED THEN UPDATE SET pairs = aa_cases.pairs + n.pairs, sum_sq = aa_cases.sum_sq + n.sum_sq
  WHEN NOT MATCHED THEN INSERT (group_id, case_key, pairs, sum_sq) VALUES (n.group_id, n.case_key, n.pairs, n.sum_sq)"""
_CASES_FROM_PAIRS = (
    """INSERT INTO aa_cases (group_id, case_key, pairs, sum_sq)
  SELECT group_id, case_key, count(*), """
    + exact_sum_sql("log_ratio * log_ratio")
    + """ FROM aa_pairs {where}
  GROUP BY group_id, case_key"""
)


def _store_staged(conn) -> None:
    conn.execute(text(_NEW_GROUPS))
    conn.execute(text(_INSERT))
    conn.execute(text(_CASES_ADD))
    conn.execute(text(_PENDING))
    conn.execute(text("DROP TABLE _aa_new"))


def store_pairs_of_run(conn, run_id: str, partners: int = PARTNERS) -> None:
    """Inside the ingest transaction, after the run and its results are written: its pairs with the PARTNERS most
    recent stored runs of the same build on the same machine, and its groups' figures recomputed. (partners:
    another bound, for benchmarks/aa_pairs.py's comparison with pairing every earlier run.)"""
    found = [int(r[0]) for r in conn.execute(text(_PARTNERS), {"run": run_id, "k": int(partners)})]
    if not found:  # the usual case (a new build or machine): nothing more is read
        return
    seq = int(conn.execute(text("SELECT run_seq FROM runs WHERE run_id = :run"), {"run": run_id}).scalar())
    seqs = ", ".join(str(s) for s in found)  # integers from the store: safe to inline (and prunes as literals)
    pairs = f"SELECT unnest([{seqs}]) AS seq_a, {seq} AS seq_b"
    conn.execute(
        text(_STAGE.format(pairs=pairs, where_b=f"b.run_seq = {seq} AND", where_a=f"a.run_seq IN ({seqs}) AND"))
    )
    _store_staged(conn)


def backfill(conn) -> None:
    """The pairs of every stored run (the migration to store v4; benchmarks/dashboard.py's store): each run pairs
    with the PARTNERS earlier runs of its build and machine, as at ingest, and every group's figures computed."""
    conn.execute(text(_STAGE.format(pairs=_ALL_PAIRS, where_b="", where_a="")))
    _store_staged(conn)
    refresh_due(conn)


def refresh_due(conn) -> None:
    """The due groups' figures recomputed now, in the caller's transaction (backfill; tests)."""
    write_figures(conn, due_figures(conn))


def due_figures(conn) -> list[tuple]:
    """The figures of the groups whose pending pairs reached REFRESH of their counted ones, each with the pending
    count they cover and the count they replace: (group_id, pending, counted, pairs, quantile_log, sigma_log,
    max_log). Reads only: a snapshot will
    do, so db.store.writers.upkeep computes them without the write lock."""
    return [tuple(r) for r in conn.execute(text(_FIGURES.format(touched=_DUE)))]


def write_figures(conn, figures: list[tuple]) -> None:
    """Write due_figures' rows; the pairs stored since they were read stay pending (under the write lock)."""
    for group_id, pending, counted, pairs, quantile_log, sigma_log, max_log in figures:
        conn.execute(
            text(_WRITE),
            {
                "g": group_id,
                "seen": pending,
                "counted": counted,
                "pairs": pairs,
                "q": quantile_log,
                "s": sigma_log,
                "m": max_log,
            },
        )


def backfill_cases(conn) -> None:
    """aa_cases recomputed from every stored pair (the migration to store v7)."""
    conn.execute(text("DELETE FROM aa_cases"))
    conn.execute(text(_CASES_FROM_PAIRS.format(where="")))


def forget_run(conn, run_id: str) -> None:
    """Call before a run leaves the store (deleted or retracted): its pairs go and its groups' figures are
    recomputed without it, so it no longer feeds the model."""
    seq = conn.execute(text("SELECT run_seq FROM runs WHERE run_id = :run"), {"run": run_id}).scalar()
    if seq is None:
        return
    mine = f"seq_a = {int(seq)} OR seq_b = {int(seq)}"
    conn.execute(
        text(
            f"CREATE OR REPLACE TEMP TABLE _aa_touched AS SELECT DISTINCT group_id, case_key FROM aa_pairs WHERE {mine}"
        )
    )
    conn.execute(text(f"DELETE FROM aa_pairs WHERE {mine}"))
    conn.execute(text(_REFRESH.format(touched="SELECT DISTINCT group_id FROM _aa_touched")))
    touched = "(group_id, case_key) IN (SELECT (group_id, case_key) FROM _aa_touched)"
    conn.execute(text(f"DELETE FROM aa_cases WHERE {touched}"))
    conn.execute(text(_CASES_FROM_PAIRS.format(where=f"WHERE {touched}")))
    conn.execute(text("DROP TABLE _aa_touched"))
