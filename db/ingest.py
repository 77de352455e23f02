"""Validated, idempotent, all-or-nothing ingest of one bundle (pydantic path; values in canonical units)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa
from pydantic import ValidationError
from sqlalchemy import Engine, text

from bundle.metrics import METRICS
from bundle.schema import Bundle
from bundle.stats import summarize
from bundle.units import conversion_factor
from db.errors import Problem, StoreError
from db.store import WRITE_LOCK, bump_data_version


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


def validate(doc: dict) -> Bundle:
    try:
        return Bundle.model_validate(doc)
    except ValidationError as exc:
        problems = [Problem(_field(_loc(e)) or "bundle", e["msg"].removeprefix("Value error, "))
                    for e in exc.errors()]
        raise StoreError(422, "invalid bundle", problems) from None


def _result_rows(b: Bundle) -> pa.Table:
    rows = []
    for i, r in enumerate(b.results):
        canon = METRICS[r.metric].unit
        f = conversion_factor(r.unit, canon)
        samples = [x * f for x in r.samples]
        s = summarize(samples) if samples else None
        rows.append(dict(result_id=f"{b.run_id}:{i}", run_id=b.run_id, workload=r.workload, suite=r.suite,
                         case_key=r.case_key, params_json=json.dumps(r.params, ensure_ascii=False), dtype=r.dtype,
                         compile=r.compile, metric=r.metric, unit=canon, status=r.status.value,
                         message=r.message, warnings_json=json.dumps(r.warnings, ensure_ascii=False),
                         samples=samples, n=len(samples), median=s and s.median, mean=s and s.mean,
                         min=s and s.min, max=s and s.max, p25=s and s.p25, p75=s and s.p75,
                         stdev=s and s.stdev, passed=r.passed, tolerance=r.tolerance))
    return pa.Table.from_pylist(rows)


def _run_row(b: Bundle, sha: str) -> dict:
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
                tags_json=json.dumps(b.tags, ensure_ascii=False),
                warnings_json=json.dumps(b.warnings, ensure_ascii=False), n_results=len(b.results))


def ingest_bundle(engine: Engine, raw) -> IngestOutcome:
    bundle = validate(_parse(raw))
    sha = hashlib.sha256(bundle.model_dump_json().encode()).hexdigest()
    table = _result_rows(bundle) if bundle.results else None
    with WRITE_LOCK, engine.begin() as conn:
        known = conn.execute(text("SELECT bundle_sha256 FROM runs WHERE run_id=:r"), {"r": bundle.run_id}).first()
        if known is not None:
            if known[0] != sha:
                raise StoreError(409, f"run_id {bundle.run_id} is already stored with different content",
                                 [Problem("run_id", "a run_id names one bundle; make a new run_id for a new run")])
            return IngestOutcome(bundle.run_id, False, len(bundle.results))
        run = _run_row(bundle, sha)
        cols = ", ".join(run)
        conn.execute(text(f"INSERT INTO runs ({cols}) VALUES ({', '.join(':' + k for k in run)})"), run)
        for k, v in bundle.tags.items():
            conn.execute(text("INSERT INTO run_tags VALUES (:r, :k, :v)"), {"r": bundle.run_id, "k": k, "v": v})
        if table is not None:
            raw_conn = conn.connection.driver_connection
            raw_conn.register("_ingest_rows", table)
            names = ", ".join(table.column_names)
            conn.exec_driver_sql(f"INSERT INTO results ({names}) SELECT {names} FROM _ingest_rows")
            raw_conn.unregister("_ingest_rows")
        bump_data_version(conn)
    return IngestOutcome(bundle.run_id, True, len(bundle.results))
