"""Read-only queries behind the browsing pages (overview, runs, memory, correctness).

Each function takes an engine and returns a pandas DataFrame (or a dict for one run); pages only render them.
Values stay in their canonical unit; a column that holds a number names its unit in its header.
"""

from __future__ import annotations

import json

import pandas as pd
from sqlalchemy import Engine

from bundle.builds import build_label
from bundle.case_names import case_name
from bundle.metrics import CORRECTNESS
from bundle.units import convert
from db.query.read import read_frame

_RUN_COLUMNS = (
    "run_id, started_at, complete, machine_name, chip, gpu_cores, memory_bytes, os, os_version, "
    "torch_version, git_hash, channel, nightly_date, device_type, device_name, power_source, tags_json, "
    "warnings_json, n_results"
)
_RESULT_COLUMNS = (
    "r.result_id, r.run_id, r.workload, r.suite, r.case_key, r.dtype, r.compile, r.metric, r.unit, "
    "r.status, r.message, r.warnings_json, r.n, r.median, r.p25, r.p75, r.passed, r.tolerance, r.rounding, "
    "ru.machine_name, ru.chip, ru.torch_version, ru.git_hash, ru.channel, ru.nightly_date, ru.started_at, "
    "ru.tags_json"
)
MEMORY_METRICS = ["memory_driver_peak", "memory_reserved_peak", "memory_allocated_peak", "memory_outside_allocator"]
CORRECTNESS_METRICS = list(CORRECTNESS)  # every correctness metric: max_rel_error too


def runs(engine: Engine) -> pd.DataFrame:
    """All runs, newest first, with a build label, memory in GiB and tags decoded."""
    frame = read_frame(engine, f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY started_at DESC")
    frame["build"] = _builds(frame)
    frame["memory_GiB"] = [
        None if pd.isna(b) else round(convert(float(b), "B", "GiB"), 1) for b in frame["memory_bytes"]
    ]
    frame["tags"] = [json.loads(t or "{}") for t in frame["tags_json"]]
    frame["warnings"] = [json.loads(w or "[]") for w in frame["warnings_json"]]
    return frame.drop(columns=["tags_json", "warnings_json"])


def _builds(frame: pd.DataFrame) -> list[str]:
    return [
        build_label(v, c, None if pd.isna(h) else h)
        for v, c, h in frame[["torch_version", "channel", "git_hash"]].itertuples(index=False)
    ]


def run_detail(engine: Engine, run_id: str) -> dict | None:
    """Everything stored about one run (its provenance), JSON columns decoded; None if unknown."""
    found = read_frame(engine, "SELECT * FROM runs WHERE run_id = ?", [run_id])
    if found.empty:
        return None
    detail = {k: (None if _missing(v) else v) for k, v in found.iloc[0].to_dict().items()}
    for name in ("env", "libraries", "tags", "warnings"):
        detail[name] = json.loads(detail.pop(f"{name}_json") or ("[]" if name == "warnings" else "{}"))
    detail["build"] = build_label(detail["torch_version"], detail["channel"], detail["git_hash"], detail["debug"])
    return detail


def _missing(value) -> bool:
    return value is None or (not isinstance(value, (list, dict, str)) and bool(pd.isna(value)))


def results(
    engine: Engine, run_ids: list[str] | None = None, metrics: list[str] | None = None, where: str = ""
) -> pd.DataFrame:
    """Result rows (summaries, not samples) joined with their run's machine and build."""
    clauses, params = ["TRUE"], []
    for column, values in (("r.run_id", run_ids), ("r.metric", metrics)):
        if values is not None:
            clauses.append(f"{column} IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(values))
    if where:
        clauses.append(where)
    frame = read_frame(
        engine,
        f"SELECT {_RESULT_COLUMNS} FROM results r JOIN runs ru ON ru.run_id = r.run_id"
        f" WHERE {' AND '.join(clauses)} ORDER BY r.result_id",
        params,
    )
    frame["build"] = _builds(frame)
    frame["iqr"] = frame["p75"] - frame["p25"]
    return frame


# the runs holding results of some metrics (a scan of two columns: no result row is read into Python)
_RUNS_WITH = (
    "SELECT run_id, torch_version, git_hash, channel, nightly_date, tags_json FROM runs WHERE run_id IN"
    " (SELECT DISTINCT run_id FROM results WHERE metric IN (SELECT unnest(?::VARCHAR[]))) ORDER BY run_id"
)


def runs_with(engine: Engine, metrics: list[str], split_tag: str | None = None) -> pd.DataFrame:
    """The runs with results of `metrics`, in run id order (the order of their result ids), each with its build
    label (split by `split_tag` as split_builds splits it): a page's builds without reading its records."""
    frame = read_frame(engine, _RUNS_WITH, [list(metrics)])
    frame["build"] = _builds(frame)
    return split_builds(frame, split_tag).drop(columns=["tags_json"])


def stored_values(engine: Engine, column: str, metrics: list[str]) -> list[str]:
    """The distinct values of a results column (workload, metric) among the results of `metrics`, sorted."""
    if column not in ("workload", "metric"):
        raise ValueError(f"not a column to list: {column!r}")
    sql = f"SELECT DISTINCT {column} FROM results WHERE metric IN (SELECT unnest(?::VARCHAR[])) ORDER BY 1"
    return read_frame(engine, sql, [list(metrics)])[column].tolist()


def split_builds(frame: pd.DataFrame, tag_key: str | None) -> pd.DataFrame:
    """Runs of one build told apart by a tag: "build" becomes e.g. "2.15.0rc1 (rc) · release=B" (A/B runs of
    one wheel, or any tag a team uses for its candidate), so per-build pages show them side by side."""
    if not tag_key or frame.empty:
        return frame
    values = [json.loads(t or "{}").get(tag_key) for t in frame["tags_json"]]
    labels = [
        f"{b} · {tag_key}={v}" if v is not None else f"{b} · no {tag_key} tag" for b, v in zip(frame["build"], values)
    ]
    return frame.assign(build=labels)


def tag_keys(engine: Engine) -> list[str]:
    return read_frame(engine, "SELECT DISTINCT key FROM run_tags ORDER BY key")["key"].tolist()


def status_counts(engine: Engine) -> pd.DataFrame:
    """Number of results per status over the whole store."""
    return read_frame(
        engine, "SELECT status, count(*) AS results FROM results GROUP BY status ORDER BY results DESC, status"
    )


def open_warnings(engine: Engine) -> pd.DataFrame:
    """Quality problems as rows: run warnings, battery power, incomplete runs, fallbacks, result warnings."""
    rows: list[dict] = []
    for run in runs(engine).itertuples(index=False):
        rows += _run_warning_rows(run)
    flagged = results(engine, where="(r.status = 'fallback' OR r.warnings_json NOT IN ('[]', ''))")
    for res in flagged.itertuples(index=False):
        where = f"{case_name(res.workload, res.case_key, res.dtype, res.compile)} · {res.metric}"
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
    label = getattr(row, "build", None) or build_label(row.torch_version, row.channel, getattr(row, "git_hash", None))
    return {"run_id": row.run_id, "machine": row.machine_name, "build": label, "kind": kind, "text": text}
