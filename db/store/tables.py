"""SQLModel tables over DuckDB. String keys only (duckdb-engine cannot create autoincrement keys).

Values are stored in each metric's canonical unit (bundle.metrics); `unit` is kept on every row anyway so a
row read alone still says what its number means. JSON-valued columns hold JSON text, stored verbatim.
Numeric types are declared 64-bit (sa_type): a plain `float` becomes 32-bit FLOAT and `int` 32-bit INTEGER in
DuckDB, too coarse for summaries and too small for memory_bytes (192 GiB).
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from sqlalchemy import ARRAY, BigInteger, Boolean, Column, Double, Integer, String, Table
from sqlmodel import Field, SQLModel

from bundle.provenance import STORED, Stored, kind

STORE_VERSION = 13  # bump with a migration in db/store/migrate.py


class Meta(SQLModel, table=True):
    __tablename__ = "meta"
    key: str = Field(primary_key=True)
    value: str


class Run(SQLModel, table=True):
    __tablename__ = "runs"
    run_id: str = Field(primary_key=True)
    schema_version: int
    bundle_sha256: str  # of the canonical bundle JSON: same run_id + same hash = already present
    ingested_at: datetime
    started_at: datetime
    ended_at: datetime | None = None
    complete: bool
    # the machine's and the build's columns: provenance_columns() below, from bundle.provenance
    device_type: str
    device_name: str
    tags_json: str = "{}"
    warnings_json: str = "[]"
    n_results: int
    # 1, 2, 3, … in ingest order, also on each of the run's results (written together, so contiguous): DuckDB's
    # zone maps then skip the row groups of unselected runs, which random run ids cannot do (db.query.compare.pivot)
    run_seq: int | None = Field(default=None, sa_type=BigInteger)
    uploaded_by: str | None = (
        None  # the token name that wrote it (db.store.writers.tokens); None: before store v4 or CLI
    )
    # a retracted run stays listed (who, when, why) but its results are moved to retracted_results, out of
    # every comparison (db.store.writers.retract)
    retracted_at: datetime | None = None
    retracted_by: str | None = None
    retraction_reason: str | None = None


def provenance_columns(entries: Sequence[Stored] = STORED) -> list[Column]:
    """The runs table's machine and build columns, one per declared field (bundle.provenance): its type from the
    model's (an int column as wide as the field's bound: INTEGER below 2**31, else BIGINT; JSON and enums as text),
    NOT NULL where the model requires the field."""
    columns = []
    for entry in entries:
        found = kind(entry)
        if found.type is int:
            sql_type = Integer if found.int_limit is not None and found.int_limit <= 2**31 else BigInteger
        else:
            sql_type = {str: String, bool: Boolean}[found.type]
        columns.append(Column(entry.column, sql_type, nullable=found.nullable))
    return columns


for _column in provenance_columns():  # after the run's own columns: where a migrated store has its added ones too
    Run.__table__.append_column(_column)


class RunTag(SQLModel, table=True):
    __tablename__ = "run_tags"
    run_id: str = Field(primary_key=True)
    key: str = Field(primary_key=True)
    value: str


class ResultRow(SQLModel, table=True):
    __tablename__ = "results"
    result_id: str = Field(primary_key=True)  # f"{run_id}:{index in bundle}"
    run_id: str = Field(index=True)
    workload: str
    suite: str
    case_key: str  # canonical JSON of params
    params_json: str
    dtype: str
    compile: str
    metric: str
    unit: str
    status: str
    message: str | None = None
    warnings_json: str = "[]"
    samples: list[float] = Field(default_factory=list, sa_column=Column(ARRAY(Double)))
    # samples per worker process, in order (bundle schema 2); empty: one process (schema 1, single figures)
    processes: list[int] = Field(default_factory=list, sa_column=Column(ARRAY(Integer)))
    # per worker process, the share of the cores other processes took while it ran the case (bundle schema 3;
    # an older record's "CPU contention" warning, one share for each process: db.store.derived.contention); empty: not
    # measured. NULL entries: not measurable
    contention: list[float] = Field(default_factory=list, sa_column=Column(ARRAY(Double)))
    n: int = 0
    median: float | None = Field(default=None, sa_type=Double)
    mean: float | None = Field(default=None, sa_type=Double)
    min: float | None = Field(default=None, sa_type=Double)
    max: float | None = Field(default=None, sa_type=Double)
    p25: float | None = Field(default=None, sa_type=Double)
    p75: float | None = Field(default=None, sa_type=Double)
    stdev: float | None = Field(default=None, sa_type=Double)
    passed: bool | None = None
    tolerance: float | None = Field(default=None, sa_type=Double)
    rounding: float | None = Field(default=None, sa_type=Double)  # correctness: the figure rounding alone gives
    run_seq: int | None = Field(default=None, sa_type=BigInteger)  # = its run's run_seq


class CaseKernelsRow(SQLModel, table=True):
    """One case's kernels breakdown in one run (bundle schema 5, bundle.kernels): what ran, per op call. Its entries
    as JSON text, each {name, kind, calls_per_call, device_time_us (µs), share, bytes_per_call (B)}, as the bundle
    carries them; device_time_us here is their sum (bundle.kernels.device_time_us), for a read that wants only it."""

    __tablename__ = "case_kernels"
    run_id: str = Field(primary_key=True)
    workload: str = Field(primary_key=True)
    case_key: str = Field(primary_key=True)
    dtype: str = Field(primary_key=True)
    compile: str = Field(primary_key=True)
    params_json: str
    metric: str  # the time per call it explains (op_time, decode_time, …)
    status: str  # ok | unsupported | unavailable | error
    message: str | None = None
    profiler: str
    op_calls: int | None = Field(default=None, sa_type=BigInteger)
    device_time_us: float | None = Field(default=None, sa_type=Double)  # µs per op call; NULL without entries
    entries_json: str = "[]"
    warnings_json: str = "[]"
    run_seq: int | None = Field(default=None, sa_type=BigInteger)  # = its run's run_seq


class AANoise(SQLModel, table=True):
    """One group of the A/A noise model (db.store.derived.aa_pairs): its labels and its figures (db.stats.noise),
    recomputed whenever its pairs change."""

    __tablename__ = "aa_noise"
    # 1, 2, … given by db.store.derived.aa_pairs (an integer: the pairs group by it; never autoincremented by DuckDB)
    group_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    chip: str | None = None
    gpu_cores: int | None = None
    machine_name: str | None = None  # only for a machine without a chip (it is then its own group)
    device_type: str
    workload: str
    metric: str  # ratio metrics only (bundle.metrics: Comparison.ratio)
    dtype: str
    compile: str
    pairs: int = Field(default=0, sa_type=BigInteger)  # the pairs the figures were computed from
    pending: int = Field(default=0, sa_type=BigInteger)  # pairs stored since (db.store.derived.aa_pairs: REFRESH)
    quantile_log: float | None = Field(default=None, sa_type=Double)  # 95th percentile of |ln(b / a)|
    sigma_log: float | None = Field(default=None, sa_type=Double)  # sqrt(mean(ln(b / a)²) / 2)
    max_log: float | None = Field(default=None, sa_type=Double)


class AACase(SQLModel, table=True):
    """One case's A/A figures within its group (db.store.derived.aa_pairs keeps them with the pairs): how many pairs and
    the sum of their squared log ratios, so a review reads a case's run-to-run variance without the pairs."""

    __tablename__ = "aa_cases"
    group_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    case_key: str = Field(primary_key=True)
    pairs: int = Field(default=0, sa_type=BigInteger)
    sum_sq: float = Field(default=0.0, sa_type=Double)  # sum of ln(b / a)² over the pairs


# One case measured by two runs of one build on one machine (db.store.derived.aa_pairs writes them at ingest). No key
# (a plain table): millions of rows, only ever appended, deleted by run, and aggregated by group.
AA_PAIRS = Table(
    "aa_pairs",
    SQLModel.metadata,
    Column("group_id", BigInteger, nullable=False),  # aa_noise.group_id
    Column("seq_a", BigInteger, nullable=False),  # run_seq of the run stored first
    Column("seq_b", BigInteger, nullable=False),  # and of the later one
    Column("case_key", String, nullable=False),
    Column("log_ratio", Double, nullable=False),
)  # ln(median in run b / median in run a)


# One case of one run group — a build (version, git hash, debug) on one machine (kind machine) or one chip with its
# GPU core count (kind chip), and device — summarised as Compare reads a side of it in that scope: the group's ok
# samples pooled over its runs (its clean processes', where enough ran clean: db.stats.contention), their
# quartiles, the replicate figures the change test adds up (db.stats.replicates.SideReplicates), its contention,
# and what the non-ok results and the warnings say. Derived from `results` (db.store.writers.upkeep rewrites a group after
# one of its runs is stored or retracted; db.store.derived.side_cases), so a Compare of two builds reads ~2 rows per case
# instead of grouping every sample of every run. No key: deleted and written a group at a time, by (kind,
# group_seq: the run_seq of the group's first run).
SIDE_CASES = Table(
    "side_cases",
    SQLModel.metadata,
    Column("kind", String, nullable=False),  # the Compare scope the group answers: machine or chip
    Column("group_seq", BigInteger, nullable=False),
    Column("torch_version", String, nullable=False),
    Column("git_hash", String),
    Column("debug", Boolean),
    Column("scope", String, nullable=False),  # the machine name
    *(
        Column(name, String, nullable=False)
        for name in ("device", "workload", "case_key", "dtype", "compile", "metric")
    ),
    *(Column(name, BigInteger) for name in ("pooled", "machines", "results", "n", "runs")),
    Column("passed", Boolean),
    Column("other", String),
    Column("message", String),
    Column("warnings", String),
    *(
        Column(name, Double)
        for name in (
            "fallback_median",
            "median",
            "p25",
            "p75",
            "inv_processes",
            "processes",
            "ss_within",
            "df_within",
            "ss_between",
            "mean",
            "tolerance",
            "rounding",
        )
    ),
    Column("valid", Boolean),
    # the side's contention (db.stats.contention): too few clean processes (its figures are every process's),
    # how many of how many processes ran contended, and the range of their shares of the cores (0–1)
    Column("contended", Boolean),
    *(Column(name, BigInteger) for name in ("contended_processes", "timed_processes")),
    *(Column(name, Double) for name in ("contention_low", "contention_high")),
)


# A run group whose side summaries lag its runs: written where a run is stored or retracted (db.store.derived.side_cases
# mark_runs), removed when db.store.writers.upkeep has rewritten the group. A side with a mark is answered from the pivot
# (db.query.compare.side_reads), so a mark costs a read speed, never an answer. mark_id: each mark's own id (the upkeep
# removes the marks it saw, not the ones made while it worked).
SIDE_STALE = Table(
    "side_stale",
    SQLModel.metadata,
    Column("mark_id", String, nullable=False),
    Column("kind", String, nullable=False),
    Column("group_seq", BigInteger, nullable=False),
    Column("torch_version", String, nullable=False),
    Column("git_hash", String),
    Column("debug", Boolean),
)


class ReviewNote(SQLModel, table=True):
    """A triage of one regression in a release review (baseline → candidate), seen by the whole team."""

    __tablename__ = "review_notes"
    note_id: str = Field(primary_key=True)  # uuid4 hex
    baseline: str  # selector text, e.g. "torch=2.14.1" or "tag:role=baseline"
    candidate: str
    workload: str
    case_key: str
    dtype: str
    compile: str
    metric: str
    scope: str  # machine name or chip the regression was seen on
    state: str  # new | confirmed | expected | accepted | fixed | noise (db.store.writers.triage.STATES)
    comment: str = ""
    author: str
    link: str = ""
    created_at: datetime


class SignedOut(SQLModel, table=True):
    """A sign-in session ended for good (db.store.writers.sessions): its id, kept until the session would have expired, so
    a copy of its cookie stops working on every process and replica that reads this store."""

    __tablename__ = "signed_out"
    sid: str = Field(primary_key=True)  # the session's random id (hex)
    expires: int = Field(sa_type=BigInteger)  # Unix time the session would have ended
    signed_out_by: str  # the identity the session belonged to
    signed_out_at: datetime
