"""Frames as JSON-ready records, the one conversion every JSON answer (API twins, `mpsbench compare --format
json`, the release summary) uses: NaN/NA become null, numpy scalars plain Python, timestamps ISO text."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as JSON-safe dicts: NaN/NA become null, numpy scalars plain Python."""
    out = []
    for row in frame.to_dict("records"):
        out.append({k: _plain(v) for k, v in row.items()})
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)) or (hasattr(value, "ndim") and getattr(value, "ndim", 0) > 0):
        return [_plain(v) for v in value]  # a list cell (a group's named regressions)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value
