"""Validated, idempotent, all-or-nothing ingest of one bundle (values in canonical units).

Two ways to the same staged rows (temp table _final: one row per result, samples in canonical units, summaries
derived by one SQL): the fast path (db.ingest.fast: DuckDB parses and checks the results set-wise; the rows that
break a rule are then judged one by one by pydantic, for the exact refusal) and the reference path (pydantic's
bundle.schema over the whole bundle), which runs whenever the fast path cannot decide. One transaction then
stores the run, so both paths store the same rows. bundle_sha256 = sha256 of the header's canonical JSON
(bundle.schema's dump without results) and a digest of what the staged rows say (XOR of DuckDB's 64-bit hash()
per row, result index included; md5 per row cost ~2 s per million rows): the same content gives the same hash
whatever its spelling, units or path. (A DuckDB upgrade that changed hash() would make a re-post of an already
stored bundle answer 409.)
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone

import duckdb
import pyarrow as pa
from pydantic import ValidationError
from sqlalchemy import Engine, text

from bundle.metrics import METRICS
from bundle.schema import Bundle, Result
from bundle.units import conversion_factor
from db.ingest import fast as ingest_fast
from db.ingest import rules
from db.ingest import results_text
from db.errors import Problem, StoreError
from db.store.engine import WRITE_LOCK, bump_data_version


@dataclass(frozen=True)
class IngestOutcome:
    run_id: str
    created: bool
    n_results: int


def _parse(raw) -> dict:
    if isinstance(raw, dict):
        return raw
    try:
        doc = json.loads(raw)
    except (ValueError, TypeError) as exc:
        raise StoreError(400, f"body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise StoreError(400, "body is not a JSON object (a bundle is one object)")
    return doc


def _field(loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _loc(error: dict) -> tuple:
    named = (error.get("ctx") or {}).get("field")  # bundle.schema._field_error: a model check owned by one field
    return (*error["loc"], named) if named else error["loc"]


def _problems(exc: ValidationError, prefix: tuple = ()) -> list[Problem]:
    return [Problem(_field((*prefix, *_loc(e))) or "bundle", e["msg"].removeprefix("Value error, "))
            for e in exc.errors()]


def validate(doc: dict) -> Bundle:
    try:
        return Bundle.model_validate(doc)
    except ValidationError as exc:
        raise StoreError(422, "invalid bundle", _problems(exc)) from None


def _refuse_suspects(data: bytes, suspects: ingest_fast.Suspects) -> None:
    """The reference's refusal, from pydantic on the results the fast path suspects (the others passed stricter
    rules than pydantic's): raises where one of them is invalid; returns where pydantic's lax mode takes them."""
    problems = []
    for i, text in sorted(results_text.objects(results_text.split(data)[1], suspects.indices).items()):
        try:
            Result.model_validate(json.loads(text))
        except ValidationError as exc:
            problems += _problems(exc, ("results", i))
    if problems and suspects.more:
        problems.append(Problem("results", f"only the first {len(suspects.indices)} results that broke a rule "
                                           "were checked one by one; later ones may be invalid too"))
    if problems:
        raise StoreError(422, "invalid bundle", problems)


_ROW_SCHEMA = pa.schema([("i", pa.int64())] + [(k, pa.string()) for k in (
    "workload", "suite", "case_key", "params_json", "dtype", "compile", "metric", "unit", "status", "message",
    "warnings_json")] + [("samples", pa.list_(pa.float64())), ("passed", pa.bool_()), ("tolerance", pa.float64())])


def _stage_reference(duck, raw) -> tuple[Bundle, int]:
    b = validate(_parse(raw))
    rows = []
    for i, r in enumerate(b.results):
        canon = METRICS[r.metric].unit
        f = conversion_factor(r.unit, canon)
        rows.append(dict(i=i, workload=r.workload, suite=r.suite, case_key=r.case_key,
                         params_json=json.dumps(r.params, ensure_ascii=False), dtype=r.dtype, compile=r.compile,
                         metric=r.metric, unit=canon, status=r.status.value, message=r.message,
                         warnings_json=json.dumps(r.warnings, ensure_ascii=False),
                         samples=[x * f for x in r.samples], passed=r.passed, tolerance=r.tolerance))
    duck.register("_ref_rows", pa.Table.from_pylist(rows, schema=_ROW_SCHEMA))
    duck.execute("CREATE TEMP TABLE _rows AS SELECT * FROM _ref_rows")
    duck.unregister("_ref_rows")
    return b, len(rows)


def _stage(duck, raw) -> tuple[Bundle, int]:
    if not isinstance(raw, dict):
        data = raw.encode() if isinstance(raw, str) else bytes(raw)
        try:
            staged = ingest_fast.stage(duck, data)
            if isinstance(staged, ingest_fast.Suspects):
                _refuse_suspects(data, staged)
            elif staged is not None:
                return staged
        except duckdb.Error:
            pass  # DuckDB could not read or judge it: the reference path says why
        ingest_fast.drop_staging(duck)
    bundle, n = _stage_reference(duck, raw)
    duck.execute(rules.DERIVE_SQL.format(run=bundle.run_id, rows=rules.REFERENCE_ROWS))
    return bundle, n


def _run_row(b: Bundle, sha: str, n: int) -> dict:
    m, bd, d = b.machine, b.build, b.device
    return dict(run_id=b.run_id, schema_version=b.schema_version, bundle_sha256=sha,
                ingested_at=datetime.now(timezone.utc).replace(tzinfo=None),
                started_at=b.started_at.astimezone(timezone.utc).replace(tzinfo=None),
                ended_at=b.ended_at and b.ended_at.astimezone(timezone.utc).replace(tzinfo=None),
                complete=b.complete, machine_name=m.name, chip=m.chip, hw_model=m.hw_model, gpu_name=m.gpu_name,
                gpu_cores=m.gpu_cores, cpu_model=m.cpu_model, memory_bytes=m.memory_bytes, os=m.os,
                os_version=m.os_version, arch=m.arch, power_source=m.power_source,
                low_power_mode=m.low_power_mode, thermal_state=m.thermal_state, torch_version=bd.torch_version,
                git_hash=bd.git_hash, channel=bd.channel.value, nightly_date=bd.nightly_date,
                local_variant=bd.local_variant, debug=bd.debug, python_version=bd.python_version,
                collector_version=bd.collector_version, command_line=bd.command_line, device_type=d.type,
                device_name=d.name, env_json=json.dumps(bd.env, ensure_ascii=False),
                libraries_json=json.dumps(bd.libraries, ensure_ascii=False),
                tags_json=json.dumps(b.tags, ensure_ascii=False),
                warnings_json=json.dumps(b.warnings, ensure_ascii=False), n_results=n)


_COLUMNS = ("result_id, run_id, workload, suite, case_key, params_json, dtype, compile, metric, unit, status, "
            "message, warnings_json, samples, n, median, mean, min, max, p25, p75, stdev, passed, tolerance")


def _store(conn, bundle: Bundle, n: int, sha: str) -> IngestOutcome:
    with conn.begin():
        known = conn.execute(text("SELECT bundle_sha256 FROM runs WHERE run_id=:r"), {"r": bundle.run_id}).first()
        if known is not None:
            if known[0] != sha:
                raise StoreError(409, f"run_id {bundle.run_id} is already stored with different content",
                                 [Problem("run_id", "a run_id names one bundle; make a new run_id for a new run")])
            return IngestOutcome(bundle.run_id, False, n)
        seq = conn.execute(text("SELECT coalesce(max(run_seq), 0) + 1 FROM runs")).scalar()  # db.store.tables: run_seq
        run = {**_run_row(bundle, sha, n), "run_seq": seq}
        conn.execute(text(f"INSERT INTO runs ({', '.join(run)}) VALUES ({', '.join(':' + k for k in run)})"), run)
        for k, v in bundle.tags.items():
            conn.execute(text("INSERT INTO run_tags VALUES (:r, :k, :v)"), {"r": bundle.run_id, "k": k, "v": v})
        # no ORDER BY i: a run's rows land together whatever their order within it (db.store.tables: run_seq)
        conn.exec_driver_sql(f"INSERT INTO results ({_COLUMNS}, run_seq) SELECT {_COLUMNS}, {int(seq)} FROM _final")
        bump_data_version(conn)
    return IngestOutcome(bundle.run_id, True, n)


def ingest_bundle(engine: Engine, raw) -> IngestOutcome:
    with WRITE_LOCK, engine.connect() as conn:
        duck = conn.connection.driver_connection
        try:
            bundle, n = _stage(duck, raw)
            digest = duck.execute(rules.DIGEST_SQL).fetchall()[0][0]
            sha = hashlib.sha256(f"{bundle.model_dump_json(exclude={'results'})}\n{digest}".encode()).hexdigest()
            return _store(conn, bundle, n, sha)
        finally:
            ingest_fast.drop_staging(duck)
