"""Compare's case detail, "what ran": the picked case's kernels breakdowns on both sides (one read,
db.query.what_ran), what changed between them (db.review.what_ran.kernels: the path in words, the entries that moved most
in µs) and the panel's bars — each side's device time per op call by entry, stacked. GET /api/v1/compare carries
the same words per case (compare_what_ran), read in one query for every case it lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd
from sqlalchemy import Engine

from db.query.what_ran import cases_breakdowns
from db.review.comparison import CompareQuery
from db.review.what_ran.cases import case_key, rows_what_ran
from db.review.what_ran.kernels import WhatRan, merge_side, short_name, what_ran

TOP_ENTRIES = 8  # entries drawn by name; the rest stacked as one "other" segment (a legend of 40 names reads as none)
LABEL_WIDTH = 40  # an entry's name on the chart (the full name is its tooltip)
DEVICE_WORDS = {"cpu": "CPU", "mps": "MPS", "cuda": "CUDA"}
BAR_COLUMNS = ["side", "entry", "name", "kind", "device_time_us", "calls_per_call"]


@dataclass(frozen=True)
class CaseWhatRan:
    what_ran: WhatRan
    bars: pd.DataFrame  # BAR_COLUMNS: per side and entry its device time per op call (µs); empty without breakdowns
    device: str  # the case's device, in words ("CPU": a CPU figure is never shown as an MPS one)
    axis: str  # the bars' axis title, with its unit
    note: str  # one line above the panel: what the bars are, or that neither side has a breakdown


def case_what_ran(engine: Engine, query: CompareQuery, case: Mapping[str, Any]) -> CaseWhatRan:
    """The case (a Compare case row: scope, device, workload, case_key, dtype, compile) on both sides of `query`."""
    key = case_key(case)
    baseline, candidate = query.selectors()
    base, cand = cases_breakdowns(engine, baseline, candidate, [key], query.scope).get(key, ([], []))
    found = what_ran(base, cand, subject=key[2])
    device = DEVICE_WORDS.get(key[1], key[1])
    axis = f"{device} time per op call (µs)"
    bars = breakdown_bars(base, cand, f"baseline {query.baseline}", f"candidate {query.candidate}")
    if bars.empty:
        note = f"No breakdown on either side of this case: `mpsbench run --kernels` records one ({device})."
    else:
        profiler = next((b["profiler"] for b in [*base, *cand] if b.get("profiler")), "")
        marked = "; CPU figures, not MPS ones" if device == "CPU" else ""
        note = f"What ran, {device} ({profiler}{marked}): each side's device time per op call by entry, µs."
    return CaseWhatRan(found, bars, device, axis, note)


def breakdown_bars(base: list[dict], cand: list[dict], base_label: str, cand_label: str) -> pd.DataFrame:
    """Per side (merged over its runs: db.review.what_ran.kernels.merge_side) its timing entries, µs per op call; the
    TOP_ENTRIES largest by name (over both sides), the rest summed as "other"."""
    sides = [(label, merge_side(found)) for label, found in ((base_label, base), (cand_label, cand))]
    rows = [
        {"side": label, "name": e.name, "kind": e.kind.value, "device_time_us": e.device_time_us,
         "calls_per_call": e.calls_per_call}
        for label, side in sides if side is not None for e in side.timed()
    ]  # fmt: skip
    if not rows:
        return pd.DataFrame(columns=BAR_COLUMNS)
    frame = pd.DataFrame(rows)
    largest = frame.groupby("name").device_time_us.max().sort_values(ascending=False, kind="stable")
    kept = set(largest.index[:TOP_ENTRIES])
    named = frame[frame.name.isin(kept)].assign(entry=lambda f: [short_name(n, LABEL_WIDTH) for n in f.name])
    rest = frame[~frame.name.isin(kept)]
    if len(rest):
        other = rest.groupby("side", as_index=False, sort=False).agg(
            device_time_us=("device_time_us", "sum"), calls_per_call=("calls_per_call", "sum")
        )
        n = rest.name.nunique()
        other = other.assign(entry=f"other ({n} entries)", name=f"{n} smaller entries", kind="other")
        named = pd.concat([named, other], ignore_index=True)
    return named.sort_values(["side", "device_time_us"], ascending=[True, False], kind="stable")[
        BAR_COLUMNS
    ].reset_index(drop=True)


def compare_what_ran(engine: Engine, query: CompareQuery, rows: pd.DataFrame) -> pd.DataFrame:
    """Compare's case rows with what changed in what ran: `what_ran` (words, db.review.what_ran.kernels.WhatRan.words),
    `path_changed`, and `what_ran_detail` (its JSON: each moved entry with µs; null where not compared). One read
    for every row (db.review.what_ran.cases)."""
    found = rows_what_ran(engine, query, rows)
    return rows.assign(
        what_ran=[w.words() for w in found],
        path_changed=[w.path_changed for w in found],
        what_ran_detail=[w.to_json() if w.compared else None for w in found],
    )
