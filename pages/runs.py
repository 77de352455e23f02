"""Runs: filter runs; one run's page (run_id in the URL) shows provenance, warnings and results with units."""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from bundle.case_names import case_names
from db.query import browse
from db.query.runs import RUN_FILTERS, list_runs, run_filter_options
from pages.widgets import guarded, load, picker, stop_if_empty, table

RUN_VIEW = ["run_id", "started_at", "machine_name", "chip", "torch_version", "git_hash", "channel", "nightly_date",
            "device_type", "complete", "n_results", "uploaded_by", "retracted_at", "retracted_by", "retraction_reason"]


def body() -> None:
    st.title("Runs")
    options = load(run_filter_options)
    if not options["machine"]:
        stop_if_empty(pd.DataFrame())
    filters = {}
    for slot, name in zip(st.columns(len(RUN_FILTERS)), RUN_FILTERS):
        with slot:
            filters[name] = picker(name + (" (torch version)" if name == "build" else ""), name, options[name])
    shown = load(list_runs, filters)  # the same function and filters as GET /api/v1/runs
    table(shown[RUN_VIEW])
    run_id = picker("Run", "run_id", list(shown["run_id"]))
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
    table(found[["case", "metric", "median", "iqr", "unit", "n", "status", "passed", "tolerance", "message",
                 "workload", "dtype", "compile", "case_key"]],
          column_config={"median": st.column_config.NumberColumn("median (unit)"),
                         "iqr": st.column_config.NumberColumn("IQR (unit)")})


def _provenance(detail: dict) -> None:
    machine = {k: detail[k] for k in ("machine_name", "chip", "hw_model", "gpu_name", "gpu_cores", "cpu_model",
                                      "memory_bytes", "os", "os_version", "arch", "power_source", "low_power_mode",
                                      "thermal_state")}
    build = {k: detail[k] for k in ("build", "torch_version", "git_hash", "channel", "nightly_date",
                                    "local_variant", "debug", "python_version", "libraries", "collector_version")}
    left, right = st.columns(2)
    left.caption("Machine")
    left.code(json.dumps(machine, indent=1, default=str, ensure_ascii=False), language="json")
    right.caption("Build")
    right.code(json.dumps(build, indent=1, default=str, ensure_ascii=False), language="json")
    st.caption("Device, timing, command line")
    st.code(json.dumps({"device": f"{detail['device_type']} {detail['device_name']}",
                        "started_at": detail["started_at"], "ended_at": detail["ended_at"],
                        "complete": detail["complete"], "command_line": detail["command_line"]},
                       indent=1, default=str, ensure_ascii=False), language="json")
    st.caption("PYTORCH_* environment and tags")
    st.code(json.dumps({"env": detail["env"], "tags": detail["tags"]}, indent=1, ensure_ascii=False),
            language="json")


def _run_warnings(run_id: str) -> None:
    warnings = load(browse.open_warnings)
    mine = warnings[warnings["run_id"] == run_id]
    st.subheader("Warnings")
    if mine.empty:
        st.success("No warnings for this run.")
    else:
        table(mine[["kind", "text"]])


guarded(body)
