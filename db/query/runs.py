"""Runs listed with filters (chip, machine, build = torch version, channel, device, dtype, compile, tag=key=value): the
Runs page and GET /api/v1/runs both call list_runs, so a filter means the same in both."""

from __future__ import annotations

import re
from typing import Mapping

import pandas as pd
from sqlalchemy import Engine

from bundle.provenance import BUILD, MACHINE
from db.errors import Problem, StoreError
from db.query.read import read_frame


def _listed(entries) -> list[str]:
    # the short git hash tells two builds of one version apart (an rc wheel and the final both say 2.15.0)
    return [("left(git_hash, 10) AS git_hash" if e.column == "git_hash" else e.column) for e in entries if e.listed]


# the runs list's columns: the run's own, and the machine's and build's marked listed in bundle.provenance
LISTED_SQL = ", ".join(
    [
        "run_id",
        "started_at",
        *_listed(MACHINE),
        "device_type",
        *_listed(BUILD),
        "complete",
        "n_results",
        "tags_json",
        "uploaded_by",
        "retracted_at",
        "retracted_by",
        "retraction_reason",
    ]
)

RUN_FILTERS = ("chip", "machine", "build", "channel", "device", "dtype", "compile", "tag")
_COLUMN = {
    "chip": "chip",
    "machine": "machine_name",
    "build": "torch_version",
    "channel": "channel",
    "device": "device_type",
}


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
    text = str(filters.get("limit") or "1000").strip()
    if not re.fullmatch(r"[0-9]{1,20}", text, re.ASCII):  # int() would also take "1_0" and other scripts' digits
        raise StoreError(400, "limit: must be an integer", [Problem("limit", "must be an integer 1..10000")])
    limit = int(text)
    if not 1 <= limit <= 10000:
        raise StoreError(400, "limit: out of range", [Problem("limit", "must be an integer 1..10000")])
    return read_frame(
        engine,
        f"SELECT {LISTED_SQL} FROM runs WHERE {' AND '.join(where)} ORDER BY started_at DESC LIMIT ?",
        params + [limit],
    )


def run_filter_options(engine: Engine) -> dict[str, list[str]]:
    """Every value each filter of list_runs can match in this store (what the Runs page's pickers offer)."""
    options = {
        name: read_frame(engine, f"SELECT DISTINCT {column} AS v FROM runs WHERE {column} IS NOT NULL")["v"]
        for name, column in _COLUMN.items()
    }
    for name in ("dtype", "compile"):
        options[name] = read_frame(engine, f"SELECT DISTINCT {name} AS v FROM results")["v"]
    options["tag"] = read_frame(engine, "SELECT DISTINCT key || '=' || value AS v FROM run_tags")["v"]
    return {name: sorted(map(str, values)) for name, values in options.items()}
