"""Chip × build (or dtype × build) heatmap data: one metric's geometric-mean oriented ratio against one baseline
build. Each cell pairs cases of one chip (machines pooled, explicitly) and one dtype and compile mode, so a cell
never mixes configurations; its cases may span workloads of that metric (n_cases says how many)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.builds import build_sort_key
from bundle.metrics import METRICS, RATIO_METRICS
from db.query.compare.pivot import scope_sql
from db.query.params import Params, build_choice, one_of, only
from db.query.read import read_frame
from db.review.comparison import CompareQuery, compare
from db.stats.significance import geomean_ci
from db.views.defaults import STABLE

COLUMNS = ["row", "build", "geomean", "ci_low", "ci_high", "ci", "n_cases", "unit", "baseline"]
SHOWN = ["row", "build", "geomean", "ci", "n_cases", "unit", "baseline"]  # the page's table: no bare None cell


def matrix_builds(engine: Engine) -> list[str]:
    return _builds(engine)[0]


def _builds(engine: Engine) -> tuple[list[str], list[str]]:
    """Every stored torch version in version order, and its channel."""
    found = read_frame(
        engine, "SELECT torch_version, min(nightly_date) AS d, min(channel) AS channel FROM runs GROUP BY torch_version"
    )
    ordered = sorted(zip(found.torch_version, found.d, found.channel), key=lambda b: build_sort_key(b[0], b[1]))
    return [v for v, _, _ in ordered], [c for _, _, c in ordered]


def matrix(
    engine: Engine,
    metric_name: str,
    baseline_build: str,
    rows: str = "chip",
    dtype: str = "",
    compile_mode: str = "eager",
    workload: str = "",
) -> pd.DataFrame:
    """rows="chip": one dtype (required) per matrix; rows="dtype": all dtypes, chips pooled per dtype never —
    each (dtype, chip) is its own row label."""
    cells = []
    for build in [b for b in matrix_builds(engine) if b != baseline_build]:
        params = {
            "baseline": f"torch={baseline_build}",
            "candidate": f"torch={build}",
            "scope": "chip",
            "metric": metric_name,
            "compile": compile_mode,
            "dtype": dtype,
            "workload": workload,
        }
        cases = compare(engine, CompareQuery.from_params(params)).cases
        cases = cases[np.isfinite(cases.oriented_ratio.astype(float))]
        label = cases.scope if rows == "chip" else cases.dtype + " · " + cases.scope
        for row, group in cases.groupby(label):
            centre, low, high = geomean_ci(np.log(group.oriented_ratio.to_numpy(dtype=float)))
            cells.append(
                {
                    "row": row,
                    "build": build,
                    "geomean": centre,
                    "ci_low": low,
                    "ci_high": high,
                    "ci": ci_text(low, high, len(group)),
                    "n_cases": len(group),
                    "unit": "×",
                    "baseline": f"torch={baseline_build}",
                    "scope": group.scope.iloc[0],
                }
            )
    return pd.DataFrame(cells, columns=COLUMNS + ["scope"])  # scope: the row's chip, for matrix_grid


def ci_text(low: float | None, high: float | None, n: int) -> str:
    """The 95 % CI in words: "0.911–1.249×", or why there is none (one case gives no interval)."""
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return f"— (no CI from {n} case{'s' * (n != 1)})"
    return f"{low:.3f}–{high:.3f}×"


def builds_ran(engine: Engine) -> set[tuple[str, str]]:
    """Every (chip scope, build) with a stored run: a Mac never ran a CUDA or CPU wheel, so the Matrix says "not
    run" there instead of "no data"."""
    found = read_frame(engine, f"SELECT DISTINCT {scope_sql('chip')} AS scope, ru.torch_version AS build FROM runs ru")
    return set(zip(found.scope, found.build))


class MatrixDefaults(NamedTuple):
    metric: str
    dtype: str
    baseline: str  # a torch version; "" when nothing is stored
    compile: str


_PAIRS = f"""
WITH c AS (SELECT DISTINCT {scope_sql("chip")} AS scope, ru.torch_version AS build, r.metric, r.dtype, r.compile,
                  r.workload, r.case_key
           FROM results r JOIN runs ru ON ru.run_id = r.run_id WHERE r.status = 'ok')
SELECT a.metric, a.dtype, a.compile, a.build AS baseline, b.build AS candidate, count(*) AS n
FROM c a JOIN c b USING (scope, metric, dtype, compile, workload, case_key)
WHERE a.build <> b.build GROUP BY ALL"""


def matrix_defaults(engine: Engine) -> MatrixDefaults:
    """What the Matrix opens on: a comparison that exists. Of every (metric, dtype, compile mode, older build,
    newer build) whose cases ran ok on both builds on one chip (a Mac's build is never paired with a CUDA build:
    their chips differ), op time where any pairs (else the ratio metric that pairs most), then the pair with the
    most compared cases; a tie goes to a stable baseline (the release question's), eager, then the latest pair.
    Nothing paired: the metric and dtype with the most stored cases, the oldest build; op_time and float32 on an
    empty store."""
    builds, channels = _builds(engine)
    rank = {b: i for i, b in enumerate(builds)}
    ratio = list(RATIO_METRICS)
    pairs = read_frame(engine, _PAIRS)
    pairs = pairs[pairs.metric.isin(ratio) & pairs.baseline.isin(rank) & pairs.candidate.isin(rank)]
    pairs = pairs[pairs.baseline.map(rank) < pairs.candidate.map(rank)]
    if (pairs.metric == "op_time").any():
        pairs = pairs[pairs.metric == "op_time"]
    if not pairs.empty:
        stable = pairs.baseline.map(dict(zip(builds, channels))).isin(STABLE)
        best = (
            pairs.assign(
                stable=stable, eager=pairs.compile == "eager", c=pairs.candidate.map(rank), b=pairs.baseline.map(rank)
            )
            .sort_values(
                ["n", "stable", "eager", "c", "b", "dtype"], ascending=[False, False, False, False, False, True]
            )
            .iloc[0]
        )
        return MatrixDefaults(*(str(best[k]) for k in ("metric", "dtype", "baseline", "compile")))
    found = read_frame(
        engine,
        "SELECT metric, dtype, count(DISTINCT (workload, case_key, compile)) AS n FROM results "
        "WHERE status = 'ok' GROUP BY ALL",
    )
    found = found[found.metric.isin(ratio)]
    first = builds[0] if builds else ""
    if found.empty:
        return MatrixDefaults("op_time", "float32", first, "eager")
    best = (
        found.assign(op=found.metric != "op_time")
        .sort_values(["n", "op", "metric", "dtype"], ascending=[False, True, True, True])
        .iloc[0]
    )
    return MatrixDefaults(str(best["metric"]), str(best["dtype"]), first, "eager")


ROWS = ("chip", "dtype")
PARAMS = ("metric", "baseline", "rows", "dtype", "compile", "workload")


@dataclass(frozen=True)
class Matrix:
    metric: str
    baseline: str  # a torch version ("torch=" of a Compare link's selector dropped); "" when nothing is stored
    rows: str  # chip or dtype
    dtype: str  # the one dtype of a chip-rows matrix; "" for dtype rows
    compile: str
    workload: str  # "" for every workload of the metric
    builds: list[str]  # every stored build, version order (the columns)
    cells: pd.DataFrame  # COLUMNS: geomean oriented ratio (×) per row and build, with its 95 % CI
    grid: pd.DataFrame  # every (row, build) of the heatmap with its label: the geomean, "no data" or "not run"
    span: float  # the colour scale runs from 1/span to span (×), symmetric in log space around 1×
    why_empty: str  # "" when there are cells; else why none (what the store holds for this metric)


def matrix_view(engine: Engine, params: Params) -> Matrix:
    """The Matrix page and GET /api/v1/matrix. Empty parameters take matrix_defaults (a comparison that exists:
    its metric, dtype (chip rows only), baseline and compile mode), chip rows, every workload."""
    p = only(params, PARAMS)
    rows = one_of("rows", p["rows"] or "chip", ROWS)
    asked = p["metric"] and (rows != "chip" or p["dtype"]) and p["baseline"] and p["compile"]  # the page's own
    default = MatrixDefaults("", "", "", "") if asked else matrix_defaults(engine)
    metric_name = one_of("metric", p["metric"] or default.metric, METRICS)
    builds = matrix_builds(engine)
    baseline = p["baseline"].removeprefix("torch=") or default.baseline
    if p["baseline"] and builds:
        build_choice("baseline", baseline, builds)  # a build the store does not hold is named (404), not compared
    dtype = (p["dtype"] or default.dtype) if rows == "chip" else ""
    compile_mode = p["compile"] or default.compile or "eager"
    cells = (
        matrix(engine, metric_name, baseline, rows, dtype, compile_mode, p["workload"])
        if builds
        else pd.DataFrame(columns=COLUMNS)
    )
    grid, span = matrix_grid(cells, builds, baseline, builds_ran(engine))
    why = "" if len(cells) else _why_empty(engine, metric_name, baseline, dtype, compile_mode, p["workload"], builds)
    return Matrix(
        metric_name, baseline, rows, dtype, compile_mode, p["workload"], builds, cells[COLUMNS], grid, span, why
    )


def _why_empty(
    engine: Engine, metric: str, baseline: str, dtype: str, compile_mode: str, workload: str, builds: list[str]
) -> str:
    """An empty matrix's reason: the selection named, and what the store holds of this metric to pick instead."""
    if not builds:
        return "No runs stored yet."
    if len(builds) < 2:
        return f"Only one build is stored ({builds[0]}): a matrix needs a baseline and at least one other build."
    held = read_frame(
        engine,
        "SELECT ru.torch_version, r.dtype, r.compile FROM results r JOIN runs ru ON "
        "ru.run_id = r.run_id WHERE r.metric = ? AND r.status = 'ok' AND (? = '' OR r.workload = ?) "
        "GROUP BY ALL",
        [metric, workload, workload],
    )
    chosen = " · ".join(x for x in (dtype, compile_mode, workload) if x)
    if held.empty:
        return f"Nothing compared: no ok {metric} result is stored{' for ' + workload if workload else ''}."
    on_base = held[held.torch_version == baseline]
    listed = lambda col: ", ".join(sorted(set(held[col])))  # noqa: E731 - one-line helper
    if on_base.empty:
        return (
            f"Nothing compared: baseline {baseline} has no ok {metric} result. Builds that have: "
            f"{', '.join(b for b in builds if b in set(held.torch_version))}."
        )
    return (
        f"Nothing compared: no chip has ok {metric} results in {chosen} on both {baseline} and another build. "
        f"Stored for {metric}: dtypes {listed('dtype')}; compile modes {listed('compile')}."
    )


NO_DATA, NOT_RUN = "no data", "not run"  # ran both builds, nothing paired / the chip never ran the build
CELL_WORDS = {
    NO_DATA: "no data: the chip ran this build, but no case of this selection ran ok on it and on the baseline",
    NOT_RUN: "not run: no run of this build on this chip (a Mac never runs a CUDA wheel)",
}
TICKS = (0.25, 0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 2.0, 4.0)  # readable legend steps (×), mirrored around 1×


def matrix_grid(
    cells: pd.DataFrame, builds: list[str], baseline_build: str, ran: set[tuple[str, str]] | None = None
) -> tuple[pd.DataFrame, float]:
    """Every (row, build) of the heatmap, each labelled: its geomean as text, "no data" (the chip ran the build,
    nothing paired) or "not run" (`ran`: builds_ran says the chip never ran it; None: every chip ran every build),
    and the colour scale's half-width `span` (×): the scale runs from 1/span to span, symmetric in log space around
    1×, so equal wins and losses get equal colour and 1× is always the neutral midpoint."""
    columns = [b for b in builds if b != baseline_build]
    scopes = cells.drop_duplicates("row").set_index("row")["scope"] if "scope" in cells else pd.Series(dtype=str)
    rows = sorted(cells["row"].unique()) if not cells.empty else []
    full = pd.MultiIndex.from_product([rows, columns], names=["row", "build"]).to_frame(index=False)
    grid = full.merge(cells.drop(columns=["scope"], errors="ignore"), on=["row", "build"], how="left")
    logs = np.log(grid["geomean"].astype(float))
    span = float(np.exp(np.nanmax(np.abs(logs)))) if logs.notna().any() else 2.0
    span = max(span, 1.1)  # a flat matrix still gets a readable scale
    did_run = [ran is None or (scopes.get(r, r), b) in ran for r, b in grid[["row", "build"]].itertuples(index=False)]
    grid["label"] = [
        f"{g:.2f}×" if pd.notna(g) else NO_DATA if r else NOT_RUN for g, r in zip(grid["geomean"], did_run)
    ]
    grid["dark"] = (np.abs(logs) > 0.6 * np.log(span)).fillna(False).astype(bool)  # white text on deep colour
    grid["has_data"] = grid["geomean"].notna()
    return grid, span


def legend_ticks(span: float) -> list[float]:
    """The colour legend's labelled values (×): both ends of the scale, 1× and the readable steps between (TICKS)
    not within 8 % of an end (log), so no two labels overlap."""
    inner = [t for t in TICKS if 1 / span < t < span and abs(np.log(t)) < np.log(span) - 0.08]
    return [round(1 / span, 4), *inner, round(span, 4)]
