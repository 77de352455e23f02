"""A case's name for people: (workload, params, dtype, compile) → "linear q · Qwen3-0.6B · M=4 K=1024 N=2048 · bf16".

The canonical JSON case_key stays the identity (stores, URLs, the API); this name is what tables and charts lead
with. Order: the workload and the variant words that say what runs (projection, mode, variant), the model, the
shape (upper-case dimensions first, then named sizes), other settings, the dtype, and the compile mode when it is
not eager. Keys that only restate others (`used_by`, the model's identity numbers) are left out; a value that is
None (not applicable) is left out; a true flag is shown by its name, a false one not at all.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

import pandas as pd

VARIANT_KEYS = ("projection", "mode", "variant", "tensor")  # words that say what runs, after the workload
MODEL_KEYS = ("model", "vae")
# derived from other params (the model's identity numbers follow from its name; used_by lists the models
# sharing a shape; inner_elements = H·W): naming them adds width, not meaning
DERIVED_KEYS = frozenset(
    {"used_by", "inner_elements", "architecture", "parameters", "layers", "hidden", "experts_impl", "gqa"}
)
DIM_ORDER = ("B", "C", "T", "H", "W", "M", "K", "N")
MAX_SETTINGS = 8  # k=v items shown; more are summarised as "+n more" (the raw key stays in the table)
DTYPE_SHORT = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "float64": "fp64",
    "float8_e4m3fn": "fp8 e4m3",
    "float8_e5m2": "fp8 e5m2",
    "int8": "int8",
}


def case_name(workload: str, params: Mapping[str, Any] | str, dtype: str = "", compile_mode: str = "eager") -> str:
    """The human name of one case; `params` is the params dict or its canonical JSON case_key."""
    if isinstance(params, str):
        return _name_from_key(workload, params, dtype or "", compile_mode or "")
    return _name(workload, dict(params), dtype or "", compile_mode or "")


@lru_cache(maxsize=65536)
def _name_from_key(workload: str, case_key: str, dtype: str, compile_mode: str) -> str:
    try:
        params = json.loads(case_key)
    except (TypeError, ValueError):
        params = None
    if not isinstance(params, dict):  # not a params object: shown as stored
        return " · ".join(p for p in (workload, case_key, short_dtype(dtype), _compile(compile_mode)) if p)
    return _name(workload, params, dtype, compile_mode)


def _name(workload: str, params: dict[str, Any], dtype: str, compile_mode: str) -> str:
    head = " ".join([workload] + [str(params[k]) for k in VARIANT_KEYS if _shown(params.get(k))])
    model = next((str(params[k]) for k in MODEL_KEYS if _shown(params.get(k))), "")
    rest = [
        k
        for k in params
        if k not in VARIANT_KEYS and k not in MODEL_KEYS and k not in DERIVED_KEYS and _shown(params[k])
    ]
    rest.sort(key=_order)
    settings = [_setting(k, params[k]) for k in rest]
    if len(settings) > MAX_SETTINGS:
        settings = settings[:MAX_SETTINGS] + [f"+{len(settings) - MAX_SETTINGS} more"]
    parts = [head, model, " ".join(settings), short_dtype(dtype), _compile(compile_mode)]
    return " · ".join(p for p in parts if p)


def _order(key: str) -> tuple[int, int, str]:
    """Dimensions first, in the order shapes are written (B C T H W, M K N), then named sizes, then the rest."""
    if key in DIM_ORDER:
        return (0, DIM_ORDER.index(key), key)
    if key[:1].isupper() and len(key) <= 2:
        return (0, len(DIM_ORDER), key)
    return (1, 0, key)


def _shown(value: Any) -> bool:
    return value is not None and value is not False and value != ""


def _setting(key: str, value: Any) -> str:
    if value is True:
        return key
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{key}={value}"


def short_dtype(dtype: str) -> str:
    return DTYPE_SHORT.get(dtype, dtype)


def _compile(mode: str) -> str:
    return "" if mode in ("", "eager") else mode


def case_names(frame: pd.DataFrame) -> pd.Series:
    """case_name per row of a frame with workload, case_key and (where present) dtype and compile columns;
    each distinct case is named once."""
    if frame.empty:
        return pd.Series([], index=frame.index, dtype="str")
    columns = [c for c in ("workload", "case_key", "dtype", "compile") if c in frame.columns]
    keys = frame[columns].astype(str)
    unique = keys.drop_duplicates()
    named = {tuple(row): case_name(*_args(dict(zip(columns, row)))) for row in unique.itertuples(index=False)}
    return pd.Series([named[tuple(row)] for row in keys.itertuples(index=False)], index=frame.index, dtype="str")


def _args(row: dict[str, str]) -> tuple[str, str, str, str]:
    return row["workload"], row["case_key"], row.get("dtype", ""), row.get("compile", "eager")
