"""The metric registry: what each metric measures, its unit, which way is better, how two values compare.

Each metric is its own record kind. Time per call, throughput, correctness and the three memory figures are
never folded into one another; the registry is what keeps them apart everywhere (bundle, ingest, dashboard).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from bundle.units import UNITS, UnitError, unit


class MetricError(ValueError):
    """An unknown metric, or a unit that does not belong to the metric."""


class Better(str, Enum):
    lower = "lower"
    higher = "higher"
    neutral = "neutral"  # a count to watch, not to optimise (e.g. pad calls)


class Sign(str, Enum):
    """Which samples a metric allows, judged on the smallest: a time, rate or size of 0 or less is a broken
    measurement (Compare would print a ratio of -1), an error or a count may be 0, a difference or dB any sign."""
    positive = "positive"
    nonnegative = "nonnegative"
    any = "any"

    def allows(self, smallest: float) -> bool:
        return self is Sign.any or smallest > 0 or (self is Sign.nonnegative and smallest == 0)


class Comparison(str, Enum):
    ratio = "ratio"  # candidate / baseline, oriented by Better
    difference = "difference"  # candidate - baseline, in the metric's unit (dB, signed bytes, counts)


@dataclass(frozen=True)
class Metric:
    name: str
    quantity: str  # latency, throughput, correctness, memory, count, bandwidth
    unit: str  # canonical unit symbol
    better: Better
    comparison: Comparison
    sign: Sign
    description: str

    @property
    def dimension(self) -> str:
        return UNITS[self.unit].dimension


_L, _H, _N = Better.lower, Better.higher, Better.neutral
_R, _D = Comparison.ratio, Comparison.difference
_P, _Z, _A = Sign.positive, Sign.nonnegative, Sign.any
_METRICS = [
    Metric("op_time", "latency", "µs", _L, _R, _P, "steady-state time per op call"),
    Metric("first_call_time", "latency", "s", _L, _R, _P, "first call after input construction (warm-up, lazy init)"),
    Metric("compile_time", "latency", "s", _L, _R, _P, "torch.compile / warm-up time before steady state"),
    Metric("achieved_bandwidth", "bandwidth", "GB/s", _H, _R, _P, "bytes read and written per call / time per call"),
    Metric("bandwidth_fraction", "bandwidth", "%", _H, _R, _P, "achieved bandwidth as a share of the chip's specified peak"),
    Metric("decode_throughput", "throughput", "tokens/s", _H, _R, _P, "new tokens per second during decode"),
    Metric("prefill_throughput", "throughput", "tokens/s", _H, _R, _P, "prompt tokens per second during prefill"),
    Metric("time_to_first_token", "latency", "ms", _L, _R, _P, "prefill of the prompt up to the first new token"),
    Metric("decode_time", "latency", "s", _L, _R, _P, "wall time of one whole decode (e.g. a tiled VAE decode)"),
    Metric("psnr_vs_cpu", "correctness", "dB", _H, _D, _A, "PSNR of the device output against the CPU reference"),
    Metric("psnr_vs_input", "correctness", "dB", _H, _D, _A, "PSNR of a round trip's output against its input"),
    Metric("max_abs_error", "correctness", "1", _L, _R, _Z, "max |device - reference|"),
    Metric("max_rel_error", "correctness", "1", _L, _R, _Z, "max |device - reference| / max(|reference|, eps)"),
    Metric("memory_driver_peak", "memory", "B", _L, _R, _P, "peak of all device memory the driver holds for the process"),
    Metric("memory_reserved_peak", "memory", "B", _L, _R, _P, "peak memory reserved by the caching allocator"),
    Metric("memory_allocated_peak", "memory", "B", _L, _R, _P, "peak memory of live tensors"),
    Metric("memory_outside_allocator", "memory", "B", _L, _D, _A, "driver peak minus allocator reserved peak"),
    Metric("storage_bytes", "memory", "B", _L, _R, _P, "bytes of a tensor's storage (e.g. FP8 weight vs its bf16 source)"),
    Metric("pad_calls", "count", "calls", _N, _D, _Z, "F.pad calls during one decode"),
]
METRICS: dict[str, Metric] = {m.name: m for m in _METRICS}


def metric(name: str) -> Metric:
    found = METRICS.get(name)
    if found is None:
        raise MetricError(f"unknown metric {name!r}; allowed: {', '.join(METRICS)}")
    return found


def check_unit(metric_name: str, unit_symbol: str) -> str:
    """Return the canonical symbol of unit_symbol if it measures metric_name's dimension, else raise."""
    m = metric(metric_name)
    try:
        u = unit(unit_symbol)
    except UnitError as exc:
        raise MetricError(str(exc)) from None
    if u.dimension != m.dimension:
        allowed = ", ".join(s for s, x in UNITS.items() if x.dimension == m.dimension)
        raise MetricError(f"unit {unit_symbol!r} is not a {m.dimension} unit for metric {m.name!r}; allowed: {allowed}")
    return u.symbol
