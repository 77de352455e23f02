"""Ordered store migrations keyed by store_version. v0: a file from before the meta table existed; v1: before
run_seq; v2: before the build's library versions; v3: before the A/A pairs; v4: before uploaded_by and
retractions; v5: before the A/A groups' pending counts; v6: before per-process samples and per-case A/A figures; v7: before the side summaries; v8: before per-process contention and correctness rounding; v9: before
signed-out sessions were kept in the store (a file beside it, db.store.writers.sessions); v10: before the side summaries were kept
after an upload (db.store.writers.upkeep); v11: before the CPU's core counts and the install source; v12: before each case's kernels breakdown. Each migration runs in the
one transaction that also
stamps the new store_version, so a store is never stamped ahead of its data."""

from __future__ import annotations

from sqlalchemy import text

from db.errors import StoreError
from db.store.tables import STORE_VERSION


def current_version(conn) -> int | None:
    tables = {r[0] for r in conn.execute(text("SELECT table_name FROM information_schema.tables"))}
    if "meta" in tables:
        row = conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).first()
        return int(row[0]) if row else STORE_VERSION
    return 0 if "runs" in tables else None  # None: a new, empty file


def _v0_to_v1(conn) -> None:
    """v0 had no meta table and results without passed/tolerance."""
    cols = {
        r[0]
        for r in conn.execute(text("SELECT column_name FROM information_schema.columns WHERE table_name='results'"))
    }
    for name, kind in (("passed", "BOOLEAN"), ("tolerance", "DOUBLE")):
        if name not in cols:
            conn.execute(text(f"ALTER TABLE results ADD COLUMN {name} {kind}"))


# runs numbered in the order their results lie in the file (ingest order), so each number's rows stay together
_NUMBER_RUNS = """UPDATE runs SET run_seq = o.seq FROM (
  SELECT ru.run_id, row_number() OVER (ORDER BY f.first NULLS LAST, ru.ingested_at, ru.run_id) AS seq
  FROM runs ru LEFT JOIN (SELECT run_id, min(rowid) AS first FROM results GROUP BY run_id) f USING (run_id)) o
  WHERE runs.run_id = o.run_id"""
_REFILL = """INSERT INTO results SELECT r.*, ru.run_seq FROM _results_v1 r LEFT JOIN runs ru USING (run_id)
  ORDER BY ru.run_seq NULLS LAST, r.rowid"""


def _v1_to_v2(conn) -> None:
    """v2 numbers runs (run_seq on runs and results). The results are rewritten in run_seq order into a fresh
    table rather than UPDATEd: after an UPDATE (even checkpointed) every row group's min/max spans all runs, so
    nothing prunes; and a DELETE + re-INSERT into the indexed table took ~8× longer (2M rows: 45 s vs 6 s)."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN run_seq BIGINT"))
    conn.execute(text(_NUMBER_RUNS))
    ddl = conn.execute(text("SELECT sql FROM duckdb_tables() WHERE table_name = 'results'")).scalar()
    indexes = conn.execute(text("SELECT index_name, sql FROM duckdb_indexes() WHERE table_name = 'results'")).all()
    for name, _ in indexes:  # a table with indexes cannot be renamed
        conn.execute(text(f'DROP INDEX "{name}"'))
    conn.execute(text("ALTER TABLE results RENAME TO _results_v1"))
    conn.execute(text(ddl))
    conn.execute(text("ALTER TABLE results ADD COLUMN run_seq BIGINT"))
    conn.execute(text(_REFILL))
    conn.execute(text("DROP TABLE _results_v1"))
    for _, sql in indexes:
        conn.execute(text(sql))


def _v2_to_v3(conn) -> None:
    """v3 keeps the build's library versions (bundle build.libraries); runs from before it recorded none."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN libraries_json VARCHAR DEFAULT '{}'"))


def _v3_to_v4(conn) -> None:
    """v4 keeps the A/A pairs (db.store.derived.aa_pairs): the tables."""
    from db.store.tables import AA_PAIRS, AACase, AANoise

    AANoise.__table__.create(conn, checkfirst=True)
    AACase.__table__.create(conn, checkfirst=True)
    AA_PAIRS.create(conn, checkfirst=True)  # filled by the step to v9, with today's rule (db.store.derived.aa_pairs)


def _v4_to_v5(conn) -> None:
    """v5 names who uploaded each run and keeps retractions (who, when, why) on the run."""
    cols = {
        r[0] for r in conn.execute(text("SELECT column_name FROM information_schema.columns WHERE table_name='runs'"))
    }
    for name, kind in (
        ("uploaded_by", "VARCHAR"),
        ("retracted_at", "TIMESTAMP"),
        ("retracted_by", "VARCHAR"),
        ("retraction_reason", "VARCHAR"),
    ):
        if name not in cols:  # a store stamped older than its layout (a test's hand-made v3) keeps its columns
            conn.execute(text(f"ALTER TABLE runs ADD COLUMN {name} {kind}"))


def _v5_to_v6(conn) -> None:
    """v6 counts the pairs stored since a noise group's figures were computed (aa_noise.pending); the first
    v4 (pushed for an hour) recomputed every touched group at every ingest."""
    cols = {
        r[0]
        for r in conn.execute(text("SELECT column_name FROM information_schema.columns WHERE table_name='aa_noise'"))
    }
    if "pending" not in cols:
        conn.execute(text("ALTER TABLE aa_noise ADD COLUMN pending BIGINT DEFAULT 0"))


def _v6_to_v7(conn) -> None:
    """v7 keeps each result's samples per worker process (bundle schema 2; stored results were one process) and
    the A/A figures per case (db.store.derived.aa_pairs: aa_cases), filled from the stored pairs."""
    from db.store.derived.aa_pairs import backfill_cases
    from db.store.tables import AACase

    cols = {
        r[0]
        for r in conn.execute(text("SELECT column_name FROM information_schema.columns WHERE table_name='results'"))
    }
    if "processes" not in cols:
        conn.execute(text("ALTER TABLE results ADD COLUMN processes INTEGER[] DEFAULT []"))
    AACase.__table__.create(conn, checkfirst=True)
    backfill_cases(conn)


def _v7_to_v8(conn) -> None:
    """v8 keeps each run group's side summaries (db.store.derived.side_cases)."""
    from db.store.tables import SIDE_CASES

    SIDE_CASES.create(conn, checkfirst=True)  # filled by the step to v9, with today's figures


def _results_v9(conn) -> None:
    """The result columns of store v9 (contention per process, a correctness figure's rounding level), where
    missing; a record's old contention warning read into its processes' shares (db.store.derived.contention)."""
    from db.store.derived.contention import STORED_SQL

    cols = {
        r[0]
        for r in conn.execute(text("SELECT column_name FROM information_schema.columns WHERE table_name='results'"))
    }
    if "contention" not in cols:
        conn.execute(text("ALTER TABLE results ADD COLUMN contention DOUBLE[] DEFAULT []"))
    if "rounding" not in cols:
        conn.execute(text("ALTER TABLE results ADD COLUMN rounding DOUBLE"))
    if "processes" in cols:  # before v7 there are none to give shares to: the v9 step fills them then
        conn.execute(
            text(
                f"UPDATE results SET contention = {STORED_SQL} WHERE len(contention) = 0 "
                "AND warnings_json LIKE '%CPU contention%'"
            )
        )


def _v8_to_v9(conn) -> None:
    """v9 keeps each result's contention per worker process (bundle schema 3; a stored record's old "CPU
    contention" warning becomes its processes' shares: db.store.derived.contention) and a correctness figure's rounding
    level; the A/A model is made again without contended results, and the side summaries, with their new
    contention and correctness columns, again from the results (contended processes leave the figures:
    db.stats.contention)."""
    from db.store.derived import aa_pairs
    from db.store.derived.side_cases import backfill
    from db.store.tables import SIDE_CASES

    _results_v9(conn)
    # the A/A model made again without the results that ran contended (db.store.derived.aa_pairs)
    for table in ("aa_pairs", "aa_cases", "aa_noise"):
        conn.execute(text(f"DELETE FROM {table}"))
    aa_pairs.backfill(conn)
    conn.execute(text("DROP TABLE IF EXISTS side_cases"))
    SIDE_CASES.create(conn)
    backfill(conn)


def _v9_to_v10(conn) -> None:
    """v10 keeps signed-out sessions in the store (signed_out), not in a file beside it that each process
    read-modify-wrote: two processes signing out at once lost ids, and a lake's replicas shared one file. The old
    file's ids are taken in by db.store.writers.sessions on its first use (this step has no store path to find it).
    Nothing stored changes: the new table is made by db.store.engine._prepare with any other missing one, in this
    same transaction (keyless on a lake: db.store.lake.create_tables)."""


def _v10_to_v11(conn) -> None:
    """v11 summarises chip-scope sides too (side_cases.kind) and keeps the summaries after an upload, not inside
    it (db.store.writers.upkeep): a group whose summaries lag its runs carries a mark (side_stale) and its build is read
    from the pivot until the upkeep rewrites it. The old summaries go and every group is marked: the first upkeep
    (a server's start, a CLI command that stores) writes them again; reads are right meanwhile, only slower."""
    from db.store.derived.side_cases import mark_all
    from db.store.tables import SIDE_CASES, SIDE_STALE

    conn.execute(text("DROP TABLE IF EXISTS side_cases"))
    SIDE_CASES.create(conn)
    SIDE_STALE.create(conn, checkfirst=True)
    mark_all(conn)


def add_declared_columns(conn) -> None:
    """The machine and build columns declared (bundle.provenance, db.store.tables.provenance_columns) that `runs`
    lacks, added empty: the runs stored before say nothing there (NULL, shown "unavailable"). A declared field the
    model requires cannot be added this way: it would need a value for every stored run."""
    from db.store.tables import provenance_columns

    cols = {
        r[0] for r in conn.execute(text("SELECT column_name FROM information_schema.columns WHERE table_name='runs'"))
    }
    for column in provenance_columns():
        if column.name not in cols:
            if not column.nullable:
                raise ValueError(f"runs.{column.name}: a required column cannot be added to stored runs")
            conn.execute(text(f'ALTER TABLE runs ADD COLUMN "{column.name}" {column.type.compile(conn.dialect)}'))


def _v11_to_v12(conn) -> None:
    """v12 keeps the CPU's performance and efficiency core counts and the install source: the bundle carried them
    (validated, and the cores hashed into the run) but the ingest dropped them. Earlier runs have NULL there."""
    add_declared_columns(conn)


def _v12_to_v13(conn) -> None:
    """v13 keeps each case's kernels breakdown (bundle schema 5: case_kernels, keyed by run and case). Runs stored
    before have none (their bundles carried none). The table is made by db.store.engine._prepare with any other
    missing one, in this same transaction (keyless on a lake: db.store.lake.create_tables)."""


MIGRATIONS = {
    0: _v0_to_v1,
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _v5_to_v6,
    6: _v6_to_v7,
    7: _v7_to_v8,
    8: _v8_to_v9,
    9: _v9_to_v10,
    10: _v10_to_v11,
    11: _v11_to_v12,
    12: _v12_to_v13,
}


def migrate(conn) -> None:
    version = current_version(conn)
    if version is not None and version > STORE_VERSION:
        # an older mpsbench must not write into (or half-understand) a store laid out by a newer one
        raise StoreError(409, f"store version {version} is newer than this mpsbench ({STORE_VERSION}); upgrade")
    while version is not None and version < STORE_VERSION:
        MIGRATIONS[version](conn)
        version += 1
    # the version stamp: db.store.engine._prepare, in this same transaction (one place stamps old and new stores)
