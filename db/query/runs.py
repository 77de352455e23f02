"""Runs listed with filters (chip, machine, build, channel, device, dtype, compile, tag) for GET /api/v1/runs."""
from __future__ import annotations

from typing import Mapping

import pandas as pd
from sqlalchemy import Engine

from db.errors import Problem, StoreError
from db.store.read import read_frame

RUN_FILTERS = ("chip", "machine", "build", "channel", "device", "dtype", "compile", "tag")
_COLUMN = {"chip": "chip", "machine": "machine_name", "build": "torch_version", "channel": "channel",
           "device": "device_type"}


def _clause(name: str, value: str) -> tuple[str, list]:
    if name in _COLUMN:
        return f"{_COLUMN[name]} = ?", [value]
    if name in ("dtype", "compile"):
        return f"run_id IN (SELECT run_id FROM results WHERE {name} = ?)", [value]
    key, sep, tag_value = value.partition("=")
    if not sep or not key:
        raise StoreError(400, "tag: must be key=value", [Problem("tag", "must be key=value")])
    return "run_id IN (SELECT run_id FROM run_tags WHERE key = ? AND value = ?)", [key, tag_value]


def list_runs(engine: Engine, filters: Mapping[str, str]) -> pd.DataFrame:
    where, params = ["TRUE"], []
    for name in RUN_FILTERS:
        if filters.get(name):
            sql, p = _clause(name, filters[name])
            where.append(sql)
            params += p
    try:
        limit = int(filters.get("limit") or 1000)
    except ValueError:
        raise StoreError(400, "limit: must be an integer", [Problem("limit", "must be an integer 1..10000")]) from None
    if not 1 <= limit <= 10000:
        raise StoreError(400, "limit: out of range", [Problem("limit", "must be an integer 1..10000")])
    return read_frame(engine, "SELECT run_id, started_at, machine_name, chip, gpu_cores, os_version, device_type,"
                              " torch_version, channel, nightly_date, libraries_json, complete, n_results, tags_json"
                              " FROM runs"
                              f" WHERE {' AND '.join(where)} ORDER BY started_at DESC LIMIT ?", params + [limit])
