"""Matrix: chip × build (or dtype × build) heatmap of one metric's geomean ratio against a chosen baseline build."""

from __future__ import annotations

import streamlit as st

from bundle.metrics import METRICS
from db.views.browse.matrix import (
    CELL_WORDS,
    NO_DATA,
    NOT_RUN,
    ROWS,
    SHOWN,
    matrix_builds,
    matrix_defaults,
    matrix_view,
)
from pages.parts.browse_charts import matrix_chart
from pages.parts.cache import load
from pages.parts.guard import guarded, stop
from pages.parts.plain import plain
from pages.parts.table import table
from pages.parts.url_state import picker, text_param


def _choice(label: str, key: str, options: list[str], default: str) -> str:
    return picker(label, key, options, default, page="mx", clean=lambda v: v.removeprefix("torch="))


def _render() -> None:
    st.title("Matrix")
    builds = load(matrix_builds)
    if not builds:
        st.info("No runs stored yet.")
        stop()
    default = load(matrix_defaults)  # a comparison that exists: what most was compared
    cols = st.columns(5)
    with cols[0]:
        metric = _choice("Metric", "metric", list(METRICS), default.metric)
    with cols[1]:
        baseline = _choice("Baseline build", "baseline", builds, default.baseline or builds[0])
    with cols[2]:
        rows = _choice("Rows", "rows", list(ROWS), "chip")
    with cols[3]:
        dtype = text_param("dtype (required for chip rows)", "dtype", default.dtype, page="mx")
    with cols[4]:
        compile_mode = _choice("Compile", "compile", ["eager", "inductor"], default.compile)
    view = load(
        matrix_view, {"metric": metric, "baseline": baseline, "rows": rows, "dtype": dtype, "compile": compile_mode}
    )
    if view.cells.empty:
        st.warning(plain(view.why_empty))
        return
    st.caption(
        plain(
            f"Geometric mean of each cell's cases, oriented so > 1× is better, against {view.baseline}. "
            f"Colour: log scale symmetric around 1× (red {1 / view.span:.2f}× … white 1× … blue "
            f"{view.span:.2f}×)."
        )
    )  # the baseline comes from the URL: text, not Markdown
    st.altair_chart(matrix_chart(view.grid, view.builds, view.span, view.baseline), width="stretch")
    blank = [CELL_WORDS[w] for w in (NO_DATA, NOT_RUN) if (view.grid.label == w).any()]
    if blank:
        st.caption(plain("Grey cells: " + "; ".join(blank) + "."))
    table(
        view.cells[SHOWN],
        column_config={
            "geomean": st.column_config.NumberColumn("geomean (× better)", format="%.3f×"),
            "baseline": "baseline build",
        },
    )


guarded(_render)
