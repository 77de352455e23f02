"""Runs: filter runs; one run's page (run_id in the URL) shows provenance, warnings and results with units."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from bundle.case_names import case_names
from bundle.provenance import BUILD, MACHINE, Stored, kind
from db.query import browse
from db.query.runs import RUN_FILTERS, list_runs, run_filter_options
from pages.widgets import guarded, load, picker, stop_if_empty, table


def _listed(entries: tuple[Stored, ...]) -> list[Stored]:
    return [e for e in entries if e.listed and not kind(e).json]  # JSON (libraries) is for the run's own page


# the list's columns: the run's own and the machine's and build's marked listed in bundle.provenance
LISTED = _listed(MACHINE) + _listed(BUILD)
RUN_VIEW = [
    "run_id",
    "started_at",
    *(e.column for e in _listed(MACHINE)),
    "device_type",
    *(e.column for e in _listed(BUILD)),
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


def body() -> None:
    st.title("Runs")
    options = load(run_filter_options)
    if not options["machine"]:
        stop_if_empty(pd.DataFrame())
    filters = {}
    for slot, name in zip(st.columns(len(RUN_FILTERS)), RUN_FILTERS):
        with slot:
            filters[name] = picker(name + (" (torch version)" if name == "build" else ""), name, options[name])
    runs = load(list_runs, filters)  # the same function and filters as GET /api/v1/runs
    table(listed_view(runs), column_config={e.column: st.column_config.Column(e.shown) for e in LISTED})
    run_id = picker("Run", "run_id", list(runs["run_id"]))
    if run_id:
        _run_page(run_id)


def _run_page(run_id: str) -> None:
    detail = load(browse.run_detail, run_id)
    if detail is None:
        st.error("No run with this run_id is stored.")
        return
    st.header("Run provenance")
    st.code(run_id, language=None)
    if detail.get("retracted_at") is not None:
        st.warning("Retracted: this run is left out of every comparison.")
        st.text(f"by {detail['retracted_by']} at {detail['retracted_at']} UTC: {detail['retraction_reason']}")
    _provenance(detail)
    _run_warnings(run_id)
    st.subheader("Results")
    found = load(browse.results, [run_id])
    found = found.assign(case=case_names(found))  # the name first, the identifying keys pinned at the end
    table(
        found[
            [
                "case",
                "metric",
                "median",
                "iqr",
                "unit",
                "n",
                "status",
                "passed",
                "tolerance",
                "message",
                "workload",
                "dtype",
                "compile",
                "case_key",
            ]
        ],
        column_config={
            "median": st.column_config.NumberColumn("median (unit)"),
            "iqr": st.column_config.NumberColumn("IQR (unit)"),
        },
    )


def _provenance(detail: dict) -> None:
    machine = provenance(detail, MACHINE)
    build = {"build": detail["build"], **provenance(detail, BUILD)}
    left, right = st.columns(2)
    left.caption("Machine")
    left.code(json.dumps(machine, indent=1, default=str, ensure_ascii=False), language="json")
    right.caption("Build")
    right.code(json.dumps(build, indent=1, default=str, ensure_ascii=False), language="json")
    st.caption("Device and timing")
    st.code(
        json.dumps(
            {
                "device": f"{detail['device_type']} {detail['device_name']}",
                "started_at": detail["started_at"],
                "ended_at": detail["ended_at"],
                "complete": detail["complete"],
            },
            indent=1,
            default=str,
            ensure_ascii=False,
        ),
        language="json",
    )
    st.caption("Tags")
    st.code(json.dumps(detail["tags"], indent=1, ensure_ascii=False), language="json")


def provenance(detail: dict, entries: tuple[Stored, ...]) -> dict[str, Any]:
    """One run's machine or build, every declared field under its label (bundle.provenance; browse.run_detail
    decodes the JSON ones under the field's name)."""
    return {e.shown: shown(e, detail[e.field] if kind(e).json else detail[e.column]) for e in entries}


def _run_warnings(run_id: str) -> None:
    warnings = load(browse.open_warnings)
    mine = warnings[warnings["run_id"] == run_id]
    st.subheader("Warnings")
    if mine.empty:
        st.success("No warnings for this run.")
    else:
        table(mine[["kind", "text"]])


guarded(body)
