"""The kernels breakdowns (bundle schema 5, bundle.kernels) in PyTorch OSS benchmark records (bundle.pytorch_oss.writing):
each case's breakdown rides on the record of the metric it explains (op_time, decode_time), under
`metric.extra_info.kernels` — its profiler, op calls, status and entries, each entry's time in µs per op call — and
is read back from there, so an export read back carries the same breakdowns."""

from __future__ import annotations

from typing import Any

from bundle.fields import case_key
from bundle.kernels import KernelEntry, device_time_us, timed

KEY = "kernels"  # under metric.extra_info
_CARRIED = ("status", "message", "profiler", "op_calls", "entries", "warnings")


def _case(item: dict[str, Any]) -> tuple:
    return (item["workload"], case_key(item["params"]), item["dtype"], item.get("compile", "eager"), item["metric"])


def by_case(bundle: dict[str, Any]) -> dict[tuple, dict[str, Any]]:
    """The bundle's breakdowns by (workload, case_key, dtype, compile, the metric they explain)."""
    return {_case(k): k for k in bundle.get("kernels") or []}


def extra(kernels: dict[tuple, dict[str, Any]], result: dict[str, Any]) -> dict[str, Any]:
    """What a result's record carries of its case's breakdown: {"kernels": …}, or nothing."""
    found = kernels.get(_case(result))
    if found is None:
        return {}
    carried = {k: found[k] for k in _CARRIED if found.get(k) is not None}
    entries = [KernelEntry.model_validate(e) for e in found.get("entries") or []]
    carried["device_time_us"] = device_time_us(entries) if entries else None  # µs per op call: the readable sum
    carried["timed_kinds"] = sorted({e.kind.value for e in timed(entries)})  # the kinds that sum
    return {KEY: carried}


def from_record(result: dict[str, Any], metric_extra: dict[str, Any]) -> dict[str, Any] | None:
    """The breakdown a record carries, as the bundle's `kernels` entry of the result's case; None without one."""
    found = metric_extra.get(KEY)
    if not isinstance(found, dict):
        return None
    case = {k: result[k] for k in ("workload", "params", "dtype", "compile", "metric")}
    return {**case, **{k: found[k] for k in _CARRIED if k in found}}
