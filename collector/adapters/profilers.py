"""The backend's own profiler, for the kernel pass (collector.run.kernel_pass): what ran in a case's call and its time.

- CPU and CUDA: torch.profiler around the profiled calls, back to back as the timing runs them (a profile per call
  left gaps in which torch's worker threads went to sleep, and waking them cost a scheduler slice on a busy box),
  each call under a record_function mark, so on the CPU each operator's time is known call by call and the pass
  takes its median call (a call stalled by another process moves it no more than it moves the timing's median); on
  CUDA the device times are totals over the calls. From key_averages(): each operator (a name with `::`, aten ops
  mostly) with its self time on the case's device — self CPU time on the CPU, the device time of the kernels it
  launched itself on CUDA — and, on CUDA, each device kernel with its self device time (Memcpy/Memset as copies).
  Profiler regions that are not operators (a compiled graph's call, a record_function) are left out with a warning
  naming their time.
- MPS: PyTorch's MPSProfiler (collector.adapters.mps_log): the pass's worker runs with PYTORCH_MPS_LOG_PROFILE_INFO
  set and its statistics are read from what it prints when it exits. They cover the whole process (the case's setup
  and warm-up calls too).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Callable

from collector.adapters import mps_log

CALL_MARK = "## mpsbench op call ##"  # torch.profiler: each profiled call under this record_function


@dataclass(frozen=True)
class Raw:
    """One entry over every profiled call: what ran, how many times, its total time (µs) and bytes moved; where
    the profiler saw each call apart, its time in each call (µs, 0 where it did not run), in call order."""

    kind: str  # bundle.kernels.KernelKind's value
    name: str
    count: int
    total_us: float
    bytes: int | None = None
    per_call_us: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Profiled:
    raw: list[Raw]
    warnings: list[str] = field(default_factory=list)


class KernelProfiler(ABC):
    """Picklable: the kernel pass's worker gets it with its WorkerSpec."""

    name: str
    process_wide = False  # its figures cover the whole process, the case's setup and warm-up included

    def environment(self) -> dict[str, str]:
        """Variables the pass's worker process starts with."""
        return {}

    @abstractmethod
    def profile(self, call: Callable[[], object], calls: int, synchronize: Callable[[], None]) -> Profiled | None:
        """In the worker: `calls` calls of `call` (then synchronize) under the profiler; None when the figures come
        from the worker's output once it has exited (from_log)."""

    def from_log(self, text: str) -> Profiled | str:
        """In the parent, after the worker exited: the entries from its output, or why there are none."""
        return "this profiler reads no output"


class TorchProfiler(KernelProfiler):
    name = "torch.profiler"

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type

    def profile(self, call: Callable[[], object], calls: int, synchronize: Callable[[], None]) -> Profiled:
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device_type == "cuda" else [])
        with profile(activities=activities):  # the profiler's own first start (~60 ms here) stays out of the figures
            torch.zeros(1)
        with profile(activities=activities) as prof:  # back to back, as the timing calls: no gap to sleep in
            for _ in range(calls):
                with record_function(CALL_MARK):
                    call()
            synchronize()
        found = self._entries([e for e in prof.key_averages() if e.key != CALL_MARK])
        per_call = _per_call(prof.events(), calls) if self.device_type == "cpu" else {}
        raw = [replace(r, per_call_us=per_call.get(r.name)) for r in found.raw]
        warnings = []
        if found.regions:
            named = ", ".join(f"{key!r} {us / calls:.1f} µs per op call" for key, us, _ in found.regions[:5])
            warnings.append(f"torch.profiler regions that are not operators, left out of the breakdown: {named}")
        return Profiled(raw, warnings)

    def _entries(self, events) -> "_Events":
        raw, regions = [], []
        for e in events:
            device = str(getattr(e, "device_type", "")).rsplit(".", 1)[-1] != "CPU"
            if device:
                kind = "copy" if e.key.startswith(("Memcpy", "Memset")) else "device_kernel"
                raw.append(Raw(kind, e.key, int(e.count), float(_self_device_us(e))))
            elif "::" in e.key:  # an operator: aten::…, prims::…, a library's ns::op
                us = _self_device_us(e) if self.device_type == "cuda" else e.self_cpu_time_total
                raw.append(Raw("aten_op", e.key, int(e.count), float(us)))
            elif self.device_type == "cpu" and e.self_cpu_time_total > 0:
                regions.append((e.key, float(e.self_cpu_time_total), int(e.count)))
        return _Events(raw, regions)


@dataclass(frozen=True)
class _Events:
    """One profile's entries, and its regions that are not operators: (name, self CPU µs, count)."""

    raw: list[Raw]
    regions: list[tuple[str, float, int]]


def _per_call(events, calls: int) -> dict[str, tuple[float, ...]]:
    """Each operator's self CPU time (µs) in each call, from the profile's events: the operators under each call's
    mark, at any depth. Where a call's marks are not all found, none (the entry keeps its total over the calls)."""
    marks = [e for e in events if e.name == CALL_MARK]
    if len(marks) != calls:
        return {}
    out: dict[str, list[float]] = {}
    for i, mark in enumerate(marks):
        todo = list(mark.cpu_children)
        while todo:
            e = todo.pop()
            todo.extend(e.cpu_children)
            if "::" in e.name:
                out.setdefault(e.name, [0.0] * calls)[i] += float(e.self_cpu_time_total)
    return {name: tuple(times) for name, times in out.items()}


def _self_device_us(event) -> float:
    """Self device time (µs): `self_device_time_total` (torch ≥ 2.4), `self_cuda_time_total` before."""
    found = getattr(event, "self_device_time_total", None)
    return float(found if found is not None else getattr(event, "self_cuda_time_total", 0.0))


class MpsStatsProfiler(KernelProfiler):
    name = f"MPSProfiler ({mps_log.VARIABLE}={mps_log.ALL_STATS})"
    process_wide = True

    def environment(self) -> dict[str, str]:
        return {mps_log.VARIABLE: str(mps_log.ALL_STATS)}

    def profile(self, call: Callable[[], object], calls: int, synchronize: Callable[[], None]) -> None:
        for _ in range(calls):  # MPSProfiler counts every graph, kernel, copy and fallback of the process
            call()
        synchronize()
        return None  # its statistics are printed when the worker exits

    def from_log(self, text: str) -> Profiled | str:
        stats = mps_log.parse(text)
        if "operations" not in stats.tables:
            return (
                f"the worker printed no MPSProfiler statistics ({mps_log.VARIABLE}={mps_log.ALL_STATS} was set "
                "for it; a build without MPSProfiler's stats logging, or a worker that did not exit normally)"
            )
        return Profiled([Raw(r.kind, r.name, r.runs, r.total_us, r.bytes) for r in stats.rows])
