"""Read-only queries behind the browsing pages (overview, runs, memory, correctness).

Each function takes an engine and returns a pandas DataFrame (or a dict for one run); pages only render them.
Values stay in their canonical unit; a column that holds a number names its unit in its header.
"""
from __future__ import annotations

import json

import pandas as pd
from sqlalchemy import Engine, select
from sqlmodel import col

from bundle.units import convert
from db.tables import Result, Run

_RUN_COLUMNS = [Run.run_id, Run.started_at, Run.complete, Run.machine_name, Run.chip, Run.gpu_cores,
                Run.memory_bytes, Run.os, Run.os_version, Run.torch_version, Run.git_hash, Run.channel,
                Run.nightly_date, Run.device_type, Run.device_name, Run.power_source, Run.tags_json,
                Run.warnings_json, Run.n_results]
_RESULT_COLUMNS = [Result.result_id, Result.run_id, Result.workload, Result.suite, Result.case_key, Result.dtype,
                   Result.compile, Result.metric, Result.unit, Result.status, Result.message, Result.warnings_json,
                   Result.n, Result.median, Result.p25, Result.p75, Result.passed, Result.tolerance]
MEMORY_METRICS = ["memory_driver_peak", "memory_reserved_peak", "memory_allocated_peak", "memory_outside_allocator"]
CORRECTNESS_METRICS = ["psnr_vs_cpu", "max_abs_error"]


def build_label(torch_version: str, channel: str, nightly_date: str | None) -> str:
    """A build's human name: release channels matter more than git ancestry."""
    dated = f" {nightly_date}" if nightly_date else ""
    return f"{torch_version} ({channel}{dated})"


def runs(engine: Engine) -> pd.DataFrame:
    """All runs, newest first, with a build label, memory in GiB and tags decoded."""
    frame = pd.read_sql(select(*_RUN_COLUMNS).order_by(col(Run.started_at).desc()), engine)
    frame["build"] = [build_label(*row) for row in frame[["torch_version", "channel", "nightly_date"]].itertuples(index=False)]
    frame["memory_GiB"] = [None if pd.isna(b) else round(convert(float(b), "B", "GiB"), 1) for b in frame["memory_bytes"]]
    frame["tags"] = [json.loads(t or "{}") for t in frame["tags_json"]]
    frame["warnings"] = [json.loads(w or "[]") for w in frame["warnings_json"]]
    return frame.drop(columns=["tags_json", "warnings_json"])


def filter_runs(frame: pd.DataFrame, selection: dict[str, str]) -> pd.DataFrame:
    """Keep runs matching every chosen value; `tag` is "key=value"."""
    for column, wanted in selection.items():
        if not wanted:
            continue
        if column == "tag":
            key, _, value = wanted.partition("=")
            frame = frame[[tags.get(key) == value for tags in frame["tags"]]]
        elif column in frame.columns:
            frame = frame[frame[column].astype(str) == wanted]
    return frame


def run_ids_with(engine: Engine, column: str, value: str) -> set[str]:
    """Runs having at least one result whose dtype/compile equals value."""
    stmt = select(Result.run_id).where(getattr(Result, column) == value).distinct()
    with engine.connect() as conn:
        return {r[0] for r in conn.execute(stmt)}


def run_detail(engine: Engine, run_id: str) -> dict | None:
    """Everything stored about one run (its provenance), JSON columns decoded; None if unknown."""
    with engine.connect() as conn:
        row = conn.execute(select(Run).where(Run.run_id == run_id)).mappings().first()
    if row is None:
        return None
    detail = dict(row)
    for name in ("env", "tags", "warnings"):
        detail[name] = json.loads(detail.pop(f"{name}_json") or ("[]" if name == "warnings" else "{}"))
    detail["build"] = build_label(detail["torch_version"], detail["channel"], detail["nightly_date"])
    return detail


def results(engine: Engine, run_ids: list[str] | None = None, metrics: list[str] | None = None) -> pd.DataFrame:
    """Result rows (summaries, not samples) joined with their run's machine and build."""
    stmt = select(*_RESULT_COLUMNS, Run.machine_name, Run.chip, Run.torch_version, Run.channel, Run.nightly_date,
                  Run.started_at).join(Run, Run.run_id == Result.run_id)
    if run_ids is not None:
        stmt = stmt.where(col(Result.run_id).in_(run_ids))
    if metrics is not None:
        stmt = stmt.where(col(Result.metric).in_(metrics))
    frame = pd.read_sql(stmt.order_by(Result.result_id), engine)
    frame["build"] = [build_label(*r) for r in frame[["torch_version", "channel", "nightly_date"]].itertuples(index=False)]
    frame["iqr"] = frame["p75"] - frame["p25"]
    return frame


def status_counts(engine: Engine) -> pd.DataFrame:
    """Number of results per status over the whole store."""
    frame = pd.read_sql(select(Result.status), engine)
    return frame.value_counts("status").rename("results").reset_index()


def open_warnings(engine: Engine) -> pd.DataFrame:
    """Quality problems as rows: run warnings, battery power, incomplete runs, fallbacks, result warnings."""
    rows: list[dict] = []
    for run in runs(engine).itertuples(index=False):
        rows += _run_warning_rows(run)
    found = results(engine)
    for res in found.itertuples(index=False):
        where = f"{res.workload} {res.case_key} {res.dtype} {res.compile} {res.metric}"
        if res.status == "fallback":
            rows.append(_warning(res, "cpu fallback", f"{where}: {res.message or 'an op fell back to the CPU'}"))
        for text in json.loads(res.warnings_json or "[]"):
            rows.append(_warning(res, "result warning", f"{where}: {text}"))
    return pd.DataFrame(rows, columns=["run_id", "machine", "build", "kind", "text"])


def _run_warning_rows(run) -> list[dict]:
    rows = [_warning(run, "run warning", text) for text in run.warnings]
    if not run.complete:
        rows.append(_warning(run, "incomplete run", "the run ended before all cases were recorded"))
    if run.power_source == "battery":
        rows.append(_warning(run, "battery power", "measured on battery power"))
    return rows


def _warning(row, kind: str, text: str) -> dict:
    label = getattr(row, "build", None) or build_label(row.torch_version, row.channel, row.nightly_date)
    return {"run_id": row.run_id, "machine": row.machine_name, "build": label, "kind": kind, "text": text}
