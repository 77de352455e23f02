"""The metric registry: what each metric measures, its unit, which way is better, how two values compare.

Each metric is its own record kind. Time per call, throughput, correctness and the three memory figures are
never folded into one another in a bundle or the store; the registry is what keeps them apart. A figure computed
from a timing of the same case (`derived_from`: bandwidth from op_time, tokens/s from decode_time and TTFT) is one
measurement with it, so a review shows it in that timing's row and judges the timing only (`DERIVED`, `RULES`).
"""

from __future__ import annotations

import sys
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
    measurement (Compare would print a ratio of -1), an error or a count may be 0, a difference or dB any sign.
    A positive figure must also be a normal float (>= 2.2e-308): a subnormal one (5e-324) loses its precision and
    turns a ratio into inf one way and 0 the other, so a comparison would not read the same both ways."""

    positive = "positive"
    nonnegative = "nonnegative"
    any = "any"

    def allows(self, smallest: float) -> bool:
        return self is Sign.any or smallest >= sys.float_info.min or (self is Sign.nonnegative and smallest == 0)


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
    derived_from: str = ""  # the timing this figure is computed from (shown in that timing's row, not as a case)

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
    Metric(
        "achieved_bandwidth",
        "bandwidth",
        "GB/s",
        _H,
        _R,
        _P,
        "bytes read and written per call / time per call",
        "op_time",
    ),
    Metric(
        "bandwidth_fraction",
        "bandwidth",
        "%",
        _H,
        _R,
        _P,
        "achieved bandwidth as a share of the chip's specified peak",
        "op_time",
    ),
    # One measurement, two records: tokens/s is N / each timing sample. The timing is the row, as op_time is for
    # bandwidth: decode_time is also a VAE decode's only figure and a rule belongs to a metric (a derived
    # decode_time would silence VAE slowdowns), and a review whose slowdowns are all times reads one way. The row
    # carries the tokens/s beside it (db.review.cases.derived_figures): the figure a release note quotes stays in view.
    Metric(
        "decode_throughput", "throughput", "tokens/s", _H, _R, _P, "new tokens per second during decode", "decode_time"
    ),
    Metric(
        "prefill_throughput",
        "throughput",
        "tokens/s",
        _H,
        _R,
        _P,
        "prompt tokens per second during prefill",
        "time_to_first_token",
    ),
    Metric("time_to_first_token", "latency", "ms", _L, _R, _P, "prefill of the prompt up to the first new token"),
    Metric(
        "decode_time", "latency", "s", _L, _R, _P, "wall time of one whole decode (N new tokens, a tiled VAE decode)"
    ),
    Metric("psnr_vs_cpu", "correctness", "dB", _H, _D, _A, "PSNR of the device output against the CPU reference"),
    Metric("psnr_vs_input", "correctness", "dB", _H, _D, _A, "PSNR of a round trip's output against its input"),
    Metric("max_abs_error", "correctness", "1", _L, _R, _Z, "max |device - reference|"),
    Metric("max_rel_error", "correctness", "1", _L, _R, _Z, "max |device - reference| / max(|reference|, eps)"),
    Metric(
        "memory_driver_peak", "memory", "B", _L, _R, _P, "peak of all device memory the driver holds for the process"
    ),
    Metric("memory_reserved_peak", "memory", "B", _L, _R, _P, "peak memory reserved by the caching allocator"),
    Metric("memory_allocated_peak", "memory", "B", _L, _R, _P, "peak memory of live tensors"),
    Metric("memory_outside_allocator", "memory", "B", _L, _D, _A, "driver peak minus allocator reserved peak"),
    Metric(
        "storage_bytes", "memory", "B", _L, _R, _P, "bytes of a tensor's storage (e.g. FP8 weight vs its bf16 source)"
    ),
    Metric("pad_calls", "count", "calls", _N, _D, _Z, "F.pad calls during one decode"),
]
METRICS: dict[str, Metric] = {m.name: m for m in _METRICS}
DERIVED: dict[str, str] = {m.name: m.derived_from for m in _METRICS if m.derived_from}  # figure -> its timing
RATIO_METRICS = tuple(m.name for m in _METRICS if m.comparison is Comparison.ratio)  # compared as ratios
LATENCIES = tuple(m.name for m in _METRICS if m.quantity == "latency")  # times per call: what a breakdown explains
# the figures a timing clock gives (and those computed from one): what other processes on the cores inflate
TIMINGS = tuple(m.name for m in _METRICS if m.quantity in ("latency", "bandwidth", "throughput"))


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


# --- What a regression is, per metric (the one place; docs/regressions.md explains each default) -------------
class RuleKind(str, Enum):
    significant = "significant"  # replicated figure: a significant change for the worse beyond the case's bound
    growth = "growth"  # single figure (memory): grows by >= percent AND by >= floor (metric's unit)
    drop = "drop"  # single figure in dB (PSNR): falls by more than `drop` dB, even while still passing
    factor = "factor"  # single figure (max error): grows by >= `factor` × (0 → > 0 counts)
    derived = "derived"  # computed from another metric of the case (bandwidth, tokens/s): never its own row
    watch = "watch"  # a count to watch (pad calls): shown, never a regression


@dataclass(frozen=True)
class Rule:
    kind: RuleKind
    percent: float | None = None  # significant: overrides the review threshold; growth: relative growth, %
    floor: float | None = None  # growth: absolute growth in the metric's canonical unit
    drop: float | None = None  # drop: dB
    factor: float | None = None  # factor: ×

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields a review may override for this kind."""
        return _FIELDS[self.kind]


_FIELDS = {
    RuleKind.significant: ("percent",),
    RuleKind.growth: ("percent", "floor"),
    RuleKind.drop: ("drop",),
    RuleKind.factor: ("factor",),
    RuleKind.derived: (),
    RuleKind.watch: (),
}
RULE_LIMITS = {"percent": (0.0, 1000.0), "floor": (0.0, float("inf")), "drop": (0.0, 1000.0), "factor": (1.0, 1e12)}
MIB = 2**20
_GROWTH = Rule(RuleKind.growth, percent=5.0, floor=64 * MIB)
_SIGNIFICANT = Rule(RuleKind.significant)
RULES: dict[str, Rule] = {
    **{
        name: _SIGNIFICANT
        for name in ("op_time", "first_call_time", "compile_time", "time_to_first_token", "decode_time")
    },
    # never a verdict beside its timing; compared alone (a metric filter), judged by its timing's rule (ruled_by
    # in db.review.rules)
    **{name: Rule(RuleKind.derived) for name in DERIVED},
    "memory_outside_allocator": Rule(RuleKind.derived),  # driver peak minus reserved peak, both judged themselves
    "psnr_vs_cpu": Rule(RuleKind.drop, drop=3.0),
    "psnr_vs_input": Rule(RuleKind.drop, drop=3.0),
    "max_abs_error": Rule(RuleKind.factor, factor=2.0),
    "max_rel_error": Rule(RuleKind.factor, factor=2.0),
    "memory_driver_peak": _GROWTH,
    "memory_reserved_peak": _GROWTH,
    "memory_allocated_peak": _GROWTH,
    "storage_bytes": Rule(RuleKind.growth, percent=5.0, floor=0.0),
    "pad_calls": Rule(RuleKind.watch),
}
# a case's correctness figures: judged together, one regression row per case (not one per metric)
CORRECTNESS = tuple(m.name for m in _METRICS if m.quantity == "correctness")
# The dtype's own scale for a drop or factor rule (docs/regressions.md, "Correctness on the dtype's scale"): a
# figure recorded with its rounding level (collector.timing.correctness: the figure of the reference rounded once to the
# output's dtype) whose candidate error stays within ROUNDING_UNITS of that level, moved by less than
# ROUNDING_MOVE (× error, 20 dB) and passes (a PSNR: TOLERANCE_MARGIN × clear of a stated tolerance) is the
# dtype's jitter, not a regression (bf16's reordered accumulations move a PSNR by ±4 dB).
ROUNDING_UNITS = 4.0
ROUNDING_MOVE = 10.0
TOLERANCE_MARGIN = 2.0
# figures a sampler thread reads while the case runs (collector.adapters.sampler): other processes on the cores
# change what it catches (a CPU driver peak read 1.14–1.26× higher beside busy loops), so one read in a contended
# process is unconfirmed (contended), like a timing (bundle.contention)
SAMPLED = ("memory_driver_peak",)
assert set(RULES) == set(METRICS), "every metric needs a regression rule"


def parse_rules(text: str | None) -> dict[str, Rule]:
    """The registry's rules with a review's overrides applied: "metric.field=value,…" (e.g.
    "memory_driver_peak.percent=10,psnr_vs_cpu.drop=1"). Raises MetricError naming the bad part."""
    rules = dict(RULES)
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        metric_name, dot, field_name = name.strip().partition(".")
        if not sep or not dot:
            raise MetricError(f"rule {part[:60]!r}: write metric.field=value, e.g. memory_driver_peak.percent=10")
        rule = RULES.get(metric_name)
        if rule is None:
            raise MetricError(f"rule {part[:60]!r}: unknown metric {metric_name[:40]!r}; allowed: {', '.join(RULES)}")
        if field_name not in rule.fields:
            allowed = ", ".join(rule.fields) or f"none ({rule.kind.value} metrics have no rule to change)"
            raise MetricError(f"rule {part[:60]!r}: {metric_name} has no field {field_name[:40]!r}; allowed: {allowed}")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        low, high = RULE_LIMITS[field_name]
        if not low <= number <= high:  # NaN fails too
            raise MetricError(f"rule {part[:60]!r}: {field_name} must be a number from {low:g} to {high:g}")
        rules[metric_name] = Rule(**{**rules[metric_name].__dict__, field_name: number})
    return rules
