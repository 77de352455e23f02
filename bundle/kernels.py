"""What ran in one case: its kernels breakdown (bundle schema 5), measured by the collector's kernel pass.

A separate worker process runs the case's call a fixed number of times under the backend's own profiler
(collector.run.kernel_pass; never a timed process) and records, per entry — an MPSGraph graph, a native Metal kernel, a
copy, a CPU fallback (MPS: PyTorch's MPSProfiler statistics), an aten op or a device kernel (CPU and CUDA:
torch.profiler) — how many times it ran per op call, its device time per op call in µs and its share of the
breakdown's device time. Every figure is per call of the case's op (the region, for a workload timed by regions).

The breakdown's device time (`device_time_us`, derived, never stored) is the sum over the entries that time the
device — graphs, kernels, copies, CPU fallbacks and device kernels — or, where there are none (a CPU case), over the
aten ops (their self CPU time). On CUDA the aten ops carry the device time of the kernels each launched itself: a
second grouping of the same time, so their shares add up to one too. An entry's share is its time over that sum.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Annotated, Any, Sequence

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from bundle.contention import Share
from bundle.fields import Name, ParamValue, Status, Strict, Text, case_key_rule, field_error
from bundle.json_rules import SAMPLE_MAX, kernels_schema
from bundle.metrics import LATENCIES
from bundle.stats import FiniteFloat

EntryName = Annotated[str, StringConstraints(min_length=1, max_length=2000)]
NonNegative = Annotated[FiniteFloat, Field(ge=0.0, le=SAMPLE_MAX)]  # sums of 10,000 stay finite
MAX_ENTRIES = 10_000
SHARE_TOLERANCE = 1e-6  # how closely a stated share must match time / the breakdown's device time


class KernelKind(str, Enum):
    graph = "graph"  # an MPSGraph graph (MPSProfiler GRAPH)
    kernel = "kernel"  # a native Metal compute kernel (MPSProfiler KERNEL)
    copy = "copy"  # a copy between devices or buffers (MPSProfiler copy statistics; CUDA Memcpy/Memset)
    cpu_fallback = "cpu_fallback"  # an op that ran on the CPU instead (MPSProfiler CPU fallback statistics)
    aten_op = "aten_op"  # an operator (torch.profiler: self CPU time on CPU, its own kernels' time on CUDA)
    device_kernel = "device_kernel"  # a CUDA kernel (torch.profiler, self device time)


# the kinds that time the device; where a breakdown has none of them, its aten ops are its time
DEVICE_KINDS = frozenset({KernelKind.graph, KernelKind.kernel, KernelKind.copy, KernelKind.cpu_fallback,
                          KernelKind.device_kernel})  # fmt: skip


class KernelEntry(Strict):
    name: EntryName  # as the profiler names it: "aten::_softmax", "softmax_mps_out:…", "CPU to MPS"
    kind: KernelKind
    calls_per_call: NonNegative  # times it ran per op call (an average over the profiled calls)
    device_time_us: NonNegative  # its device time per op call, µs
    share: Share  # of the breakdown's device time (module docstring)
    bytes_per_call: NonNegative | None = None  # copies and CPU fallbacks: bytes moved per op call (B), if known


def timed(entries: Sequence[Any]) -> list[Any]:
    """The entries whose times add up to the breakdown's device time (module docstring)."""
    device = [e for e in entries if KernelKind(e.kind) in DEVICE_KINDS]
    return device or [e for e in entries if KernelKind(e.kind) == KernelKind.aten_op]


def device_time_us(entries: Sequence[Any]) -> float:
    """The breakdown's device time per op call (µs)."""
    return math.fsum(e.device_time_us for e in timed(entries))


def share_of(time_us: float, total_us: float) -> float:
    return min(1.0, time_us / total_us) if total_us > 0 else 0.0


def shares_rule(entries: Sequence[KernelEntry]) -> None:
    """Each (kind, name) once; each share is its time over the breakdown's device time."""
    seen: set[tuple[str, str]] = set()
    total = device_time_us(entries)
    for i, e in enumerate(entries):
        key = (e.kind.value, e.name)
        if key in seen:
            raise field_error(f"entries[{i}]", f"{e.kind.value} {e.name!r} is listed twice (one entry per name)")
        seen.add(key)
        if abs(e.share - share_of(e.device_time_us, total)) > SHARE_TOLERANCE:
            raise field_error(
                f"entries[{i}].share",
                f"share {e.share!r} does not match device_time_us / the breakdown's device time "
                f"({e.device_time_us!r} / {total!r} µs)",
            )


class CaseKernels(Strict):
    """One case's breakdown: which case, which timed metric it explains, how it was profiled, the entries."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=kernels_schema)  # its checks, stated

    workload: Name
    params: dict[Name, ParamValue]
    case_key: str = ""  # derived from params, as a result's
    dtype: Name
    compile: Name = "eager"
    metric: Name  # the timed metric whose call was profiled: op_time (µs per call), decode_time (a region), …
    status: Status  # ok; unsupported / unavailable / error with a message (no entries); never fallback
    message: Text | None = None
    profiler: Name  # "torch.profiler", "MPSProfiler (PYTORCH_MPS_LOG_PROFILE_INFO=8)"
    op_calls: Annotated[int, Field(ge=1, lt=2**31)] | None = None  # the calls the figures are divided by
    entries: list[KernelEntry] = Field(default_factory=list, max_length=MAX_ENTRIES)
    warnings: list[Text] = Field(default_factory=list)

    @property
    def device_time_us(self) -> float:
        return device_time_us(self.entries)

    @model_validator(mode="after")
    def _consistent(self) -> "CaseKernels":
        object.__setattr__(self, "case_key", case_key_rule(self.params, self.case_key))
        if self.metric not in LATENCIES:
            raise field_error("metric", f"{self.metric!r} is not a time per call ({', '.join(LATENCIES)})")
        if self.status == Status.fallback:
            raise field_error("status", "a breakdown names its CPU fallbacks as entries: status is ok")
        if self.status == Status.ok and (not self.entries or self.op_calls is None):
            raise field_error("entries", "status 'ok' needs entries and op_calls")
        if self.status != Status.ok and (self.entries or not self.message):
            raise field_error("status", f"status {self.status.value!r} has no entries and needs a message saying why")
        shares_rule(self.entries)
        return self


def breakdown_key(k: CaseKernels) -> tuple[str, str, str, str]:
    return (k.workload, k.case_key, k.dtype, k.compile)


def first_repeated_breakdown(kernels: Sequence[CaseKernels]) -> tuple[int, int] | None:
    """(first position, its repeat's position) of a case broken down twice in one bundle, else None."""
    seen: dict[tuple, int] = {}
    for i, k in enumerate(kernels):
        key = breakdown_key(k)
        if key in seen:
            return seen[key], i
        seen[key] = i
    return None
