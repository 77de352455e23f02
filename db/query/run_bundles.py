"""Stored runs as bundles again (JSON-ready dicts in bundle.schema's shape), for an export: what a selector's runs
measured, each result with its samples per worker process and contention, in the stored (canonical) units.

Each case's kernels breakdown comes back too (bundle schema 5). What the store does not keep comes back absent, never
made up: a result's summary (derived from the samples anyway),
and for a run stored before store v12 the CPU's P/E core counts and the install source. Retracted runs are never
selected (db.query.selectors)."""

from __future__ import annotations

import json
import math
from typing import Any, Iterator

import pandas as pd
from sqlalchemy import Engine

from bundle.provenance import STORED, bundle_value
from db.errors import Problem, StoreError
from db.query.read import read_frame
from db.query.selectors import Selector
from db.query.what_ran import run_breakdowns

_RESULT = (
    "workload",
    "suite",
    "params_json",
    "dtype",
    "compile",
    "metric",
    "unit",
    "status",
    "message",
    "warnings_json",
    "samples",
    "processes",
    "contention",
    "passed",
    "tolerance",
    "rounding",
)


def selected_run_ids(engine: Engine, selectors: list[Selector]) -> list[str]:
    """The runs any of the selectors picks, in the order they were stored."""
    parts, params = [], []
    for selector in selectors:
        where, found = selector.runs_where()
        parts.append(f"({where})")
        params += found
    frame = read_frame(engine, f"SELECT run_id FROM runs WHERE {' OR '.join(parts)} ORDER BY run_seq", params)
    return frame.run_id.tolist()


def _plain(value: Any) -> Any:
    """A DuckDB/pandas value as JSON: NaN/NA → None, numpy scalars → Python, arrays → lists."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def run_bundles(engine: Engine, run_ids: list[str]) -> Iterator[dict[str, Any]]:
    """Each run as a bundle dict, results in their stored order."""
    for run_id in run_ids:
        runs = read_frame(engine, "SELECT * FROM runs WHERE run_id = ? AND retracted_at IS NULL", [run_id])
        if runs.empty:
            raise StoreError(404, f"run {run_id}: not stored (or retracted)", [Problem("run_id", "not stored")])
        run = {k: _plain(v) for k, v in runs.iloc[0].items()}
        results = read_frame(
            engine,
            f"SELECT {', '.join(_RESULT)} FROM results WHERE run_id = ? "
            "ORDER BY CAST(split_part(result_id, ':', 2) AS BIGINT)",
            [run_id],
        )
        kernels = run_breakdowns(engine, run_id)  # bundle schema 5: each case's breakdown of what ran
        yield {
            "schema_version": run["schema_version"],
            "run_id": run_id,
            "started_at": run["started_at"].isoformat(),
            "ended_at": run["ended_at"].isoformat() if run["ended_at"] is not None else None,
            "complete": bool(run["complete"]),
            **_provenance(run),
            "device": {"type": run["device_type"], "name": run["device_name"]},
            "tags": json.loads(run["tags_json"]),
            "warnings": json.loads(run["warnings_json"]),
            **({"kernels": kernels} if kernels else {}),
            "results": [_result(row) for row in results.to_dict("records")],
        }


def _provenance(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The bundle's machine and build from the run's columns (bundle.provenance); a NULL field is left out."""
    parts: dict[str, dict[str, Any]] = {"machine": {}, "build": {}}
    for entry in STORED:
        if run[entry.column] is not None:
            parts[entry.part][entry.field] = bundle_value(entry, run[entry.column])
    return parts


def _result(row: dict[str, Any]) -> dict[str, Any]:
    row = {k: _plain(v) for k, v in row.items()}
    out = {
        "workload": row["workload"],
        "suite": row["suite"],
        "params": json.loads(row["params_json"]),
        "dtype": row["dtype"],
        "compile": row["compile"],
        "metric": row["metric"],
        "unit": row["unit"],
        "status": row["status"],
        "warnings": json.loads(row["warnings_json"]),
        "samples": row["samples"] or [],
        "processes": row["processes"] or [],
        "contention": row["contention"] or [],
    }
    for key in ("message", "passed", "tolerance", "rounding"):
        if row[key] is not None:
            out[key] = row[key]
    return out
