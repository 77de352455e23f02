"""The Runs page's list: the runs GET /api/v1/runs lists (db.query.runs.list_runs, the same filters), its columns in
the order a person reads them — which run, on which machine and chip, of which build and git hash, when — then
the hardware, the rest of the build and the upload's own columns."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd
from sqlalchemy import Engine

from bundle.provenance import BUILD, MACHINE, Stored, kind
from db.query import browse, runs


def _listed(entries: tuple[Stored, ...]) -> list[Stored]:
    return [e for e in entries if e.listed and not kind(e).json]  # JSON (libraries) is for the run's own page


LISTED = _listed(MACHINE) + _listed(BUILD)
# what tells one run from another first: at 1280-1440 px the run id, machine, chip, build (torch), git hash and
# start are what fit; the hardware columns (GPU and CPU cores, OS) sat between them and pushed the build and git
# hash off-screen
LEAD = ["run_id", "machine_name", "chip", "torch_version", "git_hash", "started_at"]
RUN_VIEW = [
    *LEAD,
    *(e.column for e in LISTED if e.column not in LEAD),
    "device_type",
    "complete",
    "n_results",
    "uploaded_by",
    "retracted_at",
    "retracted_by",
    "retraction_reason",
]


def shown(entry: Stored, value: Any) -> Any:
    """A stored machine or build value as the page shows it: missing (NULL, NaN: an older store, or a machine that
    could not tell) is the declaration's word for it ("unavailable"); a count is a whole number, not 8.0."""
    if value is None or (not isinstance(value, (list, dict, str)) and pd.isna(value)):
        return entry.absent or None
    if isinstance(value, float) and kind(entry).type is int:
        return int(value)
    return value


def listed_view(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs list as shown: RUN_VIEW's columns, the declared ones' missing values spelled out (a column that
    has any is text: a number column cannot hold the word)."""
    view = runs[RUN_VIEW].copy()
    for entry in LISTED:
        column = view[entry.column]
        if column.isna().any():
            view[entry.column] = [None if v is None else str(v) for v in (shown(entry, x) for x in column)]
    return view


def runs_view(engine: Engine, filters: Mapping[str, str]) -> pd.DataFrame:
    """The Runs page's list: the runs GET /api/v1/runs lists with the same filters, as listed_view shows them."""
    return listed_view(runs.list_runs(engine, filters))


def list_runs(engine: Engine, filters: Mapping[str, str]) -> pd.DataFrame:
    """The runs GET /api/v1/runs lists: every stored column, newest first, the filters applied (db.query.runs)."""
    return runs.list_runs(engine, filters)


def run_detail(engine: Engine, run_id: str) -> dict | None:
    """One run's stored fields, its machine and build included (None: no such run)."""
    return browse.run_detail(engine, run_id)


def run_results(engine: Engine, run_ids: list[str]) -> pd.DataFrame:
    """The results of the runs named, one row per stored figure."""
    return browse.results(engine, run_ids)


def open_warnings(engine: Engine) -> pd.DataFrame:
    """Quality problems as rows: run warnings, battery power, incomplete runs, fallbacks, result warnings."""
    return browse.open_warnings(engine)
