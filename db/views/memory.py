"""Memory figures per case and build: the three peaks and the driver memory outside the allocator, in GiB.

A figure a device cannot give stays "unavailable" with its reason; it is never shown as 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine

from db.views.params import Params, only

from bundle.units import convert
from db.query.browse import MEMORY_METRICS, results, split_builds

FIGURE_NAMES = {
    "memory_driver_peak": "driver total peak",
    "memory_reserved_peak": "allocator reserved peak",
    "memory_allocated_peak": "live tensors peak",
    "memory_outside_allocator": "driver outside allocator",
}
_CASE = ["machine_name", "chip", "build", "workload", "case_key", "dtype", "compile"]


def memory_long(engine: Engine, split_tag: str | None = None) -> pd.DataFrame:
    """One row per memory record: figure name, median in GiB (None when unavailable), status and reason."""
    frame = split_builds(results(engine, metrics=MEMORY_METRICS), split_tag)
    frame["figure"] = frame["metric"].map(FIGURE_NAMES)
    frame["GiB"] = [_gib(v, u, s) for v, u, s in frame[["median", "unit", "status"]].itertuples(index=False)]
    frame["reason"] = [m if s not in ("ok", "fallback") else "" for s, m in frame[["status", "message"]].itertuples(index=False)]
    return frame[_CASE + ["figure", "GiB", "status", "reason"]]


def memory_table(long: pd.DataFrame) -> pd.DataFrame:
    """Side by side: one row per case and build, one text column per figure ("1.234 GiB" or "unavailable: …")."""
    if long.empty:
        return pd.DataFrame(columns=_CASE + list(FIGURE_NAMES.values()))
    cells = long.assign(cell=[_cell(g, s, r) for g, s, r in long[["GiB", "status", "reason"]].itertuples(index=False)])
    wide = cells.pivot_table(index=_CASE, columns="figure", values="cell", aggfunc="first").reset_index()
    wide.columns.name = None
    for name in FIGURE_NAMES.values():
        if name not in wide.columns:
            wide[name] = "not recorded"
    return wide[_CASE + list(FIGURE_NAMES.values())].fillna("not recorded")


def _gib(value: float | None, unit: str, status: str) -> float | None:
    if status not in ("ok", "fallback") or value is None or pd.isna(value):
        return None
    return convert(float(value), unit, "GiB")


def _cell(gib: float | None, status: str, reason: str) -> str:
    if gib is None or pd.isna(gib):
        return f"{status}: {reason}" if reason else status
    flag = " (cpu fallback)" if status == "fallback" else ""
    return f"{gib:.3f} GiB{flag}"


@dataclass(frozen=True)
class Memory:
    split_tag: str  # "" when builds are not split by a tag
    workload: str  # "" for every workload
    workloads: list[str]  # every workload with memory records (what the page's workload picker offers)
    records: pd.DataFrame  # memory_long: one row per record, GiB null when unavailable (with its reason)
    table: pd.DataFrame  # memory_table: one row per case and build, one text cell per figure


def memory_view(engine: Engine, params: Params) -> Memory:
    """The Memory page and GET /api/v1/memory."""
    p = only(params, ("split_tag", "workload"))
    long = memory_long(engine, p["split_tag"] or None)
    workloads = sorted(set(long["workload"]))
    if p["workload"]:
        long = long[long["workload"] == p["workload"]]
    return Memory(p["split_tag"], p["workload"], workloads, long, memory_table(long))
