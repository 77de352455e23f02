"""Tables as the pages show them: every column's human label and unit, percentages and times formatted, a missing
value written "—"."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from db.views.columns import FRACTION, PERCENT, TIME, column

MISSING = "—"  # a missing value in a table (Streamlit writes "None")
_FORMATS = {PERCENT: "%.1f %%", FRACTION: "percent"}  # a percentage rounded with "%"; a fraction as one


def table(frame: pd.DataFrame, column_config: dict | None = None, **kwargs: Any) -> Any:
    """st.dataframe with every column's human label (db.views.columns: units named, no raw key), percentages
    rounded with "%", times labelled UTC, a missing value written "—"; the page's own `column_config` entries win.
    The data is unchanged (a selection, the JSON twins and AppTest read the keys)."""
    config: dict[str, Any] = {}
    for name in frame.columns:
        label, kind = column(name)
        if kind in _FORMATS and pd.api.types.is_numeric_dtype(frame[name]):
            config[name] = st.column_config.NumberColumn(label, format=_FORMATS[kind])
        elif kind == TIME and pd.api.types.is_datetime64_any_dtype(frame[name]):
            config[name] = st.column_config.DatetimeColumn(label, format="YYYY-MM-DD HH:mm:ss")
        else:
            config[name] = label
    config.update(column_config or {})
    return st.dataframe(frame, column_config=config, placeholder=MISSING, **{"hide_index": True, **kwargs})
