"""Validated, idempotent, all-or-nothing ingest of one bundle (values in canonical units).

One path for every bundle. The body must be UTF-8 JSON. The header (everything but `results`) is validated by
pydantic (bundle.schema.Bundle, strict JSON mode). The results array, the bulk, is parsed by DuckDB
(db.ingest.results_text) and judged set-wise by checks derived from the same schema (db.ingest.schema_checks,
db.ingest.staging), which stage the rows as temp table _final; the results that break a rule are then validated
one by one by pydantic, which words the refusal. Where DuckDB cannot read the text, or its lenient reader may
have let through what strict JSON forbids, pydantic judges the document itself. One transaction then stores
the run. bundle_sha256 = sha256 of the header's canonical JSON (bundle.schema's dump without results) and a
digest of what the staged rows say (XOR of DuckDB's 64-bit hash() per row, result index included; md5 per row
cost ~2 s per million rows): the same content gives the same hash whatever its spelling or units. (A DuckDB
upgrade that changed hash() would make a re-post of an already stored bundle answer 409.)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone

import duckdb
import pyarrow as pa
from sqlalchemy import Engine, text

from bundle.provenance import STORED, stored_value
from bundle.schema import Bundle, repeated_case_rule
from db.errors import Problem, StoreError
from db.ingest import results_text, staging
from db.ingest.kernels import insert_kernels
from db.ingest.refusals import body_bytes, refuse_suspects, require_utf8, results_last, validate
from db.store.derived.aa_pairs import store_pairs_of_run
from db.store.derived.contention import STORED_SQL
from db.store.derived.side_cases import mark_runs
from db.store.engine import WRITE_LOCK, bump_data_version
from db.store.faults import is_store_fault


@dataclass(frozen=True)
class IngestOutcome:
    run_id: str
    created: bool
    n_results: int


def _stage(duck, data: bytes, whole: bool = False) -> tuple[Bundle, int]:
    parts = results_text.split(data)
    if parts is None:
        data = results_last(data)
        parts = results_text.split(data)
    if parts is None:  # results is not an array (a number, null, an object): the schema names it
        validate(data)
        raise StoreError(422, "invalid bundle", [Problem("results", "must be an array of results")])
    header, array = parts
    try:  # before the header: a cut that is not the last key's array does not read
        lenient = results_text.parse(duck, array, whole)
    except duckdb.Error as exc:
        if is_store_fault(exc):  # out of memory or temp space, a full disk: the store's, not the bundle's
            raise
        if whole:
            raise StoreError(422, f"the results could not be read: {str(exc).splitlines()[0]}") from None
        validate(data)  # the schema's own refusal; where it has none, read its canonical re-write as one piece
        results_text.drop(duck)
        return _stage(duck, results_last(data), whole=True)
    bundle = validate(header)
    count, suspects, more = staging.stage(duck, bundle.run_id)
    if results_text.may_hide_null(duck, array):
        suspects = sorted(set(suspects) | set(results_text.explicit_nulls(array, staging.SUSPECTS + 1)))
        more, suspects = more or len(suspects) > staging.SUSPECTS, suspects[: staging.SUSPECTS]
    if _may_hide_comma(lenient):  # DuckDB's reader takes trailing commas: the schema judges the document itself
        validate(data)
    if suspects:
        refuse_suspects(array, suspects, more)
    _refuse_repeats(duck)
    return bundle, count


def _refuse_repeats(duck) -> None:
    """A case twice in one bundle is refused before anything joins on it (db.store.derived.aa_pairs pairs by case)."""
    found, total = staging.repeats(duck, staging.SUSPECTS)
    if not found:
        return
    problems = [Problem(f"results[{j}]", repeated_case_rule(i, j)) for i, j in found]
    if total > len(found):
        problems.append(Problem("results", f"{total} results repeat a case in all; the first {len(found)} are listed"))
    raise StoreError(422, "invalid bundle", problems)


def _may_hide_comma(scan) -> bool:
    try:
        return scan.result()
    except duckdb.Error:  # the scan itself failed: assume it may, so the schema reads the whole document
        return True


def _chip(b: Bundle) -> str | None:
    """The machine's chip; a CUDA run from a collector that did not name it is labelled by its GPU ("NVIDIA H200"),
    so chip scope pools it with its kind instead of "unknown chip: <host>" (gpu_name first, then the device's)."""
    m, d = b.machine, b.device
    if m.chip or d.type != "cuda":
        return m.chip
    return m.gpu_name or d.name or None


def _run_row(b: Bundle, sha: str, n: int) -> dict:
    provenance = {entry.column: stored_value(entry, b) for entry in STORED}  # machine and build: bundle.provenance
    return dict(
        run_id=b.run_id,
        schema_version=b.schema_version,
        bundle_sha256=sha,
        ingested_at=datetime.now(timezone.utc).replace(tzinfo=None),
        started_at=b.started_at.astimezone(timezone.utc).replace(tzinfo=None),
        ended_at=b.ended_at and b.ended_at.astimezone(timezone.utc).replace(tzinfo=None),
        complete=b.complete,
        **{**provenance, "chip": _chip(b)},
        device_type=b.device.type,
        device_name=b.device.name,
        tags_json=json.dumps(b.tags, ensure_ascii=False),
        warnings_json=json.dumps(b.warnings, ensure_ascii=False),
        n_results=n,
    )


_COLUMNS = (
    "result_id, run_id, workload, suite, case_key, params_json, dtype, compile, metric, unit, status, "
    "message, warnings_json, samples, processes, n, median, mean, min, max, p25, p75, stdev, passed, tolerance, "
    "rounding"
)


def _store(conn, bundle: Bundle, n: int, sha: str, uploaded_by: str | None) -> IngestOutcome:
    with conn.begin():
        known = conn.execute(
            text("SELECT bundle_sha256, retracted_at, retracted_by, retraction_reason FROM runs WHERE run_id=:r"),
            {"r": bundle.run_id},
        ).first()
        if known is not None:
            if known[0] != sha:
                raise StoreError(
                    409,
                    f"run_id {bundle.run_id} is already stored with different content",
                    [Problem("run_id", "a run_id names one bundle; make a new run_id for a new run")],
                )
            if known[1] is not None:  # "already present" would read as if it counted again: it does not
                raise StoreError(
                    409,
                    f"run_id {bundle.run_id} is stored but was retracted by {known[2]} at "
                    f"{known[1]:%Y-%m-%d %H:%M} UTC ({known[3]}): it stays out of every comparison",
                    [Problem("run_id", "retracted: upload a new run (a new run_id) to be compared")],
                )
            return IngestOutcome(bundle.run_id, False, n)
        seq = conn.execute(text("SELECT coalesce(max(run_seq), 0) + 1 FROM runs")).scalar()  # db.store.tables: run_seq
        run = {**_run_row(bundle, sha, n), "run_seq": seq, "uploaded_by": uploaded_by}
        conn.execute(text(f"INSERT INTO runs ({', '.join(run)}) VALUES ({', '.join(':' + k for k in run)})"), run)
        _insert_tags(conn, bundle)
        insert_kernels(conn, bundle, seq)
        # no ORDER BY i: a run's rows land together whatever their order within it (db.store.tables: run_seq)
        conn.exec_driver_sql(
            f"INSERT INTO results ({_COLUMNS}, contention, run_seq) SELECT {_COLUMNS}, "
            f"{STORED_SQL}, {int(seq)} FROM _final"
        )
        store_pairs_of_run(conn, bundle.run_id)  # its A/A pairs (db.store.derived.aa_pairs), in the same transaction
        mark_runs(conn, [bundle.run_id])  # its group's side summaries lag until db.store.writers.upkeep catches up
        bump_data_version(conn)
    return IngestOutcome(bundle.run_id, True, n)


def _insert_tags(conn, bundle: Bundle) -> None:
    """All of a run's tags in one statement (row by row, 40,000 tags held the write lock for 49 s)."""
    if not bundle.tags:
        return
    duck = conn.connection.driver_connection
    duck.register(
        "_tags_arrow",
        pa.table(
            {
                "run_id": [bundle.run_id] * len(bundle.tags),
                "key": list(bundle.tags),
                "value": list(bundle.tags.values()),
            }
        ),
    )
    try:
        conn.exec_driver_sql("INSERT INTO run_tags (run_id, key, value) SELECT run_id, key, value FROM _tags_arrow")
    finally:
        duck.unregister("_tags_arrow")


_INPUTS = (
    "result_id, workload, suite, case_key, params_json, dtype, compile, metric, unit, status, message, "
    "warnings_json, samples, processes, passed, tolerance"
)  # what a result says; the rest is derived from it
# what bundle schema 3 added, hashed only where a result states it: a bundle stored before keeps its hash (a
# re-post of it is "already present", not a 409)
_DIGEST = (
    f"bit_xor(CASE WHEN len(contention) = 0 AND rounding IS NULL THEN hash({_INPUTS}) "
    f"ELSE hash({_INPUTS}, contention, rounding) END)::VARCHAR"
)


def _header_json(bundle: Bundle) -> str:
    """The header's canonical JSON, hashed into bundle_sha256: without `kernels` where a bundle has none (schema 1–4
    and runs without the kernel pass), so a bundle stored before schema 5 keeps its hash (a re-post of it is
    "already present", not a 409)."""
    return bundle.model_dump_json(exclude={"results"} | (set() if bundle.kernels else {"kernels"}))


def ingest_bundle(engine: Engine, raw, uploaded_by: str | None = None) -> IngestOutcome:
    """raw: the body (bytes or str) or a parsed document (dict); uploaded_by: the writer's token name
    (db.store.writers.tokens), kept on the run; StoreError names what is refused."""
    data = body_bytes(raw)
    with WRITE_LOCK, engine.connect() as conn:
        duck = conn.connection.driver_connection
        try:
            try:
                bundle, n = _stage(duck, data)
            except StoreError as err:
                if err.status == 400:
                    require_utf8(data)
                raise
            digest = duck.execute(f"SELECT {_DIGEST} FROM _final").fetchall()[0][0]
            sha = hashlib.sha256(f"{_header_json(bundle)}\n{digest}".encode()).hexdigest()
            return _store(conn, bundle, n, sha, uploaded_by)
        finally:
            results_text.drop(duck)
            staging.drop(duck)
