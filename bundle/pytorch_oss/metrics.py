"""Which mpsbench metric a PyTorch OSS record is (bundle/pytorch_oss/reading.py reads the records; docs/pytorch-oss.md has
the table): `--metric NAME=metric:unit` first (the user's word), then mpsbench's own names with a unit
(`op_time(us)`), then the names PyTorch's jobs write whose meaning is certain (`KNOWN`). The unit comes from the
record (`metric.extra_info.unit`, `metric.unit`, the parentheses in its name) and is checked against the units
registry: an unknown unit, one of another dimension, or two different ones refuse the file, naming the record, the
field and the rule. Any other metric is not stored, with why."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bundle.metrics import METRICS, MetricError, check_unit, metric
from bundle.units import UnitError, unit

_NAMED_UNIT = re.compile(r"^(?P<base>[^()]+?)\s*\((?P<unit>[^()]+)\)$")
MetricMap = Mapping[str, tuple[str, str]]  # --metric: a record's metric.name -> (mpsbench metric, unit symbol)


class RecordError(ValueError):
    def __init__(self, field: str, rule: str):
        super().__init__(f"{field}: {rule}")
        self.field, self.rule = field, rule


@dataclass(frozen=True)
class Known:
    """A metric name one of PyTorch's jobs writes, and the mpsbench metric it certainly is."""

    metric: str
    unit: str | None  # when the record states none
    writer: str  # whose records (the code read for the mapping)
    when: Callable[[dict], bool] = lambda record: True


KNOWN: dict[str, Known] = {
    # tokens generated / wall time of each generate call (pytorch/pytorch benchmarks/gpt_fast/generate.py)
    "token_per_sec": Known("decode_throughput", "tokens/s", "gpt-fast"),
    # model (or op) bytes × calls per second, "memory_bandwidth(GB/s)" (benchmarks/gpt_fast/benchmark.py)
    "memory_bandwidth": Known("achieved_bandwidth", None, "gpt-fast"),
    # the median of the requests' times to first token (vllm benchmarks: save_to_pytorch_benchmark_format)
    "median_ttft_ms": Known("time_to_first_token", "ms", "vLLM"),
    # the operator benchmark's steady per-call time, its unit in metric.unit
    # (pytorch/pytorch benchmarks/operator_benchmark/benchmark_core.py, _output_json); only its records: a bare
    # "latency" elsewhere (vLLM's end-to-end latency) is not an op's time
    "latency": Known("op_time", None, "operator benchmark", lambda r: bool(get(r, "model.extra_info.operator_name"))),
}


def parse_metric_option(text: str) -> tuple[str, str, str]:
    """`--metric NAME=metric:unit` as (NAME, metric, canonical unit); a MetricError names the rule broken."""
    name, sep, target = text.rpartition("=")
    base, colon, symbol = target.partition(":")
    if not sep or not name.strip() or not colon:
        raise MetricError("write NAME=metric:unit, NAME as the records name it (e.g. abs_latency=op_time:ms)")
    return name.strip(), metric(base.strip()).name, check_unit(base.strip(), symbol.strip())


def get(record: dict, path: str) -> Any:
    """The value at a dotted path of nested objects, or None."""
    value: Any = record
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _stated_unit(record: dict, name: str, i: int) -> str | None:
    """The unit the record states, if any: metric.extra_info.unit (mpsbench's exact symbol), metric.unit (the
    operator benchmark's), else the parentheses of its name. Two that disagree are refused: which is meant?"""
    found = _NAMED_UNIT.match(name)
    stated = [
        (field, str(value))
        for field, value in (
            ("metric.extra_info.unit", get(record, "metric.extra_info.unit")),
            ("metric.unit", get(record, "metric.unit")),
            ("metric.name", found["unit"] if found else None),
        )
        if value not in (None, "")
    ]
    symbols = {_canonical(s) for _, s in stated}
    if len(symbols) > 1:
        said = ", ".join(f"{s!r} in {f}" for f, s in stated)
        raise RecordError(f"records[{i}].metric", f"its unit is stated more than once, differently ({said})")
    return stated[0][1] if stated else None


def _canonical(symbol: str) -> str:
    try:
        return unit(symbol).symbol
    except UnitError:
        return symbol


def _checked(base: str, symbol: str, i: int, why: str) -> str:
    try:
        return check_unit(base, symbol)
    except MetricError as exc:
        raise RecordError(f"records[{i}].metric.name", f"{why}: {exc}") from None


def record_metric(record: dict, i: int, given: MetricMap) -> tuple[str, str] | str:
    """(mpsbench metric, canonical unit) of a record, or why it is not stored. Only a record that is stored has
    its unit checked: a metric nobody reads may say what it likes."""
    name = str(get(record, "metric.name") or "")
    found = _NAMED_UNIT.match(name)
    base = found["base"] if found else name
    if name in given:
        target, symbol = given[name]
        stated = _stated_unit(record, name, i)
        if stated is not None and _canonical(stated) != symbol:
            raise RecordError(
                f"records[{i}].metric", f"{name!r} states its unit {stated!r}; --metric says {symbol!r}: which is it?"
            )
        return target, symbol
    if base in METRICS:
        stated = _stated_unit(record, name, i)
        if stated is None:
            return (
                f"records[{i}].metric.name {name!r}: no unit in its name, metric.unit or metric.extra_info.unit; "
                "not stored"
            )
        return base, _checked(base, stated, i, f"{name!r} is mpsbench's {base}")
    known = KNOWN.get(name) or KNOWN.get(base)
    if known is not None and known.when(record):
        symbol = _stated_unit(record, name, i) or known.unit
        if symbol is not None:
            return known.metric, _checked(known.metric, symbol, i, f"{name!r} ({known.writer}'s) is {known.metric}")
    return (
        f"records[{i}].metric.name {name!r}: not an mpsbench metric, so what it measures (which memory kind, which "
        "time) is unavailable; not stored (--metric NAME=metric:unit says what it is)"
    )
