"""A bundle's kernels breakdowns (bundle schema 5, bundle.kernels) into `case_kernels`, in the ingest's transaction:
one row per case, its entries as the bundle carries them (validated there, with the header), in one statement."""

from __future__ import annotations

import json

import pyarrow as pa

from bundle.schema import Bundle

_COLUMNS = (
    "run_id",
    "workload",
    "case_key",
    "dtype",
    "compile",
    "params_json",
    "metric",
    "status",
    "message",
    "profiler",
    "op_calls",
    "device_time_us",
    "entries_json",
    "warnings_json",
    "run_seq",
)


def rows(bundle: Bundle, run_seq: int) -> pa.Table:
    """The bundle's breakdowns as case_kernels rows."""
    found = [
        (
            bundle.run_id,
            k.workload,
            k.case_key,
            k.dtype,
            k.compile,
            json.dumps(k.params, ensure_ascii=False),
            k.metric,
            k.status.value,
            k.message,
            k.profiler,
            k.op_calls,
            k.device_time_us if k.entries else None,
            json.dumps([e.model_dump(mode="json") for e in k.entries], ensure_ascii=False),
            json.dumps(k.warnings, ensure_ascii=False),
            run_seq,
        )
        for k in bundle.kernels
    ]
    types = {"op_calls": pa.int64(), "device_time_us": pa.float64(), "run_seq": pa.int64()}
    return pa.table(
        {
            name: pa.array([row[i] for row in found], type=types.get(name, pa.string()))
            for i, name in enumerate(_COLUMNS)
        }
    )


def insert_kernels(conn, bundle: Bundle, run_seq: int) -> None:
    """All of a run's breakdowns in one statement; nothing for a bundle without any (schema 1–4)."""
    if not bundle.kernels:
        return
    duck = conn.connection.driver_connection
    duck.register("_kernels_arrow", rows(bundle, run_seq))
    try:
        names = ", ".join(_COLUMNS)
        conn.exec_driver_sql(f"INSERT INTO case_kernels ({names}) SELECT {names} FROM _kernels_arrow")
    finally:
        duck.unregister("_kernels_arrow")
