"""Runs: filter runs; one run's page (run_id in the URL) shows provenance, warnings and results with units."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from bundle.case_names import case_names
from bundle.provenance import BUILD, MACHINE, Stored, kind
from db.views.browse.runs import LISTED, open_warnings, run_detail, run_results, runs_view, shown
from db.views.inputs import RUN_FILTERS, run_filter_options
from pages.parts.cache import load
from pages.parts.guard import guarded, stop_if_empty
from pages.parts.table import table
from pages.parts.url_state import picker


def body() -> None:
    st.title("Runs")
    options = load(run_filter_options)
    if not options["machine"]:
        stop_if_empty(pd.DataFrame())
    filters = {}
    for slot, name in zip(st.columns(len(RUN_FILTERS)), RUN_FILTERS):
        with slot:
            filters[name] = picker(name + (" (torch version)" if name == "build" else ""), name, options[name])
    runs = load(runs_view, filters)  # the same function and filters as GET /api/v1/runs
    table(runs, column_config={e.column: st.column_config.Column(e.shown) for e in LISTED})
    run_id = picker("Run", "run_id", list(runs["run_id"]))
    if run_id:
        _run_page(run_id)


def _run_page(run_id: str) -> None:
    detail = load(run_detail, run_id)
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
    found = load(run_results, [run_id])
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
    """One run's machine or build, every declared field under its label (bundle.provenance; run_detail
    decodes the JSON ones under the field's name)."""
    return {e.shown: shown(e, detail[e.field] if kind(e).json else detail[e.column]) for e in entries}


def _run_warnings(run_id: str) -> None:
    warnings = load(open_warnings)
    mine = warnings[warnings["run_id"] == run_id]
    st.subheader("Warnings")
    if mine.empty:
        st.success("No warnings for this run.")
    else:
        table(mine[["kind", "text"]])


guarded(body)
